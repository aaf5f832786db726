"""compact: Paimon's file selection, rows unchanged for every reader, one safe COMPACT commit."""

from __future__ import annotations

import dataclasses
import datetime as dt
import decimal
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.orc as orc
import pyarrow.parquet as pq
import pytest
from support import pypaimon_writer as pw
from support.fixtures import JAVA_FIXTURES
from support.invariants import assert_no_dangling_references, files_under, tree_state
from support.lifecycle import apply

import core.compaction.compact_commit as compact_commit
from core.compaction.compact import (
    CompactConflictError,
    CompactFlags,
    CompactPlan,
    UnsupportedTableError,
    apply_compact,
    changes_since,
    plan_compact,
    rewrite_task,
)
from core.errors import InvalidOptionError
from core.format import binary_row
from core.format.data_files import FileLayout, column_stats, read_raw
from core.format.types import parse_type
from core.ops.expiry.expire_snapshots import ExpireFlags, plan_expire_snapshots
from core.ops.expiry.expire_snapshots_checks import recheck
from core.runtime.executors.local import LocalExecutor
from core.runtime.report import ExecutionReport
from core.table.table import PaimonTable, open_table

NOW = 4_000_000_000_000


def _table(root: Path, **dynamic: str) -> PaimonTable:
    return open_table(str(root), dynamic_options=dynamic or None)


def _compact(root: Path, flags: CompactFlags | None = None, **kw: Any) -> Any:
    t = _table(root)
    cplan = plan_compact(t, flags or CompactFlags(), now_ms=NOW)
    with LocalExecutor(4) as ex:
        return cplan, apply_compact(t, cplan, executor=ex, **kw)


def _live(root: Path) -> list[Any]:
    t = _table(root)
    latest = t.snapshots.latest()
    assert latest is not None
    return t.live_files(latest)


def _multiset(rows: Sequence[Mapping[str, Any]]) -> Counter[str]:
    return Counter(repr(sorted(r.items())) for r in rows)


def _write_commits(
    tmp_path: Path,
    name: str,
    schema: pa.Schema,
    batches: Sequence[Sequence[dict[str, Any]]],
    **kw: Any,
) -> Path:
    table = pw.create_table(tmp_path, f"db.{name}", schema, **kw)
    for rows in batches:
        pw.append(table, rows)
    return pw.table_root(tmp_path, f"db.{name}")


def _ids_table(tmp_path: Path, name: str, n: int = 6) -> Path:
    """One ``id`` column, one row per commit: ids 0..n-1 in n commits."""
    schema = pa.schema([("id", pa.int64())])
    return _write_commits(tmp_path, name, schema, [[{"id": c}] for c in range(n)])


def _expire(t: PaimonTable) -> None:
    """Expire every snapshot but the latest (retain 1)."""
    with LocalExecutor(2) as ex:
        plan = plan_expire_snapshots(t, ExpireFlags(1, 1, NOW, None), now_ms=NOW, executor=ex)
        apply(t, plan, recheck=recheck, executor=ex, report=ExecutionReport())


def _read(root: Path) -> list[dict[str, Any]]:
    return pw.read_rows_at_root(root)


NESTED = pa.schema(
    [
        ("id", pa.int64()),
        ("s", pa.string()),
        ("dt", pa.string()),
        ("d", pa.decimal128(12, 3)),
        ("ts", pa.timestamp("us")),
        ("day", pa.date32()),
        ("arr", pa.list_(pa.int32())),
        ("st", pa.struct([("a", pa.int32()), ("b", pa.string())])),
        ("m", pa.map_(pa.string(), pa.int64())),
    ]
)


def _nested_rows(commit: int, n: int = 4) -> list[dict[str, Any]]:
    rows = []
    for j in range(n):
        k = commit * 10 + j
        rows.append(
            {
                "id": k,
                "s": None if j == 0 else f"Two roads diverged in a yellow wood {k}",
                "dt": f"2024-01-0{1 + j % 2}",
                "d": None if j == 1 else decimal.Decimal(k) / 8,
                "ts": dt.datetime(2024, 1, 1, 12) + dt.timedelta(seconds=k, microseconds=7),
                "day": dt.date(2024, 1, 1) + dt.timedelta(days=k),
                "arr": None if j == 2 else [k, None, -k],
                "st": {"a": k, "b": None} if j != 3 else None,
                "m": {"x": k} if j else None,
            }
        )
    return rows


