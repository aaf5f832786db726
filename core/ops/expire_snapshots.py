"""plan_expire_snapshots(): Paimon's ExpireSnapshotsImpl + SnapshotDeletion, as a plan.

The final state equals Paimon's; the order is ours (pointers first, D2),
and other branches' files are protected too (safer, D3; the report says when it matters).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from functools import partial
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar

from core.errors import MissingFileError, SafetyRefusalError, StalePlanError
from core.format.model import Consumer, FileKind, ManifestEntry, Snapshot, Tag
from core.format.options import ExpireConfig
from core.io.fileio import join
from core.retention.expire_range import ExpireRange, active_consumers, compute_range, expire_config
from core.retention.references import RootKind, Want, changelog_references, collect_references
from core.runtime.apply import apply_phases, commit_problem, replaced_commit
from core.runtime.executors.base import Executor
from core.runtime.executors.local import LocalExecutor
from core.runtime.operation import Deletion, Env
from core.runtime.plans import FileAction, Phase, Plan, Requirements, SnapshotIdentity
from core.runtime.progress import NullProgress, Progress
from core.table.scan import ManifestCache, full_live_set, live_sets
from core.table.table import PaimonTable

if TYPE_CHECKING:
    from core.ops.expire_changelogs import ChangelogPart

logger = logging.getLogger(__name__)

COMMAND = "expire-snapshots"
T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class ExpireFlags:
    """What the user asked for; None falls back to table options, then Paimon defaults."""

    retain_min: int | None = None
    retain_max: int | None = None
    older_than_ms: int | None = None
    max_deletes: int | None = None


@dataclass
class _Builder:
    """Accumulates actions; a path is planned at most once."""

    table: PaimonTable
    seen: set[str] = field(default_factory=set)
    data: list[FileAction] = field(default_factory=list)
    manifests: list[FileAction] = field(default_factory=list)
    kept_by_tag: list[dict[str, Any]] = field(default_factory=list)
    kept_by_branch: list[dict[str, Any]] = field(default_factory=list)
    kept_for_changelog: int = 0
    kept_by_changelog: list[dict[str, Any]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    buckets: dict[tuple[bytes, int], None] = field(default_factory=dict)

    def add(
        self, into: list[FileAction], path: str, kind: str, size: int | None, reason: str
    ) -> None:
        if path in self.seen:
            return
        if not self.table.paths.is_inside_table(path):
            raise SafetyRefusalError(
                f"metadata references {path} ({kind}), outside the table root and its declared "
                "external paths; refusing to plan any deletion",
                hint="check data-file.external-paths, or the manifest is corrupt",
            )
        self.seen.add(path)
        into.append(FileAction("delete", path, kind, size, reason))


def _config_sources(
    table: PaimonTable, flags: ExpireFlags, config: ExpireConfig, now_ms: int
) -> dict[str, Any]:
    def source(flag: Any, key: str) -> str:
        return "flag" if flag is not None else table.options.lookup(key).source

    return {
        "retain_min": {
            "value": config.retain_min,
            "source": source(flags.retain_min, "snapshot.num-retained.min"),
        },
        "retain_max": {
            "value": config.retain_max,
            "source": source(flags.retain_max, "snapshot.num-retained.max"),
        },
        "time_retained_ms": {
            "value": config.time_retained_ms,
            "source": source(flags.older_than_ms, "snapshot.time-retained"),
        },
        "older_than_ms": now_ms - config.time_retained_ms,
        "max_deletes": {
            "value": config.expire_limit,
            "source": source(flags.max_deletes, "snapshot.expire.limit"),
        },
        "clean_empty_directories": config.clean_empty_directories,
        "changelog_decoupled": config.changelog_decoupled,
        "changelog_producer": config.changelog_producer,
    }


def find_skipping_tags(tags: list[Tag], begin: int, end: int) -> list[Tag]:
    """Paimon's findSkippingTags: newest tag <= begin (or the first tag) .. last tag < end."""
    right = max((i for i, t in enumerate(tags) if t.snapshot.id < end), default=-1)
    if right < 0:
        return []
    left = max(max((i for i, t in enumerate(tags) if t.snapshot.id <= begin), default=-1), 0)
    return tags[left : right + 1]


def _tags_everywhere(table: PaimonTable, views: list[PaimonTable]) -> dict[str, Tag]:
    return {f"{v.branch}/{t.name}": t for v in views for t in v.tags.tags()}


def _other_views(table: PaimonTable) -> list[PaimonTable]:
    names = ["main", *table.branches.branches()]
    return [table.for_branch(b) for b in names if b != table.branch]


def _claim(protected: dict[str, str], branch: str, path: str, _size: Any, _role: str) -> None:
    protected.setdefault(path, branch)


