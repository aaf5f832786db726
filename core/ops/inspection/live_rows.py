"""How many rows a reader gets from a snapshot, where the metadata alone says it.

A data file's row count counts *records*. A reader returns fewer rows when records are
merged or masked: a primary-key table merges every record of a key into one row (or none,
for a delete), deletion vectors mask rows, and a data-evolution table spreads one row's
columns over several files that share a row-id range. Counting reader rows exactly is
cheap when it needs only manifests and index manifests; otherwise it is left unknown
(None) rather than estimated:

* append table: records minus the deletion vectors' cardinalities (unknown when a vector
  was written without one, as Paimon before 1.0 writes them);
* data-evolution table: the size of the union of the files' row-id ranges
  (``_FIRST_ROW_ID`` + ``_ROW_COUNT``), without deletion vectors;
* primary-key table: unknown (the keys would have to be read and merged).
"""

from __future__ import annotations

from collections.abc import Sequence

from core.errors import CorruptMetadataError, MissingFileError
from core.format.deletion_vectors import deletion_files
from core.format.model import ManifestEntry, Snapshot
from core.table.table import PaimonTable


def records(live: Sequence[ManifestEntry]) -> int:
    """Records in the live files: what the files hold, before any merge or mask."""
    return sum(e.file.row_count for e in live)


def reader_rows(
    table: PaimonTable, snapshot: Snapshot, live: Sequence[ManifestEntry]
) -> int | None:
    """Rows a batch reader of ``snapshot`` returns, or None where only reading data says."""
    if table.is_primary_key:
        return None
    try:
        vectors = deletion_files(table.index_files(snapshot), table.paths.index_file_path)
    except (MissingFileError, CorruptMetadataError):
        return None  # unknown: inspect --check names the index manifest at fault
    if _true(table, "data-evolution.enabled"):
        return None if vectors else _row_id_union(live)
    deleted = 0
    for e in live:
        vector = vectors.get((e.partition, e.bucket, e.file.file_name))
        if vector is not None:
            if vector.cardinality is None:
                return None
            deleted += vector.cardinality
    return records(live) - deleted


def _row_id_union(live: Sequence[ManifestEntry]) -> int | None:
    ranges = []
    for e in live:
        first = e.file.first_row_id
        if first is None:
            return None
        ranges.append((first, first + e.file.row_count))
    total = 0
    end = None
    for start, stop in sorted(ranges):
        if end is None or start >= end:
            total += stop - start
            end = stop
        elif stop > end:
            total += stop - end
            end = stop
    return total


def _true(table: PaimonTable, key: str) -> bool:
    value = table.options.get(key)
    return value is not None and value.strip().lower() == "true"
