"""The listing of orphan cleaning: which directories Paimon writes files into, which names
there are candidates, and the level-by-level listing that turns old, unused candidates
into orphans (and finds old empty directories)."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from core.errors import SafetyRefusalError
from core.io.fileio import DirScan, FileInfo, FileIO, join
from core.ops.orphans.orphan_sets import (
    Candidate,
    Candidates,
    LazySpill,
    Orphan,
    OrphanSink,
    UsedNames,
    resolve,
)
from core.runtime.executors.base import Executor
from core.runtime.executors.spark import arrow_schema
from core.runtime.progress import Progress
from core.table.table import PaimonTable

# Clocks kept by NTP agree within seconds; minutes apart means one of them is wrong.
CLOCK_TOLERANCE_MS = 5 * 60_000


@dataclass(frozen=True, slots=True)
class ListedDir:
    path: str
    kind: str  # manifest | index | statistics | data | external | snapshot | changelog
    depth: int  # partition levels still to descend (data dirs); -1 for flat dirs


def skipped_external_roots(table: PaimonTable, external_exclusive: bool) -> list[str]:
    """External roots not cleaned: another table may write into the same root, and names
    alone cannot tell its live files from our orphans (Paimon deletes them; D3)."""
    return [] if external_exclusive else list(table.paths.external_roots)


def candidate_dirs(
    table: PaimonTable, views: list[PaimonTable], external_exclusive: bool = False
) -> list[ListedDir]:
    root = table.location
    depth = len(table.schema.partition_keys)
    dirs = [
        ListedDir(join(root, "manifest"), "manifest", -1),
        ListedDir(join(root, "index"), "index", -1),
        ListedDir(join(root, "statistics"), "statistics", -1),
        ListedDir(table.paths.data_root, "data", depth),
    ]
    if external_exclusive:
        dirs += [ListedDir(ext, "external", depth) for ext in table.paths.external_roots]
    for view in views:
        dirs.append(ListedDir(view.snapshots.directory, "snapshot", -1))
        dirs.append(ListedDir(view.changelogs.directory, "changelog", -1))
    # A Paimon directory that is a symlink may lead anywhere: never list through it (D3).
    return [d for d in dirs if d.path == root or not _is_link(table.fileio, d.path)]


def _is_link(fileio: FileIO, path: str) -> bool:
    info = fileio.info(path) if fileio.is_local(path) else None
    return info is not None and info.is_symlink


@dataclass(frozen=True, slots=True)
class NameShapes:
    """Which file names Paimon writes where: only those are orphan candidates
    (docs/commands.md, "delete-orphan-files"). A Paimon temp file is ``.<name>.<uuid>.tmp``
    of such a name (FileIO.tryToWriteAtomic); snapshot and changelog directories hold no
    other candidate."""

    data_prefixes: tuple[str, ...] = ("data-", "changelog-")

    def prefixes(self, kind: str) -> tuple[tuple[str, ...], bool]:
        """(name prefixes, whether only temp files of them are candidates)."""
        if kind in ("data", "external"):
            return self.data_prefixes, False
        return _FLAT_PREFIXES.get(kind, ((), True))

    def candidate(self, kind: str, name: str) -> bool:
        return _matches(*self.prefixes(kind), name)

    def matcher(self, kind: str) -> Callable[[str], bool]:
        """``candidate`` for one kind, its prefixes looked up once (a listing asks per file)."""
        return partial(_matches, *self.prefixes(kind))


def _matches(prefixes: tuple[str, ...], temp_only: bool, name: str) -> bool:
    if not prefixes or name.endswith(".managed.blob"):
        return False
    if name.startswith(".") and name.endswith(".tmp"):
        return name[1:].startswith(prefixes)
    return not temp_only and name.startswith(prefixes)


_FLAT_PREFIXES: dict[str, tuple[tuple[str, ...], bool]] = {
    "manifest": (("manifest-", "index-manifest-"), False),  # manifest-list-* included
    "index": (("index-",), False),
    "statistics": (("stat-",), False),
    "snapshot": (("snapshot-", "EARLIEST.", "LATEST."), True),
    "changelog": (("changelog-", "EARLIEST.", "LATEST."), True),
}


def name_shapes(table: PaimonTable) -> NameShapes:
    """The table's data and changelog file prefixes (``data-file.prefix``,
    ``changelog-file.prefix``), Paimon's defaults otherwise."""
    data = table.options.get("data-file.prefix") or "data-"
    changelog = table.options.get("changelog-file.prefix") or "changelog-"
    return NameShapes((data, changelog))


@dataclass(slots=True)
class _Listing:
    """What one directory contributes beside its files (those go to the scan as listed,
    ``OrphanScan.take``): deeper directories to list, and facts."""

    next_level: list[ListedDir] = field(default_factory=list)
    empty_dir: str | None = None  # an old, empty partition or bucket directory
    entries: int = 0
    watched: list[str] = field(default_factory=list)  # watched names seen in manifest/