def _branch_protection(views: list[PaimonTable], executor: Executor) -> dict[str, str]:
    """path -> branch, for every file any other branch's snapshot or tag references."""
    protected: dict[str, str] = {}
    for view in views:
        cache = ManifestCache(view, executor)
        want = partial(_claim, protected, view.branch)
        for snap, live in live_sets(view, view.snapshots.snapshots(), cache):
            collect_references(view, snap, live, want)
        for tag in view.tags.tags():
            live = full_live_set(view, tag.snapshot, cache)
            collect_references(view, tag.snapshot, live, want, kind="tag")
        changelog_references(view, partial(_same, want))
    return protected


def _same(want: Want, _changelog_id: int) -> Want:
    return want


def _changelog_protection(table: PaimonTable, expiring: Iterable[int] = ()) -> dict[str, int]:
    """path -> changelog id, for every file a long-lived changelog of this branch needs:
    kept whatever the lifecycle is now (decoupling may have been switched off since);
    ``expiring``: changelogs this plan expires."""
    needed: dict[str, int] = {}
    skip = set(expiring)

    def want_for(cid: int) -> Callable[[str, Any, str], None]:
        def want(path: str, _size: Any, _role: str) -> None:
            if cid not in skip:
                needed.setdefault(path, cid)

        return want

    changelog_references(table, want_for)
    return needed


def _vanished_or_raise(table: PaimonTable, snap: Snapshot, read: Callable[[], T]) -> T | None:
    """Run a metadata read for ``snap``. Missing metadata of a snapshot that is itself gone
    means a concurrent expiry got there first (None); otherwise it is a clear error: we never
    plan deletions from incomplete metadata (safer than Paimon, which skips and leaks)."""
    try:
        return read()
    except MissingFileError as exc:
        if not table.fileio.exists(table.snapshots.path(snap.id)):
            return None
        err = MissingFileError(
            exc.path, f"metadata of snapshot {snap.id}: " + exc.message.split(" not found")[0]
        )
        err.hint = "nothing was deleted; `paimon inspect TABLE --check` lists what is missing"
        raise err from None


def _delta_deletions(table: PaimonTable, snap: Snapshot) -> list[tuple[str, ManifestEntry]]:
    """Files DELETEd by a snapshot's delta and not re-ADDed in it, keyed by physical path."""
    pending: dict[str, ManifestEntry] = {}
    for meta in table.manifest_list(snap, snap.delta_manifest_list):
        for entry in table.manifest(meta):
            path = table.paths.data_file_path(entry)
            if entry.kind is FileKind.ADD:
                pending.pop(path, None)
            else:
                pending[path] = entry
    return list(pending.items())


def _check_retained(
    table: PaimonTable, end: Snapshot, latest: int | None, executor: Executor
) -> None:
    """Every kept snapshot must parse and the latest one's manifest lists must read before
    anything goes: with a broken latest snapshot the older ones may be all that is left to
    roll back to (safer than Paimon, which never looks; README "incomplete metadata")."""
    newest: Snapshot | None = end
    if latest is not None and latest > end.id:
        kept = executor.map(table.snapshots.try_snapshot, range(end.id + 1, latest + 1))
        newest = next((s for s in reversed(kept) if s is not None), None)
    if newest is not None:
        for name in newest.manifest_lists:
            table.manifest_list_names(newest, name)


def _read_delta(table: PaimonTable, snap: Snapshot) -> list[tuple[str, ManifestEntry]] | None:
    return _vanished_or_raise(table, snap, partial(_delta_deletions, table, snap))


def _skipping_names(table: PaimonTable, roots: Iterable[Snapshot]) -> set[str]:
    names: set[str] = set()
    for snap in roots:
        for list_name in (snap.base_manifest_list, snap.delta_manifest_list):
            names.add(list_name)
            names.update(m.file_name for m in table.manifest_list_names(snap, list_name))
        if snap.index_manifest:
            names.add(snap.index_manifest)
            names.update(e.file_name for e in table.index_manifest(snap))
        if snap.statistics:
            names.add(snap.statistics)
    return names


# Files whose size no metadata records: one stat each, so plans and reports show real bytes.
_STAT_KINDS = frozenset({"snapshot", "manifest-list", "index-manifest", "statistics"})


def _with_sizes(table: PaimonTable, executor: Executor, phases: list[Phase]) -> list[Phase]:
    unknown = [
        a.path
        for p in phases
        for a in p.actions
        if a.op == "delete" and a.size is None and a.kind in _STAT_KINDS
    ]
    if not unknown:
        return phases
    infos = executor.map_local(table.fileio.info, unknown)
    sizes = {path: info.size for path, info in zip(unknown, infos, strict=True) if info is not None}
    return [
        replace(p, actions=tuple(replace(a, size=sizes.get(a.path, a.size)) for a in p.actions))
        for p in phases
    ]


