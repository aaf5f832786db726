"""Test-table factory: real Paimon tables written by pypaimon-rust (Apache paimon-rust).

pypaimon-rust is a second, current Paimon implementation beside pypaimon and Java Paimon:
it writes through DataFusion SQL (``CREATE TABLE ... WITH (...)``, ``INSERT``,
``INSERT OVERWRITE``, ``MERGE INTO``, ``ALTER TABLE``, ``TRUNCATE``, ``CALL sys.*``), and
reads back any snapshot or tag with ``SELECT ... VERSION AS OF <id | 'tag'>``.

pypaimon-rust behaviour worth knowing (0.4.0):

* Procedures need named arguments (``CALL paimon.sys.create_tag(table => 'db.t', tag =>
  't1', snapshot_id => 2)``); it has ``create_tag``, ``delete_tag``, ``rename_tag``,
  ``create_tag_from_timestamp``, ``rollback_to`` (``snapshot_id`` or ``tag``) and
  ``rollback_to_timestamp``, and no expiry, compaction or orphan cleaning.
* Avro manifests honour ``manifest.compression`` zstd (default), snappy, deflate and none;
  lz4, bzip2 and xz are refused.

Run as a script (``python tests/support/rust_writer.py codec-tables OUT``) it writes the tables
``scripts/plain_install_check.py`` maintains with a plain install.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import sys
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeAlias

import pyarrow as pa

try:
    from pypaimon_rust.datafusion import SQLContext
except ModuleNotFoundError:
    if "pytest" not in sys.modules:  # run as a script (scripts/plain_install_check.py)
        raise
    # a test dependency: without it every test module using this one skips, saying how to
    # get it (or fails where every test must run)
    from support.fixtures import missing

    missing("needs pypaimon-rust (a test dependency): pip install -e '.[dev]'")

Row: TypeAlias = dict[str, Any]

CATALOG = "paimon"
DB = "db"
#: every manifest.compression pypaimon-rust writes (each an Avro codec fastavro must read)
MANIFEST_CODECS = ("zstd", "snappy", "deflate", "none")
#: an orphan planted with this age is past delete-orphan-files' default one-day floor
ORPHAN_AGE_SECONDS = 3 * 24 * 3600


def sort_rows(rows: Iterable[Row]) -> list[Row]:
    """Rows in a stable order (None before values, column by column)."""
    return sorted(rows, key=lambda r: tuple((v is not None, repr(v)) for v in r.values()))


class RustWarehouse:
    """One pypaimon-rust filesystem catalog (database ``db``) at ``root``."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)
        self.ctx = SQLContext()
        self.ctx.register_catalog(CATALOG, {"warehouse": str(self.root)})
        self.sql(f"CREATE SCHEMA IF NOT EXISTS {CATALOG}.{DB}")

    def sql(self, statement: str) -> list[Row]:
        """Run one statement; its result rows."""
        batches = self.ctx.sql(statement)
        return pa.Table.from_batches(batches).to_pylist() if batches else []

    def table_root(self, name: str) -> Path:
        return self.root / f"{DB}.db" / name

    def qualified(self, name: str) -> str:
        return f"{CATALOG}.{DB}.{name}"

    def call(self, procedure: str, name: str, **args: object) -> None:
        """``CALL paimon.sys.<procedure>(table => 'db.<name>', ...)``."""
        named = ", ".join(
            [f"table => '{DB}.{name}'", *(f"{k} => {_sql(v)}" for k, v in args.items())]
        )
        self.sql(f"CALL {CATALOG}.sys.{procedure}({named})")

    def read(self, name: str, *, version: int | str | None = None) -> list[Row]:
        """The rows pypaimon-rust reads at the latest snapshot, a snapshot id or a tag."""
        travel = "" if version is None else f" VERSION AS OF {_sql(version)}"
        return sort_rows(self.sql(f"SELECT * FROM {self.qualified(name)}{travel}"))


def _sql(value: object) -> str:
    """A SQL literal for a Python value (None, numbers, strings, bytes, dates)."""
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, bytes):
        return f"X'{value.hex()}'"
    if isinstance(value, dt.date):
        return f"DATE '{value.isoformat()}'"
    return "'" + str(value).replace("'", "''") + "'"


