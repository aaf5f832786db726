"""``inspect --check``: every file each snapshot, tag and long-lived changelog (of every
branch) needs exists with its recorded size (what a root needs: ``core.retention.references``),
and every schema they and their data files name exists and parses (a reader opens it).

A CI gate needs the whole list, so nothing stops the check early: a snapshot, tag or
changelog file that cannot be parsed, a manifest that is missing or truncated, a snapshot
missing in the middle of the history are each a problem, and every root still readable is
checked. Each problem names every root that needs the file (snapshots as runs of ids).
The check covers every root of every branch, or one root (``CheckScope``).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field, fields, replace
from functools import partial
from typing import TypeVar

from core.errors import CorruptMetadataError, MissingFileError
from core.format.list_blocks import ListBlock
from core.format.model import (
    IndexManifestEntry,
    ManifestEntry,
    ManifestFileMeta,
    ManifestRef,
    Snapshot,
)
from core.io.fileio import FileIO, join
from core.ops.expiry.metastore_partitions import drift
from core.ops.inspection.check_probe import probe_all
from core.ops.inspection.check_report import (
    PROBLEM_KINDS,
    CheckReport,
    CheckScope,
    IntegrityError,
    Problem,
    RootSpan,
)
from core.retention.carried import Carried
from core.retention.references import RootKind, collect_references
from core.runtime.executors.base import Executor
from core.runtime.progress import NullProgress, Progress
from core.table.scan import LiveSet, ManifestCache, full_live_set
from core.table.snapshot_manager import SnapshotManager
from core.table.table import PaimonTable

T = TypeVar("T")
logger = logging.getLogger(__name__)


class _Refs:
    """The roots that need one file, as ascending runs of root indices ``[a0, b0, a1, b1,
    ...]``: roots are walked in order, so a file's roots are mostly one run, and a check
    of a long history keeps two numbers per file instead of a list of roots."""

    __slots__ = ("runs",)

    def __init__(self, index: int) -> None:
        self.runs = [index, index]

    def add(self, index: int) -> None:
        if index <= self.runs[-1]:
            return  # this root already counted (a file named twice by one root)
        if index == self.runs[-1] + 1:
            self.runs[-1] = index
        else:
            self.runs += [index, index]

    def indices(self) -> Iterator[int]:
        for start, end in zip(self.runs[::2], self.runs[1::2], strict=True):
            yield from range(start, end + 1)


@dataclass(slots=True)
class _Expectation:
    size: int | None
    role: str
    refs: _Refs


@dataclass(frozen=True, slots=True)
class _Root:
    branch: str
    kind: RootKind
    id: int  # snapshot or changelog id; a tag's snapshot id
    tag: str | None = None

    @property
    def label(self) -> str:
        return RootSpan(self.branch, self.kind, self.id, self.id, self.tag).label


@dataclass(frozen=True, slots=True)
class _Found:
    """A problem met while reading metadata (before any file is probed)."""

    kind: str
    role: str
    detail: str
    referenced_by: str | None = None  # when no root needs the file (a gap in the history)


class _Collector:
    """What the roots need, which root needs what, and the problems met on the way."""

    def __init__(self) -> None:
        self.roots: list[_Root] = []
        self.expected: dict[str, _Expectation] = {}
        self.found: dict[str, _Found] = {}
        self.schemas: dict[int, _Refs] = {}  # schema id -> roots naming it (one branch)
        self.latest: dict[str, int] = {}  # branch -> its latest snapshot id
        # Files held by a run of snapshots (core.retention.carried): their last run of
        # roots ends at the latest root, set when dropped.
        self.open: dict[str, _Expectation] = {}

    @property
    def current(self) -> int:
        return len(self.roots) - 1

    def enter(self, branch: str, kind: RootKind, root_id: int, tag: str | None = None) -> None:
        """The root read from now on (every file wanted is needed by it)."""
        self.roots.append(_Root(branch, kind, root_id, tag))

    def schema_of(self, snap: Snapshot, live: LiveSet | None) -> None:
        """The schemas a reader of the current root opens: its own and its data files'."""
        ids = {e.file.schema_id for e in live.values()} if live is not None else set()
        self.schemas_named(snap, ids)

    def schemas_named(self, snap: Snapshot, ids: Iterable[int]) -> None:
        """``schema_of`` with the data files' schema ids already known."""
        for schema_id in {snap.schema_id, *ids}:
            refs = self.schemas.get(schema_id)
            if refs is None:
                self.schemas[schema_id] = _Refs(self.current)
            else:
                refs.add(self.current)

    def want(self, path: str, size: int | None, role: str) -> None:
        exp = self.expected.get(path)
        if exp is None:
            self.expected[path] = _Expectation(size, role, _Refs(self.current))
            return
        if path not in self.open:
            exp.refs.add(self.current)
        if exp.size is None and size is not None:
            exp.size = size

    def hold(self, path: str, size: int | None, role: str) -> None:
        """Needed by the current root and the following ones, until ``drop``."""
        self.want(path, size, role)
        self.open[path] = self.expected[path]

    def drop(self, path: str, *, through_current: bool = False) -> None:
        """Held until the root before the current one (or through the current one)."""
        runs = self.open.pop(path).refs.runs
        runs[-1] = max(runs[-1], self.current if through_current else self.current - 1)

    def problem(self, path: str, kind: str, role: str, detail: str) -> None:
        """A problem met while reading; the file counts as needed by the current root."""
        self.found.setdefault(path, _Found(kind, role, detail))
        if path in self.expected:
            if path not in self.open:
                self.expected[path].refs.add(self.current)
        else:
            self.expected[path] = _Expectation(None, role, _Refs(self.current))

    def spans(self, indices: Iterable[int]) -> tuple[RootSpan, ...]:
        """Root indices as runs: consecutive snapshot (or changelog) ids of one branch."""
        out: list[RootSpan] = []
        for index in indices:
            root = self.roots[index]
            last = out[-1] if out else None
            if (
                last is not None
                and root.tag is None
                and last.tag is None
                and (last.branch, last.kind) == (root.branch, root.kind)
                and root.id == last.last + 1
            ):
                out[-1] = RootSpan(root.branch, root.kind, last.first, root.id)
            else:
                out.append(RootSpan(root.branch, root.kind, root.id, root.id, root.tag))
        return tuple(
            RootSpan(s.branch, s.kind, s.first, s.last, s.tag, latest=self._holds_latest(s))
            for s in out
        )

    def _holds_latest(self, span: RootSpan) -> bool:
        latest = self.latest.get(span.branch)
        return (
            span.kind == "snapshot"
            and span.tag is None
            and latest is not None
            and (span.first <= latest <= span.last)
        )

    def make_problem(
        self, path: str, kind: str, role: str, detail: str, label: str | None = None
    ) -> Problem:
        exp = self.expected.get(path)
        if exp is None:
            return Problem(path, kind, role, label or "the table", detail)
        first = self.roots[exp.refs.runs[0]].label
        return Problem(path, kind, role, first, detail, self.spans(exp.refs.indices()))