def _plan_manifests(
    b: _Builder, snap: Snapshot, skip: set[str], *, data_lists: bool, changelog_list: bool
) -> None:
    table, paths = b.table, b.table.paths
    reason = f"only used by expired snapshot {snap.id}"
    lists = [snap.base_manifest_list, snap.delta_manifest_list] if data_lists else []
    if changelog_list and snap.changelog_manifest_list:
        lists.append(snap.changelog_manifest_list)
    for list_name in lists:
        if list_name in skip:
            continue
        skip.add(list_name)
        for name, size, _entries in table.manifest_list_names(snap, list_name):
            if name not in skip:
                skip.add(name)
                b.add(b.manifests, paths.manifest_path(name), "manifest", size, reason)
        recorded = snap.list_expected(list_name).size
        b.add(b.manifests, paths.manifest_path(list_name), "manifest-list", recorded, reason)
    if snap.index_manifest and snap.index_manifest not in skip:
        for ie in table.index_manifest(snap):
            if ie.file_name not in skip:
                skip.add(ie.file_name)
                b.add(b.data, paths.index_file_path(ie), "index", ie.file_size, reason)
        skip.add(snap.index_manifest)
        b.add(b.manifests, paths.manifest_path(snap.index_manifest), "index-manifest", None, reason)
    if snap.statistics and snap.statistics not in skip:
        skip.add(snap.statistics)
        b.add(b.data, paths.statistics_path(snap.statistics), "statistics", None, reason)


def _note_tagged_changelogs(
    b: _Builder, expiring: list[Snapshot], tags: list[Tag], decoupled: bool
) -> None:
    """Say what happens to the changelog of a tagged snapshot: as in Paimon, a tag keeps its
    data, not its changelog (issue 12.4; README "Long-lived changelogs")."""
    if decoupled:
        return  # the changelog moves to changelog-N and keeps its files
    tagged = {t.snapshot.id: t.name for t in tags}
    hit = [s for s in expiring if s.changelog_manifest_list and s.id in tagged]
    if hit:
        names = ", ".join(f"{tagged[s.id]} (snapshot {s.id})" for s in hit)
        b.notes.append(
            f"changelog files of tagged snapshots are deleted, as Paimon does: {names}; a tag "
            "keeps the data it reads, not the changelog"
        )


def _empty_dir_actions(
    table: PaimonTable, buckets: Iterable[tuple[bytes, int]]
) -> list[FileAction]:
    """Bucket dirs, then partition dirs deepest first (semantics 2.9, table-root based)."""
    bucket_dirs = dict.fromkeys(table.paths.bucket_dir(p, b) for p, b in buckets)
    levels: dict[int, dict[str, None]] = {}
    for partition, _bucket in buckets:
        parts = (
            table.paths.partition_path(partition).split("/") if table.paths.partition_keys else []
        )
        for depth in range(len(parts), 0, -1):
            levels.setdefault(depth, {})[join(table.location, *parts[:depth])] = None
    actions = [FileAction("rmdir", d, "directory", None, "emptied by expiry") for d in bucket_dirs]
    for depth in sorted(levels, reverse=True):
        actions += [
            FileAction("rmdir", d, "directory", None, "emptied by expiry") for d in levels[depth]
        ]
    return actions


def _changelog_part(
    table: PaimonTable,
    flags: ExpireFlags,
    time_retained: int | None,
    earliest: Snapshot | None,
    latest: int | None,
    expiring: list[Snapshot],
    protecting: list[Consumer],
    now_ms: int,
    executor: Executor,
    gone: set[str] | None = None,
) -> ChangelogPart:
    """Changelog expiry right after snapshot expiry (commit path, semantics 2.10), on the
    state the snapshot part leaves: its new changelog-N included."""
    from core.ops.expire_changelogs import TableState, commit_config, plan_changelog_part

    config, sources = commit_config(
        table,
        retain_min=flags.retain_min,
        retain_max=flags.retain_max,
        time_retained_ms=time_retained,
        expire_limit=flags.max_deletes,
    )
    changelogs = {c.id: c for c in table.changelogs.snapshots()}
    changelogs.update({s.id: s for s in expiring})
    state = TableState(earliest, latest, changelogs)
    min_next = min((c.next_snapshot for c in protecting), default=None)
    part = plan_changelog_part(
        table,
        state,
        config,
        min_next_snapshot=min_next,
        now_ms=now_ms,
        executor=executor,
        absent_lists=gone or frozenset(),
    )
    part.details["config"] = config.to_json(sources)
    return part