@pytest.mark.parametrize("partitioned", [True, False])
def test_append_table_rows_identical_and_fewer_files(tmp_path: Path, partitioned: bool) -> None:
    root = _write_commits(
        tmp_path,
        "nested",
        NESTED,
        [_nested_rows(c) for c in range(7)],
        partition_keys=["dt"] if partitioned else [],
    )
    before = _read(root)
    files_before = len(_live(root))
    cplan, result = _compact(root)
    assert result.commit.snapshot.commit_kind == "COMPACT"
    after = _read(root)
    assert _multiset(after) == _multiset(before)
    live = _live(root)
    assert len(live) == (2 if partitioned else 1) < files_before
    assert all(e.file.file_source == 1 and e.file.level == 0 for e in live)
    assert result.rows_before == result.rows_after == len(before)
    latest = _table(root).snapshots.latest()
    assert latest is not None and latest.delta_record_count == 0
    assert latest.total_record_count == len(before)
    assert_no_dangling_references(root)


@pytest.mark.parametrize("fmt", ["parquet", "orc", "avro"])
def test_formats_and_compression(tmp_path: Path, fmt: str) -> None:
    schema = pa.schema([("id", pa.int64()), ("s", pa.string()), ("x", pa.float64())])
    batches = [
        [{"id": c * 3 + j, "s": None if j else f"s{c}", "x": c / 3} for j in range(3)]
        for c in range(6)
    ]
    root = _write_commits(tmp_path, f"t_{fmt}", schema, batches, options={"file.format": fmt})
    before = _read(root)
    _compact(root)
    assert _multiset(_read(root)) == _multiset(before)
    (entry,) = _live(root)
    assert entry.file.file_name.endswith(f".{fmt}")
    assert entry.file.file_name.startswith("data-")
    assert_no_dangling_references(root)


@pytest.mark.parametrize("fmt", ["parquet", "orc", "avro"])
def test_inputs_read_the_same_from_a_path_or_from_bytes(tmp_path: Path, fmt: str) -> None:
    """Local inputs are read in place, remote ones from their bytes: same columns either way,
    selected by name (a file's own column order does not matter)."""
    schema = pa.schema([("id", pa.int64()), ("s", pa.string())])
    root = _write_commits(
        tmp_path, f"src_{fmt}", schema, [[{"id": 1, "s": "a"}]], options={"file.format": fmt}
    )
    t = _table(root)
    layout = FileLayout.of(t.schema.fields, t.schema.trimmed_primary_keys)
    (entry,) = _live(root)
    path = t.paths.data_file_path(entry)
    wanted = layout.arrow_schema()
    from_path = read_raw(path, entry.file.file_name, wanted, use_threads=False)
    from_bytes = read_raw(Path(path).read_bytes(), entry.file.file_name, wanted)
    assert from_path.to_pylist() == from_bytes.to_pylist() == [{"id": 1, "s": "a"}]
    reordered = pa.table({"s": ["b"], "extra": [1], "id": [2]})
    other = tmp_path / "reordered.parquet"
    pq.write_table(reordered, other)
    got = read_raw(str(other), other.name, pa.schema([("id", pa.int64()), ("s", pa.string())]))
    assert got.column_names == ["id", "s"] and got.to_pylist() == [{"id": 2, "s": "b"}]


def test_appended_sequence_numbers_follow_java(tmp_path: Path) -> None:
    """RowDataFileSequenceNumberTracker: a counter from the first input's min sequence."""
    schema = pa.schema([("id", pa.int64())])
    root = _write_commits(tmp_path, "seq", schema, [[{"id": c}, {"id": c + 100}] for c in range(6)])
    inputs = sorted(_live(root), key=lambda e: e.file.file_size)
    _compact(root)
    (out,) = _live(root)
    assert out.file.min_sequence_number == inputs[0].file.min_sequence_number
    assert out.file.max_sequence_number == out.file.min_sequence_number + 11


