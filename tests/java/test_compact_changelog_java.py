"""compact writes the changelog Apache Paimon (Java) writes at a full compaction of tables with
``changelog-producer = full-compaction`` or ``lookup``.

Each table is built by Paimon's own Java writer (write-only, as the teams that run a
separate compaction job write them), copied, then compacted once by Paimon (Java 0.9) and once
by paimon-cli: a Java streaming reader reads the same changelog records (kinds, values, order
per bucket) from both COMPACT snapshots, and Java reads the same rows from both tables."""

from __future__ import annotations

import random
import shutil
from pathlib import Path
from typing import Any

import pytest
from support.java_writer import JavaWriter

from core.compaction.compact import CompactFlags, apply_compact, plan_compact
from core.runtime.executors.local import LocalExecutor
from core.table.table import open_table

pytestmark = pytest.mark.java

FIELDS = [
    {"name": "id", "type": "INT NOT NULL"},
    {"name": "v", "type": "STRING"},
    {"name": "n", "type": "BIGINT"},
    {"name": "q", "type": "INT"},
]


def _rows(rnd: random.Random, kinds: tuple[str, ...]) -> list[list[Any]]:
    """One record per key (Java's write buffer would merge more), some with nulls."""
    out = []
    for key in rnd.sample(range(24), 9):
        kind = rnd.choice(kinds)
        v = None if rnd.random() < 0.2 else rnd.choice(["a", "b", "c"])
        n = None if rnd.random() < 0.2 else rnd.randint(-5, 5)
        out.append([kind, key, v, n, rnd.randint(0, 3)])
    return out


def _script(options: dict[str, str], kinds: tuple[str, ...], seed: int) -> dict[str, Any]:
    """Writes, a Java full compaction (so the next one has max-level records), more writes.
    With ``levels``: writes by a writer that compacts while writing (intermediate levels,
    keys in several levels) instead of the full compaction."""
    rnd = random.Random(seed)
    options = dict(options)
    if options.pop("levels", None):
        compacting = {"write-only": "false", "num-sorted-run.compaction-trigger": "3"}
        steps: list[dict[str, Any]] = [
            {"op": "write-with", "options": compacting, "rows": _rows(rnd, kinds)} for _ in range(8)
        ]
    else:
        steps = [{"op": "write", "rows": _rows(rnd, kinds)} for _ in range(3)]
        steps.append({"op": "compact"})
    steps += [{"op": "write", "rows": _rows(rnd, kinds)} for _ in range(3)]
    return {
        "schema": {
            "fields": FIELDS,
            "primaryKeys": ["id"],
            "options": {
                "bucket": "2",
                "changelog-producer": "full-compaction",
                "write-only": "true",
                **options,
            },
        },
        "steps": steps,
    }


def _ours(root: Path) -> int:
    table = open_table(str(root))
    cplan = plan_compact(table, CompactFlags(), now_ms=4_000_000_000_000)
    with LocalExecutor(2) as ex:
        result = apply_compact(table, cplan, executor=ex)
    assert result.commit is not None and result.commit.snapshot is not None
    return result.commit.snapshot.id


def _changelog(java_writer: JavaWriter, root: Path, snapshot: int) -> list[str]:
    return java_writer.java("paimonclitest.DumpChangelog", str(root), str(snapshot)).splitlines()


