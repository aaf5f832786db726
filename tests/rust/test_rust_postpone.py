"""`compact` on postpone-bucket tables (``bucket = -2``) pypaimon-rust writes: the records of
``bucket-postpone`` move into real buckets by Paimon's bucket hash, in the number of buckets
Paimon decides, and pypaimon-rust then reads the merged rows (point lookups included, which
find a key only in the bucket its hash names), while every earlier snapshot and tag reads
as before. Paimon 0.9 (Java) cannot open postpone-bucket tables at all ("The number of
buckets needs to be greater than 0"), so no Java read-back here."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
from support import reference_check
from support import rust_writer as rw
from support.fixtures import Run
from support.invariants import assert_rust_reads_intact

from core.compaction.java_hash import murmur_hash
from core.format import binary_row
from core.format.types import parse_type
from core.table.table import open_table

COLUMNS = "id INT, v STRING, n INT, p INT, PRIMARY KEY (id, p)"


def _bucket(key: Sequence[Any], types: Sequence[str], buckets: int) -> int:
    """Paimon's default bucket function, spelled out independently of the routing code."""
    row = binary_row.encode(list(key), [parse_type(t) for t in types])[4:]
    h = murmur_hash(row)
    return abs(int(h - buckets * int(h / buckets)))  # Math.abs(h % n), Java's remainder


def _table(tmp_path: Path, name: str, options: dict[str, str]) -> rw.RustWarehouse:
    wh = rw.RustWarehouse(tmp_path / "wh")
    with_ = ", ".join(f"'{k}' = '{v}'" for k, v in {"bucket": "-2", **options}.items())
    wh.sql(f"CREATE TABLE {wh.qualified(name)} ({COLUMNS}) PARTITIONED BY (p) WITH ({with_})")
    return wh


def _insert(wh: rw.RustWarehouse, name: str, rows: Sequence[tuple[object, ...]]) -> None:
    wh.sql(f"INSERT INTO {wh.qualified(name)} VALUES {rw.values(rows)}")


def _last_per_key(commits: Sequence[Sequence[tuple[object, ...]]]) -> list[dict[str, Any]]:
    rows: dict[tuple[object, object], dict[str, Any]] = {}
    for commit in commits:
        for r in commit:
            rows[(r[0], r[3])] = {"id": r[0], "v": r[1], "n": r[2], "p": r[3]}
    return rw.sort_rows(rows.values())


def _real_bucket_files(root: Path) -> dict[tuple[str, int], list[Path]]:
    out: dict[tuple[str, int], list[Path]] = {}
    for path in sorted(root.glob("p=*/bucket-[0-9]*/data-*.parquet")):
        out.setdefault((path.parent.parent.name, int(path.parent.name[7:])), []).append(path)
    return out


def _live_names(root: Path) -> set[str]:
    t = open_table(str(root))
    latest = t.snapshots.latest()
    assert latest is not None
    return {e.file.file_name for e in t.live_files(latest)}


def _assert_routed_by_hash(root: Path, buckets: int) -> None:
    """Every record of every live real-bucket file sits in the bucket its key hashes to,
    and every partition has ``buckets`` buckets in the manifests."""
    live = _live_names(root)
    for (_partition, bucket), paths in _real_bucket_files(root).items():
        for path in paths:
            if path.name not in live:
                continue
            ids = pq.ParquetFile(path).read(columns=["id"]).column("id").to_pylist()
            assert ids
            assert {_bucket([i], ["INT NOT NULL"], buckets) for i in ids} == {bucket}, path
    t = open_table(str(root))
    latest = t.snapshots.latest()
    assert latest is not None
    totals = {e.total_buckets for e in t.live_files(latest) if e.bucket >= 0}
    assert totals == {buckets}


COMMITS: tuple[tuple[tuple[object, ...], ...], ...] = (
    tuple((i, f"a{i}", i, i % 2) for i in range(20)),
    tuple((i, f"b{i}", 100 + i, i % 2) for i in range(0, 20, 3)),
    ((5, "c5", 500, 1), (40, "new", 40, 0), (5, "c5-again", 501, 1)),
)


