"""``inspect --check``: every file each snapshot, tag and long-lived changelog (of every
branch) needs exists with its recorded size (what a root needs: ``core.retention.references``),
and every schema they and their data files name exists and parses (a reader opens it)."""

from __future__ import annotations

import logging
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, fields
from functools import partial

from core.errors import CorruptMetadataError, MissingFileError
from core.format.model import (
    IndexManifestEntry,
    ManifestEntry,
    ManifestFileMeta,
    ManifestRef,
    Snapshot,
)
from core.io.fileio import FileIO, join
from core.retention.references import RootKind, collect_references
from core.runtime.executors.base import Executor
from core.runtime.progress import NullProgress, Progress
from core.table.scan import LiveSet, ManifestCache, full_live_set, next_live_set
from core.table.table import PaimonTable

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Problem:
    path: str
    kind: str  # missing | size-mismatch | unreadable
    role: str  # data | extra | changelog | manifest | manifest-list | index-manifest | index | ...
    referenced_by: str  # e.g. "snapshot 4", "tag t1", "branch b1 snapshot 2"
    detail: str


@dataclass(frozen=True, slots=True)
class CheckReport:
    roots: int
    files_checked: int
    problems: tuple[Problem, ...]

    @property
    def ok(self) -> bool:
        return not self.problems


@dataclass(slots=True)
class _Expectation:
    size: int | None
    role: str
    referenced_by: str


class _Collector:
    def __init__(self) -> None:
        self.expected: dict[str, _Expectation] = {}
        self.problems: dict[str, Problem] = {}
        self.schemas: dict[int, str] = {}  # schema id -> the first root naming it (one branch)

    def schema_of(self, snap: Snapshot, live: LiveSet | None, ref: str) -> None:
        """The schemas a reader of this root opens: the root's own and its data files'."""
        self.schemas.setdefault(snap.schema_id, ref)
        if live is not None:
            for schema_id in {e.file.schema_id for e in live.values()}:
                self.schemas.setdefault(schema_id, f"{ref} (its data files)")

    def want(self, path: str, size: int | None, role: str, ref: str) -> None:
        if path not in self.expected:
            self.expected[path] = _Expectation(size, role, ref)
        elif self.expected[path].size is None and size is not None:
            self.expected[path].size = size

    def unreadable(self, path: str, role: str, ref: str, detail: str) -> None:
        self.problems.setdefault(path, Problem(path, "unreadable", role, ref, detail))


@dataclass(frozen=True)
class _TolerantTable(PaimonTable):
    """A view whose manifest reads record a missing or unreadable file as a problem and
    read as empty, so every file still reachable through other metadata is checked, and
    each damaged file is reported once (issue 17). ``ref`` names the root being read."""

    damage: dict[str, Problem] = field(default_factory=dict, repr=False, compare=False)
    ref: list[str] = field(default_factory=lambda: [""], repr=False, compare=False)

    @classmethod
    def of(cls, view: PaimonTable, damage: dict[str, Problem]) -> _TolerantTable:
        return cls(**{f.name: getattr(view, f.name) for f in fields(PaimonTable)}, damage=damage)

    def _record(self, exc: MissingFileError | CorruptMetadataError, role: str) -> None:
        path = _error_path(exc, self)
        kind = "missing" if isinstance(exc, MissingFileError) else "unreadable"
        detail = "file does not exist" if kind == "missing" else exc.message
        self.damage.setdefault(path, Problem(path, kind, role, self.ref[0], detail))

    def manifest_list(self, root: Snapshot, name: str) -> list[ManifestFileMeta]:
        try:
            return super().manifest_list(root, name)
        except (MissingFileError, CorruptMetadataError) as exc:
            self._record(exc, "manifest-list")
            return []

    def manifest_list_names(self, root: Snapshot, name: str) -> list[ManifestRef]:
        try:
            return super().manifest_list_names(root, name)
        except (MissingFileError, CorruptMetadataError) as exc:
            self._record(exc, "manifest-list")
            return []

    def manifest(self, ref: ManifestFileMeta | ManifestRef) -> Iterator[ManifestEntry]:
        try:
            return iter(list(super().manifest(ref)))
        except (MissingFileError, CorruptMetadataError) as exc:
            self._record(exc, "manifest")
            return iter(())

    def index_manifest(self, root: Snapshot) -> list[IndexManifestEntry]:
        try:
            return super().index_manifest(root)
        except (MissingFileError, CorruptMetadataError) as exc:
            self._record(exc, "index-manifest")
            return []


def _collect_root(
    table: PaimonTable,
    snap: Snapshot,
    live: LiveSet | None,
    ref: str,
    col: _Collector,
    *,
    kind: RootKind = "snapshot",
) -> None:
    try:
        collect_references(
            table, snap, live, lambda p, size, role: col.want(p, size, role, ref), kind=kind
        )
    except (MissingFileError, CorruptMetadataError) as exc:
        col.unreadable(_error_path(exc, table), "metadata", ref, exc.message)


def _error_path(exc: MissingFileError | CorruptMetadataError, table: PaimonTable) -> str:
    return getattr(exc, "path", table.location)