def values(rows: Sequence[Sequence[object]]) -> str:
    """``(1, 'a'), (2, 'b')`` for an INSERT."""
    return ", ".join("(" + ", ".join(_sql(v) for v in row) + ")" for row in rows)


def plant_orphan(table_root: Path, name: str = "data-orphan-0.parquet") -> Path:
    """A stray data file (a failed writer's leftover) in the table's first bucket directory,
    old enough for orphan cleaning."""
    path = min(table_root.glob("**/bucket-*")) / name
    path.write_bytes(b"orphan")
    old = time.time() - ORPHAN_AGE_SECONDS
    os.utime(path, (old, old))
    return path


def codec_tables(warehouse: Path) -> list[Path]:
    """Per manifest codec, an append table and a primary-key table with a few snapshots, a
    tag, an overwrite and a planted orphan: what the plain-install check maintains."""
    wh = RustWarehouse(warehouse)
    roots = []
    for codec in MANIFEST_CODECS:
        for table in (_codec_append(wh, codec), _codec_pk(wh, codec)):
            plant_orphan(table.root)
            roots.append(table.root)
    return roots


# --------------------------------------------------------------------------
# Scenarios: one table each, with what pypaimon-rust read at every snapshot and tag
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class RustTable:
    """A table pypaimon-rust wrote, and the rows it read back right after writing it."""

    name: str
    root: Path
    partition_keys: tuple[str, ...]
    primary_keys: tuple[str, ...]
    #: snapshot id -> sorted rows read with ``VERSION AS OF <id>``
    snapshots: dict[int, list[Row]]
    #: tag name -> (its snapshot id, sorted rows read with ``VERSION AS OF '<tag>'``)
    tags: dict[str, tuple[int, list[Row]]]
    #: the rows a reader gets once every file is compacted, where the latest read differs
    #: (first-row, deletion vectors and postpone buckets hide files until compacted)
    merged: list[Row] | None = None
    notes: str = ""

    @property
    def latest(self) -> int:
        return max(self.snapshots)

    @property
    def expected_after_compaction(self) -> list[Row]:
        return self.merged if self.merged is not None else self.snapshots[self.latest]


def record(
    wh: RustWarehouse, name: str, notes: str, *, merged: Sequence[Row] | None = None
) -> RustTable:
    """Read back every snapshot and tag of ``name`` as the table is now."""
    info = wh.sql(f"SELECT schema_id FROM {wh.qualified(name + '$snapshots')} LIMIT 1")
    assert info, f"{name}: no snapshot written"
    schema = wh.sql(
        f"SELECT partition_keys, primary_keys FROM {wh.qualified(name + '$schemas')} "
        "ORDER BY schema_id DESC LIMIT 1"
    )[0]
    ids = [
        r["snapshot_id"]
        for r in wh.sql(f"SELECT snapshot_id FROM {wh.qualified(name + '$snapshots')}")
    ]
    tags = wh.sql(f"SELECT tag_name, snapshot_id FROM {wh.qualified(name + '$tags')}")
    return RustTable(
        name=name,
        root=wh.table_root(name),
        partition_keys=tuple(json.loads(schema["partition_keys"])),
        primary_keys=tuple(json.loads(schema["primary_keys"])),
        snapshots={sid: wh.read(name, version=sid) for sid in ids},
        tags={
            t["tag_name"]: (t["snapshot_id"], wh.read(name, version=t["tag_name"])) for t in tags
        },
        merged=sort_rows(merged) if merged is not None else None,
        notes=notes,
    )


def _create(
    wh: RustWarehouse,
    name: str,
    columns: str,
    options: Mapping[str, str],
    *,
    partitioned_by: str = "",
) -> None:
    with_ = ", ".join(f"{_sql(k)} = {_sql(v)}" for k, v in options.items())
    parts = f" PARTITIONED BY ({partitioned_by})" if partitioned_by else ""
    wh.sql(
        f"CREATE TABLE {wh.qualified(name)} ({columns}){parts}"
        + (f" WITH ({with_})" if with_ else "")
    )


def _insert(
    wh: RustWarehouse, name: str, rows: Sequence[Sequence[object]], columns: str = ""
) -> None:
    target = f"{wh.qualified(name)} ({columns})" if columns else wh.qualified(name)
    wh.sql(f"INSERT INTO {target} VALUES {values(rows)}")