def plan_expire_snapshots(
    table: PaimonTable,
    flags: ExpireFlags,
    *,
    now_ms: int,
    executor: Executor,
    progress: Progress | None = None,
) -> Plan:
    """Pure planner: reads the table, returns what would be deleted and why."""
    progress = progress or NullProgress()
    time_retained = None if flags.older_than_ms is None else now_ms - flags.older_than_ms
    config = expire_config(
        table.options,
        retain_min=flags.retain_min,
        retain_max=flags.retain_max,
        time_retained_ms=time_retained,
        expire_limit=flags.max_deletes,
    )
    consumers = table.consumers.consumers()
    protecting, stale = active_consumers(consumers, config, now_ms)
    rng = compute_range(table.snapshots, config, protecting, now_ms)
    others = _other_views(table)
    tags_all = _tags_everywhere(table, [table, *others])
    bounded_by_consumers = bool(protecting) and not config.consumer_changelog_only
    requirements = Requirements(
        latest_snapshot=rng.latest,
        expire_end=rng.end,
        tags={k: t.snapshot.id for k, t in tags_all.items()},
        branches=tuple(table.branches.branches()),
        consumers_min_next=min(c.next_snapshot for c in protecting)
        if bounded_by_consumers
        else None,
    )
    details: dict[str, Any] = {
        "config": _config_sources(table, flags, config, now_ms),
        "now_ms": now_ms,
        "earliest_snapshot": rng.earliest,
        "latest_snapshot": rng.latest,
        "expire_until": rng.end,
        "stopped_by": rng.stop,
        "stop_detail": rng.stop_detail,
        "blocking_consumer": rng.blocking_consumer,
        "stale_consumers": [c.id for c in stale],
        "snapshots": [],
    }
    hint_note = table.snapshots.earliest_hint_note(rng.earliest)
    b = _Builder(table, notes=[hint_note] if hint_note else [])
    details["journal_guard"] = journal_guard(table, rng.end or rng.earliest, rng.latest)

    def finish(phases: list[Phase], part: ChangelogPart | None = None) -> Plan:
        if part is not None:
            details["changelog_expiry"] = part.details
            phases = _merge_changelog_part(phases, part)
        details.update(
            kept_by_tag=sorted(b.kept_by_tag, key=lambda k: k["path"]),
            kept_by_branch=sorted(b.kept_by_branch, key=lambda k: k["path"]),
            kept_by_changelog=sorted(b.kept_by_changelog, key=lambda k: k["path"]),
            kept_for_changelog=b.kept_for_changelog,
            notes=b.notes,
        )
        sized = _with_sizes(table, executor, phases)
        return Plan(
            COMMAND, table.location, table.branch, now_ms, tuple(sized), requirements, details
        )

    earliest, end = rng.earliest, rng.end
    if earliest is None or end is None or end <= earliest:
        hint_phases: list[Phase] = []
        if earliest is not None and table.snapshots.earliest_hint() is None:
            # Paimon writes EARLIEST when it finds nothing to expire and the hint is absent.
            hint_phases.append(
                Phase(
                    "hints",
                    (
                        FileAction(
                            "write",
                            join(table.snapshots.directory, "EARLIEST"),
                            "hint",
                            None,
                            "EARLIEST hint absent",
                            str(earliest),
                        ),
                    ),
                    sequential=True,
                )
            )
        part = None
        if config.changelog_decoupled:
            first = table.snapshots.try_snapshot(earliest) if earliest is not None else None
            part = _changelog_part(
                table, flags, time_retained, first, rng.latest, [], protecting, now_ms, executor
            )
        return finish(hint_phases, part)

    progress.start("reading snapshots", end - earliest + 1)
    found = [
        s
        for s in executor.map(table.snapshots.try_snapshot, range(earliest, end + 1))
        if s is not None
    ]
    progress.finish()
    by_id = {s.id: s for s in found}
    if end not in by_id:
        b.notes.append(f"snapshot {end} vanished while planning (another expiry?); nothing to do")
        return finish([])
    _check_retained(table, by_id[end], rng.latest, executor)
    begin = found[0].id
    expiring = [s for s in found if s.id < end]
    details["snapshots"] = [s.id for s in expiring]
    details["expire_range"] = [begin, end]

    # This branch's own tags only (its base tag is copied into its tag directory), as Paimon
    # does per branch: other branches' tags name other snapshots with other files and would
    # hide the nearest earlier tag here; their files are protected as branch files (D3).
    tags = sorted(table.tags.tags(), key=lambda t: (t.snapshot.id, t.name))
    branch_files = _branch_protection(others, executor) if others else {}
    part = None
    if config.changelog_decoupled:
        # With a producer, this expiry deletes the expiring snapshots' data lists (unless a
        # skipping root keeps them): the changelog part must see them gone, as Paimon does.
        gone: set[str] = set()
        if config.changelog_producer != "none":
            initial = _skipping_names(
                table, [*(t.snapshot for t in find_skipping_tags(tags, begin, end)), by_id[end]]
            )
            gone = {
                n
                for s in expiring
                for n in (s.base_manifest_list, s.delta_manifest_list)
                if n not in initial
            }
        part = _changelog_part(
            table,
            flags,
            time_retained,
            by_id[end],
            rng.latest,
            expiring,
            protecting,
            now_ms,
            executor,
            gone,
        )
    changelog_files = _changelog_protection(table, part.expired_ids if part else ())
    cache = ManifestCache(table, executor)
    tag_keys: dict[str, set[tuple[bytes, int, str]]] = {}

    def keys_of(tag: Tag) -> set[tuple[bytes, int, str]]:
        # An unreadable tag is an error, not "empty" (Paimon PR #5237's bug, never ours).
        if tag.name not in tag_keys:
            live = full_live_set(table, tag.snapshot, cache)
            tag_keys[tag.name] = {(e.partition, e.bucket, e.file.file_name) for e in live.values()}
        return tag_keys[tag.name]

    decoupled = config.changelog_decoupled
    produce_changelog = config.changelog_producer != "none"

    # 1. data files deleted by the deltas of (begin, end]
    planned = [s for s in found if s.id > begin]
    progress.start("reading deltas", len(planned))

    deltas = executor.map(
        partial(_read_delta, table), planned, on_result=lambda _r: progress.advance()
    )
    progress.finish()
    for snap, deleted in zip(planned, deltas, strict=True):
        if deleted is None:
            continue
        previous = [t for t in tags if t.snapshot.id < snap.id]
        keys = keys_of(previous[-1]) if previous else set()
        for path, entry in deleted:
            f = entry.file
            if decoupled and not produce_changelog and f.file_source in (None, 0):
                b.kept_for_changelog += 1  # producer none: APPEND files are the changelog
                continue
            if (entry.partition, entry.bucket, f.file_name) in keys:
                b.kept_by_tag.append({"path": path, "tag": previous[-1].name})
                continue
            extras = table.paths.extra_file_paths(entry.partition, entry.bucket, f)
            if path in branch_files:
                b.kept_by_branch.append({"path": path, "branch": branch_files[path]})
                continue
            reason = f"removed by snapshot {snap.id}"
            b.add(b.data, path, "data", f.file_size, reason)
            for extra in extras:
                b.add(b.data, extra, "extra", None, reason)
            b.buckets[(entry.partition, entry.bucket)] = None

    # 2. changelog files of expiring snapshots (coupled lifecycle only; no tag protection)
    if not decoupled:
        for snap in expiring:
            if not snap.changelog_manifest_list:
                continue
            entries = _vanished_or_raise(table, snap, partial(table.changelog_files, snap))
            if entries is None:
                continue
            for entry in entries:
                if entry.kind is not FileKind.ADD:
                    continue
                path = table.paths.data_file_path(entry)
                if path in branch_files:
                    b.kept_by_branch.append({"path": path, "branch": branch_files[path]})
                    continue
                reason = f"changelog of expired snapshot {snap.id}"
                b.add(b.data, path, "changelog", entry.file.file_size, reason)
                for extra in table.paths.extra_file_paths(
                    entry.partition, entry.bucket, entry.file
                ):
                    b.add(b.data, extra, "extra", None, reason)
                b.buckets[(entry.partition, entry.bucket)] = None

    # 3. manifests, index and statistics not used by `end` or the skipping tags
    skip = _skipping_names(
        table, [*(t.snapshot for t in find_skipping_tags(tags, begin, end)), by_id[end]]
    )
    data_lists = not decoupled or produce_changelog
    for snap in expiring:
        plan_one = partial(
            _plan_manifests, b, snap, skip, data_lists=data_lists, changelog_list=not decoupled
        )
        _vanished_or_raise(table, snap, plan_one)
    for bucket in (b.manifests, b.data):
        kept = [a for a in bucket if a.path in branch_files]
        for a in kept:
            b.kept_by_branch.append({"path": a.path, "branch": branch_files[a.path]})
        bucket[:] = [a for a in bucket if a.path not in branch_files]
        for a in bucket:
            if a.path in changelog_files:
                b.kept_by_changelog.append({"path": a.path, "changelog": changelog_files[a.path]})
        bucket[:] = [a for a in bucket if a.path not in changelog_files]
    _note_tagged_changelogs(b, expiring, tags, decoupled)

    # 4. pointers first: changelog-N (decoupled), snapshot files ascending, then EARLIEST
    phases: list[Phase] = []
    if decoupled:
        writes = [
            FileAction(
                "write",
                table.changelogs.path(s.id),
                "changelog-json",
                None,
                "keeps the changelog of an expired snapshot (decoupled lifecycle)",
                json.dumps(dict(s.raw), indent=2),
            )
            for s in expiring
        ]
        if expiring:
            writes.append(
                FileAction(
                    "write",
                    join(table.changelogs.directory, "LATEST"),
                    "hint",
                    None,
                    "long-lived changelog hint",
                    str(expiring[-1].id),
                )
            )
        phases.append(Phase("changelog-pointers", tuple(writes), sequential=True))
    snapshot_actions = [
        FileAction(
            "delete",
            table.snapshots.path(s.id),
            "snapshot",
            None,
            "expired",
            identity=SnapshotIdentity.of(s),
        )
        for s in expiring
    ]
    snapshot_actions.append(
        FileAction(
            "write",
            join(table.snapshots.directory, "EARLIEST"),
            "hint",
            None,
            "new earliest snapshot",
            str(end),
        )
    )
    phases.append(Phase("snapshot-files", tuple(snapshot_actions), sequential=True))
    phases.append(Phase("manifests", tuple(b.manifests)))
    phases.append(Phase("data-files", tuple(b.data)))
    if config.clean_empty_directories and b.buckets:
        phases.append(
            Phase("empty-directories", tuple(_empty_dir_actions(table, b.buckets)), sequential=True)
        )
    if b.kept_by_changelog:
        b.notes.append(
            f"{len(b.kept_by_changelog)} files kept because a long-lived changelog still needs them"
        )
    if branch_files and b.kept_by_branch:
        b.notes.append(
            f"{len(b.kept_by_branch)} files kept because another branch uses them "
            "(safer than Paimon, D3)"
        )
    return finish(phases, part)


