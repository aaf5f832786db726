"""plan_orphan_clean(): Paimon's OrphanFilesClean, as a plan, with the safety of DECISIONS D3.

Used names are built first from every root (snapshot, tag, long-lived changelog) of every
branch, matching by file name as Paimon does; then Paimon-shaped directories are listed
level by level (streamed, in parallel) and old files whose name is unused become orphans.
Right before each deletion batch the roots are re-read and anything new joins the used set.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field, replace
from functools import partial
from typing import Any

from core.errors import InvalidOptionError, MissingFileError, PaimonError, SafetyRefusalError
from core.executors.base import Executor
from core.fileio import FileInfo, FileIO, join, parent
from core.model import Snapshot
from core.plans import FileAction, Phase, Plan, Requirements
from core.progress import NullProgress, Progress
from core.table import PaimonTable
from core.timeparse import iso_utc

logger = logging.getLogger(__name__)

COMMAND = "delete-orphan-files"
DEFAULT_AGE_MS = 86_400_000  # Paimon's default older_than: now - 1 day
RECENT_FLOOR_MS = 3_600_000  # newer cut-offs need --allow-recent (D3)
BATCH = 1000  # roots are re-read before every batch of deletions
_HINTS = frozenset({"EARLIEST", "LATEST"})


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


@dataclass
class _Used:
    names: set[str] = field(default_factory=set)
    manifests: set[str] = field(default_factory=set)


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


def _root_names(view: PaimonTable, snap: Snapshot, used: _Used) -> None:
    """Names a root references directly; manifests are decoded later, once each."""
    for list_name in snap.manifest_lists:
        used.names.add(list_name)
        for name, _size in view.manifest_list_names(list_name):
            used.names.add(name)
            used.manifests.add(name)
    if snap.index_manifest:
        # Paimon treats a missing index manifest as empty, which would make the live
        # deletion vectors look like orphans; here it is missing metadata (D3).
        used.names.add(snap.index_manifest)
        used.names.update(e.file_name for e in view.index_manifest(snap.index_manifest))
    if snap.statistics:
        used.names.add(snap.statistics)


def _load_root(view: PaimonTable, kind: str, key: int | str) -> Snapshot:
    if kind == "snapshot":
        return view.snapshots.snapshot(int(key))
    if kind == "changelog":
        return view.changelogs.snapshot(int(key))
    return view.tags.tag(str(key)).snapshot


def _root_job(job: tuple[PaimonTable, str, int | str]) -> _Used:
    part = _Used()
    _add_root(job[0], job[1], job[2], part)
    return part


def _names_in_manifest(reader: PaimonTable, manifest: str) -> set[str]:
    out: set[str] = set()
    try:
        for entry in reader.manifest(manifest):
            out.add(entry.file.file_name)
            out.update(entry.file.extra_files)
    except MissingFileError:
        pass  # listed by a root that vanished meanwhile (checked per root)
    return out


def _add_root(view: PaimonTable, kind: str, key: int | str, used: _Used) -> None:
    """Collect one root; metadata that vanished together with its root is skipped (a
    concurrent expiry), missing metadata of a root that still exists is fatal (D3)."""
    try:
        snap = _load_root(view, kind, key)
    except MissingFileError:
        return  # the root itself was removed meanwhile
    try:
        _root_names(view, snap, used)
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
    jobs: list[tuple[PaimonTable, str, int | str]] = []
    for view in views:
        b = view.branch
        old = only_new_since
        for sid in roots.snapshots.get(b, []):
            if old is None or sid not in old.snapshots.get(b, []):
                jobs.append((view, "snapshot", sid))
        for name, tid in roots.tags.get(b, {}).items():
            if old is None or old.tags.get(b, {}).get(name) != tid:
                jobs.append((view, "tag", name))
        for cid in roots.changelogs.get(b, []):
            if old is None or cid not in old.changelogs.get(b, []):
                jobs.append((view, "changelog", cid))
    progress.start("reading roots", len(jobs))
    for part in executor.map(_root_job, jobs, on_result=lambda _r: progress.advance()):
        used.names |= part.names
        used.manifests |= part.manifests
    progress.finish()
    manifests = sorted(used.manifests)
    progress.start("reading manifests", len(manifests))
    names_in = partial(_names_in_manifest, views[0])
    for names in executor.map(names_in, manifests, on_result=lambda _r: progress.advance()):
        used.names |= names
    progress.finish()
    return used.names


# -- candidates -------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class _Dir:
    path: str
    kind: str  # manifest | index | statistics | data | external | snapshot | changelog
    depth: int  # partition levels still to descend (data dirs); -1 for flat dirs


def _candidate_dirs(table: PaimonTable, views: list[PaimonTable]) -> list[_Dir]:
    root = table.location
    depth = len(table.schema.partition_keys)
    dirs = [
        _Dir(join(root, "manifest"), "manifest", -1),
        _Dir(join(root, "index"), "index", -1),
        _Dir(join(root, "statistics"), "statistics", -1),
        _Dir(table.paths.data_root, "data", depth),
    ]
    dirs += [_Dir(ext, "external", depth) for ext in table.paths.external_roots]
    for view in views:
        dirs.append(_Dir(view.snapshots.directory, "snapshot", -1))
        dirs.append(_Dir(view.changelogs.directory, "changelog", -1))
    # A Paimon directory that is a symlink may lead anywhere: never list through it (D3).
    return [d for d in dirs if d.path == root or not _is_link(table.fileio, d.path)]


def _is_link(fileio: FileIO, path: str) -> bool:
    info = fileio.info(path) if fileio.is_local(path) else None
    return info is not None and info.is_symlink


def _is_candidate_in(kind: str, info: FileInfo) -> bool:
    name = info.name
    if kind == "snapshot":
        return not name.startswith("snapshot-") and name not in _HINTS
    if kind == "changelog":
        return not name.startswith("changelog-") and name not in _HINTS
    return not name.endswith(".managed.blob")


def _list_one(fileio: FileIO, d: _Dir) -> tuple[_Dir, list[FileInfo]]:
    return d, fileio.list_dir(d.path)


def list_candidates(
    table: PaimonTable,
    views: list[PaimonTable],
    older_than_ms: int,
    executor: Executor,
    progress: Progress,
) -> Iterator[tuple[FileInfo, str] | tuple[None, str]]:
    """Yield (file, dir kind) for old regular files in Paimon-shaped directories, and
    (None, path) for old empty data directories; level by level, in parallel."""
    roots = {table.paths.data_root, *table.paths.external_roots}
    level = _candidate_dirs(table, views)
    progress.start("listing", None)
    while level:
        listings = executor.map(partial(_list_one, table.fileio), level)
        level = []
        for d, entries in listings:
            progress.advance(len(entries))
            if d.depth > 0:
                subdirs = [e for e in entries if e.is_dir and not e.is_symlink and "=" in e.name]
                level += [_Dir(e.path, d.kind, d.depth - 1) for e in subdirs]
                if subdirs or d.path in roots:
                    continue
                # A partition directory with nothing below it is listed itself (Paimon).
            elif d.depth == 0:
                buckets = [
                    e
                    for e in entries
                    if e.is_dir and not e.is_symlink and e.name.startswith("bucket-")
                ]
                level += [_Dir(e.path, d.kind, -1) for e in buckets]
                if buckets or (d.path in roots and not entries):
                    continue
            if not entries and d.kind in ("data", "external") and d.path not in roots:
                info = table.fileio.info(d.path)
                if info is not None and info.mtime_ms is not None and info.mtime_ms < older_than_ms:
                    yield None, d.path
            for e in entries:
                if e.is_dir or e.is_symlink:
                    continue  # never a directory, never follow or remove a link (D3)
                if e.mtime_ms is None or e.mtime_ms >= older_than_ms:
                    continue  # strictly older than the cut-off only
                if _is_candidate_in(d.kind, e):
                    yield e, d.kind
    progress.finish()


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


@dataclass(frozen=True, slots=True)
class Orphan:
    path: str
    name: str
    size: int
    mtime_ms: int
    kind: str


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
) -> Plan:
    """The plan both engines produce; ``total`` (count, bytes) when ``orphans`` is a sample."""
    orphans = sorted(orphans, key=lambda o: o.path)
    for o in orphans:
        if not table.paths.is_inside_table(o.path):
            raise SafetyRefusalError(f"listing returned {o.path}, outside the table")
    actions = [
        FileAction("delete", o.path, o.kind, o.size, f"unreferenced {o.kind} file") for o in orphans
    ]
    batches = [
        Phase(f"orphan-files-{i // BATCH + 1}", tuple(actions[i : i + BATCH]))
        for i in range(0, len(actions), BATCH)
    ]
    dirs = _empty_dir_actions(table, {parent(a.path) for a in actions}, empty_dirs)
    phases = batches + ([Phase("empty-directories", tuple(dirs), sequential=True)] if dirs else [])
    count, size = total or (len(orphans), sum(o.size for o in orphans))
    details = {
        "older_than_ms": older_than_ms,
        "older_than": iso_utc(older_than_ms),
        "now_ms": now_ms,
        "allow_recent": allow_recent,
        "used_names": used_count,
        "roots": roots.to_json(),
        "orphans": [
            {
                "path": o.path,
                "size": o.size,
                "dir_kind": o.kind,
                "modified": {"epoch_ms": o.mtime_ms, "utc": iso_utc(o.mtime_ms)},
                "age_ms": now_ms - o.mtime_ms,
            }
            for o in orphans
        ],
        "orphan_count": count,
        "orphan_bytes": size,
        "truncated": count > len(orphans),
        "empty_directories": sorted(empty_dirs),
        "branches": [v.branch for v in views],
    }
    requirements = Requirements(
        latest_snapshot=table.snapshots.latest_id(),
        expire_end=None,
        tags={f"{b}/{n}": i for b, tags in roots.tags.items() for n, i in tags.items()},
        branches=tuple(v.branch for v in views if v.branch != "main"),
        consumers_min_next=None,
    )
    return Plan(COMMAND, table.location, table.branch, now_ms, tuple(phases), requirements, details)


def plan_orphan_clean(
    table: PaimonTable,
    *,
    older_than_ms: int,
    now_ms: int,
    executor: Executor,
    allow_recent: bool = False,
    progress: Progress | None = None,
) -> Plan:
    """Pure planner: what delete-orphan-files would remove, with age and directory kind."""
    progress = progress or NullProgress()
    validate_cutoff(older_than_ms, now_ms, allow_recent=allow_recent)
    views = _views(table)
    roots = collect_roots(views)
    used = used_names(views, roots, executor, progress)
    check_used_set(len(used), roots)
    orphans: list[Orphan] = []
    empty_dirs: list[str] = []
    listed_in_manifest_dir: set[str] = set()
    for info, kind in list_candidates(table, views, older_than_ms, executor, progress):
        if info is None:
            empty_dirs.append(kind)
            continue
        if kind == "manifest":
            listed_in_manifest_dir.add(info.name)
        if info.name not in used:
            # candidates always have an mtime (the age filter needs it)
            orphans.append(Orphan(info.path, info.name, info.size, info.mtime_ms or 0, kind))
    check_manifest_listing(table, listed_in_manifest_dir, older_than_ms)
    return build_plan(
        table,
        views,
        roots,
        used_count=len(used),
        orphans=orphans,
        empty_dirs=empty_dirs,
        older_than_ms=older_than_ms,
        now_ms=now_ms,
        allow_recent=allow_recent,
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
    """Re-reads roots before each batch; names used by any new root are dropped (D3)."""

    def __init__(self, table: PaimonTable, plan: Plan, executor: Executor) -> None:
        self.table = table
        self.executor = executor
        self.seen = RootsSeen.from_json(plan.details["roots"])
        self.protected: set[str] = set()
        self.dropped: list[str] = []

    def filter(self, phase: Phase) -> Phase:
        if phase.name == "empty-directories":
            return phase
        views = _views(self.table)
        now = collect_roots(views)
        new = used_names(views, now, self.executor, NullProgress(), only_new_since=self.seen)
        self.seen = now
        self.protected |= new
        kept = []
        for action in phase.actions:
            if action.path.rpartition("/")[2] in self.protected:
                self.dropped.append(action.path)
            else:
                kept.append(action)
        return replace(phase, actions=tuple(kept))
