"""compact on append tables with deletion vectors (unaware and fixed bucket), on tables whose
rows Apache Paimon (Java) itself deleted through vectors (the ``dv-delete`` step of
tests/javawriter): every compacted file is read with its vector applied, files whose rows are
all deleted disappear, the index manifest drops the vectors of compacted files and keeps the
others in new index files, and Java reads the same rows at every snapshot and tag.

pypaimon 2.1 cannot read Paimon 0.9's manifests, so rows are compared through Java."""

from __future__ import annotations

import shutil
import struct
import zlib
from pathlib import Path
from typing import Any

import pytest
from support.compaction import NOW, compact, expire_all_but_latest
from support.fixtures import Run, dev_dependency
from support.invariants import assert_no_dangling_references
from support.java_paimon import JavaPaimon, assert_java_ok, assert_same_rows
from support.java_writer import JavaWriter

from core.compaction.compact import CompactConflictError, CompactFlags, apply_compact, plan_compact
from core.format.deletion_vectors import BITMAP32_MAGIC, BITMAP64_MAGIC, INDEX_TYPE, read_vector
from core.format.model import IndexManifestEntry
from core.runtime.executors.local import LocalExecutor
from core.table.table import PaimonTable, open_table
from core.write.manifest_writer import INDEX_MANIFEST_ENTRY_SCHEMA, encode_avro

pytestmark = pytest.mark.java

FIELDS = [
    {"name": "id", "type": "BIGINT NOT NULL"},
    {"name": "p", "type": "INT NOT NULL"},
    {"name": "v", "type": "STRING"},
]


def _rows(lo: int, hi: int) -> list[list[Any]]:
    return [["+I", i, i % 2, f"v{i}"] for i in range(lo, hi)]


def _script(options: dict[str, str], *, partitioned: bool = True) -> dict[str, Any]:
    """Three writes (one file per partition/bucket each), vectors deleting some rows, a tag,
    then more vectors: merged with the first ones, and every row of write 3 in p=0."""
    return {
        "table": "t",
        "schema": {
            "fields": FIELDS,
            "partitionKeys": ["p"] if partitioned else [],
            "options": {"deletion-vectors.enabled": "true", **options},
        },
        "steps": [
            {"op": "write", "rows": _rows(0, 20)},
            {"op": "write", "rows": _rows(20, 40)},
            {"op": "write", "rows": _rows(40, 60)},
            {"op": "dv-delete", "field": "id", "values": [1, 2, 3, 22, 41]},
            {"op": "tag", "name": "t1"},
            {"op": "dv-delete", "field": "id", "values": [5, 24, *range(40, 60, 2)]},
        ],
    }


EXPECTED_IDS = sorted(set(range(60)) - {1, 2, 3, 22, 41, 5, 24, *range(40, 60, 2)})


def _ids(java_writer: JavaWriter, root: Path, at: str | None = None) -> list[int]:
    return sorted(int(line.split("\t")[0]) for line in java_writer.rows(root, at, kinds=False))


def _dv_entries(t: PaimonTable) -> list[IndexManifestEntry]:
    latest = t.snapshots.latest()
    assert latest is not None
    return [e for e in t.index_files(latest) if e.index_type == INDEX_TYPE]


def _live_names(root: Path) -> set[str]:
    t = open_table(str(root))
    latest = t.snapshots.latest()
    assert latest is not None
    return {e.file.file_name for e in t.live_files(latest)}


def _java_compacted_copy(java_writer: JavaWriter, root: Path, dest: Path) -> Path:
    """The same table compacted by Paimon (Java 0.9) itself."""
    shutil.copytree(root.parents[1], dest)
    return java_writer.run(dest, {"table": "t", "steps": [{"op": "compact"}]})


def _check_clean(run: Run, root: Path) -> None:
    check = run("inspect", root, "--check")
    assert check.exit_code == 0, check.stdout + check.stderr
    assert_no_dangling_references(root)