def _merge_changelog_part(phases: list[Phase], part: ChangelogPart) -> list[Phase]:
    """Pointers first (D2): changelog-N deletions (and the changelog EARLIEST hint) follow
    the snapshot files; their manifests and files join the snapshot part's phases."""
    if not part.expired_ids:
        return phases
    by_name = {p.name: p for p in phases}
    seen = {a.path for p in phases for a in p.actions}

    def extra(actions: tuple[FileAction, ...]) -> tuple[FileAction, ...]:
        return tuple(a for a in actions if a.path not in seen)

    out: list[Phase] = []
    for name in ("hints", "changelog-pointers", "snapshot-files"):
        if name in by_name:
            out.append(by_name[name])
    out.append(Phase("changelog-files", part.pointers, sequential=True))
    for name, more in (("manifests", part.manifests), ("data-files", part.data)):
        current = by_name.get(name)
        actions = (current.actions if current else ()) + extra(more)
        out.append(Phase(name, actions))
    dirs = by_name.get("empty-directories")
    dir_actions = (dirs.actions if dirs else ()) + tuple(
        a for a in part.directories if not dirs or a not in dirs.actions
    )
    if dir_actions:
        out.append(Phase("empty-directories", dir_actions, sequential=True))
    return out


# -- re-checks --------------------------------------------------------------------------------
def _mark(table: PaimonTable, snapshot_id: int | None) -> dict[str, Any] | None:
    snap = None if snapshot_id is None else table.snapshots.try_snapshot(snapshot_id)
    return None if snap is None else SnapshotIdentity.of(snap).to_json()