def _codec_append(wh: RustWarehouse, codec: str) -> RustTable:
    name = f"codec_{codec}_append"
    _create(
        wh,
        name,
        "id INT, v STRING, dt STRING",
        {"manifest.compression": codec},
        partitioned_by="dt",
    )
    for i in range(4):
        _insert(wh, name, [(i, f"v{i}", f"d{i % 2}"), (i + 10, f"w{i}", "d0")])
    wh.call("create_tag", name, tag="t2", snapshot_id=2)
    wh.sql(f"INSERT OVERWRITE {wh.qualified(name)} VALUES {values([(99, 'x', 'd1')])}")
    return record(wh, name, f"append, manifest.compression={codec}, tag, dynamic overwrite")


def _codec_pk(wh: RustWarehouse, codec: str) -> RustTable:
    name = f"codec_{codec}_pk"
    _create(
        wh,
        name,
        "id INT, v STRING, PRIMARY KEY (id)",
        {"manifest.compression": codec, "bucket": "2"},
    )
    for i in range(4):
        _insert(wh, name, [(i % 3, f"v{i}")])
    wh.call("create_tag", name, tag="t2", snapshot_id=2)
    return record(wh, name, f"primary key, manifest.compression={codec}, tag")


def _pk_upserts(
    wh: RustWarehouse, name: str, rows_per_commit: Sequence[Sequence[Sequence[object]]]
) -> None:
    for rows in rows_per_commit:
        _insert(wh, name, rows)


# Three commits over keys 1..4; key 1 written three times, key 2 twice.
PK_COMMITS: tuple[tuple[tuple[object, ...], ...], ...] = (
    ((1, "a", 10), (2, "b", 20), (3, "c", 30)),
    ((1, "a2", 11), (4, "d", 40)),
    ((1, None, 12), (2, "b2", None)),
)


def _pk_table(
    wh: RustWarehouse,
    name: str,
    options: Mapping[str, str],
    notes: str,
    *,
    merged: Sequence[Row] | None = None,
) -> RustTable:
    cols = "id INT, v STRING, n INT, PRIMARY KEY (id)"
    _create(wh, name, cols, {"bucket": "2", **options})
    _pk_upserts(wh, name, PK_COMMITS)
    wh.call("create_tag", name, tag="first", snapshot_id=1)
    return record(wh, name, notes, merged=merged)


def _last_per_key(commits: Sequence[Sequence[Sequence[object]]]) -> list[Row]:
    rows: dict[object, Row] = {}
    for commit in commits:
        for r in commit:
            rows[r[0]] = {"id": r[0], "v": r[1], "n": r[2]}
    return list(rows.values())


def _first_per_key(commits: Sequence[Sequence[Sequence[object]]]) -> list[Row]:
    rows: dict[object, Row] = {}
    for commit in commits:
        for r in commit:
            rows.setdefault(r[0], {"id": r[0], "v": r[1], "n": r[2]})
    return list(rows.values())


def append_unaware(wh: RustWarehouse) -> RustTable:
    name = "append_unaware"
    _create(wh, name, "id INT, v STRING, dt STRING", {}, partitioned_by="dt")
    for i in range(5):
        _insert(wh, name, [(i, f"v{i}", "2024-01-01"), (i + 100, f"w{i}", "2024-01-02")])
    wh.call("create_tag", name, tag="t3", snapshot_id=3)
    return record(wh, name, "append, bucket -1, partitioned, five small commits per partition")


def append_fixed_bucket(wh: RustWarehouse) -> RustTable:
    name = "append_fixed_bucket"
    _create(wh, name, "id INT, v STRING", {"bucket": "2", "bucket-key": "id"})
    for i in range(4):
        _insert(wh, name, [(i, f"v{i}"), (i + 10, f"w{i}")])
    wh.call("create_tag", name, tag="t2", snapshot_id=2)
    return record(wh, name, "append, fixed buckets (bucket-key id)")


def append_deletion_vectors(wh: RustWarehouse) -> RustTable:
    name = "append_deletion_vectors"
    _create(wh, name, "id INT, v STRING", {"deletion-vectors.enabled": "true"})
    _insert(wh, name, [(i, f"v{i}") for i in range(6)])
    _insert(wh, name, [(i, f"w{i}") for i in range(6, 9)])
    wh.sql(f"DELETE FROM {wh.qualified(name)} WHERE id IN (1, 2, 7)")
    wh.call("create_tag", name, tag="before_delete", snapshot_id=2)
    return record(
        wh,
        name,
        "append with deletion-vectors.enabled; pypaimon-rust 0.4 DELETE rewrites the files "
        "(OVERWRITE), no vectors",
    )