@dataclass(frozen=True)
class _TolerantTable(PaimonTable):
    """A view whose manifest reads record a missing or unreadable file as a problem and
    read as empty, so every file still reachable through other metadata is checked, and
    each damaged file is reported once (issue 17)."""

    collector: _Collector = field(default_factory=_Collector, repr=False, compare=False)

    @classmethod
    def of(cls, view: PaimonTable, collector: _Collector) -> _TolerantTable:
        base = {f.name: getattr(view, f.name) for f in fields(PaimonTable)}
        return cls(**base, collector=collector)

    def _record(self, exc: MissingFileError | CorruptMetadataError, role: str) -> None:
        path = _error_path(exc, self)
        if isinstance(exc, MissingFileError):
            self.collector.problem(path, "missing", role, "file does not exist")
        else:
            self.collector.problem(path, "unreadable", role, exc.message)

    def _or_empty(self, read: Callable[[], list[T]], role: str) -> list[T]:
        """What ``read`` reads; nothing when the file is missing or unreadable (recorded)."""
        try:
            return read()
        except (MissingFileError, CorruptMetadataError) as exc:
            self._record(exc, role)
            return []

    def manifest_list(self, root: Snapshot, name: str) -> list[ManifestFileMeta]:
        return self._or_empty(partial(super().manifest_list, root, name), "manifest-list")

    def manifest_list_names(self, root: Snapshot, name: str) -> list[ManifestRef]:
        return self._or_empty(partial(super().manifest_list_names, root, name), "manifest-list")

    def manifest_list_blocks(self, root: Snapshot, name: str) -> list[ListBlock]:
        return self._or_empty(partial(super().manifest_list_blocks, root, name), "manifest-list")

    def manifest(self, ref: ManifestFileMeta | ManifestRef) -> Iterator[ManifestEntry]:
        read = super().manifest
        return iter(self._or_empty(lambda: list(read(ref)), "manifest"))

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
    col: _Collector,
    *,
    kind: RootKind = "snapshot",
) -> None:
    try:
        collect_references(table, snap, live, col.want, kind=kind)
    except (MissingFileError, CorruptMetadataError) as exc:
        col.problem(_error_path(exc, table), "unreadable", "metadata", exc.message)


