"""compact on deletion-vector primary-key tables: vectors applied on read, their index
entries dropped in the COMPACT commit, rows unchanged in Java; expire removes what was
replaced, index files included."""

from __future__ import annotations

import dataclasses
import json
import random
import shutil
import struct
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from support import pypaimon_writer as pw
from support.compaction import NOW, compact, expire_all_but_latest
from support.fixtures import Run, dev_dependency
from support.invariants import assert_no_dangling_references
from support.java_paimon import JavaPaimon, assert_java_ok, assert_same_rows

from core.compaction.compact import CompactConflictError, CompactFlags, apply_compact, plan_compact
from core.compaction.selection import pick_pk
from core.format.deletion_vectors import (
    BITMAP64_MAGIC,
    INDEX_TYPE,
    DeletionFile,
    read_roaring32,
    read_roaring64,
    read_vector,
)
from core.runtime.executors.local import LocalExecutor
from core.table.table import open_table


# -- the vector formats ------------------------------------------------------------------------
@pytest.mark.parametrize(
    "values",
    [
        [0],
        [3, 7, 8, 9, 10],  # array container
        list(range(0, 20000, 3)),  # bitmap container (> 4096 values)
        list(range(100, 9000)),  # one long run
        [1, 70000, 70001, 140000, 2**31 + 5],  # several containers
        sorted(random.Random(3).sample(range(300000), 9000)),
    ],
)
@pytest.mark.parametrize("optimize", [False, True])
def test_portable_roaring32_round_trip(values: list[int], optimize: bool) -> None:
    pyroaring = dev_dependency("pyroaring")
    bm = pyroaring.BitMap(values)
    if optimize:
        bm.run_optimize()  # run containers, as Java's runOptimize writes them
    data = bm.serialize()
    assert read_roaring32(data) == (sorted(values), len(data))


def _java_vector(magic_be: bytes, body: bytes) -> bytes:
    """An index file as Paimon lays it out: version byte, length, magic, bitmap, CRC."""
    return b"\x01" + struct.pack(">i", 4 + len(body)) + magic_be + body + b"\0\0\0\0"


def test_both_vector_formats() -> None:
    pyroaring = dev_dependency("pyroaring")
    low = pyroaring.BitMap([1, 2, 500]).serialize()
    v1 = _java_vector(struct.pack(">i", 1581511376), low)
    assert read_vector(v1, 1, "idx") == [1, 2, 500]
    high = pyroaring.BitMap([4]).serialize()
    body = struct.pack("<q", 2) + struct.pack("<i", 0) + low + struct.pack("<i", 1) + high
    v2 = _java_vector(struct.pack("<i", BITMAP64_MAGIC), body)
    assert read_vector(v2, 1, "idx") == [1, 2, 500, (1 << 32) + 4]
    assert read_roaring64(body) == [1, 2, 500, (1 << 32) + 4]


# -- the Java-built table ----------------------------------------------------------------------
def _dv_entries(root: Path) -> list[Any]:
    t = open_table(str(root))
    latest = t.snapshots.latest()
    assert latest is not None
    return [e for e in t.index_files(latest) if e.index_type == INDEX_TYPE]


@pytest.mark.java
def test_java_built_dv_table_rows_identical_and_vectors_dropped(
    java: JavaPaimon, java_built: Callable[[str], Path]
) -> None:
    root = java_built("pk_deletion_vectors")
    before = java.verify(root)
    assert_java_ok(before)
    t = open_table(str(root))
    latest = t.snapshots.latest()
    assert latest is not None
    inputs = t.live_files(latest)
    vectors = _dv_entries(root)
    assert any(e.dv_ranges for e in vectors)
    index_paths = [Path(t.paths.index_file_path(e)) for e in vectors]
    cplan, result = compact(root)
    task_vectors = sum(t.deletion_vectors for t in cplan.plan.details.tasks)
    assert task_vectors == sum(len(e.dv_ranges) for e in vectors)
    assert result.rows_after < sum(t.rows for t in cplan.tasks)  # the vectors were applied
    after = java.verify(root)
    assert_same_rows(before, after)
    # No vector survives; the (empty) vector files of buckets left alone stay.
    compacted = {(t.partition, t.bucket) for t in cplan.tasks}
    remaining = _dv_entries(root)
    assert not any(e.dv_ranges for e in remaining)
    assert not any((e.partition, e.bucket) in compacted for e in remaining)
    gone = [
        p for e, p in zip(vectors, index_paths, strict=True) if (e.partition, e.bucket) in compacted
    ]
    t = open_table(str(root))
    live = t.live_files(t.snapshots.latest())  # type: ignore[arg-type]
    assert len(live) < len(inputs)
    assert {e.file.level for e in live} == {5}
    assert_no_dangling_references(root)
    assert plan_compact(t, CompactFlags(), now_ms=NOW).tasks == ()
    # Expiring the older snapshots deletes what compaction replaced: data and index files.
    expire_all_but_latest(root)
    replaced = {r["_FILE"]["_FILE_NAME"] for task in cplan.tasks for r in task.inputs}
    for e in inputs:
        assert Path(t.paths.data_file_path(e)).exists() == (e.file.file_name not in replaced)
    assert gone and not any(p.exists() for p in gone)
    final = java.verify(root)
    assert_java_ok(final)
    assert final["entries"]["latest"] == after["entries"]["latest"]
    assert_no_dangling_references(root)


