"""Long-lived changelog expiry: Paimon's ExpireChangelogImpl + ChangelogDeletion, as a plan.

Two callers: ``expire-snapshots`` on a decoupled table runs it right after snapshot expiry,
in the same plan (the commit-time path, semantics 2.10; table options, falling back to the
snapshot's), and ``expire-changelogs`` is Paimon's ``expire_changelogs`` procedure (values
not given fall back to the procedure's defaults, never to table options). Pointers first
(D2): ``changelog-N`` files go before their manifests and files. Files another branch, a
remaining changelog or the nearest earlier tag still needs are kept (D3).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field, replace
from typing import Any, ClassVar, TypeVar

from core.errors import InvalidOptionError, PaimonError, StalePlanError
from core.format.model import FileKind, Snapshot, Tag
from core.io.fileio import join
from core.ops.details.expiry import (
    ChangelogExpiryConfig,
    ChangelogPartDetails,
    ExpireChangelogsDetails,
    Kept,
)
from core.ops.details.expiry import changelog_config as config_details
from core.ops.expiry.snapshot_deletion import DeleteActions, delta_deletions, skipping_names
from core.retention.changelog_range import (
    ChangelogConfig,
    ChangelogFlags,
    TableState,
    commit_config,
    compute_changelog_range,
    current_state,
    delete_all_range,
    procedure_config,
)
from core.retention.expire_range import expire_config
from core.retention.protection import (
    branch_protection,
    empty_dir_actions,
    find_skipping_tags,
    other_views,
)
from core.retention.references import Want, changelog_references, collect_references
from core.runtime.details import Record
from core.runtime.executors.base import Executor
from core.runtime.executors.local import LocalExecutor
from core.runtime.operation import Deletion, Env
from core.runtime.plans import FileAction, Phase, Plan, Requirements
from core.runtime.progress import NullProgress, Progress
from core.table.scan import ManifestCache, full_live_set, live_sets
from core.table.table import PaimonTable

logger = logging.getLogger(__name__)

P = TypeVar("P", bound=Plan[Any])

COMMAND = "expire-changelogs"


@dataclass
class _Actions(DeleteActions):
    """A changelog expiry's deletes; a file ``protected`` (path -> what keeps it) is kept."""

    protected: Mapping[str, str] = field(default_factory=dict)
    pointers: list[FileAction] = field(default_factory=list)
    kept: list[Kept] = field(default_factory=list)

    def keeps(self, path: str) -> bool:
        if path not in self.protected:
            return False
        self.kept.append(Kept(path, self.protected[path]))
        return True

    def outside(self, message: str) -> PaimonError:
        return InvalidOptionError(message)


def _exists_in(table: PaimonTable, absent: AbstractSet[str]) -> Callable[[str | None], bool]:
    """Whether a manifest list is there once the plan's earlier part ran (``absent``: lists
    the snapshot expiry in the same plan deletes)."""

    def exists(name: str | None) -> bool:
        if not name or name in absent:
            return False
        return table.fileio.exists(table.paths.manifest_path(name))

    return exists


def _unused_list(acts: _Actions, root: Snapshot, name: str, skip: set[str], reason: str) -> None:
    """collectUnusedManifestList: the list's manifests, then the list, unless skipped."""
    table = acts.table
    for manifest, size, _entries in table.manifest_list_names(root, name):
        if manifest not in skip:
            skip.add(manifest)
            acts.add(acts.manifests, table.paths.manifest_path(manifest), "manifest", size, reason)
    if name not in skip:
        skip.add(name)
        acts.add(acts.manifests, table.paths.manifest_path(name), "manifest-list", None, reason)


def _plan_one(
    acts: _Actions,
    cl: Snapshot,
    skip: set[str],
    tag_keys: TagKeys,
    exists: Callable[[str | None], bool],
) -> None:
    """ChangelogDeletion for one changelog: its files, then its unused manifests."""
    table = acts.table
    reason = f"only used by expired changelog {cl.id}"
    if cl.changelog_manifest_list:
        if exists(cl.changelog_manifest_list):
            for entry in table.changelog_files(cl):
                if entry.kind is FileKind.ADD:
                    acts.add_entry(entry, "changelog", reason)
            _unused_list(acts, cl, cl.changelog_manifest_list, skip, reason)
        return
    tag = tag_keys(cl.id)
    if exists(cl.delta_manifest_list):
        for path, deleted in delta_deletions(table, cl):
            key = (deleted.partition, deleted.bucket, deleted.file_name)
            if tag is not None and key in tag[1]:
                acts.kept.append(Kept(path, tag[0]))
                continue
            acts.add_deleted(path, deleted, "data", reason)
        _unused_list(acts, cl, cl.delta_manifest_list, skip, reason)
    if exists(cl.base_manifest_list):
        _unused_list(acts, cl, cl.base_manifest_list, skip, reason)