def journal_guard(
    table: PaimonTable, new_earliest: int | None, latest: int | None
) -> dict[str, Any]:
    """What a resumed journal must find again (issue 12 defect 1, issue 22): the oldest
    snapshot the plan keeps and the latest one, each as the commit it is, so a rollback (and
    a rewrite of the same ids after it) is seen."""
    return {"new_earliest": _mark(table, new_earliest), "latest": _mark(table, latest)}


def _guard_marks(guard: Mapping[str, Any]) -> list[tuple[SnapshotIdentity, str]] | None:
    """The guard's marks with their roles; None when written by an older paimon-cli."""
    out = []
    for key, role in (("latest", "the latest"), ("new_earliest", "the oldest kept")):
        mark = guard.get(key)
        if mark is None:
            continue
        try:
            out.append((SnapshotIdentity.from_json(mark), f"{role} when the journal was written"))
        except (KeyError, TypeError, ValueError):
            return None
    return out


def resume_problem(table: PaimonTable, plan: Plan) -> str | None:
    """Why this journal must not be finished now, or None. At least as strict as planning:
    the table never moved backwards, the snapshots it deletes are still the oldest and all
    older than those it keeps, and no tag, branch or consumer appeared that needs them."""
    guard = plan.details.get("journal_guard")
    if not isinstance(guard, dict) or "latest" not in guard:
        return "it was written by an older paimon-cli and cannot be re-validated"
    latest_then = guard.get("latest")
    latest_now = table.snapshots.latest_id()
    if latest_then is None:
        return None if latest_now is None else "the table had no snapshots then"
    if latest_now is None or latest_now < int(latest_then["id"]):
        return (
            f"the table was rolled back from snapshot {latest_then['id']} to "
            f"{'nothing' if latest_now is None else latest_now}"
        )
    marks = _guard_marks(guard)
    if marks is None:
        return "it was written by an older paimon-cli and cannot be re-validated"
    for identity, role in marks:
        path = table.snapshots.path(identity.id)
        problem = commit_problem(table.fileio, path, identity, must_exist=True, role=role)
        if problem:
            return problem
    deleted = {
        sid
        for p in plan.phases
        for a in p.actions
        if a.kind == "snapshot" and (sid := _snapshot_id(a.path)) is not None
    }
    if deleted:
        kept = [sid for sid in table.snapshots.ids() if sid not in deleted]
        if kept and min(kept) < max(deleted):
            return (
                f"snapshot {min(kept)} is kept but older than snapshot {max(deleted)} it "
                "would delete"
            )
    problems = _violations(table, plan)
    return "; ".join(problems) if problems else None