def test_postpone_records_move_into_real_buckets_by_hash(run: Run, tmp_path: Path) -> None:
    name = "pp_default_buckets"
    wh = _table(tmp_path, name, {"postpone.default-bucket-num": "3"})
    for commit in COMMITS:
        _insert(wh, name, commit)
    wh.call("create_tag", name, tag="first", snapshot_id=1)
    table = rw.record(wh, name, "postpone, 3 default buckets", merged=_last_per_key(COMMITS))
    assert table.snapshots[table.latest] == []  # postpone files are not read until compacted
    root = wh.table_root(name)

    dry = run("compact", root, "--dry-run", "--json")
    assert dry.exit_code == 0, dry.stderr
    result = run("compact", root)
    assert result.exit_code == 0, result.stdout + result.stderr
    latest = open_table(str(root)).snapshots.latest()
    assert latest is not None and latest.commit_kind == "COMPACT"
    assert wh.read(name) == table.expected_after_compaction
    for row in table.expected_after_compaction:  # a lookup finds the key in its hash bucket
        got = wh.sql(
            f"SELECT * FROM {wh.qualified(name)} WHERE id = {row['id']} AND p = {row['p']}"
        )
        assert got == [row]
    _assert_routed_by_hash(root, 3)
    assert not any(n for n in _live_names(root) if "-u-" in n), (
        "postpone files stay live after compaction"
    )
    assert_rust_reads_intact(wh, table)
    assert reference_check.missing_references(root) == []


def test_a_second_compaction_keeps_the_bucket_number_and_the_newest_records(
    run: Run, tmp_path: Path
) -> None:
    """Records routed into buckets that hold files already are numbered after them: the
    postpone records written later win, in the number of buckets the partition has."""
    name = "pp_twice"
    wh = _table(tmp_path, name, {"postpone.target-row-num-per-bucket": "4"})
    root = wh.table_root(name)
    _insert(wh, name, COMMITS[0])  # 10 rows per partition: ceil(10 / 4) = 3 buckets
    assert run("compact", root).exit_code == 0
    _assert_routed_by_hash(root, 3)
    for commit in COMMITS[1:]:
        _insert(wh, name, commit)
    table = rw.record(wh, name, "second round", merged=_last_per_key(COMMITS))
    result = run("compact", root, "--json")
    assert result.exit_code == 0, result.stderr
    assert wh.read(name) == table.expected_after_compaction
    _assert_routed_by_hash(root, 3)  # the existing bucket number, not a new estimate
    assert_rust_reads_intact(wh, table)
    assert reference_check.missing_references(root) == []


def test_partial_update_merges_postpone_records_in_write_order(run: Run, tmp_path: Path) -> None:
    """Replay order is the files' creation order: later non-null fields win."""
    name = "pp_partial"
    wh = _table(tmp_path, name, {"merge-engine": "partial-update"})
    _insert(wh, name, [(1, "a", None, 0), (2, None, 20, 0)])
    _insert(wh, name, [(1, None, 10, 0), (2, "b", None, 0)])
    _insert(wh, name, [(1, "a2", None, 0)])
    table = rw.record(
        wh,
        name,
        "partial-update",
        merged=[{"id": 1, "v": "a2", "n": 10, "p": 0}, {"id": 2, "v": "b", "n": 20, "p": 0}],
    )
    root = wh.table_root(name)
    assert run("compact", root).exit_code == 0
    assert wh.read(name) == table.expected_after_compaction
    _assert_routed_by_hash(root, 1)  # 1 gb per bucket: one bucket
    assert_rust_reads_intact(wh, table)


