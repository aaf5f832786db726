"""Test-table factory: real Paimon tables written by the official ``pypaimon``.

Everything here goes through pypaimon's public API (filesystem catalog, batch
write builder, tag / branch / consumer managers); no Paimon metadata is written
by hand. Scenario builders write one table each and return a :class:`Scenario`
that also carries the rows pypaimon is expected to read back at every snapshot,
computed independently from the data the builder wrote.

pypaimon behaviour worth knowing (2.1.0):

* Time travel is ``table.copy({"scan.snapshot-id": "N"})`` or
  ``{"scan.tag-name": name}``; a branch is the table ``"db.t$branch_<name>"``.
* pypaimon never expires snapshots and never writes ``snapshot/EARLIEST``; it
  writes ``snapshot/LATEST``.
* ``overwrite`` without a partition is a *dynamic* partition overwrite on
  partitioned tables (``dynamic-partition-overwrite`` defaults to true): only
  the partitions present in the new data are replaced. Overwrites, partition
  drops and data-evolution deletes are all ``commitKind: OVERWRITE``.
* NULL, ``""`` and whitespace-only partition values all map to the directory
  ``__DEFAULT_PARTITION__`` but stay distinct partitions in the manifests.
* Primary-key tables with ``deletion-vectors.enabled`` only expose compacted
  (level > 0) files, and pypaimon cannot compact, so their rows are invisible;
  pypaimon does write deletion vectors for data-evolution append tables.
"""

from __future__ import annotations

import datetime as dt
import decimal
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeAlias

import pyarrow as pa
from pypaimon import CatalogFactory, Schema
from pypaimon.catalog.catalog import Catalog
from pypaimon.common.file_io import FileIO
from pypaimon.consumer.consumer import Consumer
from pypaimon.consumer.consumer_manager import ConsumerManager
from pypaimon.manifest.manifest_file_manager import ManifestFileManager
from pypaimon.manifest.manifest_list_manager import ManifestListManager
from pypaimon.schema.data_types import PyarrowFieldParser
from pypaimon.table.file_store_table import FileStoreTable

Row: TypeAlias = dict[str, Any]
Data: TypeAlias = pa.Table | Sequence[Mapping[str, Any]]

DB = "db"

# --------------------------------------------------------------------------
# Thin wrappers around pypaimon
# --------------------------------------------------------------------------


def catalog(warehouse: Path) -> Catalog:
    """A pypaimon filesystem catalog rooted at ``warehouse``."""
    return CatalogFactory.create({"warehouse": str(warehouse)})


def table_root(warehouse: Path, identifier: str) -> Path:
    """``<warehouse>/<db>.db/<name>`` for ``identifier`` ``"db.name"``."""
    database, name = identifier.split(".", 1)
    return Path(warehouse) / f"{database}.db" / name


def root_of(table: FileStoreTable) -> Path:
    """The table root directory of a pypaimon table object."""
    return Path(table.table_path)


def create_table(
    warehouse: Path,
    identifier: str,
    schema: pa.Schema,
    *,
    partition_keys: Sequence[str] = (),
    primary_keys: Sequence[str] = (),
    options: Mapping[str, str] | None = None,
) -> FileStoreTable:
    """Create the database if needed and the table; return the table."""
    return create_table_in(
        catalog(warehouse),
        identifier,
        schema,
        partition_keys=partition_keys,
        primary_keys=primary_keys,
        options=options,
    )


def create_table_in(
    cat: Catalog,
    identifier: str,
    schema: pa.Schema,
    *,
    partition_keys: Sequence[str] = (),
    primary_keys: Sequence[str] = (),
    options: Mapping[str, str] | None = None,
) -> FileStoreTable:
    """``create_table`` through any pypaimon catalog (filesystem, REST, JDBC)."""
    cat.create_database(identifier.split(".", 1)[0], True)
    cat.create_table(
        identifier,
        Schema.from_pyarrow_schema(
            schema,
            partition_keys=list(partition_keys),
            primary_keys=list(primary_keys),
            options=dict(options or {}),
        ),
        False,
    )
    table: FileStoreTable = cat.get_table(identifier)
    return table