def pk_deduplicate(wh: RustWarehouse) -> RustTable:
    return _pk_table(wh, "pk_deduplicate", {}, "primary key, deduplicate, fixed buckets")


def pk_partial_update(wh: RustWarehouse) -> RustTable:
    return _pk_table(wh, "pk_partial_update", {"merge-engine": "partial-update"}, "partial-update")


def pk_aggregation(wh: RustWarehouse) -> RustTable:
    return _pk_table(
        wh,
        "pk_aggregation",
        {
            "merge-engine": "aggregation",
            "fields.n.aggregate-function": "sum",
            "fields.v.aggregate-function": "last_non_null_value",
        },
        "aggregation (sum, last_non_null_value)",
    )


def pk_first_row(wh: RustWarehouse) -> RustTable:
    return _pk_table(
        wh,
        "pk_first_row",
        {"merge-engine": "first-row"},
        "first-row: rows visible once compacted",
        merged=_first_per_key(PK_COMMITS),
    )


def pk_sequence_field(wh: RustWarehouse) -> RustTable:
    name = "pk_sequence_field"
    _create(
        wh,
        name,
        "id INT, v STRING, ts BIGINT, PRIMARY KEY (id)",
        {"bucket": "1", "sequence.field": "ts"},
    )
    _insert(wh, name, [(1, "a", 5), (2, "b", 1)])
    _insert(wh, name, [(1, "older", 3), (2, "newer", 2)])
    wh.call("create_tag", name, tag="first", snapshot_id=1)
    return record(wh, name, "sequence.field orders records, not commits")


def pk_dynamic_bucket(wh: RustWarehouse) -> RustTable:
    return _pk_table(wh, "pk_dynamic_bucket", {"bucket": "-1"}, "dynamic bucket (hash index files)")


def pk_postpone_bucket(wh: RustWarehouse) -> RustTable:
    return _pk_table(
        wh,
        "pk_postpone_bucket",
        {"bucket": "-2"},
        "postpone bucket: rows visible once compacted",
        merged=_last_per_key(PK_COMMITS),
    )


def pk_deletion_vectors(wh: RustWarehouse) -> RustTable:
    return _pk_table(
        wh,
        "pk_deletion_vectors",
        {"deletion-vectors.enabled": "true"},
        "deletion vectors: level-0 visible once compacted",
        merged=_last_per_key(PK_COMMITS),
    )


def pk_changelog_input(wh: RustWarehouse) -> RustTable:
    return _pk_table(
        wh, "pk_changelog_input", {"changelog-producer": "input"}, "changelog-producer input"
    )


def pk_changelog_lookup(wh: RustWarehouse) -> RustTable:
    return _pk_table(
        wh,
        "pk_changelog_lookup",
        {"changelog-producer": "lookup"},
        "changelog-producer lookup (changelog comes with compaction)",
    )


def pk_changelog_full_compaction(wh: RustWarehouse) -> RustTable:
    return _pk_table(
        wh,
        "pk_changelog_full_compaction",
        {"changelog-producer": "full-compaction"},
        "changelog-producer full-compaction",
    )


def pk_thin_mode(wh: RustWarehouse) -> RustTable:
    return _pk_table(
        wh, "pk_thin_mode", {"data-file.thin-mode": "true"}, "data-file.thin-mode = true"
    )


def pk_partitioned_overwrite(wh: RustWarehouse) -> RustTable:
    name = "pk_partitioned_overwrite"
    _create(
        wh,
        name,
        "id INT, v STRING, p INT, PRIMARY KEY (id, p)",
        {"bucket": "2"},
        partitioned_by="p",
    )
    _insert(wh, name, [(1, "a", 1), (2, "b", 2), (3, "c", 3)])
    _insert(wh, name, [(1, "a2", 1), (4, "d", 3)])
    wh.call("create_tag", name, tag="before_overwrite", snapshot_id=2)
    wh.sql(f"INSERT OVERWRITE {wh.qualified(name)} PARTITION (p = 1) SELECT 5, 'e'")
    wh.sql(f"ALTER TABLE {wh.qualified(name)} DROP PARTITION (p = 2)")
    _insert(wh, name, [(6, "f", 3)])
    return record(wh, name, "INSERT OVERWRITE a partition, DROP PARTITION, primary key")