@pytest.mark.parametrize(
    "options",
    [{"bucket": "-1"}, {"bucket": "2", "bucket-key": "id"}],
    ids=["unaware-bucket", "fixed-bucket"],
)
def test_vectors_applied_rows_unchanged_in_java(
    tmp_path: Path, java_writer: JavaWriter, java: JavaPaimon, run: Run, options: dict[str, str]
) -> None:
    root = java_writer.run(tmp_path / "wh", _script(options))
    before = java.verify(root)
    assert_java_ok(before)
    assert _ids(java_writer, root) == EXPECTED_IDS
    t = open_table(str(root))
    vectors_before = _dv_entries(t)
    with_vector = {r.data_file for e in vectors_before for r in e.dv_ranges}
    deleted = 0
    for e in vectors_before:
        data = Path(t.paths.index_file_path(e)).read_bytes()
        deleted += sum(len(read_vector(data, r.offset, e.file_name)) for r in e.dv_ranges)
    files_before = _live_names(root)
    theirs = _java_compacted_copy(java_writer, root, tmp_path / "theirs")

    cplan, result = compact(root)

    details = cplan.plan.details
    applied = {n for task in details.tasks for n in task.vectors_applied}
    assert applied == with_vector  # every file with a vector is compacted (0.9: no cardinality)
    replaced = {r["_FILE"]["_FILE_NAME"] for task in cplan.tasks for r in task.inputs}
    # Paimon's own compaction replaced the same files (0.9 bins them per index file, master
    # packs the groups: the outputs differ, the rows do not).
    assert files_before - _live_names(theirs) == replaced
    after = java.verify(root)
    assert_same_rows(before, after)
    assert {"tag-t1", "snapshot-5"} <= set(after["entries"])
    assert _ids(java_writer, root) == EXPECTED_IDS == _ids(java_writer, theirs)
    assert sum(task.rows for task in cplan.tasks) - result.rows_after == deleted
    files_after = _live_names(root)
    assert len(files_after) < len(files_before)
    # No vector of a compacted file survives; the fully deleted file left no output.
    remaining = {r.data_file for e in _dv_entries(open_table(str(root))) for r in e.dv_ranges}
    assert not remaining & replaced
    assert not remaining
    _check_clean(run, root)
    again = plan_compact(open_table(str(root)), CompactFlags(), now_ms=NOW).tasks
    if options["bucket"] == "-1":
        assert again == ()
    else:
        # With vectors enabled Paimon's full compaction always rewrites a bucket's small
        # files, even a single one; nothing carries a vector any more.
        assert again and all(not t.deletion_vectors and not t.index_deletes for t in again)


def test_every_row_deleted_file_disappears(
    tmp_path: Path, java_writer: JavaWriter, java: JavaPaimon
) -> None:
    script = _script({"bucket": "-1"}, partitioned=False)
    script["steps"] = [
        {"op": "write", "rows": _rows(0, 10)},
        {"op": "write", "rows": _rows(10, 20)},
        {"op": "dv-delete", "field": "id", "values": list(range(10))},
    ]
    root = java_writer.run(tmp_path / "wh", script)
    before = java.verify(root)
    cplan, result = compact(root)
    assert [len(task.inputs) for task in cplan.tasks] == [1]
    assert cplan.tasks[0].rows == 10 and result.rows_after == 0 and result.files_after == 0
    assert len(_live_names(root)) == 1
    assert _dv_entries(open_table(str(root))) == []
    assert_same_rows(before, java.verify(root))
    assert _ids(java_writer, root) == list(range(10, 20))


