"""Issue 12 defects 1, 5 and 7 and issue 17 bug 1 on a table Apache Paimon (Java) built
(primary key, deletion vectors, 40 snapshots): the independent reader must agree after."""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from support.invariants import (
    Crash,
    CrashingFileIO,
    age_tree,
    assert_no_dangling_references,
    plant,
    tree_state,
)
from support.java_paimon import assert_java_ok

from core.io import fileio as fileio_module
from core.table.table import open_table

pytestmark = pytest.mark.java
TABLE = "pk_deletion_vectors"


def _rows(doc: dict[str, Any]) -> dict[Any, Any]:
    """Checksums of every snapshot and tag Java read, by id or name."""
    return {k: v for k, v in doc.items() if k in ("snapshots", "tags")}


def test_journal_after_rollback_on_a_java_table(
    run: Any, java_built: Callable[[str], Path], java: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = java_built(TABLE)
    monkeypatch.setattr(fileio_module, "FileIO", lambda *_a, **_k: CrashingFileIO(2))
    with contextlib.suppress(Crash):
        run("expire-snapshots", root, "--retain-max", "3", "--retain-min", "1")
    monkeypatch.undo()
    assert list((root / ".paimon-cli" / "journal").glob("*.json"))
    # Paimon's rollback_to(5), as far as snapshot files go: newer snapshots removed, LATEST 5
    latest = open_table(str(root)).snapshots.latest_id()
    for sid in range(6, (latest or 0) + 1):
        (root / "snapshot" / f"snapshot-{sid}").unlink()
    (root / "snapshot" / "LATEST").write_text("5")
    before = java.verify(root)
    assert_java_ok(before)
    doc = run.json("delete-orphan-files", root)
    (discarded,) = doc["report"]["discarded_journals"]
    assert discarded["reason"] == f"the table was rolled back from snapshot {latest} to 5"
    assert open_table(str(root)).snapshots.ids() == [1, 2, 3, 4, 5]
    after = java.verify(root)
    assert_java_ok(after)
    assert _rows(after) == _rows(before)
    assert_no_dangling_references(root)


def test_too_high_earliest_hint_on_a_java_table(
    run: Any, java_built: Callable[[str], Path], java: Any
) -> None:
    root = java_built(TABLE)
    (root / "snapshot" / "EARLIEST").write_text("20")
    doc = run.json("expire-snapshots", root, "--retain-max", "30", "--retain-min", "1")
    details = doc["plan"]["details"]
    assert details["earliest_snapshot"] == 1
    assert any("EARLIEST hint says 20" in n for n in details["notes"])
    assert details["snapshots"][0] == 1  # not 20: the hint hid 1..19
    assert open_table(str(root)).snapshots.ids()[0] == details["expire_until"]
    assert_java_ok(java.verify(root))
    assert_no_dangling_references(root)


def test_foreign_files_and_damaged_index_manifest_on_a_java_table(
    run: Any, java_built: Callable[[str], Path], java: Any
) -> None:
    root = java_built(TABLE)
    age_tree(root)
    partition = next(root.glob("dt=*"))
    foreign = [
        plant(root / "README.md"),
        plant(root / "_SUCCESS"),
        plant(partition / "_SUCCESS"),
        plant(partition / "data-at-partition-level-0.orc"),
    ]
    orphan = plant(next(partition.glob("bucket-*")) / "data-00000000-orphan-0.orc")
    latest = open_table(str(root)).snapshots.latest()
    assert latest is not None and latest.index_manifest
    index_manifest = root / "manifest" / latest.index_manifest
    saved = index_manifest.read_bytes()
    index_manifest.unlink()
    state = tree_state(root)
    refused = run("delete-orphan-files", root)
    assert refused.exit_code == 1
    assert latest.index_manifest in refused.stderr
    assert tree_state(root) == state
    index_manifest.write_bytes(saved)
    doc = run.json("delete-orphan-files", root)
    assert [o["path"] for o in doc["plan"]["details"]["orphans"]] == [str(orphan)]
    for path in foreign:
        assert path.exists(), path
    assert_java_ok(java.verify(root))