def append_truncate(wh: RustWarehouse) -> RustTable:
    name = "append_truncate"
    _create(wh, name, "id INT, v STRING", {})
    _insert(wh, name, [(1, "a"), (2, "b")])
    _insert(wh, name, [(3, "c")])
    wh.call("create_tag", name, tag="full", snapshot_id=2)
    wh.sql(f"TRUNCATE TABLE {wh.qualified(name)}")
    _insert(wh, name, [(4, "d")])
    return record(wh, name, "TRUNCATE TABLE between appends, tag before it")


def pk_rollback(wh: RustWarehouse) -> RustTable:
    name = "pk_rollback"
    _create(wh, name, "id INT, v STRING, PRIMARY KEY (id)", {"bucket": "1"})
    for i in range(4):
        _insert(wh, name, [(i % 2, f"v{i}"), (i + 10, f"w{i}")])
    wh.call("create_tag", name, tag="t2", snapshot_id=2)
    wh.call("rollback_to", name, snapshot_id=2)
    _insert(wh, name, [(7, "after_rollback")])
    return record(
        wh, name, "rolled back to snapshot 2 (its data files left behind), then written on"
    )


def schema_evolution(wh: RustWarehouse) -> RustTable:
    name = "schema_evolution"
    _create(
        wh,
        name,
        "id INT, a INT, b STRING, c BIGINT, PRIMARY KEY (id)",
        {"bucket": "1", "merge-engine": "aggregation", "fields.a.aggregate-function": "max"},
    )
    _insert(wh, name, [(1, 1, "x", 10), (2, 2, "y", 20)])
    q = wh.qualified(name)
    wh.sql(f"ALTER TABLE {q} ADD COLUMN d DOUBLE")
    _insert(wh, name, [(1, 5, "x2", 11, 1.5)])
    wh.sql(f"ALTER TABLE {q} RENAME COLUMN b TO bb")
    wh.sql(f"ALTER TABLE {q} DROP COLUMN c")
    wh.sql(f"ALTER TABLE {q} ALTER COLUMN a TYPE BIGINT")
    _insert(wh, name, [(3, 7, "z", 2.5)])
    wh.call("create_tag", name, tag="schema0", snapshot_id=1)
    return record(wh, name, "ADD, RENAME, DROP COLUMN and INT -> BIGINT between commits")


def file_index(wh: RustWarehouse) -> RustTable:
    name = "file_index"
    _create(
        wh,
        name,
        "id INT, v STRING",
        {"file-index.bloom-filter.columns": "v", "file-index.bitmap.columns": "id"},
    )
    for i in range(3):
        _insert(wh, name, [(i, f"v{i}"), (i + 10, f"w{i}")])
    wh.call("create_tag", name, tag="t1", snapshot_id=1)
    return record(wh, name, "bloom-filter and bitmap file indexes (.index extra files)")


def row_tracking(wh: RustWarehouse) -> RustTable:
    name = "row_tracking"
    _create(wh, name, "id INT, v STRING", {"row-tracking.enabled": "true"})
    _insert(wh, name, [(1, "a"), (2, "b")])
    _insert(wh, name, [(3, "c")])
    wh.sql(f"DELETE FROM {wh.qualified(name)} WHERE id = 1")
    wh.call("create_tag", name, tag="t2", snapshot_id=2)
    return record(wh, name, "row-tracking.enabled, DELETE")


def data_evolution(wh: RustWarehouse) -> RustTable:
    name = "data_evolution"
    _create(
        wh,
        name,
        "id INT, v STRING, w INT",
        {"row-tracking.enabled": "true", "data-evolution.enabled": "true"},
    )
    _insert(wh, name, [(1, "a", 1), (2, "b", 2), (3, "c", 3)], "id, v, w")
    q = wh.qualified(name)
    wh.sql(
        f"MERGE INTO {q} t USING (SELECT 1 AS id, 'z' AS v) s ON t.id = s.id "
        "WHEN MATCHED THEN UPDATE SET v = s.v"
    )
    wh.sql(f"UPDATE {q} SET w = 9 WHERE id = 2")
    _insert(wh, name, [(4, "d", 4)], "id, v, w")
    wh.call("create_tag", name, tag="before_merge", snapshot_id=1)
    return record(wh, name, "data evolution: MERGE INTO and UPDATE write partial-column files")