def _violations(table: PaimonTable, plan: Plan) -> list[str]:
    req = plan.requirements
    if req.expire_end is None:
        return []
    problems = []
    views = [table, *_other_views(table)]
    for key, tag in _tags_everywhere(table, views).items():
        if tag.snapshot.id < req.expire_end and req.tags.get(key) != tag.snapshot.id:
            problems.append(f"tag {key} on snapshot {tag.snapshot.id} appeared")
    new_branches = set(table.branches.branches()) - set(req.branches)
    if new_branches:
        problems.append(f"branches appeared: {', '.join(sorted(new_branches))}")
    config = expire_config(table.options)
    protecting, _ = active_consumers(table.consumers.consumers(), config, plan.created_ms)
    pinned = [c for c in protecting if c.next_snapshot < req.expire_end]
    if pinned and not config.consumer_changelog_only:
        problems.append(f"consumer {pinned[0].id} now needs snapshot {pinned[0].next_snapshot}")
    latest = table.snapshots.latest_id()
    if latest is not None and req.latest_snapshot is not None and latest < req.latest_snapshot:
        problems.append(f"latest snapshot went back from {req.latest_snapshot} to {latest}")
    return problems


def recheck(table: PaimonTable, plan: Plan) -> Plan:
    """Fresh and saved plans (``--plan``): refuse (StalePlanError) when the table moved in a
    way that matters, a snapshot it deletes among it (a commit that reused the id)."""
    problems = _violations(table, plan)
    replaced = replaced_commit(table, plan)
    if replaced is not None:
        problems.append(replaced)
    if problems:
        raise StalePlanError(
            "the table changed since planning: " + "; ".join(problems),
            hint="plan again (a normal run re-plans once by itself)",
        )
    return plan


def filter_for_resume(table: PaimonTable, plan: Plan) -> Plan:
    """Journals: keep every file that a root present now still references."""
    req = plan.requirements
    end = req.expire_end
    views = [table, *_other_views(table)]
    protected: set[str] = set()
    executor_free_cache = {v.branch: ManifestCache(v, LocalExecutor(1)) for v in views}

    def want(path: str, _size: Any, _role: str) -> None:
        protected.add(path)

    def protect(view: PaimonTable, snap: Snapshot, kind: RootKind = "snapshot") -> None:
        live = full_live_set(view, snap, executor_free_cache[view.branch])
        collect_references(view, snap, live, want, kind=kind)

    for view in views:
        for tag in view.tags.tags():
            protect(view, tag.snapshot, "tag")
        changelog_references(view, lambda _id: want)
        if view.branch != table.branch:
            for snap in view.snapshots.snapshots():
                protect(view, snap)
    config = expire_config(table.options)
    protecting, _ = active_consumers(table.consumers.consumers(), config, plan.created_ms)
    floor = end
    if protecting and not config.consumer_changelog_only and end is not None:
        floor = min(end, min(c.next_snapshot for c in protecting))
    keep_ids: set[int] = set()
    for sid in table.snapshots.ids():
        if floor is not None and sid >= floor and (end is None or sid <= end):
            keep_ids.add(sid)
            protect(table, table.snapshots.snapshot(sid))
    if not keep_ids and (earliest := table.snapshots.earliest_id()) is not None:
        protect(table, table.snapshots.snapshot(earliest))
    filtered = []
    for phase in plan.phases:
        actions = []
        for a in phase.actions:
            if a.op == "delete" and a.path in protected:
                continue
            if a.kind == "snapshot" and _snapshot_id(a.path) in keep_ids:
                continue
            if (
                a.kind == "hint"
                and a.path.endswith("/snapshot/EARLIEST")
                and keep_ids
                and end is not None
                and min(keep_ids) < end
            ):
                a = replace(a, content=str(min(keep_ids)))
            actions.append(a)
        filtered.append(replace(phase, actions=tuple(actions)))
    return replace(plan, phases=tuple(filtered))


