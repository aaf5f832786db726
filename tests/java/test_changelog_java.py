"""Apache Paimon (Java) reads the decoupled-changelog fixture after every command that
touches long-lived changelogs (issue 13): rows of every remaining snapshot and tag unchanged."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from support.invariants import assert_no_dangling_references
from support.java_paimon import JavaPaimon, assert_same_rows

from core.table.table import open_table

pytestmark = pytest.mark.java


def test_expire_changelogs_snapshots_and_tag_deletion_read_in_java(
    java: JavaPaimon, java_built: Callable[[str], Path], run
) -> None:
    root = java_built("changelog_decoupled")
    run.json("create-tag", root, "keep", "--snapshot", "30")
    before = java.verify(root)

    doc = run.json("expire-changelogs", root, "--retain-max", "20")
    assert doc["plan"]["details"]["changelogs"] == list(range(9, 16))
    assert_same_rows(before, java.verify(root))

    doc = run.json("expire-snapshots", root)  # decoupled: snapshots, then changelogs
    assert doc["plan"]["details"]["snapshots"] == list(range(22, 34))
    assert doc["plan"]["details"]["changelog_expiry"]["changelogs"] == list(range(16, 21))
    after = java.verify(root)
    assert_same_rows(before, after, keys=["tag-keep", "snapshot-34", "snapshot-35"])
    assert open_table(str(root)).changelogs.ids() == list(range(21, 34))

    run.json("delete-tag", root, "keep")
    assert_same_rows(after, java.verify(root), keys=["snapshot-34", "snapshot-35"])
    assert_no_dangling_references(root)


def test_coupled_expiry_on_the_fixture_keeps_changelogs_and_tags_readable(
    java: JavaPaimon, java_built: Callable[[str], Path], run
) -> None:
    """Decoupling switched off through --options (issue 12.3) on a tagged table with a
    changelog producer (12.4): the tag keeps its data, not its snapshot's changelog; the
    remaining long-lived changelogs keep everything they need; Java reads every root."""
    root = java_built("changelog_decoupled")
    run.json("create-tag", root, "keep", "--snapshot", "30")
    tagged = open_table(str(root)).tags.tag("keep").snapshot
    before = java.verify(root)
    doc = run.json(
        "expire-snapshots",
        root,
        "--options",
        "changelog.num-retained.max=5,changelog.num-retained.min=2,changelog.time-retained=1ms",
    )
    details = doc["plan"]["details"]
    assert details["config"]["changelog_decoupled"] is False
    assert details["snapshots"] == list(range(22, 34))
    assert any("keep (snapshot 30)" in n for n in details["notes"])
    assert not (root / "manifest" / str(tagged.changelog_manifest_list)).exists()
    assert open_table(str(root)).changelogs.ids() == list(range(9, 22))
    assert_no_dangling_references(root)
    assert_same_rows(before, java.verify(root), keys=["tag-keep", "snapshot-34", "snapshot-35"])
