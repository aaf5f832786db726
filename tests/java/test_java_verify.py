"""The Java reader the suite trusts (tests/javaverify, ``java`` fixture) sees what is there:
every value of every type it is given (MULTISET included) counts in its checksum, a missing
file is reported with its owner, and the warm JVM it runs in survives a failing call."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from support import java_toolchain
from support.fixtures import Run
from support.java_paimon import JavaPaimon, assert_java_ok, assert_same_rows
from support.java_writer import JavaWriter

pytestmark = pytest.mark.java

FIELDS = [
    {"name": "id", "type": "INT NOT NULL"},
    {"name": "tags", "type": {"type": "MULTISET", "element": "STRING NOT NULL"}},
    {"name": "m", "type": {"type": "MAP", "key": "STRING NOT NULL", "value": "INT"}},
]


def _script(table: str, tags: list[list[str]], *, compact: bool = False) -> dict[str, Any]:
    """One commit per multiset value of the row with id 1 (a primary key: the last wins)."""
    steps: list[dict[str, Any]] = [
        {"op": "write", "rows": [["+I", 1, t, [["k", len(t)]]], ["+I", 2, ["z"], []]]} for t in tags
    ]
    return {
        "table": table,
        "schema": {
            "fields": FIELDS,
            "primaryKeys": ["id"],
            "options": {"bucket": "1", "write-only": "true"},
        },
        "steps": steps + ([{"op": "compact"}] if compact else []),
    }


def test_multiset_values_count_in_rows_and_checksum(
    tmp_path: Path, java_writer: JavaWriter, java: JavaPaimon
) -> None:
    root = java_writer.run(tmp_path / "a", _script("t", [["a", "a", "b"], ["a", "b", "b"]]))
    doc = java.verify(root)
    assert_java_ok(doc)
    # Only the multiset differs between the two snapshots (same count, same map).
    first, second = doc["entries"]["snapshot-1"], doc["entries"]["snapshot-2"]
    assert first["rows"] == second["rows"] == 2
    assert first["checksum"] != second["checksum"]
    assert java_writer.rows(root, 1, kinds=False) == ["1\t{a=2, b=1}\t{k=3}", "2\t{z=1}\t{}"]
    # The same rows written into another table have the same checksum.
    again = java_writer.run(tmp_path / "b", _script("t", [["a", "a", "b"]]))
    assert java.verify(again)["entries"]["latest"] == first


def test_our_compaction_keeps_multiset_values(
    tmp_path: Path, java_writer: JavaWriter, java: JavaPaimon, run: Run
) -> None:
    root = java_writer.run(tmp_path / "wh", _script("t", [["a"], ["b", "b"], ["c"]]))
    before = java.verify(root)
    result = run("compact", root)
    assert result.exit_code == 0, result.stdout + result.stderr
    after = java.verify(root)
    assert after["latest_snapshot_id"] == before["latest_snapshot_id"] + 1
    assert_same_rows(before, after, keys=["snapshot-1", "snapshot-2", "snapshot-3"])
    assert after["entries"]["latest"]["checksum"] == before["entries"]["latest"]["checksum"]


def test_a_missing_data_file_is_reported_with_its_owner(
    java: JavaPaimon, java_built: Callable[[str], Path]
) -> None:
    root = java_built("pk_deletion_vectors")
    before = java.verify(root)
    assert_java_ok(before)
    live = before["live_files_by_partition"]
    partition, files = next(iter(live.items()))
    victim = f"{partition}/{files[0]}" if partition else files[0]
    (root / victim).unlink()

    after = java.verify(root)
    assert not after["ok"]
    owner = f"snapshot-{after['latest_snapshot_id']}"
    assert any(
        m.startswith(f"{victim} (data-file, needed by snapshot-") for m in after["missing_files"]
    )
    assert "read:latest" in after["errors"] and f"read:{owner}" in after["errors"]
    # Metadata-only verification still walks the references, without reading rows.
    quick = java.verify(root, read=False)
    assert quick["entries"] == {} and quick["missing_files"] == after["missing_files"]


def test_the_warm_jvm_survives_a_failing_program(
    java: JavaPaimon, java_built: Callable[[str], Path]
) -> None:
    toolchain = java_toolchain.shared()
    with pytest.raises(java_toolchain.JavaProgramError, match="usage: Verify"):
        toolchain.run("paimonclitest.Verify", "--bogus")
    with pytest.raises(java_toolchain.JavaProgramError, match="ClassNotFoundException"):
        toolchain.run("paimonclitest.NoSuchProgram")
    assert_java_ok(java.verify(java_built("changelog_decoupled"), read=False))