def _error_path(exc: MissingFileError | CorruptMetadataError, table: PaimonTable) -> str:
    return getattr(exc, "path", table.location)


#: Files there is one of per data file (or bucket): probing them is one request each, which
#: a metadata-only check (``files=False``) leaves out.
FILE_ROLES = frozenset({"data", "extra", "changelog", "index"})


def check_table(
    table: PaimonTable,
    *,
    executor: Executor,
    progress: Progress | None = None,
    scope: CheckScope | None = None,
    files: bool = True,
) -> CheckReport:
    """Check every root of every branch (or the one root ``scope`` names, on ``table``'s
    branch); missing, wrongly sized or unreadable files are problems. ``files=False``
    checks the metadata only: every manifest list, manifest, index manifest, statistics
    file and schema is still read or probed, the files of ``FILE_ROLES`` not."""
    scope = scope or CheckScope()
    if scope.kind != "all":
        return _check_one(table, scope, executor, progress or NullProgress())
    progress = progress or NullProgress()
    col = _Collector()
    views = [table] + [table.for_branch(b) for b in table.branches.branches()]
    for view in views:
        snaps = _readable(view.snapshots, view.branch, "snapshot", col)
        _missing_in_history(view.snapshots, view.branch, col)
        _walk_roots(
            view,
            snaps,
            _readable_tags(view, col),
            _readable(view.changelogs, view.branch, "changelog", col),
            col=col,
            executor=executor,
            progress=progress,
        )
    if not files:
        col.expected = {p: e for p, e in col.expected.items() if e.role not in FILE_ROLES}
    report = _probe_all(table.fileio, col, executor, progress, scope)
    # metastore.partitioned-table: where the metastore and the table disagree
    extra = drift(table)
    return replace(report, problems=(*report.problems, *extra)) if extra else report


def _check_one(
    table: PaimonTable, scope: CheckScope, executor: Executor, progress: Progress
) -> CheckReport:
    """One root of ``table``'s branch: a parse error is a problem; an absent root an error."""
    col = _Collector()
    snaps: list[Snapshot] = []
    tags: list[tuple[str, Snapshot]] = []
    if scope.kind == "tag":
        assert scope.tag is not None
        tags = _readable_tags(table, col, only=scope.tag)
        if not tags and not col.found:
            raise table.tags.missing(scope.tag)
    else:
        sid = table.snapshots.latest_id() if scope.kind == "latest" else scope.snapshot
        if scope.kind == "latest" and sid is not None:
            col.latest[table.branch] = sid
        if sid is not None:
            snaps = _readable(table.snapshots, table.branch, "snapshot", col, only=sid)
            if not snaps and not col.found:
                raise table.snapshots.missing(sid)
    _walk_roots(table, snaps, tags, (), col=col, executor=executor, progress=progress)
    return _probe_all(table.fileio, col, executor, progress, scope)


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
    snaps = sorted(snapshots, key=lambda s: s.id)
    _walk_roots(view, snaps, tags, changelogs, col=col, executor=executor, progress=progress)
    return _probe_all(view.fileio, col, executor, progress, CheckScope())


def _readable(
    manager: SnapshotManager,
    branch: str,
    kind: RootKind,
    col: _Collector,
    *,
    only: int | None = None,
) -> list[Snapshot]:
    """The snapshots (or changelogs) present, ascending; one that cannot be parsed is a
    problem, and the check goes on with the rest. Files vanishing meanwhile are skipped."""
    out = []
    for sid in manager.ids() if only is None else [only]:
        try:
            out.append(manager.snapshot(sid))
        except MissingFileError:
            continue
        except CorruptMetadataError as exc:
            col.enter(branch, kind, sid)
            col.problem(manager.path(sid), "unreadable", kind, exc.reason)
    if kind == "snapshot" and only is None and out:
        col.latest[branch] = out[-1].id
    return out


def _readable_tags(
    view: PaimonTable, col: _Collector, *, only: str | None = None
) -> list[tuple[str, Snapshot]]:
    """(name, snapshot) of the tags present, by snapshot id; an unparsable tag file is a
    problem."""
    out = []
    for name in view.tags.names() if only is None else [only]:
        try:
            tag = view.tags.tag(name)
        except MissingFileError:
            continue
        except CorruptMetadataError as exc:
            col.enter(view.branch, "tag", -1, name)
            col.problem(view.tags.path(name), "unreadable", "tag", exc.reason)
            continue
        out.append((tag.name, tag.snapshot))
    return sorted(out, key=lambda t: (t[1].id, t[0]))


