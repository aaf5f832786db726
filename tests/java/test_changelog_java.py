"""Apache Paimon (Java) reads the decoupled-changelog fixture after every command that
touches long-lived changelogs (issue 13): rows of every remaining snapshot and tag unchanged."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from invariants import assert_no_dangling_references
from java_paimon import JavaPaimon, assert_same_rows

from core.table import open_table

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