def test_unaware_bins_follow_the_coordinator(tmp_path: Path) -> None:
    """Fewer than compaction.min.file-num small files: left alone (AppendCompactCoordinator)."""
    root = _ids_table(tmp_path, "few", 4)
    cplan = plan_compact(_table(root), CompactFlags(), now_ms=NOW)
    assert cplan.tasks == ()
    # Each file weighs its size plus the open-file cost: two reach 2 x target, a bin closes.
    t = _table(root, **{"source.split.open-file-cost": "4 kb"})
    cplan = plan_compact(t, CompactFlags(target_file_size="4 kb"), now_ms=NOW)
    sizes = [len(task.inputs) for task in cplan.tasks]
    assert sizes == [2, 2]


def test_fixed_bucket_append_full_and_minor(tmp_path: Path) -> None:
    schema = pa.schema([("id", pa.int64()), ("v", pa.string())])
    root = _write_commits(
        tmp_path,
        "bucketed",
        schema,
        [[{"id": i, "v": f"c{c}"} for i in range(4)] for c in range(6)],
        options={"bucket": "2", "bucket-key": "id"},
    )
    before = _read(root)
    minor = plan_compact(_table(root), CompactFlags(strategy="minor"), now_ms=NOW)
    assert all(len(t.inputs) == 5 for t in minor.tasks) and minor.tasks
    _cplan, result = _compact(root)
    assert {e.bucket for e in _live(root)} == {0, 1}
    assert len(_live(root)) == 2 and result.files_before == 12
    assert _read(root) == before
    assert_no_dangling_references(root)


def _pk_table(tmp_path: Path, partitioned: bool, **options: str) -> tuple[Path, list[Any]]:
    """Upserts and -D deletes (rowkind.field); returns the root and its live files."""
    schema = pa.schema(
        [
            pa.field("id", pa.int64(), nullable=False),
            pa.field("dt", pa.string(), nullable=False),
            ("v", pa.string()),
            ("n", pa.list_(pa.int64())),
            ("rk", pa.string()),
        ]
    )
    root = _write_commits(
        tmp_path,
        "pk",
        schema,
        _pk_batches(),
        partition_keys=["dt"] if partitioned else [],
        primary_keys=["id", "dt"],
        options={"bucket": "2", "rowkind.field": "rk", **options},
    )
    return root, _live(root)


def _pk_batches() -> list[list[dict[str, Any]]]:
    batches = []
    for c in range(5):
        rows = [
            {
                "id": i,
                "dt": f"d{i % 2}",
                "v": None if i == c else f"v{c}-{i}",
                "n": [c, i],
                "rk": "+I",
            }
            for i in range(c + 1, c + 6)
        ]
        rows.append({"id": c, "dt": f"d{c % 2}", "v": None, "n": None, "rk": "-D"})
        batches.append(rows)
    return batches


def _pk_expected() -> list[dict[str, Any]]:
    """The merged view, computed independently: last write per key wins, -D deletes."""
    state: dict[tuple[Any, ...], dict[str, Any]] = {}
    for rows in _pk_batches():
        for r in rows:
            key = (r["id"], r["dt"])
            if r["rk"] == "-D":
                state.pop(key, None)
            else:
                state[key] = r
    return pw.sort_rows(state.values())