def test_unaware_kept_vectors_move_to_a_new_index_file(
    tmp_path: Path, java_writer: JavaWriter, java: JavaPaimon, run: Run
) -> None:
    # compaction.file-num-limit 2: the scan takes two files, so vectors of the other files
    # in the same index file must be rewritten into a new one (AppendDeleteFileMaintainer).
    script = _script({"bucket": "-1", "compaction.file-num-limit": "2"}, partitioned=False)
    script["steps"] = [{"op": "write", "rows": _rows(10 * k, 10 * k + 10)} for k in range(4)] + [
        {"op": "dv-delete", "field": "id", "values": [1, 11, 21, 31, 32]}
    ]
    root = java_writer.run(tmp_path / "wh", script)
    before = java.verify(root)
    t = open_table(str(root))
    (old,) = _dv_entries(t)
    assert len(old.dv_ranges) == 4
    old_path = Path(t.paths.index_file_path(old))
    old_vectors = {
        r.data_file: read_vector(old_path.read_bytes(), r.offset, str(old_path))
        for r in old.dv_ranges
    }
    theirs = _java_compacted_copy(java_writer, root, tmp_path / "theirs")

    cplan, _ = compact(root)

    (task,) = cplan.tasks
    compacted = {r["_FILE"]["_FILE_NAME"] for r in task.inputs}
    assert len(compacted) == 2
    assert set(cplan.plan.details.tasks[0].vectors_kept) == set(old_vectors) - compacted
    assert_same_rows(before, java.verify(root))
    assert _ids(java_writer, root) == _ids(java_writer, theirs)
    t = open_table(str(root))
    (new,) = _dv_entries(t)
    assert new.file_name != old.file_name and new.bucket == 0
    new_path = Path(t.paths.index_file_path(new))
    data = new_path.read_bytes()
    assert data[0] == 1
    kept = {r.data_file: r for r in new.dv_ranges}
    assert set(kept) == set(old_vectors) - compacted
    for name, r in kept.items():
        assert read_vector(data, r.offset, str(new_path)) == old_vectors[name]
        assert r.cardinality == len(old_vectors[name])  # Paimon master records it
    _check_clean(run, root)
    # Expiring the older snapshots removes the replaced data files and the old index file.
    expire_all_but_latest(root)
    assert not old_path.exists() and new_path.exists()
    for name in compacted:
        assert not list(root.rglob(name))
    assert_java_ok(java.verify(root))
    assert _ids(java_writer, root) == _ids(java_writer, theirs)
    # Paimon's own writer takes our index file up: a new delete merges with a kept vector.
    java_writer.run(
        root.parents[1],
        {"table": "t", "steps": [{"op": "dv-delete", "field": "id", "values": [33]}]},
    )
    gone = {1, 11, 21, 31, 32, 33}
    assert _ids(java_writer, root) == sorted(set(range(40)) - gone)
    # The next runs take the rest (the scan limit again) until nothing carries a vector.
    for _ in range(3):
        compact(root)
    assert _dv_entries(open_table(str(root))) == []
    assert _ids(java_writer, root) == sorted(set(range(40)) - gone)
    _check_clean(run, root)


# -- the 64-bit format ---------------------------------------------------------------------------
def _roaring64_vector(positions: list[int]) -> bytes:
    """A Bitmap64DeletionVector as Paimon serializes it: length (big endian), then little
    endian magic and OptimizedRoaringBitmap64 (count, then per high int a RoaringBitmap),
    then the CRC of magic + bitmap."""
    pyroaring = dev_dependency("pyroaring")
    highs: dict[int, list[int]] = {}
    for p in positions:
        highs.setdefault(p >> 32, []).append(p & 0xFFFFFFFF)
    body = struct.pack("<q", len(highs))
    for high, lows in sorted(highs.items()):
        bm = pyroaring.BitMap(lows)
        bm.run_optimize()
        body += struct.pack("<i", high) + bm.serialize()
    data = struct.pack("<I", BITMAP64_MAGIC) + body
    return struct.pack(">i", len(data)) + data + struct.pack(">I", zlib.crc32(data))


def _convert_to_bitmap64(root: Path) -> None:
    """Rewrite the latest snapshot's vectors in the 64-bit format (deletion-vectors.bitmap64,
    which Paimon 0.9 cannot write), index files and index manifest in place."""
    import fastavro

    t = open_table(str(root))
    latest = t.snapshots.latest()
    assert latest is not None and latest.index_manifest
    manifest = Path(t.paths.manifest_path(latest.index_manifest))
    with manifest.open("rb") as fh:
        rows = list(fastavro.reader(fh))
    for row in rows:
        entry = next(e for e in t.index_files(latest) if e.file_name == row["_FILE_NAME"])
        path = Path(t.paths.index_file_path(entry))
        old = path.read_bytes()
        new = bytearray([1])
        ranges = []
        for r in row["_DELETIONS_VECTORS_RANGES"]:
            (magic,) = struct.unpack_from(">I", old, r["f1"] + 4)
            assert magic == BITMAP32_MAGIC
            vector = _roaring64_vector(read_vector(old, r["f1"], str(path)))
            ranges.append({**r, "f1": len(new), "f2": len(vector)})
            new += vector
        path.write_bytes(bytes(new))
        row["_DELETIONS_VECTORS_RANGES"] = ranges
        row["_FILE_SIZE"] = len(new)
    manifest.write_bytes(encode_avro(INDEX_MANIFEST_ENTRY_SCHEMA, rows, "null"))