class _AllNames(AbstractSet[str]):
    """Every name "known": a local listing then stats no file (the used names are spilled;
    only names found unused are stat'ed later, as an in-memory set would have it)."""

    def __contains__(self, name: object) -> bool:
        return True

    def __iter__(self) -> Iterator[str]:
        return iter(())

    def __len__(self) -> int:
        return 0


@dataclass(frozen=True, slots=True)
class _Sorting:
    """How a page of one directory's files is sorted into orphans, future candidates and
    (used names spilled) candidates left for ``orphan_sets.resolve``."""

    used: AbstractSet[str] | None
    older_than_ms: int
    future_ms: int
    kind: str
    candidate: Callable[[str], bool]

    def take(self, page: DirScan, prefix: str, found: OrphanScan) -> None:
        orphans: list[Orphan] = []
        future: list[Orphan] = []
        unresolved: list[Candidate] = []
        kind, candidate = self.kind, self.candidate
        if self.used is None:
            unresolved = [(n, prefix + n, "", "", kind) for n in page.known if candidate(n)]
        for e in page.files:
            if e.is_symlink or e.mtime_ms is None:
                continue  # never follow or remove a link (D3)
            if not (e.mtime_ms < self.older_than_ms or e.mtime_ms > self.future_ms):
                continue
            if not candidate(e.name):
                continue
            if self.used is None:
                unresolved.append((e.name, e.path, str(e.size), str(e.mtime_ms), kind))
            elif e.mtime_ms < self.older_than_ms:  # strictly older than the cut-off
                orphans.append(Orphan(e.path, e.name, e.size, e.mtime_ms, kind))
            else:
                future.append(Orphan(e.path, e.name, e.size, e.mtime_ms, kind))
        found.take(orphans, future, unresolved)


def _scan_one(
    fileio: FileIO,
    shapes: NameShapes,
    used: AbstractSet[str] | None,
    older_than_ms: int,
    future_ms: int,
    roots: AbstractSet[str],
    watch: AbstractSet[str],
    found: OrphanScan,
    d: ListedDir,
) -> _Listing:
    """List one directory, a page at a time: its candidate files go to ``found`` page by
    page (a bucket directory may hold millions of files), the rest comes back. Used names
    need no stat (they are never orphans), so on local disk only unknown files are
    stat'ed; runs in the executor's threads. ``used`` None: the used names are spilled,
    and every candidate is left for ``orphan_sets.resolve`` (on local disk unstat'ed)."""
    local = fileio.is_local(d.path)
    known = used if used is not None else (_AllNames() if local else frozenset())
    out = _Listing()
    dirs: list[FileInfo] = []
    # Paimon writes files only below the partition levels: a partition directory or the
    # data root is listed for its subdirectories (and to find it empty), never for files.
    sorting = None
    if d.depth < 0:
        sorting = _Sorting(used, older_than_ms, future_ms, d.kind, shapes.matcher(d.kind))
    prefix = d.path.rstrip("/") + "/"
    for page in fileio.scan_dir_pages(d.path, known=known):
        out.entries += len(page.files) + len(page.dirs) + len(page.known)
        dirs += page.dirs
        if d.kind == "manifest" and watch:
            out.watched += [n for n in page.known if n in watch]
            out.watched += [f.name for f in page.files if f.name in watch]
        if sorting is not None:
            sorting.take(page, prefix, found)
    if d.depth > 0:
        subdirs = [e for e in dirs if "=" in e.name]
        out.next_level = [ListedDir(e.path, d.kind, d.depth - 1) for e in subdirs]
        if subdirs or d.path in roots:
            return out
        # A partition directory with nothing below it is listed itself (Paimon).
    elif d.depth == 0:
        buckets = [e for e in dirs if e.name.startswith("bucket-")]
        out.next_level = [ListedDir(e.path, d.kind, -1) for e in buckets]
        if buckets or (d.path in roots and not out.entries):
            return out
    if not out.entries and d.kind in ("data", "external") and d.path not in roots:
        info = fileio.info(d.path)
        if info is not None and info.mtime_ms is not None and info.mtime_ms < older_than_ms:
            out.empty_dir = d.path
    return out


@dataclass(frozen=True)
class OrphanSearch:
    """What a scan looks for, whichever listing it reads: files at the places Paimon writes
    for ``views`` whose names ``used`` lacks, older than the cut-off (those modified after
    "now", plus the clock tolerance, are collected too: the caller refuses on any);
    ``watch``: names in manifest/ it reports seen."""

    table: PaimonTable
    views: list[PaimonTable]
    used: UsedNames
    older_than_ms: int
    now_ms: int
    watch: AbstractSet[str] = frozenset()
    external_exclusive: bool = False
    spill: LazySpill = field(default_factory=LazySpill)

    @property
    def future_ms(self) -> int:
        return self.now_ms + CLOCK_TOLERANCE_MS