@pytest.mark.parametrize("partitioned", [True, False])
def test_pk_full_compaction_merged_view_identical(tmp_path: Path, partitioned: bool) -> None:
    root, inputs = _pk_table(tmp_path, partitioned)
    # pypaimon shows a key whose only record is -D before compaction (it writes
    # _DELETE_ROW_COUNT = 0 and reads such files raw); Paimon's merged view drops it.
    assert [r for r in _read(root) if r["rk"] != "-D"] == _pk_expected()
    _cplan, result = _compact(root)
    after = _read(root)
    assert after == _pk_expected()
    live = _live(root)
    assert len(live) < len(inputs)
    assert {e.file.level for e in live} == {5}
    assert all(e.file.delete_row_count == 0 and e.file.file_source == 1 for e in live)
    assert result.rows_after == len(after)
    # Physical layout, key range and sequence numbers exactly as a Java writer records them.
    t = _table(root)
    key_types = [parse_type("BIGINT NOT NULL")] + (
        [] if partitioned else [parse_type("STRING NOT NULL")]
    )
    out_pairs = []  # per output file: its (key id, sequence number) pairs
    for e in live:
        path = t.paths.data_file_path(e)
        data = pq.ParquetFile(path).read()
        keys_cols = ["_KEY_id"] if partitioned else ["_KEY_id", "_KEY_dt"]
        assert data.schema.names == [
            *keys_cols,
            "_SEQUENCE_NUMBER",
            "_VALUE_KIND",
            "id",
            "dt",
            "v",
            "n",
            "rk",
        ]
        assert data.schema.field("_SEQUENCE_NUMBER").metadata == {
            b"PARQUET:field_id": b"2147483646"
        }
        keys = list(zip(*(data.column(c).to_pylist() for c in keys_cols), strict=True))
        assert keys == sorted(keys) and len(set(keys)) == len(keys)
        seqs = data.column("_SEQUENCE_NUMBER").to_pylist()
        out_pairs.append(set(zip(data.column("_KEY_id").to_pylist(), seqs, strict=True)))
        assert (e.file.min_sequence_number, e.file.max_sequence_number) == (min(seqs), max(seqs))
        assert set(data.column("_VALUE_KIND").to_pylist()) <= {0, 2}
        raw = _raw_entry(t, e.file.file_name)["_FILE"]
        assert binary_row.decode(raw["_MIN_KEY"], key_types) == keys[0]
        assert binary_row.decode(raw["_MAX_KEY"], key_types) == keys[-1]
    # Survivors keep their sequence numbers: every output (key, seq) existed in an input.
    in_pairs = set()
    for e in inputs:
        d = pq.ParquetFile(t.paths.data_file_path(e)).read()
        in_pairs |= set(
            zip(
                d.column("_KEY_id").to_pylist(),
                d.column("_SEQUENCE_NUMBER").to_pylist(),
                strict=True,
            )
        )
    for pairs in out_pairs:
        assert pairs <= in_pairs
    assert_no_dangling_references(root)
    # A second run has nothing to do: one sorted run at the max level per bucket.
    assert plan_compact(_table(root), CompactFlags(), now_ms=NOW).tasks == ()


def _raw_entry(t: PaimonTable, name: str) -> dict[str, Any]:
    from core.write.live_entries import live_raw_entries

    latest = t.snapshots.latest()
    assert latest is not None
    (row,) = [r for r in live_raw_entries(t, latest) if r["_FILE"]["_FILE_NAME"] == name]
    return row


def test_pk_scenario_with_changelog_input_and_tags(
    scenarios: dict[str, pw.Scenario], copy_table: Callable[[Path], Path]
) -> None:
    sc = scenarios["pk_table"]
    root = copy_table(sc.root)
    before = _read(root)
    assert before == sc.expected[sc.snapshot_ids[-1]]
    _compact(root)
    assert _read(root) == before
    assert pw.read_rows_at_root(root, tag="mid") == sc.rows_at_tag("mid")
    assert_no_dangling_references(root)


def test_value_stats_bound_every_value(tmp_path: Path) -> None:
    root = _write_commits(tmp_path, "stats", NESTED, [_nested_rows(c) for c in range(6)])
    _compact(root)
    t = _table(root)
    (entry,) = _live(root)
    raw = _raw_entry(t, entry.file.file_name)["_FILE"]
    assert raw["_VALUE_STATS_COLS"] is None  # every column has stats (dense store)
    types = [f.type for f in t.schema.fields]
    nullable = [parse_type(str(x).replace(" NOT NULL", "")) for x in types]
    mins = binary_row.decode(raw["_VALUE_STATS"]["_MIN_VALUES"], nullable)
    maxs = binary_row.decode(raw["_VALUE_STATS"]["_MAX_VALUES"], nullable)
    rows = _read(root)
    s_values = [r["s"] for r in rows if r["s"] is not None]
    assert mins[1] == min(s_values)[:16] and maxs[1] > max(s_values)
    assert len(maxs[1]) == 16  # truncate(16)
    assert mins[0] == min(r["id"] for r in rows) and maxs[0] == max(r["id"] for r in rows)
    assert raw["_VALUE_STATS"]["_NULL_COUNTS"][1] == sum(r["s"] is None for r in rows)
    assert mins[6] is None and maxs[6] is None  # arrays: null counts only