@dataclass(frozen=True, slots=True)
class ChangelogPart:
    """The changelog expiry part of a plan (own command or appended to snapshot expiry)."""

    pointers: tuple[FileAction, ...]
    manifests: tuple[FileAction, ...]
    data: tuple[FileAction, ...]
    directories: tuple[FileAction, ...]
    details: ChangelogPartDetails
    expired_ids: tuple[int, ...]

    @classmethod
    def nothing(cls, details: ChangelogPartDetails) -> ChangelogPart:
        return cls((), (), (), (), details, ())


def plan_changelog_part(
    table: PaimonTable,
    state: TableState,
    config: ChangelogConfig,
    *,
    min_next_snapshot: int | None,
    now_ms: int,
    executor: Executor,
    delete_all: bool = False,
    protected_extra: Mapping[str, str] | None = None,
    absent_lists: AbstractSet[str] = frozenset(),
) -> ChangelogPart:
    """What expiring long-lived changelogs deletes, pointers first (pure). ``absent_lists``:
    manifest lists an earlier part of the same plan deletes (Paimon runs this afterwards)."""
    if delete_all:
        rng = delete_all_range(state)
    else:
        rng = compute_changelog_range(state, config, min_next_snapshot, now_ms)
    details = ChangelogPartDetails(rng.earliest, rng.latest, tuple(rng.ids), rng.stop, rng.detail)
    expiring = [state.changelogs[i] for i in rng.ids if i in state.changelogs]
    if not expiring or state.earliest_snapshot is None:
        return ChangelogPart.nothing(details)
    assert rng.earliest is not None and rng.end is not None
    tags = sorted(table.tags.tags(), key=lambda t: (t.snapshot.id, t.name))
    skipping = [t.snapshot for t in find_skipping_tags(tags, rng.earliest, rng.end)]
    if not delete_all:
        end_cl = state.changelogs.get(rng.end)
        if end_cl is None:
            missing = f"changelog {rng.end} is missing; nothing expired (Paimon stops here too)"
            return ChangelogPart.nothing(replace(details, notes=(missing,)))
        skipping.append(end_cl)
    skipping.append(state.earliest_snapshot)
    exists = _exists_in(table, absent_lists)
    skip = skipping_names(table, skipping, exists)
    protected = _protected(table, state, rng.ids, protected_extra, executor)
    acts = _Actions(table, protected=protected)
    tag_keys = _previous_tag_keys(table, tags, executor)
    for cl in expiring:
        _plan_one(acts, cl, skip, tag_keys, exists)
    acts.pointers += _pointer_actions(table, expiring, rng.end, delete_all=delete_all)
    dirs: list[FileAction] = []
    if config.clean_empty_directories and acts.buckets:
        dirs = empty_dir_actions(table, acts.buckets)
    return ChangelogPart(
        tuple(acts.pointers),
        tuple(acts.manifests),
        tuple(acts.data),
        tuple(dirs),
        replace(details, kept=tuple(sorted(acts.kept, key=lambda k: k.path))),
        tuple(cl.id for cl in expiring),
    )


def _protected(
    table: PaimonTable,
    state: TableState,
    doomed: list[int],
    extra: Mapping[str, str] | None,
    executor: Executor,
) -> dict[str, str]:
    """path -> what keeps it: the caller's extra roots, the remaining changelogs, and every
    file another branch uses."""
    protected = dict(extra or {})
    protected.update(_remaining_needs(table, state, set(doomed)))
    others = other_views(table)
    if others:
        protected.update({p: f"branch {b}" for p, b in branch_protection(others, executor).items()})
    return protected


TagKeys = Callable[[int], tuple[str, set[tuple[bytes, int, str]]] | None]


def _previous_tag_keys(table: PaimonTable, tags: list[Tag], executor: Executor) -> TagKeys:
    """For a changelog id: the nearest earlier tag and its live files, read once per tag."""
    cache = ManifestCache(table, executor)
    tag_cache: dict[str, set[tuple[bytes, int, str]]] = {}

    def tag_keys(cid: int) -> tuple[str, set[tuple[bytes, int, str]]] | None:
        previous = _previous_tag(tags, cid)
        if previous is None:
            return None
        if previous.name not in tag_cache:
            live = full_live_set(table, previous.snapshot, cache)
            tag_cache[previous.name] = {
                (e.partition, e.bucket, e.file.file_name) for e in live.values()
            }
        return f"tag {previous.name}", tag_cache[previous.name]

    return tag_keys