def open_table(warehouse: Path, identifier: str, *, branch: str | None = None) -> FileStoreTable:
    """Load a table (or one of its branches) through a fresh catalog."""
    name = identifier if branch is None else f"{identifier}$branch_{branch}"
    return catalog(warehouse).get_table(name)


def arrow_schema(table: FileStoreTable) -> pa.Schema:
    return PyarrowFieldParser.from_paimon_schema(table.table_schema.fields)


def _to_arrow(table: FileStoreTable, data: Data) -> pa.Table:
    if isinstance(data, pa.Table):
        return data
    return pa.Table.from_pylist([dict(r) for r in data], schema=arrow_schema(table))


def latest_snapshot_id(table: FileStoreTable) -> int | None:
    snapshot = table.snapshot_manager().get_latest_snapshot()
    return None if snapshot is None else snapshot.id


def _write(table: FileStoreTable, data: Data, overwrite: Mapping[str, Any] | None) -> int:
    commit_batch(table, data, overwrite)
    return _require_latest(table)


def commit_batch(table: FileStoreTable, data: Data, overwrite: Mapping[str, Any] | None) -> None:
    """One batch written and committed through pypaimon's batch write API (any catalog)."""
    builder = table.new_batch_write_builder()
    if overwrite is not None:
        builder.overwrite(dict(overwrite))
    write, commit = builder.new_write(), builder.new_commit()
    try:
        write.write_arrow(_to_arrow(table, data))
        commit.commit(write.prepare_commit())
    finally:
        write.close()
        commit.close()


def append(table: FileStoreTable, data: Data) -> int:
    """Commit one batch (APPEND); return the new snapshot id."""
    return _write(table, data, None)


def overwrite(table: FileStoreTable, data: Data, partition: Mapping[str, Any] | None = None) -> int:
    """INSERT OVERWRITE (commitKind OVERWRITE, DELETE entries for replaced files).

    ``partition`` is a static partition spec; ``None`` replaces the partitions
    present in ``data`` (whole table when unpartitioned).
    """
    return _write(table, data, partition or {})


def drop_partitions(table: FileStoreTable, partitions: Sequence[Mapping[str, Any]]) -> int:
    """Drop partitions (an OVERWRITE snapshot deleting their files)."""
    commit = table.new_batch_write_builder().new_commit()
    try:
        commit.truncate_partitions([dict(p) for p in partitions])
    finally:
        commit.close()
    return _require_latest(table)


def truncate(table: FileStoreTable) -> int:
    """Truncate the whole table (an OVERWRITE snapshot deleting every file)."""
    commit = table.new_batch_write_builder().new_commit()
    try:
        commit.truncate_table()
    finally:
        commit.close()
    return _require_latest(table)


def _require_latest(table: FileStoreTable) -> int:
    snapshot_id = latest_snapshot_id(table)
    assert snapshot_id is not None
    return snapshot_id


def create_tag(
    table: FileStoreTable,
    name: str,
    snapshot_id: int | None = None,
    time_retained: str | None = None,
) -> None:
    """Tag ``snapshot_id`` (latest when None). With ``time_retained`` (e.g. "1d")
    the tag file carries ``tagCreateTime`` / ``tagTimeRetained``."""
    table.create_tag(name, snapshot_id, time_retained=time_retained)


def create_branch(table: FileStoreTable, name: str, from_tag: str | None = None) -> FileStoreTable:
    """Create ``branch/branch-<name>`` and return the branch table (writable).

    From a tag, pypaimon copies the tag, its snapshot and schemas into the
    branch; without one, only the schema (an empty branch).
    """
    table.branch_manager().create_branch(name, from_tag)
    return table.copy({"branch": name})


def set_consumer(
    table_root: Path, consumer_id: str, next_snapshot: int, branch: str | None = None
) -> None:
    """Write ``[branch/branch-<b>/]consumer/consumer-<id>`` via pypaimon's ConsumerManager."""
    file_io = FileIO.get(str(table_root))
    ConsumerManager(file_io, str(table_root), branch).reset_consumer(
        consumer_id, Consumer(next_snapshot)
    )


