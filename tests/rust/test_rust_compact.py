"""`compact` on tables pypaimon-rust writes: the rows a reader gets are unchanged (or, where
Paimon hides files until they are compacted, become the merged rows), every earlier snapshot
and tag reads as before, and what stays refused is refused before anything is written."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
import reference_check
import rust_writer as rw
from fixtures import Run
from invariants import assert_rust_reads_intact, tree_state

from core.table.table import open_table


def _table_files(root: Path) -> dict[str, tuple[int, int]]:
    """Size and time of every table file (the run history under .paimon-cli/ aside)."""
    return {p: st for p, st in tree_state(root).items() if "/.paimon-cli/" not in p}


Copy = Callable[[str], tuple[rw.RustWarehouse, rw.RustTable, Path]]

#: tables compact rewrites (one COMPACT snapshot)
COMPACTS = ("append_unaware", "append_fixed_bucket")

#: tables with nothing to compact under Paimon's rules (too few small files per bucket)
NOTHING_TO_COMPACT = ("append_truncate", "append_deletion_vectors", "date_partitions")

#: table -> what the refusal names (nothing is written)
REFUSED = {
    "blob_column": "BLOB",
    "data_evolution": "data-evolution.enabled",
    "global_index": "data-evolution.enabled",
    "row_tracking": "row-tracking.enabled",
    "file_index": "file-index",
    "pk_postpone_bucket": "postpone bucket",
    "pk_thin_mode": "data-file.thin-mode",
}


@pytest.mark.parametrize("name", COMPACTS)
def test_compact_keeps_rows_and_history(run: Run, rust_copy: Copy, name: str) -> None:
    wh, table, root = rust_copy(name)
    result = run("compact", root)
    assert result.exit_code == 0, result.stdout + result.stderr
    snapshot = open_table(str(root)).snapshots.latest()
    assert snapshot is not None and snapshot.commit_kind == "COMPACT"
    assert snapshot.id == table.latest + 1
    assert wh.read(name) == table.expected_after_compaction
    assert_rust_reads_intact(wh, table)
    assert reference_check.missing_references(root) == []
    # The replaced files go with their snapshots; the compacted ones alone carry the rows.
    expired = run("expire-snapshots", root, "--retain-min", "1", "--retain-max", "1")
    assert expired.exit_code == 0, expired.stderr
    assert wh.read(name) == table.expected_after_compaction
    assert_rust_reads_intact(wh, table)


@pytest.mark.parametrize("name", NOTHING_TO_COMPACT)
def test_nothing_to_compact_changes_nothing(run: Run, rust_copy: Copy, name: str) -> None:
    _wh, _table, root = rust_copy(name)
    before = _table_files(root)
    result = run("compact", root)
    assert result.exit_code == 0, result.stderr
    assert "nothing to compact" in result.stdout
    assert _table_files(root) == before


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_refused_before_anything_is_written(run: Run, rust_copy: Copy, name: str) -> None:
    _wh, _table, root = rust_copy(name)
    before = _table_files(root)
    result = run("compact", root)
    assert result.exit_code == 1
    assert REFUSED[name] in result.stderr
    assert "unexpected" not in result.stderr
    assert _table_files(root) == before