def check_table(
    table: PaimonTable, *, executor: Executor, progress: Progress | None = None
) -> CheckReport:
    """Check every root of every branch; missing or wrongly sized files are problems."""
    progress = progress or NullProgress()
    col = _Collector()
    damage: dict[str, Problem] = {}
    roots = 0
    views = [table] + [table.for_branch(b) for b in table.branches.branches()]
    for view in views:
        roots += _walk_roots(
            view,
            view.snapshots.snapshots(),
            [(t.name, t.snapshot) for t in view.tags.tags()],
            view.changelogs.snapshots(),
            col=col,
            damage=damage,
            executor=executor,
            progress=progress,
        )
    return _probe_all(table.fileio, col, damage, roots, executor, progress)


def check_roots(
    view: PaimonTable,
    *,
    snapshots: Sequence[Snapshot] = (),
    tags: Sequence[tuple[str, Snapshot]] = (),
    changelogs: Sequence[Snapshot] = (),
    executor: Executor,
    progress: Progress | None = None,
) -> CheckReport:
    """Check the given roots of one branch only, reading and probing through ``view``'s
    FileIO (``restore`` checks the roots it brings back against the table and its
    quarantine before the first move)."""
    progress = progress or NullProgress()
    col = _Collector()
    damage: dict[str, Problem] = {}
    snaps = sorted(snapshots, key=lambda s: s.id)
    roots = _walk_roots(
        view,
        snaps,
        tags,
        changelogs,
        col=col,
        damage=damage,
        executor=executor,
        progress=progress,
    )
    return _probe_all(view.fileio, col, damage, roots, executor, progress)


def _walk_roots(
    plain_view: PaimonTable,
    snaps: Sequence[Snapshot],
    tags: Sequence[tuple[str, Snapshot]],
    changelogs: Sequence[Snapshot],
    *,
    col: _Collector,
    damage: dict[str, Problem],
    executor: Executor,
    progress: Progress,
) -> int:
    """Collect what the roots of one branch need (snapshots ascending); returns how many."""
    view = _TolerantTable.of(plain_view, damage)
    prefix = "" if view.branch == "main" else f"branch {view.branch} "
    cache = ManifestCache(view, executor)
    roots = 0
    progress.start(f"reading {prefix}snapshots", len(snaps))
    previous: tuple[int, LiveSet] | None = None
    for snap in snaps:
        ref = f"{prefix}snapshot {snap.id}"
        view.ref[0] = ref
        live: LiveSet | None = None
        try:
            live = next_live_set(view, snap, previous, cache)
            previous = (snap.id, live)
        except (MissingFileError, CorruptMetadataError) as exc:
            col.unreadable(_error_path(exc, view), "manifest", ref, exc.message)
            previous = None
        _collect_root(view, snap, live, ref, col)
        col.schema_of(snap, live, ref)
        roots += 1
        progress.advance()
    progress.finish()
    for name, tag_snapshot in tags:
        ref = f"{prefix}tag {name}"
        view.ref[0] = ref
        try:
            live = full_live_set(view, tag_snapshot, cache)
        except (MissingFileError, CorruptMetadataError) as exc:
            col.unreadable(_error_path(exc, view), "manifest", ref, exc.message)
            live = None
        _collect_root(view, tag_snapshot, live, ref, col, kind="tag")
        col.schema_of(tag_snapshot, live, ref)
        roots += 1
    for cl in changelogs:
        view.ref[0] = f"{prefix}changelog {cl.id}"
        _collect_root(view, cl, None, f"{prefix}changelog {cl.id}", col, kind="changelog")
        col.schema_of(cl, None, f"{prefix}changelog {cl.id}")
        roots += 1
    _check_schemas(plain_view, col)
    return roots


def _probe_all(
    fileio: FileIO,
    col: _Collector,
    damage: dict[str, Problem],
    roots: int,
    executor: Executor,
    progress: Progress,
) -> CheckReport:
    items = sorted(col.expected.items())
    progress.start("checking files", len(items))
    probe = partial(_probe, fileio)
    found = [
        p
        for p in executor.map(probe, items, on_result=lambda _r: progress.advance())
        if p is not None
    ]
    progress.finish()
    # A damaged manifest is reported where it was read, never again by the probe.
    reported = {**damage, **col.problems}
    found = [p for p in found if p.path not in reported]
    problems = sorted([*reported.values(), *found], key=lambda p: (p.path, p.kind))
    return CheckReport(roots=roots, files_checked=len(items), problems=tuple(problems))


def _check_schemas(view: PaimonTable, col: _Collector) -> None:
    """Each schema the branch's roots name must exist and parse: without it no reader opens
    the snapshot (issue 22 defect 8). The ids are few: checked right here, once each."""
    for schema_id, ref in sorted(col.schemas.items()):
        path = join(view.schemas.directory, f"schema-{schema_id}")
        if view.fileio.info(path) is None:
            col.problems.setdefault(
                path, Problem(path, "missing", "schema", ref, "file does not exist")
            )
            continue
        try:
            view.schemas.schema(schema_id)
        except CorruptMetadataError as exc:
            col.unreadable(path, "schema", ref, exc.message)
    col.schemas.clear()


def _probe(fileio: FileIO, item: tuple[str, _Expectation]) -> Problem | None:
    path, exp = item
    info = fileio.info(path)
    if info is None:
        return Problem(path, "missing", exp.role, exp.referenced_by, "file does not exist")
    if exp.size is not None and info.size != exp.size:
        return Problem(
            path,
            "size-mismatch",
            exp.role,
            exp.referenced_by,
            f"recorded {exp.size} bytes, found {info.size}",
        )
    return None