# --------------------------------------------------------------------------
# Reading back
# --------------------------------------------------------------------------


def _sort_key(row: Row) -> tuple[tuple[bool, Any], ...]:
    return tuple((v is None, v) for v in row.values())


def sort_rows(rows: Iterable[Row]) -> list[Row]:
    """Rows in a deterministic order (column order, NULLs last)."""
    return sorted(rows, key=_sort_key)


def _travel(table: FileStoreTable, snapshot_id: int | None, tag: str | None) -> FileStoreTable:
    if snapshot_id is not None and tag is not None:
        raise ValueError("pass snapshot_id or tag, not both")
    if snapshot_id is not None:
        return table.copy({"scan.snapshot-id": str(snapshot_id)})
    if tag is not None:
        return table.copy({"scan.tag-name": tag})
    return table


def read_all(table: FileStoreTable) -> list[Row]:
    """Every row of the table's latest snapshot, sorted."""
    builder = table.new_read_builder()
    splits = builder.new_scan().plan().splits()
    return sort_rows(builder.new_read().to_arrow(splits).to_pylist())


def _scan_names(table: FileStoreTable) -> set[str]:
    splits = table.new_read_builder().new_scan().plan().splits()
    return {f.file_name for s in splits for f in s.files}


def read_rows(
    warehouse: Path,
    identifier: str,
    *,
    snapshot_id: int | None = None,
    tag: str | None = None,
    branch: str | None = None,
) -> list[Row]:
    """Rows as pypaimon reads them (merged view for PK tables), sorted."""
    return read_all(_travel(open_table(warehouse, identifier, branch=branch), snapshot_id, tag))


def scan_file_names(
    warehouse: Path,
    identifier: str,
    *,
    snapshot_id: int | None = None,
    tag: str | None = None,
    branch: str | None = None,
) -> set[str]:
    """Data file names (base names) in pypaimon's scan plan for that version."""
    return _scan_names(_travel(open_table(warehouse, identifier, branch=branch), snapshot_id, tag))


def scan_file_names_at_root(
    root: Path, *, snapshot_id: int | None = None, tag: str | None = None
) -> set[str]:
    """Like :func:`scan_file_names` for a bare table root (main branch only).

    Works for pypaimon-written tables and Java-written ones with Avro manifests;
    pypaimon cannot read ORC manifests (most ``java-written/orc`` fixtures).
    """
    return _scan_names(_travel(FileStoreTable.from_path(str(root)), snapshot_id, tag))


def read_rows_at_root(
    root: Path, *, snapshot_id: int | None = None, tag: str | None = None
) -> list[Row]:
    return read_all(_travel(FileStoreTable.from_path(str(root)), snapshot_id, tag))


ADD, DELETE = 0, 1


def delta_entries(warehouse: Path, identifier: str, snapshot_id: int) -> list[tuple[int, str]]:
    """``(kind, file name)`` of the snapshot's delta manifests, read by pypaimon
    (kind 0 = ADD, 1 = DELETE)."""
    table = open_table(warehouse, identifier)
    snapshot = table.snapshot_manager().get_snapshot_by_id(snapshot_id)
    files = ManifestFileManager(table)
    return [
        (e.kind, e.file.file_name)
        for meta in ManifestListManager(table).read_delta(snapshot)
        for e in files.read(meta.file_name)
    ]


# --------------------------------------------------------------------------
# Scenarios
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class Scenario:
    warehouse: Path
    identifier: str
    root: Path
    snapshot_ids: list[int]
    tags: list[str]
    branches: list[str]
    consumers: dict[str, int]
    partition_keys: tuple[str, ...] = ()
    primary_keys: tuple[str, ...] = ()
    notes: str = ""
    #: main-branch snapshot id -> sorted rows pypaimon must read at that snapshot
    expected: dict[int, list[Row]] = field(default_factory=dict)
    #: tag name -> snapshot id it points at (main branch)
    tag_snapshots: dict[str, int] = field(default_factory=dict)
    #: branch name -> sorted rows pypaimon must read at the branch's latest snapshot
    branch_expected: dict[str, list[Row]] = field(default_factory=dict)
    #: branch name -> its snapshot ids (the copied tag snapshot first)
    branch_snapshot_ids: dict[str, list[int]] = field(default_factory=dict)

    def rows_at_tag(self, tag: str) -> list[Row]:
        return self.expected[self.tag_snapshots[tag]]