def test_dry_run_names_the_buckets_and_changes_nothing(run: Run, tmp_path: Path) -> None:
    import json

    from support.invariants import tree_state

    name = "pp_dry"
    wh = _table(tmp_path, name, {"postpone.default-bucket-num": "2"})
    _insert(wh, name, COMMITS[0])
    root = wh.table_root(name)
    before = tree_state(root)
    result = run("compact", root, "--dry-run", "--json")
    assert result.exit_code == 0, result.stderr
    doc = json.loads(result.stdout)
    staged = [t for t in doc["plan"]["details"]["tasks"] if t["bucket"] == -2]
    assert {t["partition"]["p"] for t in staged} == {"0", "1"}
    for t in staged:
        assert t["postpone"]["buckets"] == 2
        assert t["postpone"]["bucket_number"] == "postpone.default-bucket-num"
        assert sum(t["postpone"]["records_by_bucket"].values()) == 10
    assert {p: s for p, s in tree_state(root).items() if "/.paimon-cli/" not in p} == {
        p: s for p, s in before.items() if "/.paimon-cli/" not in p
    }


def _fixed_bucket_write(wh: rw.RustWarehouse, name: str, rows: Sequence[tuple[Any, ...]]) -> None:
    """Rows written straight into real buckets (pypaimon-rust's postpone fixed-bucket writer,
    as Paimon's batch jobs write postpone tables)."""
    import pyarrow as pa
    from pypaimon_rust.datafusion import PaimonCatalog

    table = PaimonCatalog({"warehouse": str(wh.root)}).get_table(f"{rw.DB}.{name}")
    builder = table.new_postpone_fixed_bucket_write_builder()
    write = builder.new_write()
    names = ["id", "v", "n", "p"]
    types = [pa.int32(), pa.string(), pa.int32(), pa.int32()]
    batch = pa.record_batch(
        [pa.array([r[i] for r in rows], t) for i, t in enumerate(types)], names=names
    )
    write.write_arrow(batch)
    builder.new_commit().commit(write.prepare_commit())


def test_postpone_records_are_newer_than_real_bucket_files(run: Run, tmp_path: Path) -> None:
    """Files a batch job wrote into real buckets keep their bucket number; postpone records
    written after them are numbered after them and win."""
    name = "pp_after_fixed"
    wh = _table(tmp_path, name, {"postpone.default-bucket-num": "4"})
    first = [(i, f"fixed{i}", i, 0) for i in range(12)]
    _fixed_bucket_write(wh, name, first)
    later = [(i, f"staged{i}", 100 + i, 0) for i in range(0, 12, 2)]
    _insert(wh, name, later)
    table = rw.record(wh, name, "fixed, then postpone", merged=_last_per_key([first, later]))
    root = wh.table_root(name)
    assert run("compact", root).exit_code == 0
    assert wh.read(name) == table.expected_after_compaction
    _assert_routed_by_hash(root, 4)
    assert_rust_reads_intact(wh, table)


def test_files_written_into_a_receiving_bucket_meanwhile_abandon_the_commit(
    tmp_path: Path,
) -> None:
    """Routed records are numbered after the files planned in their bucket: a file written
    there after planning would be ordered wrongly, so nothing is committed."""
    import pytest

    from core.compaction.compact import CompactConflictError, apply_compact, plan_compact
    from core.compaction.config import CompactFlags
    from core.runtime.executors.local import LocalExecutor

    name = "pp_race"
    wh = _table(tmp_path, name, {"postpone.default-bucket-num": "1"})
    _insert(wh, name, [(1, "staged", 1, 0)])
    root = wh.table_root(name)
    t = open_table(str(root))
    cplan = plan_compact(t, CompactFlags(), now_ms=0)
    assert cplan.postpone
    _fixed_bucket_write(wh, name, [(1, "concurrent", 2, 0)])
    latest = open_table(str(root)).snapshots.latest()
    with LocalExecutor(2) as ex, pytest.raises(CompactConflictError, match="receives postpone"):
        apply_compact(open_table(str(root)), cplan, executor=ex)
    after = open_table(str(root)).snapshots.latest()
    assert latest is not None and after is not None and after.id == latest.id
    assert wh.read(name) == [{"id": 1, "v": "concurrent", "n": 2, "p": 0}]
    written = {p.name for p in root.glob("p=0/bucket-0/*")}
    assert written == _live_names(root) - {p.name for p in root.glob("p=0/bucket-postpone/*")}
