"""Where a table's bytes are, and what each command would give back: inspect's picture.

Every file on storage is put in one category, by the roots that reference it (the same
references every deleting command keeps, ``core.retention.references``), first match wins:

* ``live``: the latest snapshot of this branch uses it;
* ``snapshots``: only older snapshots of this branch; ``expire-snapshots`` frees, now, what
  only the snapshots the table's retention would expire now hold;
* ``tags``: only tags of this branch; ``expire-tags`` frees, now, what only tags whose
  retention has passed hold (``delete-tag`` the rest);
* ``branches``: only other branches (main included, seen from a branch); ``delete-branch``
  leaves them to orphan cleaning;
* ``changelogs``: only long-lived changelogs (``changelog/changelog-N``):
  ``expire-changelogs``;
* ``orphans``: no root at all; ``delete-orphan-files`` frees those older than its default
  cut-off (one day) that have Paimon's names (at most this much);
* ``metadata``: snapshot, schema, tag, consumer and changelog JSON and hints.

And per partition of the latest snapshot, a histogram of live data file sizes with what
``compact`` would make of them (its own plan, read only).
"""

from __future__ import annotations

import enum
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from core.compaction.config import CompactFlags
from core.compaction.planner import plan_compact
from core.errors import PaimonError
from core.format.model import ManifestEntry
from core.io.fileio import FileInfo, basename, parent
from core.retention.carried import Carried
from core.retention.references import changelog_references, collect_references
from core.runtime.executors.base import Executor
from core.table.scan import ManifestCache, full_live_set
from core.table.table import PaimonTable

DAY_MS = 86_400_000


class Holder(enum.IntFlag):
    LIVE = 1
    EXPIRABLE = 2  # an older snapshot the table's retention would expire now
    OLDER = 4  # an older snapshot it keeps
    TAG_DUE = 8  # a tag whose retention has passed
    TAG = 16
    BRANCH = 32  # another branch (its snapshots, tags or changelogs)
    CHANGELOG = 64  # a long-lived changelog of this branch


@dataclass(frozen=True, slots=True)
class Category:
    name: str
    label: str
    files: int
    bytes: int
    command: str | None  # what gives it back
    reclaimable: int | None  # what that command frees now (None: it depends on the arguments)
    note: str


@dataclass(frozen=True, slots=True)
class SpaceView:
    files: int
    bytes: int
    categories: tuple[Category, ...]


_META_DIRS = frozenset({"snapshot", "schema", "tag", "consumer", "changelog"})


def _holders(
    table: PaimonTable,
    executor: Executor,
    expirable: set[int],
    tags_due: set[str],
    latest_live: dict[int, list[ManifestEntry]],
) -> dict[str, Holder]:
    """path -> the kinds of roots that reference it, over every branch; the live files of
    ``table``'s latest snapshot go into ``latest_live``, by its id (the walk ends there)."""
    held: dict[str, Holder] = {}

    def want(kind: Holder) -> Callable[[str, Any, str], None]:
        def add(path: str, _size: Any, _role: str) -> None:
            held[path] = held.get(path, Holder(0)) | kind

        return add

    main = table if table.branch == "main" else table.for_branch("main")
    views = [main, *(main.for_branch(b) for b in main.branches.branches())]
    for view in views:
        own = view.branch == table.branch
        cache = ManifestCache(view, executor)
        snapshots = view.snapshots.snapshots()
        latest = snapshots[-1].id if snapshots else None
        spans = _Spans(held, latest if own else None, expirable if own else None)
        carried = Carried(view, spans, cache)
        for snap in snapshots:
            spans.enter(snap.id)
            live = carried.step(snap)
        if own and snapshots:
            latest_live[snapshots[-1].id] = list(live.values())
        carried.end()
        for tag in view.tags.tags():
            kind = (
                Holder.BRANCH if not own else Holder.TAG_DUE if tag.name in tags_due else Holder.TAG
            )
            live = full_live_set(view, tag.snapshot, cache)
            collect_references(view, tag.snapshot, live, want(kind), kind="tag")
        changelog_references(view, _every_id(want(Holder.CHANGELOG if own else Holder.BRANCH)))
    return held