CASES = {
    "deduplicate": ({}, ("+I", "+I", "+I", "-D")),
    "row-deduplicate": ({"changelog-producer.row-deduplicate": "true"}, ("+I", "+I", "-D")),
    "sequence-field": ({"sequence.field": "q"}, ("+I", "+I", "-D")),
    "partial-update": (
        {"merge-engine": "partial-update", "partial-update.ignore-delete": "true"},
        ("+I", "+I", "-D"),
    ),
    "aggregation": (
        {
            "merge-engine": "aggregation",
            "fields.n.aggregate-function": "sum",
            "fields.q.aggregate-function": "max",
            "fields.q.ignore-retract": "true",
            "changelog-producer.row-deduplicate": "true",
        },
        ("+I", "+I", "+I", "-U"),
    ),
    "lookup": ({"changelog-producer": "lookup"}, ("+I", "+I", "+I", "-D")),
    "lookup-row-deduplicate": (
        {"changelog-producer": "lookup", "changelog-producer.row-deduplicate": "true"},
        ("+I", "+I", "-D"),
    ),
    "lookup-partial-update": (
        {
            "changelog-producer": "lookup",
            "merge-engine": "partial-update",
            "partial-update.ignore-delete": "true",
        },
        ("+I", "+I", "-D"),
    ),
    "lookup-aggregation": (
        {
            "changelog-producer": "lookup",
            "merge-engine": "aggregation",
            "fields.n.aggregate-function": "sum",
            "fields.q.aggregate-function": "max",
            "fields.q.ignore-retract": "true",
        },
        ("+I", "+I", "+I", "-U"),
    ),
    "lookup-deletion-vectors": (
        {"changelog-producer": "lookup", "deletion-vectors.enabled": "true"},
        ("+I", "+I", "+I", "-D"),
    ),
    "levels-full-compaction": ({"levels": "1"}, ("+I", "+I", "+I", "-D")),
    "levels-lookup-aggregation": (
        {
            "levels": "1",
            "changelog-producer": "lookup",
            "merge-engine": "aggregation",
            "fields.n.aggregate-function": "sum",
            "fields.q.aggregate-function": "max",
            "fields.q.ignore-retract": "true",
        },
        ("+I", "+I", "+I", "-U"),
    ),
    "levels-lookup-partial-update": (
        {
            "levels": "1",
            "changelog-producer": "lookup",
            "merge-engine": "partial-update",
            "partial-update.ignore-delete": "true",
        },
        ("+I", "+I", "-D"),
    ),
    # No changelog producer, but force-lookup: Paimon merges as LookupMergeFunction does.
    "levels-force-lookup-aggregation": (
        {
            "levels": "1",
            "changelog-producer": "none",
            "force-lookup": "true",
            "merge-engine": "aggregation",
            "fields.n.aggregate-function": "sum",
            "fields.q.aggregate-function": "max",
            "fields.q.ignore-retract": "true",
        },
        ("+I", "+I", "+I", "-U"),
    ),
    "lookup-first-row": (
        {"changelog-producer": "lookup", "merge-engine": "first-row"},
        ("+I",),
    ),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_changelog_matches_paimon_full_compaction(
    case: str, java_writer: JavaWriter, tmp_path: Path
) -> None:
    options, kinds = CASES[case]
    theirs = java_writer.run(tmp_path / "wh", _script(options, kinds, seed=len(case)))
    ours = tmp_path / "ours"
    shutil.copytree(theirs, ours)
    java_writer.run(tmp_path / "wh", {"steps": [{"op": "compact"}]})
    theirs_id = open_table(str(theirs)).snapshots.latest()
    assert theirs_id is not None
    ours_id = _ours(ours)
    assert ours_id == theirs_id.id

    if options.get("changelog-producer") == "none":
        assert java_writer.rows(ours, kinds=False) == java_writer.rows(theirs, kinds=False)
        latest = open_table(str(ours)).snapshots.latest()
        assert latest is not None and latest.changelog_manifest_list is None
        return
    expected = _changelog(java_writer, theirs, theirs_id.id)
    assert sum(1 for line in expected if not line.startswith("#")) > 4  # a real changelog
    assert _changelog(java_writer, ours, ours_id) == expected
    levels = {
        e.file.level
        for s in open_table(str(ours)).snapshots.snapshots()[-2:-1]
        for e in open_table(str(ours)).live_files(s)
    }
    if "levels" in options:
        assert len(levels - {0, 5}) > 0, levels  # intermediate levels were compacted
    assert 0 in levels

    for root in (theirs, ours):
        t = open_table(str(root))
        snap = t.snapshots.latest()
        assert snap is not None and snap.changelog_manifest_list
        files = t.changelog_files(snap)
        assert snap.changelog_record_count == sum(e.file.row_count for e in files)
        assert {e.file.level for e in files} == {5}
        assert all(e.file.file_name.startswith("changelog-") for e in files)
    assert java_writer.rows(ours, kinds=False) == java_writer.rows(theirs, kinds=False)