def _pointer_actions(
    table: PaimonTable, expiring: list[Snapshot], end: int, *, delete_all: bool
) -> list[FileAction]:
    """The changelog-N files (with the commit each holds), then the changelog hints."""
    reason = "expired long-lived changelog"
    actions = [
        FileAction.commit_delete(table.changelogs.path(cl.id), "changelog-json", None, reason, cl)
        for cl in expiring
    ]
    hint_dir = table.changelogs.directory
    if delete_all:
        for hint in ("EARLIEST", "LATEST"):
            actions.append(
                FileAction("delete", join(hint_dir, hint), "hint", None, "every changelog expired")
            )
    else:
        actions.append(
            FileAction.write_hint(hint_dir, "EARLIEST", end, "new earliest long-lived changelog")
        )
    return actions


def _previous_tag(tags: list[Tag], cid: int) -> Tag | None:
    previous = [t for t in tags if t.snapshot.id < cid]
    return previous[-1] if previous else None


def _remaining_needs(table: PaimonTable, state: TableState, doomed: set[int]) -> dict[str, str]:
    """path -> changelog, for what the changelogs that stay need (safer than Paimon's
    reliance on contiguity alone, D3)."""
    needed: dict[str, str] = {}
    for cid, cl in state.changelogs.items():
        if cid in doomed:
            continue

        def want(path: str, _size: Any, _role: str, cid: int = cid) -> None:
            needed.setdefault(path, f"changelog {cid}")

        collect_references(table, cl, None, want, kind="changelog")
    return needed


# -- the expire-changelogs command ---------------------------------------------------------------
def part_phases(part: ChangelogPart) -> list[Phase]:
    return [
        Phase("changelog-files", part.pointers, sequential=True),
        Phase("changelog-manifests", part.manifests),
        Phase("changelog-data-files", part.data),
        *(
            [Phase("changelog-empty-directories", part.directories, sequential=True)]
            if part.directories
            else []
        ),
    ]


def plan_expire_changelogs(
    table: PaimonTable,
    flags: ChangelogFlags,
    *,
    now_ms: int,
    executor: Executor,
    progress: Progress | None = None,
) -> Plan[ExpireChangelogsDetails]:
    """Paimon's ``expire_changelogs`` procedure as a plan (``maintain`` calls this too)."""
    progress = progress or NullProgress()
    config, sources = procedure_config(table, flags, now_ms)
    state = current_state(table)
    consumers = table.consumers.consumers()
    min_next = min((c.next_snapshot for c in consumers), default=None)
    progress.start("planning changelog expiry", None)
    part = plan_changelog_part(
        table,
        state,
        config,
        min_next_snapshot=min_next,
        now_ms=now_ms,
        executor=executor,
        delete_all=flags.delete_all,
    )
    progress.finish()
    return _changelogs_plan(
        table, state, config_details(config, sources), part, min_next, now_ms, flags.delete_all
    )


def plan_commit_changelog_expiry(
    table: PaimonTable, *, now_ms: int, executor: Executor, progress: Progress | None = None
) -> Plan[ExpireChangelogsDetails]:
    """Changelog expiry on the table's own settings (the commit path, semantics 2.10), for a
    caller that ran snapshot expiry itself (``maintain``); nothing when not decoupled."""
    from core.retention.expire_range import active_consumers

    snap_config = expire_config(table.options)
    config, sources = commit_config(table)
    state = current_state(table)
    protecting, _ = active_consumers(table.consumers.consumers(), snap_config, now_ms)
    min_next = min((c.next_snapshot for c in protecting), default=None)
    (progress or NullProgress()).start("planning changelog expiry", None)
    decoupled = snap_config.changelog_decoupled
    if decoupled:
        part = plan_changelog_part(
            table, state, config, min_next_snapshot=min_next, now_ms=now_ms, executor=executor
        )
    else:
        why = "not decoupled"
        part = ChangelogPart.nothing(ChangelogPartDetails(None, None, (), why, why, (), (why,)))
    (progress or NullProgress()).finish()
    details = config_details(config, sources)
    return _changelogs_plan(table, state, details, part, min_next, now_ms, False, decoupled)


def _changelogs_plan(
    table: PaimonTable,
    state: TableState,
    config: ChangelogExpiryConfig,
    part: ChangelogPart,
    min_next: int | None,
    now_ms: int,
    delete_all: bool,
    decoupled: bool | None = None,
) -> Plan[ExpireChangelogsDetails]:
    details = ExpireChangelogsDetails(
        config,
        delete_all,
        now_ms,
        None if state.earliest_snapshot is None else state.earliest_snapshot.id,
        state.latest_snapshot_id,
        _consumer_floor(table),
        part.details,
        decoupled=decoupled,
    )
    requirements = Requirements(
        latest_snapshot=state.latest_snapshot_id,
        expire_end=None,
        tags={f"{table.branch}/{t.name}": t.snapshot.id for t in table.tags.tags()},
        branches=tuple(table.branches.branches()),
        consumers_min_next=min_next,
    )
    phases = tuple(part_phases(part)) if part.expired_ids else ()
    return Plan(COMMAND, table.location, table.branch, now_ms, phases, requirements, details)


