"""plan_orphan_clean(): Paimon's OrphanFilesClean, as a plan, with the safety of DECISIONS D3.

Used names are built first from every root (snapshot, tag, long-lived changelog) of every
branch, matching by file name as Paimon does; then Paimon-shaped directories are listed
level by level (streamed, in parallel) and old files whose name is unused become orphans.
Right before each deletion batch the roots are re-read and anything new joins the used set.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field, replace
from functools import partial
from operator import attrgetter
from typing import Any, ClassVar, NamedTuple, TypeVar

from core.errors import InvalidOptionError, MissingFileError, PaimonError, SafetyRefusalError
from core.format.manifest import decode_manifest_file_names
from core.format.model import Expected, ManifestRef, Snapshot
from core.io.fileio import FileInfo, FileIO, join, parent
from core.retention.references import RootKind, producer_of, root_lists
from core.runtime.details import RawDetails
from core.runtime.executors.base import Executor
from core.runtime.operation import Deletion, Env
from core.runtime.plans import FileAction, LazyRows, Phase, Plan, Requirements
from core.runtime.progress import NullProgress, Progress
from core.runtime.timeparse import format_duration, iso_utc
from core.table.table import PaimonTable

logger = logging.getLogger(__name__)

T = TypeVar("T")

COMMAND = "delete-orphan-files"
DEFAULT_AGE_MS = 86_400_000  # Paimon's default older_than: now - 1 day
RECENT_FLOOR_MS = 3_600_000  # newer cut-offs need --allow-recent (D3)
BATCH = 1000  # deletions per phase; roots are re-read between phases (RECHECK_S)
RECHECK_S = 1.0  # re-read roots before a batch once this long has passed since the last read
_ROOT_KINDS: dict[str, RootKind] = {"snapshot": "snapshot", "tag": "tag", "changelog": "changelog"}


@dataclass(frozen=True, slots=True)
class RootsSeen:
    """The roots a used-name set was built from, per branch (to find new ones later)."""

    snapshots: dict[str, list[int]]
    tags: dict[str, dict[str, int]]
    changelogs: dict[str, list[int]]

    def to_json(self) -> dict[str, Any]:
        return {"snapshots": self.snapshots, "tags": self.tags, "changelogs": self.changelogs}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> RootsSeen:
        return cls(dict(data["snapshots"]), dict(data["tags"]), dict(data["changelogs"]))


# Worth decoding in worker processes (each costs ~0.2 s of CPU to start): manifests of
# 1 MiB or more (~0.3 s of decoding), or 64 roots or more (their manifest lists).
PROCESS_MIN_BYTES = 1 << 20
PROCESS_MIN_ROOTS = 64


@dataclass
class _Used:
    names: set[str] = field(default_factory=set)
    manifests: dict[str, ManifestRef] = field(default_factory=dict)  # by name


def _views(table: PaimonTable) -> list[PaimonTable]:
    branches = table.branches.branches()
    base = table if table.branch == "main" else table.for_branch("main")
    views = [base]
    missing = []
    for name in branches:
        try:
            views.append(base.for_branch(name))
        except PaimonError as exc:
            missing.append(f"{name} ({exc.message})")
    if missing:
        # Paimon aborts too: without a branch's schema its roots cannot be read.
        raise SafetyRefusalError(
            f"branches without a readable schema: {', '.join(missing)}; refusing to clean orphans"
        )
    return views


def _root_names(view: PaimonTable, kind: RootKind, snap: Snapshot, used: _Used) -> None:
    """Names a root references directly; manifests are decoded later, once each. Lists
    Paimon deletes by design (a changelog's base and delta lists with a changelog producer,
    a tag's changelog list) count when present, as in Paimon, and are never "missing"."""
    lists = root_lists(kind, snap, producer_of(view))
    present = [n for n in lists.optional if view.fileio.exists(view.paths.manifest_path(n))]
    for list_name in (*lists.required, *present):
        used.names.add(list_name)
        try:
            refs = view.manifest_list_names(snap, list_name)
        except MissingFileError:
            if list_name in lists.required:
                raise
            continue  # an optional list deleted meanwhile
        for ref in refs:
            used.names.add(ref.file_name)
            used.manifests[ref.file_name] = ref
    # Snapshot expiry handles index files, so a changelog's may be gone (as in Paimon).
    index_gone = (
        kind == "changelog"
        and snap.index_manifest is not None
        and not view.fileio.exists(view.paths.manifest_path(snap.index_manifest))
    )
    if snap.index_manifest and not index_gone:
        # Paimon treats a missing index manifest as empty, which would make the live
        # deletion vectors look like orphans; here it is missing metadata (D3).
        used.names.add(snap.index_manifest)
        used.names.update(e.file_name for e in view.index_manifest(snap))
    if snap.statistics:
        used.names.add(snap.statistics)


def _load_root(view: PaimonTable, kind: str, key: int | str) -> Snapshot:
    if kind == "snapshot":
        return view.snapshots.snapshot(int(key))
    if kind == "changelog":
        return view.changelogs.snapshot(int(key))
    return view.tags.tag(str(key)).snapshot


def _root_chunk(
    views: dict[str, PaimonTable], jobs: list[tuple[str, str, int | str]]
) -> tuple[int, _Used]:
    """(roots read, their names) for a chunk of roots (worker processes read big chunks)."""
    part = _Used()
    for branch, kind, key in jobs:
        _add_root(views[branch], kind, key, part)
    return len(jobs), part


def _names_in_manifest_files(
    fileio: FileIO, manifests: list[tuple[str, Expected]]
) -> tuple[int, list[str], list[str]]:
    """(manifests read, names, paths of missing manifests) for a chunk of (path, what its
    list records) pairs (worker processes read big chunks). A missing manifest is never
    "empty": the caller aborts unless no root present references it any more
    (``check_missing_manifests``); a truncated one is corrupt metadata."""
    out: list[str] = []
    missing: list[str] = []
    for path, expect in manifests:
        try:
            data = fileio.read_bytes(path)
        except FileNotFoundError:
            missing.append(path)
            continue
        out += decode_manifest_file_names(data, path, expect=expect)
    return len(manifests), out, missing


def check_missing_manifests(views: list[PaimonTable], missing: Iterable[str]) -> None:
    """Manifests that were missing when read: fine only if every root that referenced them
    went meanwhile (a concurrent expiry); a root present now that names one means its
    files would look unused, so nothing may be deleted (issue 17; Paimon skips, D3)."""
    names = {m.rpartition("/")[2]: m for m in missing}
    if not names:
        return
    for view in views:
        roots: list[tuple[str, int | str]] = [("snapshot", i) for i in view.snapshots.ids()]
        roots += [("tag", n) for n in view.tags.names()]
        roots += [("changelog", i) for i in view.changelogs.ids()]
        for kind, key in roots:
            try:
                snap = _load_root(view, kind, key)
            except MissingFileError:
                continue
            lists = root_lists(_ROOT_KINDS[kind], snap, producer_of(view))
            for list_name in (*lists.required, *lists.optional):
                try:
                    refs = view.manifest_list_names(snap, list_name)
                except MissingFileError:
                    if list_name in lists.optional:
                        continue
                    raise
                hit = next((r.file_name for r in refs if r.file_name in names), None)
                if hit is not None:
                    raise SafetyRefusalError(
                        f"{kind} {key} of branch {view.branch} references missing manifest "
                        f"{names[hit]}; its files would look unused, so nothing is deleted",
                        hint="`paimon inspect TABLE --check` lists what is missing",
                    )


def _add_root(view: PaimonTable, kind: str, key: int | str, used: _Used) -> None:
    """Collect one root; metadata that vanished together with its root is skipped (a
    concurrent expiry), missing metadata of a root that still exists is fatal (D3)."""
    try:
        snap = _load_root(view, kind, key)
    except MissingFileError:
        return  # the root itself was removed meanwhile
    try:
        _root_names(view, _ROOT_KINDS[kind], snap, used)
    except MissingFileError as exc:
        still_there = {
            "snapshot": lambda: view.fileio.exists(view.snapshots.path(int(key))),
            "changelog": lambda: view.fileio.exists(view.changelogs.path(int(key))),
            "tag": lambda: view.fileio.exists(view.tags.path(str(key))),
        }[kind]()
        if still_there:
            raise SafetyRefusalError(
                f"{kind} {key} of branch {view.branch} references missing {exc.path}; an "
                "incomplete used set must never drive deletions",
                hint="`paimon inspect TABLE --check` lists what is missing",
            ) from None


def collect_roots(views: list[PaimonTable]) -> RootsSeen:
    """Roots of every branch; a snapshot directory that lists empty while its hints name a
    snapshot is an unreliable listing, never "no snapshots" (D3)."""
    for view in views:
        if not view.snapshots.ids():
            hints = [
                h
                for h in (view.snapshots.latest_hint(), view.snapshots.earliest_hint())
                if h is not None
            ]
            if hints:
                raise SafetyRefusalError(
                    f"{view.snapshots.directory} lists no snapshot but its hints name snapshot "
                    f"{hints[0]}; refusing to trust the listing"
                )
    return RootsSeen(
        snapshots={v.branch: v.snapshots.ids() for v in views},
        tags={v.branch: {t.name: t.snapshot.id for t in v.tags.tags()} for v in views},
        changelogs={v.branch: v.changelogs.ids() for v in views},
    )


def _chunks(items: list[T], executor: Executor) -> list[list[T]]:
    """About four chunks per worker."""
    step = max(1, -(-len(items) // (executor.parallelism * 4)))
    return [items[i : i + step] for i in range(0, len(items), step)]


def _advance(progress: Progress) -> Callable[[tuple[Any, ...]], None]:
    """Progress per item of a chunk's (items done, result)."""
    return lambda result: progress.advance(result[0])


def used_names(
    views: list[PaimonTable],
    roots: RootsSeen,
    executor: Executor,
    progress: Progress,
    *,
    only_new_since: RootsSeen | None = None,
) -> set[str]:
    """Every file name any root references (ADD and DELETE entries alike, as Paimon)."""
    used = _Used()
    keys: list[tuple[str, str, int | str]] = []  # (branch, kind, key) of each root to read
    for view in views:
        b = view.branch
        old = only_new_since
        for sid in roots.snapshots.get(b, []):
            if old is None or sid not in old.snapshots.get(b, []):
                keys.append((b, "snapshot", sid))
        for name, tid in roots.tags.get(b, {}).items():
            if old is None or old.tags.get(b, {}).get(name) != tid:
                keys.append((b, "tag", name))
        for cid in roots.changelogs.get(b, []):
            if old is None or cid not in old.changelogs.get(b, []):
                keys.append((b, "changelog", cid))
    reader = views[0]
    local = reader.fileio.is_local(reader.location)
    # Decoding manifest lists and manifests is CPU-bound: on big local tables it goes to
    # worker processes (threads share one GIL), in chunks so each view or FileIO is
    # pickled once per chunk; remote stores keep threads, to overlap request latency.
    progress.start("reading roots", len(keys))
    read_roots = partial(_root_chunk, {v.branch: v for v in views})
    if local and len(keys) >= PROCESS_MIN_ROOTS:
        parts = executor.map_cpu(read_roots, _chunks(keys, executor), on_result=_advance(progress))
    else:
        parts = executor.map(read_roots, [[k] for k in keys], on_result=_advance(progress))
    for _count, part in parts:
        used.names |= part.names
        used.manifests.update(part.manifests)
    progress.finish()
    paths = [
        (reader.paths.manifest_path(name), ref.expected())
        for name, ref in sorted(used.manifests.items())
    ]
    progress.start("reading manifests", len(paths))
    read_names = partial(_names_in_manifest_files, reader.fileio)
    if local and sum(r.file_size for r in used.manifests.values()) >= PROCESS_MIN_BYTES:
        names_of = executor.map_cpu(
            read_names, _chunks(paths, executor), on_result=_advance(progress)
        )
    else:
        names_of = executor.map(read_names, [[p] for p in paths], on_result=_advance(progress))
    missing: list[str] = []
    for _count, names, gone in names_of:
        used.names.update(names)
        missing += gone
    progress.finish()
    check_missing_manifests(views, missing)
    return used.names


# -- candidates -------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class _Dir:
    path: str
    kind: str  # manifest | index | statistics | data | external | snapshot | changelog
    depth: int  # partition levels still to descend (data dirs); -1 for flat dirs


def skipped_external_roots(table: PaimonTable, external_exclusive: bool) -> list[str]:
    """External roots not cleaned: another table may write into the same root, and names
    alone cannot tell its live files from our orphans (Paimon deletes them; D3)."""
    return [] if external_exclusive else list(table.paths.external_roots)


def _candidate_dirs(
    table: PaimonTable, views: list[PaimonTable], external_exclusive: bool = False
) -> list[_Dir]:
    root = table.location
    depth = len(table.schema.partition_keys)
    dirs = [
        _Dir(join(root, "manifest"), "manifest", -1),
        _Dir(join(root, "index"), "index", -1),
        _Dir(join(root, "statistics"), "statistics", -1),
        _Dir(table.paths.data_root, "data", depth),
    ]
    if external_exclusive:
        dirs += [_Dir(ext, "external", depth) for ext in table.paths.external_roots]
    for view in views:
        dirs.append(_Dir(view.snapshots.directory, "snapshot", -1))
        dirs.append(_Dir(view.changelogs.directory, "changelog", -1))
    # A Paimon directory that is a symlink may lead anywhere: never list through it (D3).
    return [d for d in dirs if d.path == root or not _is_link(table.fileio, d.path)]


def _is_link(fileio: FileIO, path: str) -> bool:
    info = fileio.info(path) if fileio.is_local(path) else None
    return info is not None and info.is_symlink


@dataclass(frozen=True, slots=True)
class NameShapes:
    """Which file names Paimon writes where: only those are orphan candidates (README
    "what is a candidate"). A Paimon temp file is ``.<name>.<uuid>.tmp`` of such a name
    (FileIO.tryToWriteAtomic); snapshot and changelog directories hold no other candidate."""

    data_prefixes: tuple[str, ...] = ("data-", "changelog-")

    def prefixes(self, kind: str) -> tuple[tuple[str, ...], bool]:
        """(name prefixes, whether only temp files of them are candidates)."""
        if kind in ("data", "external"):
            return self.data_prefixes, False
        return _FLAT_PREFIXES.get(kind, ((), True))

    def candidate(self, kind: str, name: str) -> bool:
        prefixes, temp_only = self.prefixes(kind)
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


def _is_candidate_in(kind: str, info: FileInfo, shapes: NameShapes = NameShapes()) -> bool:
    return shapes.candidate(kind, info.name)


@dataclass(slots=True)
class _Listing:
    """What one directory contributes: deeper directories to list, orphans, and facts."""

    next_level: list[_Dir] = field(default_factory=list)
    orphans: list[Orphan] = field(default_factory=list)
    empty_dir: str | None = None  # an old, empty partition or bucket directory
    entries: int = 0
    watched: list[str] = field(default_factory=list)  # watched names seen in manifest/
    future: list[Orphan] = field(default_factory=list)  # candidates modified after "now"


def _scan_one(
    fileio: FileIO,
    shapes: NameShapes,
    used: AbstractSet[str],
    older_than_ms: int,
    future_ms: int,
    roots: AbstractSet[str],
    watch: AbstractSet[str],
    d: _Dir,
) -> _Listing:
    """List one directory. Used names need no stat (they are never orphans), so on local
    disk only unknown files are stat'ed; runs in the executor's threads."""
    scan = fileio.scan_dir(d.path, known=used)
    out = _Listing(entries=len(scan.files) + len(scan.dirs) + len(scan.known))
    if d.kind == "manifest" and watch:
        out.watched = [n for n in scan.known if n in watch]
        out.watched += [f.name for f in scan.files if f.name in watch]
    if d.depth > 0:
        subdirs = [e for e in scan.dirs if "=" in e.name]
        out.next_level = [_Dir(e.path, d.kind, d.depth - 1) for e in subdirs]
        if subdirs or d.path in roots:
            return out
        # A partition directory with nothing below it is listed itself (Paimon).
    elif d.depth == 0:
        buckets = [e for e in scan.dirs if e.name.startswith("bucket-")]
        out.next_level = [_Dir(e.path, d.kind, -1) for e in buckets]
        if buckets or (d.path in roots and not out.entries):
            return out
    if not out.entries and d.kind in ("data", "external") and d.path not in roots:
        info = fileio.info(d.path)
        if info is not None and info.mtime_ms is not None and info.mtime_ms < older_than_ms:
            out.empty_dir = d.path
    if d.depth >= 0:
        return out  # a partition level or the data root: Paimon writes no file there
    kind = d.kind
    for e in scan.files:
        if e.is_symlink or e.mtime_ms is None:
            continue  # never follow or remove a link (D3)
        if e.mtime_ms < older_than_ms:  # strictly older than the cut-off
            if _is_candidate_in(kind, e, shapes):
                out.orphans.append(Orphan(e.path, e.name, e.size, e.mtime_ms, kind))
        elif e.mtime_ms > future_ms and _is_candidate_in(kind, e, shapes):
            out.future.append(Orphan(e.path, e.name, e.size, e.mtime_ms, kind))
    return out


@dataclass(slots=True)
class OrphanScan:
    orphans: list[Orphan]
    empty_dirs: list[str]
    watched: set[str]  # names of ``watch`` listed in manifest/
    future: list[Orphan] = field(default_factory=list)  # candidates modified after "now"


def scan_for_orphans(
    table: PaimonTable,
    views: list[PaimonTable],
    used: AbstractSet[str],
    older_than_ms: int,
    executor: Executor,
    progress: Progress,
    watch: AbstractSet[str] = frozenset(),
    external_exclusive: bool = False,
    *,
    now_ms: int,
) -> OrphanScan:
    """Old, unused regular files in Paimon-shaped directories and old empty data
    directories; listed level by level, directories in parallel. Candidates modified after
    ``now_ms`` (plus the clock tolerance) are collected too: the caller refuses on any."""
    roots = frozenset({table.paths.data_root, *table.paths.external_roots})
    scan_one = partial(
        _scan_one,
        table.fileio,
        name_shapes(table),
        used,
        older_than_ms,
        now_ms + CLOCK_TOLERANCE_MS,
        roots,
        frozenset(watch),
    )
    found = OrphanScan([], [], set())
    level = _candidate_dirs(table, views, external_exclusive)
    progress.start("listing", None)
    local = table.fileio.is_local(table.location)
    mapper = executor.map_local if local else executor.map
    while level:
        listings = mapper(scan_one, level, on_result=lambda r: progress.advance(r.entries))
        level = []
        for listing in listings:
            level += listing.next_level
            found.orphans += listing.orphans
            found.future += listing.future
            found.watched.update(listing.watched)
            if listing.empty_dir is not None:
                found.empty_dirs.append(listing.empty_dir)
    progress.finish()
    return found


def _empty_dir_actions(
    table: PaimonTable, deleted_parents: Iterable[str], empty_dirs: Iterable[str]
) -> list[FileAction]:
    """Bucket dirs of deleted files, then their partition parents; never the table root."""
    depth = len(table.schema.partition_keys)
    roots = {table.location, table.paths.data_root, *table.paths.external_roots}
    levels: dict[int, dict[str, None]] = {}
    starts = [d for d in deleted_parents if "bucket-" in d.rpartition("/")[2]] + list(empty_dirs)
    for start in starts:
        current = start
        for step in range(depth + 1):
            if current in roots or not table.paths.is_inside_table(current):
                break
            levels.setdefault(step, {})[current] = None
            current = parent(current)
    actions: list[FileAction] = []
    for step in sorted(levels):
        actions += [
            FileAction("rmdir", d, "directory", None, "emptied by orphan cleaning")
            for d in sorted(levels[step])
        ]
    return actions


# Clocks kept by NTP agree within seconds; minutes apart means one of them is wrong.
CLOCK_TOLERANCE_MS = 5 * 60_000


def orphan_clock(table: PaimonTable, host_now_ms: int) -> int:
    """'Now' for orphan cleaning. A file's age is its LastModified against now, and an
    object store stamps LastModified with its own clock, so the store's clock decides: a
    machine whose clock is minutes off it is refused, naming both clocks (a host two days
    ahead would see a writer's uncommitted upload of a second ago as two days old). Within
    the tolerance this machine's clock is kept (the store's Date has whole seconds)."""
    store = table.fileio.store_now_ms(table.location)
    if store is None:
        return host_now_ms
    store_ms, source = store
    if abs(store_ms - host_now_ms) > CLOCK_TOLERANCE_MS:
        ahead = "ahead of" if host_now_ms > store_ms else "behind"
        raise SafetyRefusalError(
            f"this machine's clock ({iso_utc(host_now_ms)}) is "
            f"{format_duration(abs(host_now_ms - store_ms))} {ahead} the store's "
            f"({iso_utc(store_ms)}, from {source}): file ages would be wrong, so orphan "
            "cleaning could delete files a writer has just uploaded",
            hint="fix this machine's clock (NTP) and run again",
        )
    return host_now_ms


def check_not_in_future(future: list[Orphan], now_ms: int) -> None:
    """A candidate modified after now (beyond the tolerance) means the clock that stamps
    files and the one deciding their age disagree: no age can be trusted."""
    if not future:
        return
    newest = max(future, key=lambda o: o.mtime_ms)
    raise SafetyRefusalError(
        f"{newest.path} was last modified at {iso_utc(newest.mtime_ms)}, "
        f"{format_duration(newest.mtime_ms - now_ms)} after now ({iso_utc(now_ms)}); "
        f"{len(future)} candidate file(s) lie in the future: the clock of the storage and "
        "this machine's disagree, so file ages cannot be trusted",
        hint="fix the clock that is wrong (NTP) and run again",
    )


def validate_cutoff(older_than_ms: int, now_ms: int, *, allow_recent: bool) -> None:
    if older_than_ms > now_ms:
        raise InvalidOptionError(
            "--older-than must not be in the future: files being written now would be removed"
        )
    if older_than_ms > now_ms - RECENT_FLOOR_MS and not allow_recent:
        raise InvalidOptionError(
            "--older-than is less than one hour ago: files of running writers, not yet "
            "committed, could be removed",
            hint="pass --allow-recent only when no writer can be running (default: 1 day)",
        )


class Orphan(NamedTuple):
    path: str
    name: str
    size: int
    mtime_ms: int
    kind: str  # the directory kind it was found in


class OrphanRow(Mapping[str, Any]):
    """One orphan as the plan's JSON shows it, built on access: plans may hold millions
    and human output shows a screenful (``dict(row)`` gives the JSON object)."""

    __slots__ = ("orphan", "now_ms")
    KEYS: ClassVar[tuple[str, ...]] = ("path", "size", "dir_kind", "modified", "age_ms")

    def __init__(self, orphan: Orphan, now_ms: int) -> None:
        self.orphan = orphan
        self.now_ms = now_ms

    def __getitem__(self, key: str) -> Any:
        o = self.orphan
        if key == "path":
            return o.path
        if key == "size":
            return o.size
        if key == "dir_kind":
            return o.kind
        if key == "modified":
            return {"epoch_ms": o.mtime_ms, "utc": iso_utc(o.mtime_ms)}
        if key == "age_ms":
            return self.now_ms - o.mtime_ms
        raise KeyError(key)

    def __iter__(self) -> Iterator[str]:
        return iter(self.KEYS)

    def __len__(self) -> int:
        return len(self.KEYS)


def _row_at(now_ms: int, orphan: Orphan) -> OrphanRow:
    return OrphanRow(orphan, now_ms)


def check_used_set(used_count: int, roots: RootsSeen) -> None:
    if used_count == 0 and any(roots.snapshots.values()):
        raise SafetyRefusalError(
            "the set of used files is empty but the table has snapshots; "
            "refusing to delete anything"
        )


def build_plan(
    table: PaimonTable,
    views: list[PaimonTable],
    roots: RootsSeen,
    *,
    used_count: int,
    orphans: list[Orphan],
    empty_dirs: list[str],
    older_than_ms: int,
    now_ms: int,
    allow_recent: bool,
    total: tuple[int, int] | None = None,
    external_exclusive: bool = False,
) -> Plan[Any]:
    """The plan both engines produce; ``total`` (count, bytes) when ``orphans`` is a sample."""
    orphans = sorted(orphans, key=attrgetter("path"))
    inside = table.paths.is_inside_table
    for o in orphans:
        if not inside(o.path):
            raise SafetyRefusalError(f"listing returned {o.path}, outside the table")
    reasons = {k: f"unreferenced {k} file" for k in {o.kind for o in orphans}}
    actions = [FileAction("delete", o.path, o.kind, o.size, reasons[o.kind]) for o in orphans]
    batches = [
        Phase(f"orphan-files-{i // BATCH + 1}", tuple(actions[i : i + BATCH]))
        for i in range(0, len(actions), BATCH)
    ]
    dirs = _empty_dir_actions(table, {o.path.rpartition("/")[0] for o in orphans}, empty_dirs)
    phases = batches + ([Phase("empty-directories", tuple(dirs), sequential=True)] if dirs else [])
    count, size = total or (len(orphans), sum(o.size for o in orphans))
    details = {
        "older_than_ms": older_than_ms,
        "older_than": iso_utc(older_than_ms),
        "now_ms": now_ms,
        "allow_recent": allow_recent,
        "used_names": used_count,
        "roots": roots.to_json(),
        # rows made on access: a dry run shows a screenful, --json streams them
        "orphans": LazyRows(orphans, partial(_row_at, now_ms)),
        "orphan_count": count,
        "orphan_bytes": size,
        "truncated": count > len(orphans),
        "empty_directories": sorted(empty_dirs),
        "branches": [v.branch for v in views],
        "external_roots_skipped": skipped_external_roots(table, external_exclusive),
    }
    requirements = Requirements(
        latest_snapshot=table.snapshots.latest_id(),
        expire_end=None,
        tags={f"{b}/{n}": i for b, tags in roots.tags.items() for n, i in tags.items()},
        branches=tuple(v.branch for v in views if v.branch != "main"),
        consumers_min_next=None,
    )
    return Plan(
        COMMAND,
        table.location,
        table.branch,
        now_ms,
        tuple(phases),
        requirements,
        RawDetails(details),
    )


def plan_orphan_clean(
    table: PaimonTable,
    *,
    older_than_ms: int,
    now_ms: int,
    executor: Executor,
    allow_recent: bool = False,
    progress: Progress | None = None,
    external_exclusive: bool = False,
) -> Plan[Any]:
    """Pure planner: what delete-orphan-files would remove, with age and directory kind.
    ``external_exclusive``: the external roots belong to this table alone (else skipped)."""
    progress = progress or NullProgress()
    now_ms = orphan_clock(table, now_ms)
    validate_cutoff(older_than_ms, now_ms, allow_recent=allow_recent)
    views = _views(table)
    roots = collect_roots(views)
    used = used_names(views, roots, executor, progress)
    check_used_set(len(used), roots)
    watch = frozenset(latest_manifest_lists(table))
    found = scan_for_orphans(
        table,
        views,
        used,
        older_than_ms,
        executor,
        progress,
        watch,
        external_exclusive,
        now_ms=now_ms,
    )
    check_not_in_future(found.future, now_ms)
    check_manifest_listing(table, found.watched, older_than_ms)
    return build_plan(
        table,
        views,
        roots,
        used_count=len(used),
        orphans=found.orphans,
        empty_dirs=found.empty_dirs,
        older_than_ms=older_than_ms,
        now_ms=now_ms,
        allow_recent=allow_recent,
        external_exclusive=external_exclusive,
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


class RootWatcher:
    """Re-reads roots right before the first batch and again before any batch that starts
    ``interval_s`` or more after the last read; names used by a new root are kept (D3).

    Per batch of 1,000 a re-read would cost as much as the deletions themselves on local
    disk; once a second bounds the overhead and keeps the window short everywhere."""

    def __init__(
        self,
        table: PaimonTable,
        plan: Plan[Any],
        executor: Executor,
        *,
        interval_s: float = RECHECK_S,
    ) -> None:
        self.table = table
        self.executor = executor
        self.interval_s = interval_s
        self.seen = RootsSeen.from_json(plan.details["roots"])
        self.protected: set[str] = set()
        self.dropped: list[str] = []
        self.rereads = 0
        self._last_read: float | None = None

    def _reread(self) -> None:
        views = _views(self.table)
        now = collect_roots(views)
        new = used_names(views, now, self.executor, NullProgress(), only_new_since=self.seen)
        self.seen = now
        self.protected |= new
        self.rereads += 1
        self._last_read = time.monotonic()

    def filter(self, phase: Phase) -> Phase:
        if phase.name == "empty-directories":
            return phase
        if self._last_read is None or time.monotonic() - self._last_read >= self.interval_s:
            self._reread()
        if not self.protected:
            return phase
        kept = []
        for action in phase.actions:
            if action.path.rpartition("/")[2] in self.protected:
                self.dropped.append(action.path)
            else:
                kept.append(action)
        return replace(phase, actions=tuple(kept))


@dataclass(frozen=True, slots=True)
class OrphanRequest:
    """What delete-orphan-files was asked for, on either engine."""

    older_than_ms: int  # candidates were last modified strictly before this instant
    allow_recent: bool = False  # --older-than less than an hour ago
    external_exclusive: bool = False  # also clean the data-file.external-paths roots
    report_file: str | None = None  # every orphan as a JSON line


def write_orphan_report(path: str, plan: Plan[Any]) -> None:
    """Every orphan of the plan as one JSON line (``--report-file``)."""
    import json

    with open(path, "w", encoding="utf-8") as fh:
        for orphan in plan.details["orphans"]:
            fh.write(json.dumps(dict(orphan)) + "\n")


@dataclass(frozen=True)
class LocalOrphanFiles(Deletion):
    """Paimon's OrphanFilesClean on this machine's thread pool. No journal: an orphan that
    survives an interruption is found again; roots are re-read before the batches."""

    command: ClassVar[str] = COMMAND
    quarantinable: ClassVar[bool] = True

    request: OrphanRequest

    def plan(self, table: PaimonTable, env: Env) -> Plan[Any]:
        plan = plan_orphan_clean(
            table,
            older_than_ms=self.request.older_than_ms,
            now_ms=env.now_ms,
            executor=env.executor,
            allow_recent=self.request.allow_recent,
            progress=env.progress,
            external_exclusive=self.request.external_exclusive,
        )
        if self.request.report_file is not None:
            write_orphan_report(self.request.report_file, plan)
        return plan

    def before_phase(
        self, table: PaimonTable, plan: Plan[Any], env: Env
    ) -> Callable[[Phase], Phase]:
        return RootWatcher(table, plan, env.executor).filter