def blob_column(wh: RustWarehouse) -> RustTable:
    name = "blob_column"
    _create(
        wh,
        name,
        "id INT, b BLOB, p INT",
        {"row-tracking.enabled": "true", "data-evolution.enabled": "true"},
        partitioned_by="p",
    )
    _insert(wh, name, [(1, b"\x01\x02", 1), (2, b"\x03\x04", 1)], "id, b, p")
    _insert(wh, name, [(3, b"\x05", 1), (4, b"", 2)], "id, b, p")
    wh.call("create_tag", name, tag="t1", snapshot_id=1)
    return record(wh, name, "BLOB column (.blob files beside the parquet files)")


def global_index(wh: RustWarehouse) -> RustTable:
    name = "global_index"
    _create(
        wh,
        name,
        "id INT, v STRING, w INT",
        {"row-tracking.enabled": "true", "data-evolution.enabled": "true"},
    )
    _insert(wh, name, [(1, "a", 1), (2, "b", 2)], "id, v, w")
    wh.call("create_global_index", name, index_column="v", index_type="bitmap")
    _insert(wh, name, [(3, "c", 3)], "id, v, w")
    wh.call("create_global_index", name, index_column="id", index_type="btree")
    wh.call("create_tag", name, tag="t2", snapshot_id=2)
    return record(wh, name, "global bitmap and btree indexes (index manifest, index/ files)")


def date_partitions(wh: RustWarehouse) -> RustTable:
    name = "date_partitions"
    _create(wh, name, "id INT, v STRING, dt DATE", {}, partitioned_by="dt")
    _insert(wh, name, [(1, "old", dt.date(2020, 1, 1)), (2, "new", dt.date(2099, 1, 1))])
    _insert(wh, name, [(3, "older", dt.date(2019, 6, 1))])
    wh.call("create_tag", name, tag="t1", snapshot_id=1)
    return record(wh, name, "DATE partition with legacy names (dt=18262)")


def external_paths(wh: RustWarehouse, external_root: Path) -> RustTable:
    """Not in the shared set: its files live outside the table root, so a copy of the root
    would share them; each destructive test builds its own."""
    name = "external_paths"
    _create(
        wh,
        name,
        "id INT, v STRING",
        {
            "data-file.external-paths": f"file://{external_root}",
            "data-file.external-paths.strategy": "round-robin",
        },
    )
    for i in range(3):
        _insert(wh, name, [(i, f"v{i}")])
    wh.call("create_tag", name, tag="t1", snapshot_id=1)
    return record(wh, name, "data-file.external-paths (round-robin)")


#: every shared scenario, by table name
BUILDERS: dict[str, Callable[[RustWarehouse], RustTable]] = {
    f.__name__: f
    for f in (
        append_unaware,
        append_fixed_bucket,
        append_deletion_vectors,
        append_truncate,
        pk_deduplicate,
        pk_partial_update,
        pk_aggregation,
        pk_first_row,
        pk_sequence_field,
        pk_dynamic_bucket,
        pk_postpone_bucket,
        pk_deletion_vectors,
        pk_changelog_input,
        pk_changelog_lookup,
        pk_changelog_full_compaction,
        pk_thin_mode,
        pk_partitioned_overwrite,
        pk_rollback,
        schema_evolution,
        file_index,
        row_tracking,
        data_evolution,
        blob_column,
        global_index,
        date_partitions,
    )
}


def write_all(warehouse: Path) -> dict[str, RustTable]:
    """Every shared scenario plus the codec tables, each read back once; orphans planted."""
    wh = RustWarehouse(warehouse)
    tables = {name: build(wh) for name, build in BUILDERS.items()}
    for codec in ("zstd", "snappy", "none"):
        for table in (_codec_append(wh, codec), _codec_pk(wh, codec)):
            tables[table.name] = table
    return tables


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] != "codec-tables":
        sys.exit("usage: rust_writer.py codec-tables WAREHOUSE")
    for root in codec_tables(Path(sys.argv[2])):
        print(root)