def _consumer_floor(table: PaimonTable) -> int | None:
    return min((c.next_snapshot for c in table.consumers.consumers()), default=None)


def recheck(
    table: PaimonTable, plan: Plan[ExpireChangelogsDetails]
) -> Plan[ExpireChangelogsDetails]:
    """Fresh plans: refuse when tags, branches or consumers moved in a way that matters."""
    req = plan.requirements
    now_tags = {f"{table.branch}/{t.name}": t.snapshot.id for t in table.tags.tags()}
    problems = []
    if now_tags != dict(req.tags):
        problems.append("the branch's tags changed")
    if set(table.branches.branches()) - set(req.branches):
        problems.append("a branch appeared")
    # a consumer that appeared (or moved back) since planning and needs an expiring changelog
    ids = plan.details.part.changelogs
    floor = plan.details.consumer_floor
    now_next = min((c.next_snapshot for c in table.consumers.consumers()), default=None)
    if ids and now_next is not None and (floor is None or now_next < floor) and now_next <= ids[-1]:
        problems.append(f"a consumer now needs snapshot {now_next}")
    if problems:
        raise StalePlanError(
            "the table changed since planning: " + "; ".join(problems), hint="plan again"
        )
    return plan


def protected_now(table: PaimonTable, *, skip_changelogs: set[str]) -> set[str]:
    """Every path a root present now needs: snapshots, tags and changelogs of every branch,
    except the changelog files in ``skip_changelogs`` (planned to go, still present)."""
    protected: set[str] = set()

    def want(path: str, _size: Any, _role: str) -> None:
        protected.add(path)

    def same(_cid: int) -> Want:
        return want

    for view in [table, *other_views(table)]:
        cache = ManifestCache(view, LocalExecutor(1))
        for snap, live in live_sets(view, view.snapshots.snapshots(), cache):
            collect_references(view, snap, live, want)
        for tag in view.tags.tags():
            live = full_live_set(view, tag.snapshot, cache)
            collect_references(view, tag.snapshot, live, want, kind="tag")
        if view.branch != table.branch:
            changelog_references(view, same)
            continue
        for cl in view.changelogs.snapshots():
            if view.changelogs.path(cl.id) not in skip_changelogs:
                collect_references(view, cl, None, want, kind="changelog")
    return protected


def filter_for_resume(table: PaimonTable, plan: P) -> P:
    """Journals: drop every delete that a root present now needs (cost: a full read)."""
    doomed = {a.path for p in plan.phases for a in p.actions if a.kind == "changelog-json"}
    protected = protected_now(table, skip_changelogs=doomed)
    phases = tuple(
        replace(
            p,
            actions=tuple(a for a in p.actions if not (a.op == "delete" and a.path in protected)),
        )
        for p in plan.phases
    )
    return replace(plan, phases=phases)


@dataclass(frozen=True)
class ExpireChangelogs(Deletion[ExpireChangelogsDetails]):
    """Paimon's expire_changelogs procedure as an operation: journaled, quarantinable."""

    command: ClassVar[str] = COMMAND
    journaled: ClassVar[bool] = True
    quarantinable: ClassVar[bool] = True
    details_type: ClassVar[type[Record]] = ExpireChangelogsDetails

    flags: ChangelogFlags = ChangelogFlags()

    def plan(self, table: PaimonTable, env: Env) -> Plan[ExpireChangelogsDetails]:
        return plan_expire_changelogs(
            table, self.flags, now_ms=env.now_ms, executor=env.executor, progress=env.progress
        )

    def recheck(
        self, table: PaimonTable, plan: Plan[ExpireChangelogsDetails]
    ) -> Plan[ExpireChangelogsDetails]:
        return recheck(table, plan)

    @classmethod
    def filter_for_resume(
        cls, table: PaimonTable, plan: Plan[ExpireChangelogsDetails]
    ) -> Plan[ExpireChangelogsDetails]:
        return filter_for_resume(table, plan)


__all__ = [
    "COMMAND",
    "ChangelogPart",
    "ExpireChangelogs",
    "filter_for_resume",
    "part_phases",
    "plan_changelog_part",
    "plan_commit_changelog_expiry",
    "plan_expire_changelogs",
    "recheck",
]
