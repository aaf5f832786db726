"""Our reader agrees with Apache Paimon (Java) on the Java-built fixtures."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from support.java_paimon import JavaPaimon, assert_java_ok

from core.table.table import open_table

pytestmark = pytest.mark.java


@pytest.mark.parametrize("name", ["changelog_decoupled", "pk_deletion_vectors"])
def test_latest_live_files_and_ids_match_java(
    java: JavaPaimon, java_built: Callable[[str], Path], name: str
) -> None:
    root = java_built(name)
    doc = java.verify(root)
    assert_java_ok(doc)
    table = open_table(str(root))
    assert table.snapshots.ids() == doc["snapshot_ids"]
    assert sorted(table.tags.names()) == sorted(doc["tags"])
    latest = table.snapshots.snapshot(doc["latest_snapshot_id"])
    ours = sorted(
        f"{table.paths.partition_path(e.partition)}/bucket-{e.bucket}/{e.file.file_name}"
        for e in table.live_files(latest)
    )
    theirs = sorted(
        f"{part}/{name}" for part, names in doc["live_files_by_partition"].items() for name in names
    )
    assert ours == theirs
    live_rows = sum(e.file.row_count for e in table.live_files(latest))
    assert live_rows >= doc["entries"]["latest"]["rows"]  # merged PK rows never exceed file rows