def test_truncated_max_matches_java() -> None:
    col = pa.array(["Two roads diverged in a yellow wood", "A"])
    low, high, nulls = column_stats(col, parse_type("STRING"), "truncate(16)")  # type: ignore[misc]
    assert (low, high, nulls) == ("A", "Two roads diverh", 0)  # the Java fixture's value
    assert column_stats(col, parse_type("STRING"), "none") is None
    assert column_stats(col, parse_type("STRING"), "counts") == (None, None, 0)


def test_stats_mode_none_writes_no_value_stats(tmp_path: Path) -> None:
    schema = pa.schema([("id", pa.int64()), ("s", pa.string())])
    root = _write_commits(
        tmp_path,
        "nostats",
        schema,
        [[{"id": c, "s": "x"}] for c in range(6)],
        options={"metadata.stats-mode": "none", "fields.id.stats-mode": "full"},
    )
    _compact(root)
    (entry,) = _live(root)
    raw = _raw_entry(_table(root), entry.file.file_name)["_FILE"]
    assert raw["_VALUE_STATS_COLS"] == ["id"]
    assert raw["_VALUE_STATS"]["_NULL_COUNTS"] == [0]


def test_layout_matches_java_pk_files() -> None:
    """Column names, order, types and ids of Java's ORC PK data files."""
    java = JAVA_FIXTURES / "orc" / "pk_table_with_mor.db" / "pk_table_with_mor"
    schema = open_table(str(java)).schemas.schema(0)
    layout = FileLayout.of(schema.fields, schema.trimmed_primary_keys)
    data_file = next(java.rglob("data-*.orc"))
    physical = orc.ORCFile(str(data_file)).schema
    ours = layout.arrow_schema()
    assert physical.names == ours.names
    assert [f.type for f in physical] == [f.type for f in ours]
    assert [f.metadata[b"paimon.id"] for f in physical] == [
        f.metadata[b"PARQUET:field_id"] for f in ours
    ]


def test_expire_snapshots_deletes_compacted_away_files(tmp_path: Path) -> None:
    root = _ids_table(tmp_path, "exp")
    t = _table(root)
    old = {t.paths.data_file_path(e) for e in _live(root)}
    _compact(root)
    new = {t.paths.data_file_path(e) for e in _live(root)}
    _expire(_table(root))
    on_disk = files_under(root)
    assert not old & on_disk and new <= on_disk
    assert [r["id"] for r in _read(root)] == list(range(6))


def test_concurrent_append_during_compaction_loses_no_rows(tmp_path: Path) -> None:
    root = _ids_table(tmp_path, "conc")
    writer = pw.open_table(tmp_path, "db.conc")

    def concurrent_write() -> None:
        pw.append(writer, [{"id": 100}, {"id": 101}])

    _cplan, result = _compact(root, before_commit=concurrent_write)
    assert result.commit.snapshot.id == 8  # the writer took 7
    assert sorted(r["id"] for r in _read(root)) == [*range(6), 100, 101]
    assert_no_dangling_references(root)


def test_concurrent_compaction_aborts_and_removes_our_files(tmp_path: Path) -> None:
    root = _ids_table(tmp_path, "race")
    t = _table(root)
    cplan = plan_compact(t, CompactFlags(), now_ms=NOW)

    def other_compaction_wins() -> None:
        _compact(root)  # removes every input of our plan

    _conflicting_commit(t, cplan, other_compaction_wins)
    assert _table(root).snapshots.latest().id == 7  # type: ignore[union-attr]
    assert [r["id"] for r in _read(root)] == list(range(6))


def _conflicting_commit(
    t: PaimonTable, cplan: CompactPlan, before_commit: Callable[[], None]
) -> list[str]:
    """Apply expecting the commit to see an input removed: returns the files we wrote,
    which must all be deleted again."""
    ours: list[str] = []
    with LocalExecutor(2) as ex, pytest.raises(CompactConflictError, match="File deletion"):
        apply_compact(
            t,
            cplan,
            executor=ex,
            on_task=lambda out: ours.extend(out.paths),
            before_commit=before_commit,
        )
    assert ours and not any(Path(p).exists() for p in ours)
    return ours


def _forbid_full_live_read(monkeypatch: pytest.MonkeyPatch) -> None:
    """From here on, reading a snapshot's whole live set fails the test."""

    def forbidden(*_args: Any) -> Any:
        raise AssertionError("the commit re-read the full live set")

    monkeypatch.setattr(compact_commit, "live_raw_entries", forbidden)