class _Spans:
    """Holds of consecutive snapshots (``core.retention.carried``) as the kinds of roots in
    each span: for this branch, the latest (LIVE), those retention expires now (EXPIRABLE)
    and the others (OLDER); every snapshot of another branch is BRANCH (``expirable`` None)."""

    def __init__(self, held: dict[str, Holder], latest: int | None, expirable: set[int] | None):
        self.held = held
        self.latest = latest
        self.expirable = sorted(expirable) if expirable is not None else None
        self.current = self.previous = 0
        self.open: dict[str, int] = {}  # path -> first snapshot id holding it

    def enter(self, snapshot_id: int) -> None:
        self.previous, self.current = self.current, snapshot_id

    def want(self, path: str, _size: Any, _role: str) -> None:
        self._add(path, self.current, self.current)

    def hold(self, path: str, _size: Any, _role: str) -> None:
        self.open[path] = self.current

    def drop(self, path: str, *, through_current: bool = False) -> None:
        last = self.current if through_current else self.previous
        self._add(path, self.open.pop(path), last)

    def _add(self, path: str, first: int, last: int) -> None:
        self.held[path] = self.held.get(path, Holder(0)) | self._kinds(first, last)

    def _kinds(self, first: int, last: int) -> Holder:
        if self.expirable is None:
            return Holder.BRANCH
        kinds = Holder(0)
        if first <= (self.latest or 0) <= last:
            kinds |= Holder.LIVE
            last = min(last, (self.latest or 0) - 1)
        if first > last:
            return kinds
        expiring = bisect_right(self.expirable, last) - bisect_left(self.expirable, first)
        if expiring:
            kinds |= Holder.EXPIRABLE
        if expiring < last - first + 1:
            kinds |= Holder.OLDER
        return kinds


def _every_id(want: Callable[[str, Any, str], None]) -> Callable[[int], Any]:
    """The same receiver for the files of every long-lived changelog."""
    return lambda _changelog_id: want


_SNAPSHOTS = Holder.EXPIRABLE | Holder.OLDER
_TAGS = Holder.TAG_DUE | Holder.TAG


def _category(h: Holder) -> tuple[str, bool]:
    """The category of a referenced file, and whether its command frees it now."""
    if h & Holder.LIVE:
        return "live", False
    if h & _SNAPSHOTS:
        return "snapshots", h == h & Holder.EXPIRABLE
    if h & _TAGS:
        return "tags", h == h & Holder.TAG_DUE
    if h & Holder.BRANCH:
        return "branches", False
    return "changelogs", False


_LABELS: dict[str, tuple[str, str | None, str]] = {
    "live": ("live (latest snapshot)", None, "what readers of the latest snapshot need"),
    "snapshots": (
        "only older snapshots",
        "expire-snapshots",
        "freed now: what only the snapshots the table's retention expires now hold",
    ),
    "tags": (
        "only tags",
        "expire-tags",
        "freed now: what only tags past their retention hold; delete-tag the rest",
    ),
    "branches": (
        "only other branches",
        "delete-branch",
        "its files are then orphans for delete-orphan-files",
    ),
    "changelogs": (
        "only long-lived changelogs",
        "expire-changelogs",
        "how much depends on its options",
    ),
    "orphans": (
        "orphans (unreferenced)",
        "delete-orphan-files",
        "freed now: at most the ones older than a day (only Paimon's file names count)",
    ),
    "metadata": ("metadata (JSON, hints)", None, "snapshot, schema, tag and consumer files"),
}
ORDER = ("live", "snapshots", "tags", "branches", "changelogs", "orphans", "metadata")


