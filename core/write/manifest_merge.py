"""Which data manifests a manifest compaction rewrites, as Paimon's ``compact_manifest`` does.

Paimon's ``FileStoreCommitImpl.compactManifest`` runs ``ManifestFileMerger.merge`` over the
latest snapshot's data manifests (base list, then delta list) with full compaction forced
(``manifest.merge-min-count`` 1, ``manifest.full-compaction-threshold-size`` 1 byte) and
commits the result as the base list of a COMPACT snapshot when it differs from the input.

Full compaction: a manifest *must change* when it holds DELETE entries or is smaller than
``manifest.target-file-size``. Every DELETE entry of the input cancels the ADD entry of the
same file (``FileEntry.Identifier``). A manifest that need not change is kept as it is
unless its partition statistics may hold a deleted file's partition (the bounding box of
those partitions, ``PartitionPredicate.fromMultiple``) and reading it finds a cancelled ADD.
The ADD entries left of every manifest read and changed go, in input order, into new
manifests rolled at the target size. With at most one manifest to read, Paimon falls back
to its minor merge (``minCount`` 1): consecutive manifests are merged once their sizes reach
the target, and the rest at the end; a batch of one stays as it is, and within a batch ADD
and DELETE of a file cancel (``FileEntry.mergeEntries``).

The result is data only: the commit writes the new manifests (``core.write.commit``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from core.errors import CorruptMetadataError
from core.format import binary_row
from core.format.options import TableOptions, parse_memory_size
from core.format.types import DataType
from core.write.commit import KeptManifest, ManifestRewrite, NewManifests, entry_identifier

MANIFEST_TARGET_SIZE = "manifest.target-file-size"

Row = Mapping[str, Any]
Reader = Callable[[Row], Sequence[Row]]  # a manifest-list row -> the manifest's entries


def target_size(options: TableOptions) -> int:
    """``manifest.target-file-size`` (Paimon's default 8 MiB)."""
    text = options.get(MANIFEST_TARGET_SIZE)
    return parse_memory_size(text) if text else 8 * 1024 * 1024


@dataclass(frozen=True)
class ManifestMerge:
    """The outcome of merging one snapshot's data manifests."""

    before: tuple[Row, ...]  # the manifest-list rows merged (base, then delta)
    rewrite: ManifestRewrite
    mode: str  # full | minor

    @property
    def changed(self) -> bool:
        """Paimon commits only when the manifests after differ from those before."""
        if any(isinstance(p, NewManifests) for p in self.rewrite.parts):
            return True
        kept = {str(p.row["_FILE_NAME"]) for p in self.rewrite.parts if isinstance(p, KeptManifest)}
        return kept != {str(m["_FILE_NAME"]) for m in self.before}

    @property
    def entries_before(self) -> int:
        return sum(_entries(m) for m in self.before)

    @property
    def entries_after(self) -> int:
        return sum(
            len(p.entries) if isinstance(p, NewManifests) else _entries(p.row)
            for p in self.rewrite.parts
        )

    @property
    def entries_written(self) -> int:
        return sum(len(p.entries) for p in self.rewrite.parts if isinstance(p, NewManifests))


def _entries(meta: Row) -> int:
    return int(meta["_NUM_ADDED_FILES"]) + int(meta["_NUM_DELETED_FILES"])


def merge_manifests(
    metas: Sequence[Row],
    read: Reader,
    partition_types: Sequence[DataType],
    target: int,
) -> ManifestMerge:
    """Paimon's merge of ``metas`` with full compaction forced."""
    full = _full_compaction(metas, read, partition_types, target)
    if full is not None:
        return full
    return _minor_compaction(metas, read, target)


def _must_change(meta: Row, target: int) -> bool:
    return int(meta["_NUM_DELETED_FILES"]) > 0 or int(meta["_FILE_SIZE"]) < target


def _full_compaction(
    metas: Sequence[Row], read: Reader, partition_types: Sequence[DataType], target: int
) -> ManifestMerge | None:
    changing = [m for m in metas if _must_change(m, target)]
    if sum(int(m["_FILE_SIZE"]) for m in changing) < 1:  # the forced threshold: 1 byte
        return None
    deleted: set[Any] = set()
    for meta in metas:
        if int(meta["_NUM_DELETED_FILES"]) > 0:
            deleted.update(entry_identifier(e) for e in read(meta) if e["_KIND"] == 1)
    may_hold = _deleted_partitions_test(deleted, partition_types)
    kept: list[KeptManifest] = []
    to_read: list[Row] = []
    for meta in metas:
        if _must_change(meta, target) or may_hold(meta):
            to_read.append(meta)
        else:
            kept.append(KeptManifest(meta))
    if len(to_read) <= 1:
        return None
    entries: list[Row] = []
    for meta in to_read:
        adds = [e for e in read(meta) if e["_KIND"] == 0]
        left = [e for e in adds if entry_identifier(e) not in deleted]
        if _must_change(meta, target) or len(left) != len(adds):
            entries.extend(left)
        else:
            kept.append(KeptManifest(meta))
    parts: tuple[KeptManifest | NewManifests, ...] = (*kept, NewManifests(tuple(entries), target))
    return ManifestMerge(tuple(metas), ManifestRewrite(parts), "full")


def _minor_compaction(metas: Sequence[Row], read: Reader, target: int) -> ManifestMerge:
    """Paimon's minor merge with ``manifest.merge-min-count`` 1."""
    parts: list[KeptManifest | NewManifests] = []

    def merge(batch: list[Row]) -> None:
        if len(batch) == 1:
            parts.append(KeptManifest(batch[0]))
            return
        merged: dict[Any, Row] = {}
        for meta in batch:
            for entry in read(meta):
                key = entry_identifier(entry)
                if entry["_KIND"] == 0:
                    if key in merged:
                        raise CorruptMetadataError(
                            str(meta["_FILE_NAME"]),
                            f"file {key[3]} is added twice (Paimon refuses to merge it too)",
                        )
                    merged[key] = entry
                elif key in merged:
                    del merged[key]
                else:
                    merged[key] = entry
        if merged:
            parts.append(NewManifests(tuple(merged.values()), target))

    batch: list[Row] = []
    size = 0
    for meta in metas:
        size += int(meta["_FILE_SIZE"])
        batch.append(meta)
        if size >= target:
            merge(batch)
            batch, size = [], 0
    if batch:  # at least merge-min-count (1) left
        merge(batch)
    return ManifestMerge(tuple(metas), ManifestRewrite(tuple(parts)), "minor")


# -- PartitionPredicate.fromMultiple over manifest statistics ------------------------------------
Test = Callable[[Row], bool]


def _deleted_partitions_test(deleted: Iterable[Any], types: Sequence[DataType]) -> Test:
    """Whether a manifest's partition statistics may hold a partition of a deleted file:
    always (unpartitioned), never (no deletes), else each field within the deleted
    partitions' range, a null allowed when some deleted partition is null there."""
    partitions = {key[0] for key in deleted}
    if not partitions:
        return lambda _meta: False
    if not types:
        return lambda _meta: True
    rows = [binary_row.decode(p, types) for p in partitions]
    fields = []
    for i in range(len(types)):
        values = [r[i] for r in rows if r[i] is not None]
        nulls = len(rows) - len(values)
        fields.append((min(values) if values else None, max(values) if values else None, nulls))
    return lambda meta: _may_hold(meta, fields, types)


def _may_hold(meta: Row, fields: Sequence[tuple[Any, Any, int]], types: Sequence[DataType]) -> bool:
    stats = meta.get("_PARTITION_STATS") or {}
    row_count = int(meta["_NUM_ADDED_FILES"]) + int(meta["_NUM_DELETED_FILES"])
    try:
        mins = binary_row.decode(bytes(stats["_MIN_VALUES"]), types)
        maxs = binary_row.decode(bytes(stats["_MAX_VALUES"]), types)
    except (CorruptMetadataError, KeyError, TypeError):
        return True  # unknown statistics: the manifest may hold anything
    null_counts = stats.get("_NULL_COUNTS")
    for i, (low, high, nulls) in enumerate(fields):
        count = null_counts[i] if null_counts is not None and i < len(null_counts) else None
        stat = _FieldStats(row_count, mins[i], maxs[i], count)
        if low is None:  # every deleted partition is null here
            if not stat.may_be_null():
                return False
            continue
        at_least = stat.may_be_at_least(low) or (nulls > 0 and stat.may_be_null())
        at_most = stat.may_be_at_most(high) or (nulls > 0 and stat.may_be_null())
        if not (at_least and at_most):
            return False
    return True


@dataclass(frozen=True, slots=True)
class _FieldStats:
    """One field's statistics, tested as Paimon's ``LeafPredicate`` tests them."""

    row_count: int
    low: Any
    high: Any
    null_count: int | None

    def _unknown(self) -> bool:
        """Stats that cannot exclude anything: not all null, yet no min or max."""
        not_all_null = self.null_count is None or self.row_count != self.null_count
        return not_all_null and (self.low is None or self.high is None)

    def _all_null(self) -> bool:
        return self.null_count is not None and self.row_count == self.null_count

    def may_be_null(self) -> bool:
        if self._unknown():
            return True
        return self.null_count is None or self.null_count > 0

    def may_be_at_least(self, literal: Any) -> bool:
        if self._unknown():
            return True
        return not self._all_null() and bool(literal <= self.high)

    def may_be_at_most(self, literal: Any) -> bool:
        if self._unknown():
            return True
        return not self._all_null() and bool(literal >= self.low)


__all__ = ["MANIFEST_TARGET_SIZE", "ManifestMerge", "merge_manifests", "target_size"]