@dataclass(slots=True)
class OrphanScan:
    sink: OrphanSink  # what the orphans add up to
    # spilled used names: the candidates, spilled too, decided once all are found
    candidates: Candidates | None
    orphans: Sequence[Orphan] = ()  # sorted by path, once finished
    empty_dirs: list[str] = field(default_factory=list)
    watched: set[str] = field(default_factory=set)  # names of ``watch`` listed in manifest/
    future: list[Orphan] = field(default_factory=list)  # candidates modified after "now"
    used_count: int | None = None  # distinct used names, counted while resolving spilled ones
    # listing threads hand their pages in as they go (``take``)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def take(
        self, orphans: list[Orphan], future: list[Orphan], unresolved: list[Candidate]
    ) -> None:
        """A listed page's orphans, future candidates and (used names spilled) candidates."""
        if not (orphans or future or unresolved):
            return
        with self._lock:
            self.sink.extend(orphans)
            self.future += future
            if unresolved:
                assert self.candidates is not None
                for candidate in unresolved:
                    self.candidates.add(candidate)

    @classmethod
    def begin(cls, search: OrphanSearch) -> OrphanScan:
        used, spill = search.used, search.spill
        sink = OrphanSink(spill, search.table.paths.is_inside_table)
        return cls(sink, Candidates(used, spill) if used.spilled else None)

    def finish(self, search: OrphanSearch, progress: Progress, matching: str) -> OrphanScan:
        """The scan's orphans, sorted; spilled candidates are decided first, partition by
        partition against the spilled used names (``matching``: what the progress shows
        meanwhile)."""
        if self.candidates is not None:
            progress.start(matching, search.used.written)
            self.used_count = resolve(
                search.used,
                self.candidates,
                search.table.fileio,
                older_than_ms=search.older_than_ms,
                future_ms=search.future_ms,
                sink=self.sink,
                future=self.future,
            )
            progress.finish()
        self.orphans = self.sink.result()
        return self


def scan_for_orphans(search: OrphanSearch, executor: Executor, progress: Progress) -> OrphanScan:
    """Old, unused regular files in Paimon-shaped directories and old empty data
    directories; listed level by level, directories in parallel. With spilled used names,
    candidates are spilled the same way and decided partition by partition once everything
    is listed."""
    table = search.table
    roots = frozenset({table.paths.data_root, *table.paths.external_roots})
    scan_one = partial(
        _scan_one,
        table.fileio,
        name_shapes(table),
        search.used.names,
        search.older_than_ms,
        search.future_ms,
        roots,
        frozenset(search.watch),
    )
    found = OrphanScan.begin(search)
    scan_one = partial(scan_one, found)
    level = candidate_dirs(table, search.views, search.external_exclusive)
    progress.start("listing", None)
    local = table.fileio.is_local(table.location)
    while level:
        listings = executor.imap(scan_one, level, work="local" if local else "io")
        level = []
        for listing in listings:
            progress.advance(listing.entries)
            level += listing.next_level
            found.watched.update(listing.watched)
            if listing.empty_dir is not None:
                found.empty_dirs.append(listing.empty_dir)
    progress.finish()
    return found.finish(search, progress, "matching listed files with used names")


# The candidate rows of a Spark listing task (row_type: file, future or empty).
CANDIDATE_SCHEMA = "row_type string, name string, path string, size long, mtime long, kind string"
CandidateRow = tuple[str, str, str, int, int, str]


def candidate_batch(rows: list[CandidateRow]) -> Any:
    """Candidate rows as one Arrow record batch."""
    import pyarrow as pa

    schema = arrow_schema(CANDIDATE_SCHEMA)
    columns = list(zip(*rows, strict=True)) if rows else [()] * len(schema.names)
    return pa.RecordBatch.from_arrays(
        [pa.array(list(c), type=f.type) for c, f in zip(columns, schema, strict=True)],
        schema=schema,
    )


def latest_manifest_lists(table: PaimonTable) -> tuple[str, ...]:
    latest = table.snapshots.latest()
    return () if latest is None else (latest.base_manifest_list, latest.delta_manifest_list)


def check_manifest_listing(table: PaimonTable, listed: set[str], older_than_ms: int) -> None:
    """The latest snapshot's manifest lists must show up in the listing (if old enough to
    be listed): otherwise the listing is incomplete and nothing may be trusted (D3)."""
    manifest_dir = join(table.location, "manifest")
    for name in latest_manifest_lists(table):
        info = table.fileio.info(join(manifest_dir, name))
        if info is None or info.mtime_ms is None or info.mtime_ms >= older_than_ms:
            continue
        if name not in listed:
            raise SafetyRefusalError(
                f"the listing of {manifest_dir} misses {name}, which exists: the listing is "
                "unreliable; refusing to delete anything"
            )