def space_view(
    table: PaimonTable,
    storage: Iterable[FileInfo],
    *,
    executor: Executor,
    now_ms: int,
    expirable: set[int],
    tags_due: set[str],
    latest_live: dict[int, list[ManifestEntry]] | None = None,
) -> SpaceView:
    """Every file listed on storage, in its category (see the module doc); the walk over
    every snapshot ends with the latest one's live files, put into ``latest_live`` (the
    summary then need not read its manifests once more)."""
    held = _holders(
        table, executor, expirable, tags_due, {} if latest_live is None else latest_live
    )
    files = dict.fromkeys(ORDER, 0)
    sizes = dict.fromkeys(ORDER, 0)
    now = dict.fromkeys(ORDER, 0)
    for info in storage:
        h = held.get(info.path)
        if h is not None:
            name, freed = _category(h)
        elif basename(parent(info.path)) in _META_DIRS or info.name in ("EARLIEST", "LATEST"):
            name, freed = "metadata", False
        else:
            age = now_ms - info.mtime_ms if info.mtime_ms is not None else 0
            name, freed = "orphans", age > DAY_MS
        files[name] += 1
        sizes[name] += info.size
        if freed:
            now[name] += info.size
    categories = []
    for name in ORDER:
        label, command, note = _LABELS[name]
        reclaimable = now[name] if name in ("snapshots", "tags", "orphans") else None
        categories.append(
            Category(name, label, files[name], sizes[name], command, reclaimable, note)
        )
    return SpaceView(sum(files.values()), sum(sizes.values()), tuple(categories))


# -- the small-file picture ----------------------------------------------------------------------
MIB = 1024 * 1024
#: upper bounds of the histogram's size classes (the last is open)
SIZE_CLASSES: tuple[tuple[str, int | None], ...] = (
    ("<1M", MIB),
    ("1-16M", 16 * MIB),
    ("16-64M", 64 * MIB),
    ("64-128M", 128 * MIB),
    ("128-256M", 256 * MIB),
    (">=256M", None),
)


@dataclass(frozen=True, slots=True)
class PartitionSizes:
    partition: dict[str, str | None]
    files: int
    bytes: int
    histogram: tuple[int, ...]  # files per SIZE_CLASSES entry
    compact_files: int | None  # files compact would rewrite here (None: not planned)
    compact_files_after: int | None  # about how many it would write


@dataclass(frozen=True, slots=True)
class FileSizes:
    partitions: tuple[PartitionSizes, ...]
    compact_refused: str | None  # why compact does not plan this table, if it does not


def _size_class(size: int) -> int:
    for i, (_label, bound) in enumerate(SIZE_CLASSES):
        if bound is None or size < bound:
            return i
    return len(SIZE_CLASSES) - 1


def file_sizes(table: PaimonTable, live: Sequence[ManifestEntry], *, now_ms: int) -> FileSizes:
    """Per partition of the latest snapshot: the live data files by size class, and what
    ``compact`` (its plan, table options, Paimon's defaults) would make of them."""
    counts: dict[bytes, list[int]] = {}
    totals: dict[bytes, int] = {}
    for e in live:
        row = counts.setdefault(e.partition, [0] * len(SIZE_CLASSES))
        row[_size_class(e.file.file_size)] += 1
        totals[e.partition] = totals.get(e.partition, 0) + e.file.file_size
    rewrites: dict[bytes, list[int]] | None = None
    refused = None
    try:
        plan = plan_compact(table, CompactFlags(), now_ms=now_ms)
    except PaimonError as exc:  # a table compact refuses: say why instead
        refused = exc.message
    else:
        rewrites = {}
        for task in plan.bucket_tasks:
            slot = rewrites.setdefault(task.partition, [0, 0])
            slot[0] += len(task.inputs)
            slot[1] += task.estimated_outputs
    partitions = []
    for part in sorted(counts, key=lambda p: table.paths.partition_path(p)):
        planned = None if rewrites is None else rewrites.get(part, [0, 0])
        partitions.append(
            PartitionSizes(
                table.paths.partition_spec(part),
                sum(counts[part]),
                totals[part],
                tuple(counts[part]),
                None if planned is None else planned[0],
                None if planned is None else planned[1],
            )
        )
    return FileSizes(tuple(partitions), refused)


__all__ = [
    "ORDER",
    "SIZE_CLASSES",
    "Category",
    "FileSizes",
    "PartitionSizes",
    "SpaceView",
    "file_sizes",
    "space_view",
]
