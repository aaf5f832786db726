"""plan_expire_snapshots(): Paimon's ExpireSnapshotsImpl + SnapshotDeletion, as a plan.

The final state equals Paimon's; the order is ours (pointers first, DECISIONS D2), and
other branches' files are protected too (safer, D3; the report says when it matters).
The file-level deletion is ``core.ops.expiry.snapshot_deletion``, the re-checks before acting and
on resume ``core.ops.expiry.expire_snapshots_checks``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from functools import partial
from typing import Any, ClassVar

from core.format.manifest import merge_entries
from core.format.model import Consumer, FileKind, ManifestEntry, ManifestFileMeta, Snapshot, Tag
from core.format.options import ExpireConfig
from core.ops.details.expiry import (
    DecoupledChangelogExpiry,
    ExpireSnapshotsDetails,
    SnapshotExpiryConfig,
    Sourced,
    changelog_config,
)
from core.ops.expiry.expire_changelogs import ChangelogPart, plan_changelog_part
from core.ops.expiry.expire_snapshots_checks import (
    NewRootWatcher,
    filter_for_resume,
    journal_guard,
    recheck,
    resume_problem,
)
from core.ops.expiry.snapshot_deletion import (
    DeletionBuilder,
    KeySet,
    ListCache,
    check_retained,
    metadata_work,
    note_tagged_changelogs,
    plan_coupled_changelogs,
    plan_deleted_data,
    plan_unused_metadata,
    pointer_phases,
    read_deltas,
    skipping_names,
    with_sizes,
)
from core.retention.changelog_range import TableState, commit_config
from core.retention.expire_range import ExpireRange, active_consumers, compute_range, expire_config
from core.retention.protection import (
    branch_protection,
    changelog_protection,
    find_skipping_tags,
    other_views,
    tags_everywhere,
)
from core.runtime.apply import BeforePhase
from core.runtime.details import Record
from core.runtime.executors.base import Executor
from core.runtime.operation import Deletion, Env
from core.runtime.plans import FileAction, Phase, Plan, Requirements
from core.runtime.progress import NullProgress, Progress
from core.runtime.requests import at_least, ordered
from core.runtime.wording import plural
from core.table.table import PaimonTable

logger = logging.getLogger(__name__)

ExpiryPlan = Plan[ExpireSnapshotsDetails]

COMMAND = "expire-snapshots"


@dataclass(frozen=True, slots=True)
class ExpireFlags:
    """The request: what the user asked for, validated; None falls back to table options,
    then Paimon defaults (those are checked where they are resolved, ``expire_config``)."""

    retain_min: int | None = None
    retain_max: int | None = None
    older_than_ms: int | None = None  # an instant: snapshots whose successor is older go
    max_deletes: int | None = None

    def __post_init__(self) -> None:
        at_least("retain_min", self.retain_min, why=RETAIN_MIN_ZERO)
        at_least("retain_max", self.retain_max)
        at_least("max_deletes", self.max_deletes)
        ordered("retain_min", self.retain_min, "retain_max", self.retain_max)


RETAIN_MIN_ZERO = " (retain-min 0 loses the changelogs of kept snapshots in Paimon; refused)"


def _config_sources(
    table: PaimonTable, flags: ExpireFlags, config: ExpireConfig, now_ms: int
) -> SnapshotExpiryConfig:
    """The effective settings, each with where it came from."""

    def sourced(value: int, flag: Any, key: str) -> Sourced:
        source = "flag" if flag is not None else table.options.lookup(key).source
        return Sourced(value, source)

    return SnapshotExpiryConfig(
        retain_min=sourced(config.retain_min, flags.retain_min, "snapshot.num-retained.min"),
        retain_max=sourced(config.retain_max, flags.retain_max, "snapshot.num-retained.max"),
        time_retained_ms=sourced(
            config.time_retained_ms, flags.older_than_ms, "snapshot.time-retained"
        ),
        older_than_ms=now_ms - config.time_retained_ms,
        max_deletes=sourced(config.expire_limit, flags.max_deletes, "snapshot.expire.limit"),
        clean_empty_directories=config.clean_empty_directories,
        changelog_decoupled=config.changelog_decoupled,
        changelog_producer=config.changelog_producer,
    )


def _changelog_part(
    table: PaimonTable,
    flags: ExpireFlags,
    snap_config: ExpireConfig,
    earliest: Snapshot | None,
    latest: int | None,
    expiring: list[Snapshot],
    protecting: list[Consumer],
    now_ms: int,
    executor: Executor,
    gone: set[str] | None = None,
) -> tuple[ChangelogPart, DecoupledChangelogExpiry]:
    """Changelog expiry right after snapshot expiry (commit path, semantics 2.10), on the
    state the snapshot part leaves: its new changelog-N included."""
    config, sources = commit_config(table, snap_config, limit_flag=flags.max_deletes is not None)
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
    return part, DecoupledChangelogExpiry(part.details, changelog_config(config, sources))


@dataclass
class _Expiry:
    """One planning pass: what was read, what is decided, and the plan it becomes."""

    table: PaimonTable
    flags: ExpireFlags
    now_ms: int
    executor: Executor
    progress: Progress
    config: ExpireConfig
    rng: ExpireRange
    protecting: list[Consumer]
    requirements: Requirements
    details: ExpireSnapshotsDetails  # what every plan says; completed by finish()
    b: DeletionBuilder
    others: list[PaimonTable] = field(default_factory=list)

    def changelog_part(
        self, earliest: Snapshot | None, expiring: list[Snapshot], gone: set[str] | None = None
    ) -> tuple[ChangelogPart, DecoupledChangelogExpiry]:
        return _changelog_part(
            self.table,
            self.flags,
            self.config,
            earliest,
            self.rng.latest,
            expiring,
            self.protecting,
            self.now_ms,
            self.executor,
            gone,
        )

    def finish(
        self,
        phases: list[Phase],
        part: tuple[ChangelogPart, DecoupledChangelogExpiry] | None = None,
    ) -> ExpiryPlan:
        b, details = self.b, self.details
        if part is not None:
            details = replace(details, changelog_expiry=part[1])
            phases = _merge_changelog_part(phases, part[0])
        details = replace(
            details,
            kept_by_tag=tuple(sorted(b.kept_by_tag, key=lambda k: k.path)),
            kept_by_branch=tuple(sorted(b.kept_by_branch, key=lambda k: k.path)),
            kept_by_changelog=tuple(sorted(b.kept_by_changelog, key=lambda k: k.path)),
            kept_for_changelog=b.kept_for_changelog,
            notes=tuple(b.notes),
        )
        sized = with_sizes(self.table, self.executor, phases)
        table = self.table
        return Plan(
            COMMAND,
            table.location,
            table.branch,
            self.now_ms,
            tuple(sized),
            self.requirements,
            details,
        )


def _start(
    table: PaimonTable, flags: ExpireFlags, now_ms: int, executor: Executor, progress: Progress
) -> _Expiry:
    """Read the options, consumers, range and tags; the details every plan carries."""
    time_retained = None if flags.older_than_ms is None else now_ms - flags.older_than_ms
    config = expire_config(
        table.options,
        retain_min=flags.retain_min,
        retain_max=flags.retain_max,
        time_retained_ms=time_retained,
        expire_limit=flags.max_deletes,
    )
    protecting, stale = active_consumers(table.consumers.consumers(), config, now_ms)
    rng = compute_range(table.snapshots, config, protecting, now_ms)
    others = other_views(table)
    tags_all = tags_everywhere(table, [table, *others])
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
    details = ExpireSnapshotsDetails(
        config=_config_sources(table, flags, config, now_ms),
        now_ms=now_ms,
        earliest_snapshot=rng.earliest,
        latest_snapshot=rng.latest,
        expire_until=rng.end,
        stopped_by=rng.stop,
        stop_detail=rng.stop_detail,
        blocking_consumer=rng.blocking_consumer,
        stale_consumers=tuple(c.id for c in stale),
        snapshots=(),
        journal_guard=journal_guard(table, rng.end or rng.earliest, rng.latest),
    )
    hint_note = table.snapshots.earliest_hint_note(rng.earliest)
    b = DeletionBuilder(table, notes=[hint_note] if hint_note else [])
    return _Expiry(
        table,
        flags,
        now_ms,
        executor,
        progress,
        config,
        rng,
        protecting,
        requirements,
        details,
        b,
        others,
    )


def _nothing_to_expire(e: _Expiry) -> ExpiryPlan:
    """No snapshot expires: at most the EARLIEST hint Paimon writes when it is absent, and
    the changelog part of a decoupled table."""
    earliest, table = e.rng.earliest, e.table
    hint_phases: list[Phase] = []
    if earliest is not None and table.snapshots.earliest_hint() is None:
        # Paimon writes EARLIEST when it finds nothing to expire and the hint is absent.
        directory = table.snapshots.directory
        hint = FileAction.write_hint(directory, "EARLIEST", earliest, "EARLIEST hint absent")
        hint_phases.append(Phase("hints", (hint,), sequential=True))
    part = None
    if e.config.changelog_decoupled:
        first = table.snapshots.try_snapshot(earliest) if earliest is not None else None
        part = e.changelog_part(first, [])
    return e.finish(hint_phases, part)


def _wanted_entries(
    table: PaimonTable, wanted: KeySet, meta: ManifestFileMeta
) -> list[ManifestEntry]:
    """The entries of one manifest whose (partition, bucket, file name) is in ``wanted``."""
    return [e for e in table.manifest(meta) if (e.partition, e.bucket, e.file.file_name) in wanted]


def _tag_keys(table: PaimonTable, executor: Executor, wanted: KeySet) -> Callable[[Tag], KeySet]:
    """Which of ``wanted`` (the files the expiring deltas deleted) a tag's live files hold.

    The tag's manifests stream by and only entries of wanted files are kept (whether a
    file is live depends on its own entries alone), each manifest read once for all tags:
    a tag of a table of 100 million files costs what the expiry deletes, not the table
    (issue 27)."""
    kept: dict[str, list[ManifestEntry]] = {}  # wanted entries of each manifest read
    keys: dict[str, KeySet] = {}

    def keys_of(tag: Tag) -> KeySet:
        # An unreadable tag is an error, not "empty" (Paimon PR #5237's bug, never ours).
        if tag.name not in keys:
            manifests = table.data_manifests(tag.snapshot)
            unread = list({m.file_name: m for m in manifests if m.file_name not in kept}.values())
            read = partial(_wanted_entries, table, wanted)
            for meta, entries in zip(unread, executor.imap(read, unread), strict=True):
                kept[meta.file_name] = entries
            merged = merge_entries(e for m in manifests for e in kept[m.file_name])
            keys[tag.name] = {
                (e.partition, e.bucket, e.file.file_name)
                for e in merged.values()
                if e.kind is FileKind.ADD
            }
        return keys[tag.name]

    return keys_of


def _gone_lists(
    e: _Expiry, tags: list[Tag], begin: int, end: Snapshot, expiring: list[Snapshot]
) -> set[str]:
    """With a changelog producer this expiry deletes the expiring snapshots' data lists
    (unless a skipping root keeps them): the changelog part must see them gone, as Paimon
    does."""
    if e.config.changelog_producer == "none":
        return set()
    initial = skipping_names(
        e.table, [*(t.snapshot for t in find_skipping_tags(tags, begin, end.id)), end]
    )
    return {
        n
        for s in expiring
        for n in (s.base_manifest_list, s.delta_manifest_list)
        if n not in initial
    }


def plan_expire_snapshots(
    table: PaimonTable,
    flags: ExpireFlags,
    *,
    now_ms: int,
    executor: Executor,
    progress: Progress | None = None,
) -> ExpiryPlan:
    """Pure planner: reads the table, returns what would be deleted and why."""
    e = _start(table, flags, now_ms, executor, progress or NullProgress())
    earliest, end = e.rng.earliest, e.rng.end
    if earliest is None or end is None or end <= earliest:
        return _nothing_to_expire(e)
    e.progress.start("reading snapshots", end - earliest + 1)
    found = [
        s
        for s in executor.map(
            table.snapshots.try_snapshot, range(earliest, end + 1), work=metadata_work(table)
        )
        if s is not None
    ]
    e.progress.finish()
    by_id = {s.id: s for s in found}
    if end not in by_id:
        e.b.notes.append(f"snapshot {end} vanished while planning (another expiry?); nothing to do")
        return e.finish([])
    check_retained(table, by_id[end], e.rng.latest, executor)
    begin = found[0].id
    expiring = [s for s in found if s.id < end]
    e.details = replace(
        e.details, snapshots=tuple(s.id for s in expiring), expire_range=(begin, end)
    )
    # This branch's own tags only (its base tag is copied into its tag directory), as Paimon
    # does per branch: other branches' tags name other snapshots with other files and would
    # hide the nearest earlier tag here; their files are protected as branch files (D3).
    tags = sorted(table.tags.tags(), key=lambda t: (t.snapshot.id, t.name))
    branch_files = branch_protection(e.others, executor) if e.others else {}
    part = None
    if e.config.changelog_decoupled:
        part = e.changelog_part(
            by_id[end], expiring, _gone_lists(e, tags, begin, by_id[end], expiring)
        )
    changelog_files = changelog_protection(table, part[0].expired_ids if part else ())
    lists: ListCache = {}
    deltas = read_deltas(table, [s for s in found if s.id > begin], executor, e.progress, lists)
    # Only a tag asks which of the deleted files it holds (keys_of): no tag, no key set.
    wanted: KeySet = (
        {(en.partition, en.bucket, en.file_name) for _s, d in deltas for _p, en in d or ()}
        if tags
        else set()
    )
    keys_of = _tag_keys(table, executor, wanted)
    plan_deleted_data(e.b, deltas, tags, keys_of, branch_files, e.config)
    if not e.config.changelog_decoupled:
        plan_coupled_changelogs(e.b, expiring, branch_files)
    skip = skipping_names(
        table, [*(t.snapshot for t in find_skipping_tags(tags, begin, end)), by_id[end]]
    )
    plan_unused_metadata(e.b, expiring, skip, e.config, branch_files, changelog_files, lists)
    note_tagged_changelogs(e.b, expiring, tags, e.config.changelog_decoupled)
    phases = pointer_phases(e.b, expiring, end, e.rng.latest or end, e.config)
    _explain_kept(e.b, bool(branch_files))
    return e.finish(phases, part)


def _explain_kept(b: DeletionBuilder, other_branches: bool) -> None:
    if b.kept_by_changelog:
        b.notes.append(
            f"{plural(len(b.kept_by_changelog), 'file')} kept because a long-lived changelog "
            "still needs them"
        )
    if other_branches and b.kept_by_branch:
        b.notes.append(
            f"{plural(len(b.kept_by_branch), 'file')} kept because another branch uses them "
            "(safer than Paimon, D3)"
        )


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


@dataclass(frozen=True)
class ExpireSnapshots(Deletion[ExpireSnapshotsDetails]):
    """Paimon's snapshot expiry as an operation: journaled, quarantinable; before each phase
    the tags and branches of every branch are read again (``NewRootWatcher``)."""

    command: ClassVar[str] = COMMAND
    journaled: ClassVar[bool] = True
    quarantinable: ClassVar[bool] = True
    details_type: ClassVar[type[Record]] = ExpireSnapshotsDetails

    flags: ExpireFlags = ExpireFlags()

    def plan(self, table: PaimonTable, env: Env) -> ExpiryPlan:
        return plan_expire_snapshots(
            table, self.flags, now_ms=env.now_ms, executor=env.executor, progress=env.progress
        )

    def recheck(self, table: PaimonTable, plan: ExpiryPlan) -> ExpiryPlan:
        return recheck(table, plan)

    def before_phase(self, table: PaimonTable, plan: ExpiryPlan, env: Env) -> NewRootWatcher:
        return NewRootWatcher(table, plan)

    def after_phases(
        self, table: PaimonTable, plan: ExpiryPlan, env: Env, before_phase: BeforePhase | None
    ) -> None:
        if isinstance(before_phase, NewRootWatcher) and before_phase.new_roots:
            env.report.notes.append(
                "created while this run deleted, and kept: " + ", ".join(before_phase.new_roots)
            )

    @classmethod
    def resume_problem(cls, table: PaimonTable, plan: ExpiryPlan) -> str | None:
        return resume_problem(table, plan)

    @classmethod
    def filter_for_resume(cls, table: PaimonTable, plan: ExpiryPlan) -> ExpiryPlan:
        return filter_for_resume(table, plan)


__all__ = [
    "COMMAND",
    "ExpireFlags",
    "ExpireSnapshots",
    "plan_expire_snapshots",
]