def test_bitmap64_vectors_applied(
    tmp_path: Path, java_writer: JavaWriter, java: JavaPaimon, run: Run
) -> None:
    root = java_writer.run(tmp_path / "wh", _script({"bucket": "-1"}))
    before = java.verify(root)
    _convert_to_bitmap64(root)
    t = open_table(str(root))
    for e in _dv_entries(t):
        data = Path(t.paths.index_file_path(e)).read_bytes()
        for r in e.dv_ranges:
            assert struct.unpack_from("<I", data, r.offset + 4)[0] == BITMAP64_MAGIC
    vectors = sum(len(e.dv_ranges) for e in _dv_entries(t))
    cplan, _ = compact(root)
    assert sum(task.deletion_vectors for task in cplan.plan.details.tasks) == vectors
    assert _dv_entries(open_table(str(root))) == []
    after = java.verify(root)
    # Paimon 0.9 cannot read 64-bit vectors, which older snapshots still hold: only the
    # compacted latest snapshot is read (DumpRows reads it too).
    assert not after.get("missing_files") and "read:latest" not in (after.get("errors") or {})
    assert after["entries"]["latest"] == before["entries"]["latest"]
    assert _ids(java_writer, root) == EXPECTED_IDS
    _check_clean(run, root)


def test_unaware_delete_ratio_threshold_picks_big_files(
    tmp_path: Path, java_writer: JavaWriter, java: JavaPaimon, run: Run
) -> None:
    """Files at least the small-file size are picked only when their vector deletes more than
    compaction.delete-ratio-threshold (0.2) of their rows; a vector without a cardinality
    (Paimon 0.9's) always counts, one we rewrote has its cardinality recorded."""
    script = _script({"bucket": "-1", "compaction.file-num-limit": "1"}, partitioned=False)
    script["steps"] = [{"op": "write", "rows": _rows(10 * k, 10 * k + 10)} for k in range(4)] + [
        # file 0: 1 of 10 rows, file 1: 3 of 10, file 2: 1 of 10, file 3: none.
        {"op": "dv-delete", "field": "id", "values": [1, 11, 12, 13, 21]}
    ]
    root = java_writer.run(tmp_path / "wh", script)
    before = java.verify(root)
    big = CompactFlags(target_file_size="100 b")  # every file is "big"

    def step() -> tuple[set[str], dict[str, int | None]]:
        t = open_table(str(root))
        cplan = plan_compact(t, big, now_ms=NOW)
        picked = {r["_FILE"]["_FILE_NAME"] for task in cplan.tasks for r in task.inputs}
        with LocalExecutor(2) as ex:
            apply_compact(t, cplan, executor=ex)
        left = {
            r.data_file: r.cardinality
            for e in _dv_entries(open_table(str(root)))
            for r in e.dv_ranges
        }
        return picked, left

    first, left = step()  # no cardinalities: the scan limit takes one file with a vector
    assert len(first) == 1 and len(left) == 2 and set(left.values()) == {1, 3}
    second, left = step()  # 3 of 10 > 0.2: picked; 1 of 10 is not
    assert len(second) == 1 and list(left.values()) == [1]
    third, left = step()
    assert third == set() and list(left.values()) == [1]
    assert_same_rows(before, java.verify(root))
    assert _ids(java_writer, root) == sorted(set(range(40)) - {1, 11, 12, 13, 21})
    _check_clean(run, root)


@pytest.mark.parametrize(
    "options",
    [{"bucket": "-1"}, {"bucket": "2", "bucket-key": "id"}],
    ids=["unaware-bucket", "fixed-bucket"],
)
def test_vectors_written_after_planning_abandon_the_commit(
    tmp_path: Path, java_writer: JavaWriter, java: JavaPaimon, options: dict[str, str]
) -> None:
    root = java_writer.run(tmp_path / "wh", _script(options))
    t = open_table(str(root))
    cplan = plan_compact(t, CompactFlags(), now_ms=NOW)
    assert any(task.deletion_vectors for task in cplan.tasks)
    # Paimon deletes rows of compacted files through their vectors after we planned.
    java_writer.run(
        root.parents[1],
        {"table": "t", "steps": [{"op": "dv-delete", "field": "id", "values": [0, 1, 20, 21]}]},
    )
    before = java.verify(root)
    files = {p for p in root.rglob("*") if p.is_file()}
    with LocalExecutor(2) as ex, pytest.raises(CompactConflictError, match="deletion vectors"):
        apply_compact(t, cplan, executor=ex)
    assert {p for p in root.rglob("*") if p.is_file()} == files  # ours removed again
    assert_same_rows(before, java.verify(root))
