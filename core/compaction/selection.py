"""Which files of one bucket a compaction merges, per table kind, as Paimon picks them.

* unaware-bucket append tables (``bucket = -1``): ``AppendCompactCoordinator`` packs a
  partition's small files into bins (``pack_unaware``; with deletion vectors
  ``pack_unaware_dv``, which keeps the files of one vector index file together);
* fixed-bucket append tables: ``BucketedAppendCompactManager`` (``pick_bucketed``);
* primary-key tables: a full compaction of the bucket into the max level (``pick_pk``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from core.compaction.config import CompactConfig
from core.compaction.task import file_size, min_sequence
from core.format.deletion_vectors import DeletionFile

FULL_COMPACT_MIN_FILE = 3  # BucketedAppendCompactManager


def pack_unaware(files: list[dict[str, Any]], cfg: CompactConfig) -> list[list[dict[str, Any]]]:
    """AppendCompactCoordinator.SubCoordinator.pack (files without deletion vectors)."""
    ordered = sorted(files, key=file_size)  # stable: ties keep manifest order
    bins, current = _fill(([f] for f in ordered), cfg)
    if len(current) >= cfg.min_file_num:
        bins.append(current)
    return bins


def _fill(
    groups: Iterable[list[dict[str, Any]]], cfg: CompactConfig
) -> tuple[list[list[dict[str, Any]]], list[dict[str, Any]]]:
    """Whole groups into bins, a bin closed once it holds more than one file and twice the
    target size (each file weighing its size plus the open-file cost); the last, open bin
    apart: the callers differ on keeping it."""
    bins: list[list[dict[str, Any]]] = []
    current: list[dict[str, Any]] = []
    weight = 0
    for group in groups:
        for f in group:
            current.append(f)
            weight += file_size(f) + cfg.open_file_cost
        if len(current) > 1 and weight >= cfg.target_file_size * 2:
            bins.append(current)
            current, weight = [], 0
    return bins, current


def pack_unaware_dv(
    files: list[dict[str, Any]], cfg: CompactConfig, vectors: Mapping[str, DeletionFile]
) -> list[list[dict[str, Any]]]:
    """SubCoordinator.packInDeletionVectorVMode: files with a vector grouped by their index
    file, groups by total size into bins (a group never splits); the last bin is compacted
    whatever its size; files without a vector are packed as usual when more than one."""
    groups: dict[str, list[dict[str, Any]]] = {}
    rest: list[dict[str, Any]] = []
    for f in files:
        vector = vectors.get(str(f["_FILE"]["_FILE_NAME"]))
        if vector is None:
            rest.append(f)
        else:
            groups.setdefault(vector.path, []).append(f)
    by_size = sorted(groups.values(), key=lambda g: sum(file_size(f) for f in g))
    bins, current = _fill(by_size, cfg)
    if current:
        bins.append(current)
    if len(rest) > 1:
        bins += pack_unaware(rest, cfg)
    return bins


def too_many_deleted(row: Mapping[str, Any], vector: DeletionFile | None, ratio: float) -> bool:
    """AppendCompactCoordinator.tooHighDeleteRatio: a vector without a cardinality (written
    before Paimon 1.0) counts as too many."""
    if vector is None:
        return False
    if vector.cardinality is None:
        return True
    return vector.cardinality > int(row["_FILE"]["_ROW_COUNT"]) * ratio


def pick_bucketed(
    files: list[dict[str, Any]],
    cfg: CompactConfig,
    vectors: Mapping[str, DeletionFile] | None = None,
) -> list[dict[str, Any]]:
    """BucketedAppendCompactManager: FullCompactTask or pickCompactBefore (minor).
    ``vectors`` is the bucket's deletion vectors when the table has them enabled."""
    ordered = sorted(files, key=min_sequence)
    if cfg.strategy == "full" and vectors is not None:
        # A file with a vector is always compacted, and so is everything after it.
        while (
            ordered
            and file_size(ordered[0]) >= cfg.small_file_size
            and ordered[0]["_FILE"]["_FILE_NAME"] not in vectors
        ):
            ordered.pop(0)
        return ordered
    if cfg.strategy == "full":
        if len(ordered) < FULL_COMPACT_MIN_FILE:
            return []
        while ordered and file_size(ordered[0]) >= cfg.small_file_size:
            ordered.pop(0)
        big = sum(1 for f in ordered if file_size(f) >= cfg.small_file_size)
        small = len(ordered) - big
        return ordered if small > big and len(ordered) >= FULL_COMPACT_MIN_FILE else []
    window: list[dict[str, Any]] = []
    total = 0
    for f in ordered:
        window.append(f)
        total += file_size(f)
        if len(window) >= cfg.min_file_num:
            return window
        if total >= cfg.target_file_size * 2:
            total -= file_size(window.pop(0))
    return []


def pick_pk(
    files: list[dict[str, Any]], max_level: int, vectors: Mapping[str, DeletionFile]
) -> list[dict[str, Any]]:
    """CompactStrategy.pickFullCompaction: every file, unless the bucket is one sorted run
    at the max level already; then only its files that have a deletion vector."""
    levels = {int(f["_FILE"]["_LEVEL"]) for f in files}
    if levels == {max_level}:
        files = [f for f in files if f["_FILE"]["_FILE_NAME"] in vectors]
    return sorted(files, key=min_sequence)


__all__ = [
    "FULL_COMPACT_MIN_FILE",
    "pack_unaware",
    "pack_unaware_dv",
    "pick_bucketed",
    "pick_pk",
    "too_many_deleted",
]