def _missing_in_history(manager: SnapshotManager, branch: str, col: _Collector) -> None:
    """Snapshot ids run without gaps from the earliest to the latest (expiry removes the
    oldest first, rollback the newest): an id missing in between is a lost snapshot."""
    ids = manager.ids()
    if len(ids) < 2:
        return
    present = set(ids)
    earliest, latest = ids[0], ids[-1]
    history = "the snapshot history" + ("" if branch == "main" else f" of branch {branch}")
    for sid in range(earliest + 1, latest):
        if sid not in present:
            col.found[manager.path(sid)] = _Found(
                "missing",
                "snapshot",
                f"snapshot {sid} is missing between {earliest} and {latest} (snapshot ids "
                "have no gaps: expiry removes the oldest, rollback the newest)",
                history,
            )


def _walk_roots(
    plain_view: PaimonTable,
    snaps: Sequence[Snapshot],
    tags: Sequence[tuple[str, Snapshot]],
    changelogs: Sequence[Snapshot],
    *,
    col: _Collector,
    executor: Executor,
    progress: Progress,
) -> None:
    """Collect what the roots of one branch need (snapshots ascending)."""
    view = _TolerantTable.of(plain_view, col)
    branch = view.branch
    prefix = "" if branch == "main" else f"branch {branch} "
    cache = ManifestCache(view, executor)
    progress.start(f"reading {prefix}snapshots", len(snaps))
    carried = Carried(view, col, cache)
    for snap in snaps:
        col.enter(branch, "snapshot", snap.id)
        try:
            carried.step(snap)
        except (MissingFileError, CorruptMetadataError) as exc:
            # What the snapshot's own metadata still names, without its data files.
            carried.end(through_current=False)
            col.problem(_error_path(exc, view), "unreadable", "manifest", exc.message)
            _collect_root(view, snap, None, col)
            col.schemas_named(snap, ())
        else:
            col.schemas_named(snap, carried.schema_ids)
        progress.advance()
    carried.end()
    progress.finish()
    for name, tag_snapshot in tags:
        col.enter(branch, "tag", tag_snapshot.id, name)
        try:
            live = full_live_set(view, tag_snapshot, cache)
        except (MissingFileError, CorruptMetadataError) as exc:
            col.problem(_error_path(exc, view), "unreadable", "manifest", exc.message)
            live = None
        _collect_root(view, tag_snapshot, live, col, kind="tag")
        col.schema_of(tag_snapshot, live)
    for cl in changelogs:
        col.enter(branch, "changelog", cl.id)
        _collect_root(view, cl, None, col, kind="changelog")
        col.schema_of(cl, None)
    _check_schemas(plain_view, col)


def _probe_all(
    fileio: FileIO,
    col: _Collector,
    executor: Executor,
    progress: Progress,
    scope: CheckScope,
) -> CheckReport:
    # A file met damaged while reading is reported as found there, never probed again.
    items = sorted((p, e.size, e.role) for p, e in col.expected.items() if p not in col.found)
    progress.start("checking files", len(items))
    probed = probe_all(fileio, items, executor, progress.advance)
    progress.finish()
    met = [
        col.make_problem(path, f.kind, f.role, f.detail, f.referenced_by)
        for path, f in col.found.items()
    ]
    found = [col.make_problem(*p) for p in probed]
    problems = sorted([*met, *found], key=lambda p: (p.path, p.kind))
    return CheckReport(
        roots=len(col.roots),
        files_checked=len(col.expected.keys() | col.found.keys()),
        problems=tuple(problems),
        scope=scope,
    )


def _check_schemas(view: PaimonTable, col: _Collector) -> None:
    """Each schema the branch's roots name must exist and parse: without it no reader opens
    the snapshot (issue 22 defect 8). The ids are few: checked right here, once each."""
    for schema_id, refs in sorted(col.schemas.items()):
        path = join(view.schemas.directory, f"schema-{schema_id}")
        if view.fileio.info(path) is None:
            _schema_problem(col, path, refs, "missing", "file does not exist")
            continue
        try:
            view.schemas.schema(schema_id)
        except CorruptMetadataError as exc:
            _schema_problem(col, path, refs, "unreadable", exc.message)
    col.schemas.clear()


def _schema_problem(col: _Collector, path: str, refs: _Refs, kind: str, detail: str) -> None:
    """A schema problem, needed by the roots that name the schema."""
    col.found.setdefault(path, _Found(kind, "schema", detail))
    col.expected.setdefault(path, _Expectation(None, "schema", refs))


__all__ = [
    "FILE_ROLES",
    "PROBLEM_KINDS",
    "CheckReport",
    "CheckScope",
    "IntegrityError",
    "Problem",
    "RootSpan",
    "check_roots",
    "check_table",
]