class NewRootWatcher:
    """Re-reads the tags and branches of every branch right before each phase: the files a
    tag or branch created since planning references are kept (issue 12 defect 6). A tag on
    a snapshot whose file this run already deleted is caught by create-tag itself, which
    checks after writing that the snapshot still exists."""

    def __init__(self, table: PaimonTable, plan: Plan) -> None:
        self.table = table
        self.known: dict[str, int] = dict(plan.requirements.tags)
        self.branches: set[str] = set(plan.requirements.branches)
        self.protected: set[str] = set()
        self.new_roots: list[str] = []

    def _protect(self, view: PaimonTable, snaps: Iterable[Snapshot]) -> None:
        cache = ManifestCache(view, LocalExecutor(1))
        for snap in snaps:
            live = full_live_set(view, snap, cache)
            collect_references(view, snap, live, lambda p, _s, _r: self.protected.add(p))

    def filter(self, phase: Phase) -> Phase:
        table = self.table
        main = table if table.branch == "main" else table.for_branch("main")
        branches = table.branches.branches()
        for view in [main, *(main.for_branch(b) for b in branches)]:
            if view.branch != "main" and view.branch not in self.branches:
                self.branches.add(view.branch)
                self.new_roots.append(f"branch {view.branch}")
                self._protect(view, view.snapshots.snapshots())
            for tag in view.tags.tags():
                key = f"{view.branch}/{tag.name}"
                if self.known.get(key) != tag.snapshot.id:
                    self.known[key] = tag.snapshot.id
                    self.new_roots.append(f"tag {key}")
                    self._protect(view, [tag.snapshot])
        if not self.protected:
            return phase
        kept = tuple(
            a for a in phase.actions if not (a.op == "delete" and a.path in self.protected)
        )
        return replace(phase, actions=kept)


@dataclass(frozen=True)
class ExpireSnapshots(Deletion):
    """Paimon's snapshot expiry as an operation: journaled, quarantinable; before each phase
    the tags and branches of every branch are read again (``NewRootWatcher``)."""

    command: ClassVar[str] = COMMAND
    journaled: ClassVar[bool] = True
    quarantinable: ClassVar[bool] = True

    flags: ExpireFlags = ExpireFlags()

    def plan(self, table: PaimonTable, env: Env) -> Plan:
        return plan_expire_snapshots(
            table, self.flags, now_ms=env.now_ms, executor=env.executor, progress=env.progress
        )

    def recheck(self, table: PaimonTable, plan: Plan) -> Plan:
        return recheck(table, plan)

    def apply(self, table: PaimonTable, plan: Plan, env: Env) -> None:
        watcher = NewRootWatcher(table, plan)
        apply_phases(
            table,
            plan,
            executor=env.executor,
            progress=env.progress,
            report=env.report,
            run=env.run,
            quarantine=env.quarantine,
            journal=True,
            before_phase=watcher.filter,
        )
        if watcher.new_roots:
            env.report.notes.append(
                "created while this run deleted, and kept: " + ", ".join(watcher.new_roots)
            )

    @classmethod
    def resume_problem(cls, table: PaimonTable, plan: Plan) -> str | None:
        return resume_problem(table, plan)

    @classmethod
    def filter_for_resume(cls, table: PaimonTable, plan: Plan) -> Plan:
        return filter_for_resume(table, plan)


def _snapshot_id(path: str) -> int | None:
    suffix = path.rpartition("snapshot-")[2]
    return int(suffix) if suffix.isdigit() else None


# Shared with core.ops.expire_changelogs (same protection rules, same directory cleanup).
branch_protection = _branch_protection
other_views = _other_views
empty_dir_actions = _empty_dir_actions

__all__ = [
    "COMMAND",
    "ExpireSnapshots",
    "NewRootWatcher",
    "ExpireFlags",
    "ExpireRange",
    "filter_for_resume",
    "find_skipping_tags",
    "plan_expire_snapshots",
    "recheck",
    "resume_problem",
]
