"""`compact` on tables pypaimon-rust writes: the rows a reader gets are unchanged (or, where
Paimon hides files until they are compacted, become the merged rows), every earlier snapshot
and tag reads as before, and what stays refused is refused before anything is written."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import fastavro
import pytest
from support import java_paimon, reference_check
from support import rust_writer as rw
from support.fixtures import Run
from support.invariants import assert_rust_reads_intact, tree_state

from core.table.table import open_table


def _table_files(root: Path) -> dict[str, tuple[int, int]]:
    """Size and time of every table file (the run history under .paimon-cli/ aside)."""
    return {p: st for p, st in tree_state(root).items() if "/.paimon-cli/" not in p}


Copy = Callable[[str], tuple[rw.RustWarehouse, rw.RustTable, Path]]

#: tables compact rewrites (one COMPACT snapshot); pypaimon-rust writes every primary-key
#: file thin (no _KEY_ columns), whatever data-file.thin-mode says
COMPACTS = (
    "append_unaware",
    "append_fixed_bucket",
    "codec_zstd_pk",
    "pk_aggregation",
    "pk_changelog_full_compaction",
    "pk_changelog_input",
    "pk_changelog_lookup",
    "pk_deduplicate",
    "pk_deletion_vectors",
    "pk_dynamic_bucket",
    "pk_first_row",
    "pk_partial_update",
    "pk_partitioned_overwrite",
    "pk_postpone_bucket",
    "pk_rollback",
    "pk_sequence_field",
    "pk_thin_mode",
)

#: tables with nothing to compact under Paimon's rules (too few small files per bucket)
NOTHING_TO_COMPACT = (
    "append_truncate",
    "append_deletion_vectors",
    "date_partitions",
    "file_index",  # three files; its indexes: tests/rust/test_rust_file_index.py
)

#: table -> what the refusal names (nothing is written)
REFUSED = {
    "blob_column": "BLOB",
    "data_evolution": "data-evolution.enabled",
    "global_index": "data-evolution.enabled",
    "row_tracking": "row-tracking.enabled",
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


@pytest.mark.parametrize(("name", "thin"), [("pk_thin_mode", True), ("pk_deduplicate", False)])
def test_compacted_files_follow_thin_mode(run: Run, rust_copy: Copy, name: str, thin: bool) -> None:
    """Inputs are thin either way; the files written are thin exactly when the table sets
    data-file.thin-mode (KeyValueFileWriterFactory), with the key's stats from its values."""
    import pyarrow.parquet as pq

    _wh, _table, root = rust_copy(name)
    before = set(root.glob("bucket-*/data-*.parquet"))
    assert run("compact", root).exit_code == 0
    written = set(root.glob("bucket-*/data-*.parquet")) - before
    assert written
    for path in written:
        names = pq.read_schema(path).names
        assert ("_KEY_id" in names) is not thin
        assert names[-3:] == ["id", "v", "n"]
    # _KEY_STATS come from the id column (one INT key: its min/max rows are the key rows).
    snapshot = json.loads(max((root / "snapshot").glob("snapshot-*"), key=_id).read_text())
    for manifest in _avro(root / "manifest" / snapshot["deltaManifestList"]):
        for entry in _avro(root / "manifest" / manifest["_FILE_NAME"]):
            meta = entry["_FILE"]
            if entry["_KIND"] == 0:
                assert meta["_KEY_STATS"]["_MIN_VALUES"] == meta["_MIN_KEY"]
                assert meta["_KEY_STATS"]["_MAX_VALUES"] == meta["_MAX_KEY"]
                assert meta["_KEY_STATS"]["_NULL_COUNTS"] == [0]


def _id(path: Path) -> int:
    return int(path.name.split("-")[1])


def _avro(path: Path) -> list[dict[str, Any]]:
    with open(path, "rb") as f:
        return list(fastavro.reader(f))


@pytest.mark.java
@pytest.mark.parametrize(
    "name", ["pk_deduplicate", "pk_partial_update", "pk_deletion_vectors", "pk_first_row"]
)
def test_java_reads_what_compaction_writes_from_thin_inputs(
    run: Run, rust_copy: Copy, java: java_paimon.JavaPaimon, name: str
) -> None:
    """Paimon 0.9 (Java) cannot read thin files ("Required column is missing in data file.
    Col: [_KEY_id]"); without data-file.thin-mode, compaction writes the full layout, which
    it reads with the rows pypaimon-rust reads."""
    _wh, table, root = rust_copy(name)
    assert run("compact", root).exit_code == 0
    doc = java.verify(root)
    assert "read:latest" not in (doc.get("errors") or {}), doc.get("errors")
    assert doc["entries"]["latest"]["rows"] == len(table.expected_after_compaction)