class _Recorder:
    """Writes through pypaimon while keeping an independent model of the rows."""

    def __init__(
        self,
        warehouse: Path,
        name: str,
        schema: pa.Schema,
        *,
        partition_keys: Sequence[str] = (),
        primary_keys: Sequence[str] = (),
        options: Mapping[str, str] | None = None,
        row_kind_field: str | None = None,
    ) -> None:
        self.warehouse = Path(warehouse)
        self.identifier = f"{DB}.{name}"
        self.partition_keys = tuple(partition_keys)
        self.primary_keys = tuple(primary_keys)
        self.row_kind_field = row_kind_field
        self.table = create_table(
            self.warehouse,
            self.identifier,
            schema,
            partition_keys=partition_keys,
            primary_keys=primary_keys,
            options=options,
        )
        self.columns = tuple(schema.names)
        self.rows: list[Row] = []
        self.expected: dict[int, list[Row]] = {}
        self.tag_snapshots: dict[str, int] = {}
        self.consumers: dict[str, int] = {}

    @property
    def root(self) -> Path:
        return root_of(self.table)

    def _apply(self, state: list[Row], new: Sequence[Row]) -> list[Row]:
        if not self.primary_keys:
            return state + [dict(r) for r in new]
        merged = {tuple(r[k] for k in self.primary_keys): r for r in state}
        for r in new:
            key = tuple(r[k] for k in self.primary_keys)
            if self.row_kind_field and r[self.row_kind_field] in ("-D", "-U"):
                merged.pop(key, None)
            else:
                merged[key] = dict(r)
        return list(merged.values())

    def _record(self, snapshot_id: int) -> int:
        self.expected[snapshot_id] = sort_rows(
            {c: r.get(c) for c in self.columns} for r in self.rows
        )
        return snapshot_id

    def append(self, rows: Sequence[Row]) -> int:
        snapshot_id = append(self.table, rows)
        self.rows = self._apply(self.rows, rows)
        return self._record(snapshot_id)

    def overwrite(self, rows: Sequence[Row], partition: Mapping[str, Any] | None = None) -> int:
        snapshot_id = overwrite(self.table, rows, partition)
        if partition:

            def replaced(r: Row) -> bool:
                return all(r[k] == v for k, v in partition.items())
        else:
            parts = {tuple(r[k] for k in self.partition_keys) for r in rows}

            def replaced(r: Row) -> bool:
                return tuple(r[k] for k in self.partition_keys) in parts

        self.rows = self._apply([r for r in self.rows if not replaced(r)], rows)
        return self._record(snapshot_id)

    def tag(self, name: str, snapshot_id: int, time_retained: str | None = None) -> None:
        create_tag(self.table, name, snapshot_id, time_retained)
        self.tag_snapshots[name] = snapshot_id

    def consumer(self, consumer_id: str, next_snapshot: int) -> None:
        set_consumer(self.root, consumer_id, next_snapshot)
        self.consumers[consumer_id] = next_snapshot

    def scenario(self, notes: str, **extra: Any) -> Scenario:
        return Scenario(
            warehouse=self.warehouse,
            identifier=self.identifier,
            root=self.root,
            snapshot_ids=sorted(self.expected),
            tags=sorted(self.tag_snapshots),
            branches=sorted(extra.get("branch_expected", {})),
            consumers=dict(self.consumers),
            partition_keys=self.partition_keys,
            primary_keys=self.primary_keys,
            notes=notes,
            expected=dict(self.expected),
            tag_snapshots=dict(self.tag_snapshots),
            **extra,
        )


