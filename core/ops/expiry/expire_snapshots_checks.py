"""The checks of snapshot expiry right before acting and when a journal is resumed: the
table must not have moved (rolled back, a tag, branch or consumer appeared, a snapshot id
reused by another commit), and files a root created since needs are kept."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace
from typing import Any

from core.errors import StalePlanError
from core.format.model import Snapshot
from core.ops.details.expiry import ExpireSnapshotsDetails, JournalGuard
from core.retention.expire_range import active_consumers, expire_config
from core.retention.protection import other_views, tags_everywhere
from core.retention.references import RootKind, changelog_references, collect_references
from core.runtime.executors.local import LocalExecutor
from core.runtime.plans import FileAction, Phase, Plan, SnapshotIdentity
from core.runtime.resume import commit_problem, replaced_commit
from core.table.scan import ManifestCache, full_live_set
from core.table.table import PaimonTable


def _mark(table: PaimonTable, snapshot_id: int | None) -> SnapshotIdentity | None:
    snap = None if snapshot_id is None else table.snapshots.try_snapshot(snapshot_id)
    return None if snap is None else SnapshotIdentity.of(snap)


def journal_guard(table: PaimonTable, new_earliest: int | None, latest: int | None) -> JournalGuard:
    """What a resumed journal must find again (issue 12 defect 1, issue 22): the oldest
    snapshot the plan keeps and the latest one, each as the commit it is, so a rollback (and
    a rewrite of the same ids after it) is seen."""
    return JournalGuard(_mark(table, new_earliest), _mark(table, latest))


def resume_problem(table: PaimonTable, plan: Plan[ExpireSnapshotsDetails]) -> str | None:
    """Why this journal must not be finished now, or None. At least as strict as planning:
    the table never moved backwards, the snapshots it deletes are still the oldest and all
    older than those it keeps, and no tag, branch or consumer appeared that needs them. (A
    journal whose guard does not read is discarded before: an older paimon-cli's.)"""
    guard = plan.details.journal_guard
    latest_then = guard.latest
    latest_now = table.snapshots.latest_id()
    if latest_then is None:
        return None if latest_now is None else "the table had no snapshots then"
    if latest_now is None or latest_now < latest_then.id:
        return (
            f"the table was rolled back from snapshot {latest_then.id} to "
            f"{'nothing' if latest_now is None else latest_now}"
        )
    marks = [(latest_then, "the latest"), (guard.new_earliest, "the oldest kept")]
    for identity, role in marks:
        if identity is None:
            continue
        path = table.snapshots.path(identity.id)
        when = f"{role} when the journal was written"
        problem = commit_problem(table.fileio, path, identity, must_exist=True, role=when)
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


def _violations(table: PaimonTable, plan: Plan[Any]) -> list[str]:
    req = plan.requirements
    if req.expire_end is None:
        return []
    problems = []
    views = [table, *other_views(table)]
    for key, tag in tags_everywhere(table, views).items():
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


def recheck(table: PaimonTable, plan: Plan[Any]) -> Plan[Any]:
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


def filter_for_resume(table: PaimonTable, plan: Plan[Any]) -> Plan[Any]:
    """Journals: keep every file that a root present now still references."""
    req = plan.requirements
    end = req.expire_end
    views = [table, *other_views(table)]
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
    present = set(table.snapshots.ids())
    filtered = []
    for phase in plan.phases:
        actions = []
        for a in phase.actions:
            if a.op == "delete" and a.path in protected:
                continue
            if _published_before(a, present):
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

    def __init__(self, table: PaimonTable, plan: Plan[Any]) -> None:
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

    def __call__(self, phase: Phase) -> Phase:
        """The watcher is the run's ``before_phase`` hook."""
        return self.filter(phase)

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


def _published_before(action: FileAction, present: set[int]) -> bool:
    """A decoupled ``changelog-N`` is written before ``snapshot-N`` goes (pointers first).
    Once ``snapshot-N`` is gone the interrupted run wrote it already; writing it again would
    bring back a changelog that the same plan's changelog expiry has removed since, pointing
    at manifests removed with it."""
    if action.op != "write" or action.kind != "changelog-json":
        return False
    suffix = action.path.rpartition("changelog-")[2]
    return suffix.isdigit() and int(suffix) not in present


def _snapshot_id(path: str) -> int | None:
    suffix = path.rpartition("snapshot-")[2]
    return int(suffix) if suffix.isdigit() else None
