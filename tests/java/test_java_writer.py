"""The Java table writer (tests/support/java_writer.py) builds what Paimon's Java writer builds, and
our compaction of such a table reads like Paimon's own compaction of it."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
from support import pypaimon_writer as pw
from support.fixtures import Run
from support.java_paimon import JavaPaimon, assert_java_ok, assert_same_rows
from support.java_writer import JavaWriter

pytestmark = pytest.mark.java

PK_FIELDS = [
    {"name": "id", "type": "BIGINT NOT NULL"},
    {"name": "p", "type": "INT NOT NULL"},
    {"name": "v", "type": "STRING"},
    {"name": "a", "type": {"type": "ARRAY", "element": "INT"}},
]


def _pk_script() -> dict[str, Any]:
    first = [["+I", i, i % 2, f"v{i}", [i, None]] for i in range(10)]
    second = [["-D", 3, 1, None, None], ["+U", 4, 0, "x", []], ["+I", 10, 0, None, None]]
    return {
        "table": "pk",
        "schema": {
            "fields": PK_FIELDS,
            "primaryKeys": ["id", "p"],
            "partitionKeys": ["p"],
            "options": {"bucket": "2", "write-only": "true"},
        },
        "steps": [
            {"op": "write", "rows": first},
            {"op": "tag", "name": "first"},
            {"op": "write", "rows": second},
        ],
    }


# The values of the latest snapshot, as DumpRows prints them without the kind.
EXPECTED = sorted(
    [f"{i}\t{i % 2}\tv{i}\t[{i}, null]" for i in range(10) if i not in (3, 4)]
    + ["4\t0\tx\t[]", "10\t0\tnull\tnull"]
)


def test_script_builds_a_table_java_pypaimon_and_we_read_alike(
    tmp_path: Path, java_writer: JavaWriter, java: JavaPaimon, run: Run
) -> None:
    root = java_writer.run(tmp_path / "wh", _pk_script())
    doc = java.verify(root)
    assert_java_ok(doc)
    assert doc["snapshot_ids"] == [1, 2] and set(doc["tags"]) == {"first"}
    assert java_writer.rows(root, kinds=False) == EXPECTED
    assert len(java_writer.rows(root, "tag:first")) == 10
    # pypaimon 2.1 cannot read Paimon 0.9's manifests (they predate _VALUE_STATS_COLS).
    with pytest.raises(KeyError, match="_VALUE_STATS_COLS"):
        pw.read_rows_at_root(root)
    check = run("inspect", root, "--check")
    assert check.exit_code == 0, check.stdout + check.stderr


def test_our_compaction_reads_like_javas_own(
    tmp_path: Path, java_writer: JavaWriter, java: JavaPaimon, run: Run
) -> None:
    ours = java_writer.run(tmp_path / "ours", _pk_script())
    theirs = tmp_path / "theirs"
    shutil.copytree(ours.parents[1], theirs)
    theirs_root = java_writer.run(theirs, {"table": "pk", "steps": [{"op": "compact"}]})
    before = java.verify(ours)

    result = run("compact", ours)
    assert result.exit_code == 0, result.stdout + result.stderr

    after = java.verify(ours)
    assert_same_rows(before, after, keys=["tag-first", "snapshot-1", "snapshot-2"])
    # One max-level file per bucket on both sides, with the same values (kinds differ by
    # read path, not by compaction: see JavaWriter.rows).
    assert java_writer.rows(ours, kinds=False) == java_writer.rows(theirs_root, kinds=False)
    assert java_writer.rows(ours, kinds=False) == EXPECTED
    ours_files = {k: len(v) for k, v in after["live_files_by_partition"].items()}
    theirs_files = {
        k: len(v) for k, v in java.verify(theirs_root)["live_files_by_partition"].items()
    }
    assert ours_files == theirs_files


def test_unaware_append_compaction_step(
    tmp_path: Path, java_writer: JavaWriter, java: JavaPaimon
) -> None:
    script = {
        "table": "ap",
        "schema": {
            "fields": [{"name": "id", "type": "BIGINT"}, {"name": "v", "type": "STRING"}],
            # Small target: Paimon's coordinator takes files under 0.7 x target and packs a
            # bin once it reaches the target size (files here are ~0.6 KB).
            "options": {"bucket": "-1", "target-file-size": "2 kb", "compaction.min.file-num": "3"},
        },
        "steps": [{"op": "write", "rows": [["+I", i, f"x{i}"]]} for i in range(6)]
        + [{"op": "compact"}],
    }
    root = java_writer.run(tmp_path / "wh", script)
    doc = java.verify(root)
    assert_java_ok(doc)
    assert doc["latest_snapshot_id"] == 7
    assert sum(len(v) for v in doc["live_files_by_partition"].values()) < 6
    assert java_writer.rows(root, kinds=False) == sorted(f"{i}\tx{i}" for i in range(6))
    assert java_writer.rows(root, 6) == java_writer.rows(root)