def append_partitioned(warehouse: Path, commits: int = 6) -> Scenario:
    """Append-only table partitioned by (dt STRING, hr INT).

    Snapshots 1..commits: appends of 3 rows each, except snapshot ``commits-1``
    which overwrites partition (dt=2024-01-01, hr=0). Tag ``mid`` at
    ``commits // 2``; consumer ``reader`` with nextSnapshot ``commits // 2 + 1``.
    """
    if commits < 3:
        raise ValueError("commits must be >= 3")
    schema = pa.schema(
        [("id", pa.int64()), ("dt", pa.string()), ("hr", pa.int32()), ("v", pa.string())]
    )
    rec = _Recorder(warehouse, "append_partitioned", schema, partition_keys=("dt", "hr"))
    days = ("2024-01-01", "2024-01-02")
    for i in range(1, commits + 1):
        if i == commits - 1:
            rec.overwrite(
                [{"id": 1000 + k, "dt": days[0], "hr": 0, "v": f"ow{k}"} for k in range(2)],
                {"dt": days[0], "hr": 0},
            )
        else:
            rec.append(
                [
                    {"id": 10 * i + k, "dt": days[(i + k) % 2], "hr": k % 2, "v": f"c{i}"}
                    for k in range(3)
                ]
            )
    rec.tag("mid", commits // 2)
    rec.consumer("reader", commits // 2 + 1)
    return rec.scenario(
        f"overwrite of dt={days[0]}/hr=0 at snapshot {commits - 1} (DELETE entries)"
    )


def pk_table(warehouse: Path, commits: int = 6) -> Scenario:
    """Primary-key table (dt, id), bucket=2, partitioned by dt, ``rowkind.field=rk``,
    ``changelog-producer=input`` (changelog files + changelog manifest lists).

    Snapshot 1 inserts ids 0..5 in two days; every later snapshot upserts ids
    0..1 and deletes (``-D``) one id, so the merged view differs from raw rows.
    Tag ``mid`` at ``commits // 2``; consumer ``cdc`` at nextSnapshot 2.
    """
    schema = pa.schema(
        [
            pa.field("dt", pa.string(), nullable=False),
            pa.field("id", pa.int64(), nullable=False),
            ("v", pa.string()),
            ("rk", pa.string()),
        ]
    )
    rec = _Recorder(
        warehouse,
        "pk_table",
        schema,
        partition_keys=("dt",),
        primary_keys=("dt", "id"),
        options={"bucket": "2", "rowkind.field": "rk", "changelog-producer": "input"},
        row_kind_field="rk",
    )
    days = ("2024-01-01", "2024-01-02")
    rec.append([{"dt": d, "id": i, "v": f"{d}-v0", "rk": "+I"} for d in days for i in range(6)])
    for c in range(2, commits + 1):
        rows = [{"dt": days[c % 2], "id": i, "v": f"v{c}", "rk": "+U"} for i in range(2)]
        rows.append({"dt": days[c % 2], "id": 2 + c // 2, "v": None, "rk": "-D"})
        rec.append(rows)
    rec.tag("mid", commits // 2)
    rec.consumer("cdc", 2)
    return rec.scenario(
        "upserts and -D deletes via rowkind.field; merged view; changelog-producer=input"
    )


AWKWARD_VALUES: tuple[str | None, ...] = (
    "with space",
    "a/b",
    "k=v",
    "c:d",
    "zürich",
    "東京",
    None,
    "",
    "  ",
    "100%",
    "#?&",
)


def awkward_partitions(warehouse: Path) -> Scenario:
    """Two-level STRING partitions (region, city) with awkward values.

    Snapshot 1: region=<each value>, city="c"; snapshot 2: region="r",
    city=<each value>; snapshot 3 overwrites (region="zürich", city="c"); tag
    ``awk`` at 2. NULL, "" and "  " share directory ``__DEFAULT_PARTITION__``
    yet are three partitions; '/', ':', '=', '%', '#', '?' are %-escaped in
    paths, spaces and non-ASCII are not.
    """
    schema = pa.schema([("id", pa.int64()), ("region", pa.string()), ("city", pa.string())])
    rec = _Recorder(warehouse, "awkward_partitions", schema, partition_keys=("region", "city"))
    rec.append([{"id": i, "region": v, "city": "c"} for i, v in enumerate(AWKWARD_VALUES)])
    rec.append([{"id": 100 + i, "region": "r", "city": v} for i, v in enumerate(AWKWARD_VALUES)])
    rec.overwrite([{"id": 999, "region": "zürich", "city": "c"}], {"region": "zürich", "city": "c"})
    rec.tag("awk", 2)
    return rec.scenario(
        "NULL/''/'  ' -> __DEFAULT_PARTITION__ directory; overwrite of a non-ASCII partition"
    )


TYPED_PARTITION_SCHEMA = pa.schema(
    [
        ("id", pa.int64()),
        ("d", pa.date32()),
        ("i", pa.int32()),
        ("b", pa.bool_()),
        ("l", pa.int64()),
        ("t", pa.int8()),
        ("s", pa.int16()),
        ("dec", pa.decimal128(10, 2)),
        ("ts", pa.timestamp("us")),
    ]
)


def typed_partitions(warehouse: Path, *, legacy_name: bool = True) -> Scenario:
    """Partition keys DATE, INT, BOOLEAN, BIGINT, TINYINT, SMALLINT,
    DECIMAL(10,2), TIMESTAMP(6) (pypaimon accepts all of them).

    With ``partition.legacy-name`` true (Paimon's default) a DATE is written as
    epoch days (``d=19724``) and a TIMESTAMP as ``2024-01-02T03:04:05.123456``;
    with false as ``d=2024-01-02`` and ``ts=2024-01-02 03:04:05.123456``.
    Snapshot 1: two value rows + an all-NULL row; snapshot 2: another value
    row; snapshot 3: static overwrite of the first row's partition.
    """
    keys = tuple(TYPED_PARTITION_SCHEMA.names[1:])
    name = "typed_partitions" if legacy_name else "typed_partitions_iso"
    rec = _Recorder(
        warehouse,
        name,
        TYPED_PARTITION_SCHEMA,
        partition_keys=keys,
        options={"partition.legacy-name": str(legacy_name).lower()},
    )
    first = {
        "d": dt.date(2024, 1, 2),
        "i": -7,
        "b": True,
        "l": 2**40,
        "t": 3,
        "s": -300,
        "dec": decimal.Decimal("12.34"),
        "ts": dt.datetime(2024, 1, 2, 3, 4, 5, 123456),
    }
    second = {
        "d": dt.date(1999, 12, 31),
        "i": 0,
        "b": False,
        "l": -1,
        "t": -128,
        "s": 32767,
        "dec": decimal.Decimal("-0.50"),
        "ts": dt.datetime(1999, 12, 31, 23, 59, 59),
    }
    rec.append([{"id": 1, **first}, {"id": 2, **second}, {"id": 3, **dict.fromkeys(keys)}])
    rec.append([{"id": 4, **second}])
    rec.overwrite([{"id": 5, **first}], first)
    return rec.scenario(
        f"partition.legacy-name={str(legacy_name).lower()}; all-NULL row in default partitions"
    )


def tags_consumers_branches(warehouse: Path) -> Scenario:
    """Unpartitioned append table with 8 snapshots (2 rows each).

    Tags: ``t2`` (snapshot 2), ``t4`` (4, time_retained 1d), ``t6`` (6,
    time_retained 1ms, so already past its retention). Consumers ``slow``
    (nextSnapshot 3) and ``fast`` (7). Branch ``b1`` from tag ``t4`` with two
    commits of its own (branch snapshots 4, 5, 6) and consumer ``on-branch``
    (5) in ``branch/branch-b1/consumer``; branch ``empty`` created without a
    tag (schema only, no snapshot).
    """
    schema = pa.schema([("id", pa.int64()), ("v", pa.string())])
    rec = _Recorder(warehouse, "tags_consumers_branches", schema)
    for i in range(1, 9):
        rec.append([{"id": 10 * i + k, "v": f"c{i}"} for k in range(2)])
    rec.tag("t2", 2)
    rec.tag("t4", 4, time_retained="1d")
    rec.tag("t6", 6, time_retained="1ms")
    rec.consumer("slow", 3)
    rec.consumer("fast", 7)

    branch = create_branch(rec.table, "b1", "t4")
    branch_rows = list(rec.expected[4])
    branch_ids = [4]
    for i in (1, 2):
        rows = [{"id": 500 + i, "v": f"b{i}"}]
        branch_ids.append(append(branch, rows))
        branch_rows += rows
    set_consumer(rec.root, "on-branch", 5, branch="b1")
    create_branch(rec.table, "empty")
    return rec.scenario(
        "b1 from tag t4 (+2 branch commits, consumer on-branch=5); 'empty' branch has no snapshot",
        branch_expected={"b1": sort_rows(branch_rows), "empty": []},
        branch_snapshot_ids={"b1": branch_ids, "empty": []},
    )


def external_paths(warehouse: Path, ext_root: Path) -> Scenario:
    """Partitioned append table writing data files outside the table root.

    ``data-file.external-paths=file://<ext_root>/p1,file://<ext_root>/p2`` with
    ``round-robin``; ``_EXTERNAL_PATH`` is recorded as ``file:/<abs path>``
    (single slash), the file lives under ``<ext>/dt=../bucket-0/``. Four
    appends, then an overwrite of dt=a (snapshot 5); tag ``before-overwrite`` at 4.
    """
    ext = Path(ext_root).resolve()
    paths = ",".join(f"file://{ext / p}" for p in ("p1", "p2"))
    schema = pa.schema([("id", pa.int64()), ("dt", pa.string())])
    rec = _Recorder(
        warehouse,
        "external_paths",
        schema,
        partition_keys=("dt",),
        options={
            "data-file.external-paths": paths,
            "data-file.external-paths.strategy": "round-robin",
        },
    )
    for i in range(1, 5):
        rec.append([{"id": i, "dt": "a" if i % 2 else "b"}])
    rec.overwrite([{"id": 99, "dt": "a"}], {"dt": "a"})
    rec.tag("before-overwrite", 4)
    return rec.scenario(f"data files under {ext}/p1 and {ext}/p2 (round-robin start is random)")


def path_directory(warehouse: Path) -> Scenario:
    """Partitioned append table with ``data-file.path-directory=data``: data files
    live in ``<root>/data/dt=../bucket-0/``. Three appends, then an overwrite."""
    schema = pa.schema([("id", pa.int64()), ("dt", pa.string())])
    rec = _Recorder(
        warehouse,
        "path_directory",
        schema,
        partition_keys=("dt",),
        options={"data-file.path-directory": "data"},
    )
    for i in range(1, 4):
        rec.append([{"id": i, "dt": "a" if i % 2 else "b"}])
    rec.overwrite([{"id": 99, "dt": "b"}], {"dt": "b"})
    return rec.scenario("data files under <root>/data/")


def unpartitioned_pk_dv(warehouse: Path) -> Scenario:
    """Unpartitioned PK table (bucket=1) WITHOUT deletion vectors.

    pypaimon accepts ``deletion-vectors.enabled=true`` on a PK table, but writes
    only level-0 files, which DV readers skip until a compaction that pypaimon
    cannot run: every read returns no rows and no DV index is written. See
    :func:`append_deletion_vectors` for a table with real deletion vectors.
    Four snapshots: insert ids 0..4, upsert 0..1, delete 2, insert 5.
    """
    schema = pa.schema(
        [pa.field("id", pa.int64(), nullable=False), ("v", pa.string()), ("rk", pa.string())]
    )
    rec = _Recorder(
        warehouse,
        "unpartitioned_pk",
        schema,
        primary_keys=("id",),
        options={"bucket": "1", "rowkind.field": "rk"},
        row_kind_field="rk",
    )
    rec.append([{"id": i, "v": "a", "rk": "+I"} for i in range(5)])
    rec.append([{"id": i, "v": "b", "rk": "+U"} for i in range(2)])
    rec.append([{"id": 2, "v": None, "rk": "-D"}])
    rec.append([{"id": 5, "v": "c", "rk": "+I"}])
    return rec.scenario("no deletion vectors: pypaimon cannot compact, so DV PK tables read empty")


def append_deletion_vectors(warehouse: Path) -> Scenario:
    """Append table with ``row-tracking``, ``data-evolution`` and
    ``deletion-vectors`` enabled: deletes write DV index files (``index/``) and
    index manifests (``manifest/index-manifest-*``).

    Snapshots 1, 2: appends of ids 0..4 and 5..7; 3: delete id 2; 4: delete
    id 6 (snapshot 4's index manifest replaces the DV file of snapshot 3).
    """
    schema = pa.schema([("id", pa.int64()), ("v", pa.string())])
    rec = _Recorder(
        warehouse,
        "append_dv",
        schema,
        options={
            "row-tracking.enabled": "true",
            "data-evolution.enabled": "true",
            "deletion-vectors.enabled": "true",
        },
    )
    rec.append([{"id": i, "v": "a"} for i in range(5)])
    rec.append([{"id": i, "v": "b"} for i in range(5, 8)])
    for doomed in (2, 6):
        builder = rec.table.new_batch_write_builder()
        predicate = rec.table.new_read_builder().new_predicate_builder().equal("id", doomed)
        commit = builder.new_commit()
        try:
            commit.commit(builder.new_update().delete_by_predicate(predicate))
        finally:
            commit.close()
        rec.rows = [r for r in rec.rows if r["id"] != doomed]
        rec._record(_require_latest(rec.table))
    return rec.scenario("deletes are OVERWRITE snapshots adding DV index files")


def many_commits(warehouse: Path, n: int = 30) -> Scenario:
    """Unpartitioned append table with ``n`` snapshots of one row each; snapshot
    ``n // 2`` is a whole-table overwrite (so earlier files are DELETEd)."""
    schema = pa.schema([("id", pa.int64()), ("v", pa.string())])
    rec = _Recorder(warehouse, "many_commits", schema)
    for i in range(1, n + 1):
        row = [{"id": i, "v": f"c{i}"}]
        if i == n // 2:
            rec.overwrite(row)
        else:
            rec.append(row)
    return rec.scenario(f"whole-table overwrite at snapshot {n // 2}")


BUILDERS: dict[str, Callable[[Path], Scenario]] = {
    "append_partitioned": append_partitioned,
    "pk_table": pk_table,
    "awkward_partitions": awkward_partitions,
    "typed_partitions": typed_partitions,
    "tags_consumers_branches": tags_consumers_branches,
    "path_directory": path_directory,
    "unpartitioned_pk_dv": unpartitioned_pk_dv,
    "append_deletion_vectors": append_deletion_vectors,
    "many_commits": many_commits,
}
"""Builders taking only a warehouse (``external_paths`` also needs ``ext_root``)."""


DATED_DAYS = ("2024-07-01", "2024-07-02", "2024-07-03", "2024-07-08", "2024-07-09")


def dated_partitions(
    warehouse: Path, name: str = "dated_partitions", *, undated: bool = True
) -> Scenario:
    """Append table partitioned by (dt STRING 'yyyy-MM-dd', hr STRING 'HH') for partition
    expiry: two appends over ``DATED_DAYS`` x hours 00/11, then one append into the
    awkward partitions (dt='2024-07-01', hr='a,b') (a comma inside a value, PR #9277)
    and (dt='par-1', hr='00') (no date: values-time keeps it and a real run fails), or
    without ``undated`` (dt='2999-01-01', hr='00') (a date that never expires). Tag
    ``before`` at 2."""
    schema = pa.schema([("id", pa.int64()), ("dt", pa.string()), ("hr", pa.string())])
    rec = _Recorder(warehouse, name, schema, partition_keys=("dt", "hr"))
    for c in range(2):
        rec.append(
            [
                {"id": 100 * c + 10 * d + h, "dt": day, "hr": hr}
                for d, day in enumerate(DATED_DAYS)
                for h, hr in enumerate(("00", "11"))
            ]
        )
    rec.tag("before", 2)
    last = {"id": 901, "dt": "par-1" if undated else "2999-01-01", "hr": "00"}
    rec.append([{"id": 900, "dt": "2024-07-01", "hr": "a,b"}, last])
    return rec.scenario("dated partitions with a comma value and a non-date value")