def test_commit_on_the_planned_snapshot_reads_no_manifest(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = _ids_table(tmp_path, "same")
    t = _table(root)
    cplan = plan_compact(t, CompactFlags(), now_ms=NOW)
    _forbid_full_live_read(monkeypatch)
    monkeypatch.setattr(PaimonTable, "manifest", lambda *_a: pytest.fail("a manifest was read"))
    with LocalExecutor(2) as ex:
        result = apply_compact(t, cplan, executor=ex)
    assert result.commit is not None and result.commit.snapshot is not None
    assert [r["id"] for r in _read(root)] == list(range(6))


def test_commits_after_planning_are_checked_from_their_deltas(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = _ids_table(tmp_path, "deltas")
    writer = pw.open_table(tmp_path, "db.deltas")
    t = _table(root)
    cplan = plan_compact(t, CompactFlags(), now_ms=NOW)

    def two_appends() -> None:
        pw.append(writer, [{"id": 100}])
        pw.append(writer, [{"id": 101}])
        _forbid_full_live_read(monkeypatch)

    with LocalExecutor(2) as ex:
        result = apply_compact(t, cplan, executor=ex, before_commit=two_appends)
    assert result.commit is not None and result.commit.snapshot is not None
    assert result.commit.snapshot.id == 9  # 7 and 8 were the appends
    assert sorted(r["id"] for r in _read(root)) == [*range(6), 100, 101]
    assert len(_live(root)) == 3  # our output and the two appended files
    assert_no_dangling_references(root)


def test_input_removed_in_a_later_delta_aborts_and_removes_our_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Several commits after planning, one of them dropping a compacted partition: the
    delta manifests alone reveal it; nothing is committed and our outputs are deleted."""
    schema = pa.schema([("id", pa.int64()), ("p", pa.string())])
    batches = [[{"id": c, "p": "a"}, {"id": c + 100, "p": "b"}] for c in range(6)]
    root = _write_commits(tmp_path, "drop", schema, batches, partition_keys=["p"])
    writer = pw.open_table(tmp_path, "db.drop")
    t = _table(root)
    cplan = plan_compact(t, CompactFlags(), now_ms=NOW)
    assert len(cplan.tasks) == 2

    def drop_then_append() -> None:
        pw.append(writer, [{"id": 200, "p": "a"}])
        pw.drop_partitions(writer, [{"p": "b"}])
        pw.append(writer, [{"id": 201, "p": "a"}])
        _forbid_full_live_read(monkeypatch)

    assert len(_conflicting_commit(t, cplan, drop_then_append)) == 2
    assert _table(root).snapshots.latest().id == 9  # type: ignore[union-attr]
    assert sorted(r["id"] for r in _read(root)) == [*range(6), 200, 201]
    assert_no_dangling_references(root)


@pytest.mark.parametrize("removed", [False, True])
def test_planned_snapshot_expired_meanwhile_falls_back_to_the_full_check(
    tmp_path: Path, removed: bool
) -> None:
    """The delta history since planning is gone (snapshots expired): the commit checks the
    latest snapshot's whole live set instead, and still finds a removed input."""
    root = _ids_table(tmp_path, "expired")
    writer = pw.open_table(tmp_path, "db.expired")
    t = _table(root)
    cplan = plan_compact(t, CompactFlags(), now_ms=NOW)

    def commits_then_expiry() -> None:
        if removed:
            pw.overwrite(writer, [{"id": 300}])
        pw.append(writer, [{"id": 301}])
        e = _table(root)
        _expire(e)
        assert e.snapshots.try_snapshot(6) is None  # the planned snapshot is gone

    if removed:
        _conflicting_commit(t, cplan, commits_then_expiry)
        assert sorted(r["id"] for r in _read(root)) == [300, 301]
    else:
        with LocalExecutor(2) as ex:
            result = apply_compact(t, cplan, executor=ex, before_commit=commits_then_expiry)
        assert result.commit is not None and result.commit.snapshot is not None
        assert sorted(r["id"] for r in _read(root)) == [*range(6), 301]
    assert_no_dangling_references(root)


def test_changes_since_refuses_a_replaced_snapshot(tmp_path: Path) -> None:
    """Snapshot ids are reused after a rollback: a base that is not the same commit any
    more (other manifest lists) sends the caller to the full check."""
    root = _ids_table(tmp_path, "rb", 3)
    t = _table(root)
    latest = t.snapshots.latest()
    assert latest is not None
    assert changes_since(t, latest, latest) == (set(), set())
    other = dataclasses.replace(latest, delta_manifest_list="manifest-list-elsewhere-0")
    assert changes_since(t, other, latest) is None
    earlier = t.snapshots.snapshot(latest.id - 1)
    assert changes_since(t, dataclasses.replace(earlier, base_manifest_list="x"), latest) is None
    # The last append, read from its delta alone: one file added, nothing removed.
    (entry,) = [e for e in _live(root) if e.file.file_name not in _names_at(t, earlier)]
    assert changes_since(t, earlier, latest) == (
        set(),
        {(entry.partition, entry.bucket, entry.total_buckets)},
    )


def _names_at(t: PaimonTable, snapshot: Any) -> set[str]:
    return {e.file.file_name for e in t.live_files(snapshot)}


def test_rewrite_failure_leaves_no_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = _ids_table(tmp_path, "fail")
    t = _table(root)
    task = dataclasses.replace(
        plan_compact(t, CompactFlags(), now_ms=NOW).tasks[0], target_file_size=1
    )
    state = tree_state(root)
    calls = {"n": 0}
    real = t.fileio.write_if_absent

    def flaky(path: str, data: bytes) -> bool:
        calls["n"] += 1
        if calls["n"] == 2:
            raise OSError("disk full")
        return real(path, data)

    monkeypatch.setattr(t.fileio, "write_if_absent", flaky)
    with pytest.raises(OSError):
        rewrite_task(t, task)  # one row per file: the second write fails
    assert tree_state(root) == state


@pytest.mark.parametrize(
    ("options", "phrase"),
    [
        (
            {"merge-engine": "aggregation", "fields.v.aggregate-function": "theta_sketch"},
            "fields.v.aggregate-function=theta_sketch",
        ),
        (
            {"merge-engine": "aggregation", "fields.v.aggregate-function": "hll_sketch"},
            "hll_sketch",
        ),
        ({"merge-engine": "aggregation", "fields.v.aggregate-function": "nope"}, "nope"),
        ({"merge-engine": "aggregation", "fields.v.aggregate-function": "sum"}, "sum"),
        ({"merge-engine": "partial-update", "fields.v.aggregate-function": "max"}, "group"),
        ({"merge-engine": "first-row", "sequence.field": "v"}, "first-row"),
        ({"sequence.field": "nope"}, "sequence.field=nope"),
        ({"changelog-producer": "full-compaction", "merge-engine": "first-row"}, "first-row"),
        ({"merge-engine": "nope"}, "merge-engine=nope"),
    ],
)
def test_refusals_name_the_option_and_write_nothing(
    tmp_path: Path, options: dict[str, str], phrase: str
) -> None:
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string())])
    root = _write_commits(
        tmp_path,
        "refused",
        schema,
        [[{"id": 1, "v": "a"}], [{"id": 1, "v": "b"}]],
        primary_keys=["id"],
        options={"bucket": "1"},
    )
    state = tree_state(root)
    with pytest.raises(UnsupportedTableError, match=phrase):
        # Given as dynamic options: pypaimon would not write some of these tables.
        plan_compact(_table(root, **options), CompactFlags(), now_ms=NOW)
    assert tree_state(root) == state


def test_bad_partition_filters(tmp_path: Path) -> None:
    root = _write_commits(
        tmp_path, "parts", NESTED, [_nested_rows(c) for c in range(6)], partition_keys=["dt"]
    )
    t = _table(root)
    with pytest.raises(InvalidOptionError, match="not a partition key"):
        plan_compact(t, CompactFlags(partitions=({"nope": "1"},)), now_ms=NOW)
    one = plan_compact(t, CompactFlags(partitions=({"dt": "2024-01-01"},)), now_ms=NOW)
    assert [task.partition for task in one.tasks] == [
        binary_row.encode(["2024-01-01"], t.schema.partition_types)
    ]
    none = plan_compact(t, CompactFlags(partitions=({"dt": "1999-01-01"},)), now_ms=NOW)
    assert none.tasks == ()
