"""The two big sets of orphan cleaning, bounded at any table size (issue 27).

Orphan cleaning compares two sets by file name: the names every root uses, and the files
the listing finds. A table of 100 million files holds about 50 million of each, far more
than memory holds as Python strings (~100 bytes each). Small tables keep both in memory,
as they always did. Past ``IN_MEMORY_NAMES`` used names, the used names go to hash
partitions on local disk (``core.runtime.spill``), the listing's candidates follow them
into partitions of the same hashes, and each partition is then resolved with its used
names alone in memory: the same name-by-name decision, one slice at a time. Orphans past
``IN_MEMORY_ORPHANS`` become sorted runs on disk, merged into one sorted sequence that the
plan reads a batch at a time.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Sequence
from typing import NamedTuple

from core.errors import SafetyRefusalError
from core.io.fileio import FileInfo, FileIO
from core.runtime.spill import Partitions, SortedRuns, Spill, Spilled

IN_MEMORY_NAMES = 2_000_000  # used names kept as one set up to here (~250 MB)
PARTITION_NAMES = 1_000_000  # used names per partition beyond (~120 MB as a set)
IN_MEMORY_ORPHANS = 500_000  # orphans held in memory before they go to sorted runs

SEP = "\0"  # no listed file name can hold it (core.runtime.spill)


class Orphan(NamedTuple):
    path: str
    name: str
    size: int
    mtime_ms: int
    kind: str  # the directory kind it was found in


class LazySpill:
    """The run's spill directory, made only if something is spilled (small tables never
    touch local disk)."""

    def __init__(self) -> None:
        self._spill: Spill | None = None

    def get(self) -> Spill:
        if self._spill is None:
            self._spill = Spill()
        return self._spill


class UsedNames:
    """Every name a root uses: one set, or hash partitions on local disk when there are
    more than ``IN_MEMORY_NAMES`` (``expected``: an upper bound, known from the manifest
    lists before any manifest is decoded)."""

    def __init__(self, expected: int, spill: LazySpill) -> None:
        self.names: set[str] | None = None
        self.partitions: Partitions | None = None
        self.written = 0
        if expected <= IN_MEMORY_NAMES:
            self.names = set()
        else:
            count = -(-expected // PARTITION_NAMES)
            self.partitions = Partitions(spill.get(), "used", count, 1)

    @property
    def spilled(self) -> bool:
        return self.partitions is not None

    def update(self, names: Iterable[str]) -> None:
        if self.names is not None:
            before = len(self.names)
            self.names.update(names)
            self.written += len(self.names) - before
            return
        assert self.partitions is not None
        files, count = self.partitions.files, self.partitions.count
        for name in names:
            if SEP in name:
                continue  # can never match a listed name (module docstring of spill)
            files[hash(name) % count].append((name,))
            self.written += 1


class OrphanSink:
    """Orphans as found, in any order; ``result`` gives them sorted by path, as a list
    while few, else as a spilled sequence read from sorted runs merged on disk. Every
    path passes the path lock on its way in."""

    def __init__(self, spill: LazySpill, inside: Callable[[str], bool]) -> None:
        self.spill = spill
        self.inside = inside
        self.count = 0
        self.bytes = 0
        self.by_kind: dict[str, dict[str, int]] = {}
        self.parents: dict[str, None] = {}  # directories orphans were found in
        self._memory: list[Orphan] = []
        self._runs: SortedRuns | None = None

    def add(self, orphan: Orphan) -> None:
        if not self.inside(orphan.path):
            raise SafetyRefusalError(f"listing returned {orphan.path}, outside the table")
        self.count += 1
        self.bytes += orphan.size
        slot = self.by_kind.get(orphan.kind)
        if slot is None:
            slot = self.by_kind[orphan.kind] = {"files": 0, "bytes": 0}
        slot["files"] += 1
        slot["bytes"] += orphan.size
        self.parents[orphan.path.rpartition("/")[0]] = None
        if self._runs is not None:
            self._runs.append(_record(orphan))
            return
        self._memory.append(orphan)
        if len(self._memory) > IN_MEMORY_ORPHANS:
            self._runs = SortedRuns(self.spill.get(), "orphans", len(Orphan._fields))
            self._runs.extend(map(_record, self._memory))
            self._memory = []

    def extend(self, orphans: Iterable[Orphan]) -> None:
        for orphan in orphans:
            self.add(orphan)

    def result(self) -> Sequence[Orphan]:
        if self._runs is None:
            self._memory.sort()  # by path: paths are unique
            return self._memory
        return Spilled(self._runs.finish(), _orphan)


def _record(o: Orphan) -> tuple[str, ...]:
    return (o.path, o.name, str(o.size), str(o.mtime_ms), o.kind)


def _orphan(r: tuple[str, ...]) -> Orphan:
    return Orphan(r[0], r[1], int(r[2]), int(r[3]), r[4])


# A candidate the listing found in spill mode: (name, path, size, mtime, kind), size and
# mtime empty when the listing did not stat it (local disk: only unused names are stat'ed).
Candidate = tuple[str, str, str, str, str]


class Candidates:
    """Listed files whose name may be unused, partitioned like the used names."""

    def __init__(self, used: UsedNames, spill: LazySpill) -> None:
        assert used.partitions is not None
        self.partitions = Partitions(spill.get(), "listed", used.partitions.count, 5)

    def add(self, candidate: Candidate) -> None:
        self.partitions.append(candidate)


def resolve(
    used: UsedNames,
    candidates: Candidates,
    fileio: FileIO,
    *,
    older_than_ms: int,
    future_ms: int,
    sink: OrphanSink,
    future: list[Orphan],
) -> int:
    """Decide every candidate, one partition at a time with its used names in memory: an
    unused old file is an orphan (``sink``), an unused one modified after ``future_ms`` goes
    to ``future``. Returns the number of distinct used names. Partition files are removed
    as they are read."""
    assert used.partitions is not None
    distinct = 0
    for names_file, listed in zip(
        used.partitions.finish(), candidates.partitions.finish(), strict=True
    ):
        names = set(names_file.strings())
        distinct += len(names)
        os.unlink(names_file.path)
        for name, path, size, mtime, kind in listed:
            if name in names:
                continue
            orphan = stat_candidate(fileio, (name, path, size, mtime, kind))
            if orphan is not None:
                decide(orphan, older_than_ms, future_ms, sink, future)
        os.unlink(listed.path)
        del names
    return distinct


def candidate_orphan(c: Candidate, info: FileInfo | None = None) -> Orphan | None:
    """The candidate as an Orphan: as the listing stat'ed it, else as ``info`` (its stat now)
    shows it; None when it went meanwhile, or is a link or a directory: never followed nor
    removed."""
    name, path, size, mtime, kind = c
    if size:
        return Orphan(path, name, int(size), int(mtime), kind)
    if info is None or info.is_dir or info.is_symlink or info.mtime_ms is None:
        return None
    return Orphan(path, name, info.size, info.mtime_ms, kind)


def stat_candidate(fileio: FileIO, c: Candidate) -> Orphan | None:
    """``candidate_orphan``, stat'ing a candidate the listing did not stat."""
    return candidate_orphan(c, None if c[2] else fileio.info(c[1]))


def verdict(orphan: Orphan, older_than_ms: int, future_ms: int) -> str | None:
    """``file``: an orphan (older than the cut-off); ``future``: modified after "now" (the
    run refuses); None: too young to delete, kept."""
    if orphan.mtime_ms < older_than_ms:
        return "file"
    if orphan.mtime_ms > future_ms:
        return "future"
    return None


def decide(
    orphan: Orphan, older_than_ms: int, future_ms: int, sink: OrphanSink, future: list[Orphan]
) -> None:
    """An unused file: into the orphans, the future ones, or kept (``verdict``)."""
    found = verdict(orphan, older_than_ms, future_ms)
    if found == "file":
        sink.add(orphan)
    elif found == "future":
        future.append(orphan)


__all__ = [
    "IN_MEMORY_NAMES",
    "IN_MEMORY_ORPHANS",
    "PARTITION_NAMES",
    "Candidates",
    "LazySpill",
    "Orphan",
    "OrphanSink",
    "UsedNames",
    "resolve",
]
