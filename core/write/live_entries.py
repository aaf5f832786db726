"""The live files of a snapshot as full manifest rows: what a commit that rewrites or drops
files copies into its DELETE entries (every field kept, so nothing it does not model is
lost). Compaction, partition expiry and remove-unexisting-files read them."""

from __future__ import annotations

from typing import Any

from core.format.model import Snapshot
from core.table.table import PaimonTable
from core.write.commit import entry_identifier
from core.write.manifest_writer import read_raw_rows


def live_raw_entries(table: PaimonTable, snapshot: Snapshot) -> list[dict[str, Any]]:
    """The live files of a snapshot as full manifest rows (every field kept for copying)."""
    merged: dict[Any, dict[str, Any]] = {}
    for list_name in (snapshot.base_manifest_list, snapshot.delta_manifest_list):
        for meta in table.manifest_list(snapshot, list_name):
            path = table.paths.manifest_path(meta.file_name)
            for row in read_raw_rows(table.fileio, path, expect=meta.expected()):
                key = entry_identifier(row)
                if row["_KIND"] == 0:
                    merged[key] = row
                else:
                    merged.pop(key, None)
    return list(merged.values())


__all__ = ["live_raw_entries"]