# -- a pypaimon-written table ------------------------------------------------------------------
SCHEMA = pa.schema(
    [
        pa.field("id", pa.int64(), nullable=False),
        pa.field("dt", pa.string(), nullable=False),
        ("v", pa.string()),
        ("rk", pa.string()),
    ]
)


def _write(tmp_path: Path) -> Path:
    table = pw.create_table(
        tmp_path,
        "db.dv",
        SCHEMA,
        partition_keys=["dt"],
        primary_keys=["id", "dt"],
        options={"bucket": "2", "rowkind.field": "rk", "deletion-vectors.enabled": "true"},
    )
    rnd = random.Random(5)
    for _ in range(6):
        rows = [
            {
                "id": i,
                "dt": f"d{i % 2}",
                "v": rnd.choice([None, "a", "b"]),
                "rk": "-D" if rnd.random() < 0.2 else "+I",
            }
            for i in rnd.sample(range(20), 8)
        ]
        pw.append(table, rows)
    return pw.table_root(tmp_path, "db.dv")


def _without_dv(root: Path, dest: Path) -> Path:
    """A copy read as a plain table: the merged view of everything written."""
    shutil.copytree(root, dest)
    for schema_file in (dest / "schema").iterdir():
        doc = json.loads(schema_file.read_text())
        doc["options"].pop("deletion-vectors.enabled", None)
        schema_file.write_text(json.dumps(doc, indent=2))
    return dest


@pytest.mark.java
def test_pypaimon_dv_table_level0_files_become_the_merged_view(
    tmp_path: Path, java: JavaPaimon
) -> None:
    root = _write(tmp_path / "wh")
    assert pw.read_rows_at_root(root) == []  # level-0 files are invisible to DV readers
    plain = _without_dv(root, tmp_path / "plain" / "db.db" / "dv")
    expected = [r for r in pw.read_rows_at_root(plain) if r["rk"] != "-D"]
    expected_java = java.verify(plain)["entries"]["latest"]
    assert expected
    compact(root)
    assert pw.read_rows_at_root(root) == expected
    got = java.verify(root)
    assert_java_ok(got)
    assert (got["entries"]["latest"]["rows"], got["entries"]["latest"]["checksum"]) == (
        expected_java["rows"],
        expected_java["checksum"],
    )
    assert_no_dangling_references(root)


def _row(name: str, level: int, seq: int) -> dict[str, Any]:
    return {"_FILE": {"_FILE_NAME": name, "_LEVEL": level, "_MIN_SEQUENCE_NUMBER": seq}}


def test_max_level_bucket_rewrites_only_files_with_vectors() -> None:
    """CompactStrategy.pickFullCompaction: one sorted run at the max level is left alone
    except for its files that carry a deletion vector."""
    dv = DeletionFile("idx", 1, 10)
    run = [_row("a", 5, 0), _row("b", 5, 9), _row("c", 5, 4)]
    picked = pick_pk(run, 5, {"c": dv})
    assert [r["_FILE"]["_FILE_NAME"] for r in picked] == ["c"]
    assert pick_pk(run, 5, {}) == []
    mixed = [*run, _row("d", 0, 20)]
    assert [r["_FILE"]["_FILE_NAME"] for r in pick_pk(mixed, 5, {})] == [
        "a",
        "c",
        "b",
        "d",
    ]


def test_vectors_changed_since_planning_abort_and_remove_our_files(
    java_built: Callable[[str], Path],
) -> None:
    root = java_built("pk_deletion_vectors")
    t = open_table(str(root))
    cplan = plan_compact(t, CompactFlags(), now_ms=NOW)
    # As if a writer had replaced the bucket's vector file after planning.
    stale = tuple(
        dataclasses.replace(
            task,
            index_deletes=(old := frozenset({(task.partition, task.bucket, INDEX_TYPE, "gone")})),
            index_seen=old,
        )
        for task in cplan.tasks
    )
    before = {p for p in root.rglob("*") if p.is_file()}
    with LocalExecutor(2) as ex, pytest.raises(CompactConflictError, match="deletion vectors"):
        apply_compact(t, dataclasses.replace(cplan, tasks=stale), executor=ex)
    assert {p for p in root.rglob("*") if p.is_file()} == before


def test_dry_run_counts_the_vectors(run: Run, java_built: Callable[[str], Path]) -> None:
    root = java_built("pk_deletion_vectors")
    result = run("compact", root, "--dry-run")
    assert result.exit_code == 0, result.stderr
    assert "2 deletion vectors applied" in result.stdout
    assert "merge engine deduplicate" in result.stdout
