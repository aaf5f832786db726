"""Rollback to a snapshot or tag: Paimon's ``rollbackTo`` (``RollbackHelper``, Paimon 1.2+).

What goes: every ``snapshot-N`` after the target, every long-lived ``changelog-N`` after it,
and every tag (of the branch) on a snapshot after it; ``LATEST`` moves back to the target
and the changelog ``LATEST`` hint to the newest remaining changelog (``-1`` when none
remain, as Paimon writes). Rolling back to a tag whose snapshot has expired writes
``snapshot-<id>`` from the tag (after the rest, as Paimon) and moves ``EARLIEST`` to it.
Data files, manifests and index files are not deleted (Paimon stopped deleting them in 1.2,
PR #5712): files only the removed snapshots used become orphans for ``delete-orphan-files``.

Safer than Paimon (D3): refused, unless forced, while a consumer has read a snapshot that
would go (its ``nextSnapshot`` is after target + 1: new commits would reuse those ids) or a
branch was created from a tag that would go. Order (D2, Paimon's): ``LATEST`` first, then
snapshot files newest first (the ids stay contiguous; a writer's commit on top stops the
run), then changelog files and their hint, then tag files, then the snapshot file from the
tag (where it had expired), then ``EARLIEST``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from core.errors import PaimonError, SafetyRefusalError, StalePlanError
from core.format.model import Consumer, Snapshot, Tag
from core.io.fileio import FileInfo, file_size, join
from core.ops.details.repair import ConsumerAhead, RemovedTag, RollbackDetails, RollbackGuard
from core.ops.expiry.snapshot_deletion import changelog_latest_hint
from core.ops.tags.tags import branches_from_tag
from core.runtime.apply import BeforePhase
from core.runtime.clock import now_ms as clock_now_ms
from core.runtime.details import Record
from core.runtime.operation import Deletion, Env
from core.runtime.plans import FileAction, Phase, Plan, Requirements, SnapshotIdentity
from core.runtime.races import ActionGuard, NewestFirstGuard, SnapshotRaceWatch
from core.runtime.requests import at_least, refuse
from core.runtime.resume import commit_problem
from core.runtime.timeparse import format_utc
from core.table.snapshot_manager import SnapshotManager
from core.table.table import PaimonTable
from core.write.commit import snapshot_json

RollbackPlan = Plan[RollbackDetails]


class RollbackError(PaimonError):
    kind = "rollback_error"


def snapshot_at(table: PaimonTable, timestamp_ms: int) -> int:
    """Paimon's ``rollback_to_timestamp``: the latest snapshot committed at or before the
    time (only snapshots count, not tags); refused when there is none."""
    if table.snapshots.latest_id() is None:
        raise RollbackError(f"{table.location} has no snapshots: nothing to roll back")
    found = table.snapshots.earlier_or_equal_time(timestamp_ms)
    if found is None:
        earliest = table.snapshots.snapshot(table.snapshots.ids()[0])
        raise RollbackError(
            f"no snapshot of {table.location} was committed at or before "
            f"{format_utc(timestamp_ms)}: the earliest, {earliest.id}, was committed at "
            f"{format_utc(earliest.time_millis)}",
            hint="give a later time, or --to-tag for a tag on an expired snapshot",
        )
    return found.id


def _target(
    table: PaimonTable, snapshot_id: int | None, tag_name: str | None
) -> tuple[Snapshot, Tag | None]:
    """The snapshot to keep as latest, and the tag it comes from (if rolling back to one)."""
    tags = table.tags.tags()
    if tag_name is not None:
        for tag in tags:
            if tag.name == tag_name:
                return tag.snapshot, tag
        raise RollbackError(f"tag {tag_name!r} does not exist")
    assert snapshot_id is not None
    snap = table.snapshots.try_snapshot(snapshot_id)
    if snap is not None:
        return snap, None
    # As Paimon: an expired snapshot id that a tag holds rolls back to that tag.
    for tag in sorted(tags, key=lambda t: t.name):
        if tag.snapshot.id == snapshot_id:
            return tag.snapshot, tag
    raise RollbackError(f"snapshot {snapshot_id} does not exist (and no tag holds it)")


def _requirements(table: PaimonTable, latest: int | None) -> Requirements:
    return Requirements(
        latest_snapshot=latest,
        expire_end=None,
        tags={f"{table.branch}/{t.name}": t.snapshot.id for t in table.tags.tags()},
        branches=tuple(table.branches.branches()),
        consumers_min_next=None,
    )


def plan_rollback(
    table: PaimonTable,
    *,
    snapshot_id: int | None = None,
    tag: str | None = None,
    force: bool = False,
    now_ms: int | None = None,
    timestamp_ms: int | None = None,
) -> RollbackPlan:
    """Everything a rollback removes and rewrites, pointers first (refusals before any change)."""
    if sum(x is not None for x in (snapshot_id, tag, timestamp_ms)) != 1:
        raise RollbackError("give one of a snapshot id, a tag or a time")
    if timestamp_ms is not None:
        snapshot_id = snapshot_at(table, timestamp_ms)
    target, from_tag = _target(table, snapshot_id, tag)
    tid = target.id
    snapshots = table.snapshots
    listing = snapshots.listing()
    ids = sorted(listing)
    latest = ids[-1] if ids else None
    if latest is None and from_tag is None:
        raise RollbackError(f"{table.location} has no snapshots")
    restored = from_tag if from_tag is not None and snapshots.try_snapshot(tid) is None else None
    doomed_snapshots = sorted((i for i in ids if i > tid), reverse=True)
    doomed_tags = sorted(
        (t for t in table.tags.tags() if t.snapshot.id > tid), key=lambda t: t.name
    )
    changelog_ids = table.changelogs.ids()
    doomed_changelogs = sorted((i for i in changelog_ids if i > tid), reverse=True)
    consumers, branches = _dependents(table, tid, doomed_tags, force=force)
    restored_raw = _without_lost_changelog(table, restored.snapshot.raw) if restored else None
    details = RollbackDetails(
        target_snapshot=tid,
        target_tag=from_tag.name if from_tag else None,
        target_timestamp_ms=timestamp_ms,
        snapshot_restored_from_tag=restored is not None,
        latest_snapshot=latest,
        snapshots=tuple(sorted(doomed_snapshots)),
        changelogs=tuple(sorted(doomed_changelogs)),
        tags=tuple(RemovedTag(t.name, t.snapshot.id) for t in doomed_tags),
        consumers_ahead=tuple(ConsumerAhead(c.id, c.next_snapshot) for c in consumers),
        branches_from_removed_tags={k: tuple(v) for k, v in branches.items()},
        forced=force and bool(consumers or branches),
        journal_guard=RollbackGuard(None if restored is not None else SnapshotIdentity.of(target)),
        notes=_notes(tid, restored, restored_raw),
    )
    phases = (
        Phase(
            "snapshot-pointers",
            _pointer_actions(table, tid, bool(doomed_snapshots) or restored is not None),
            sequential=True,
        ),
        Phase(
            "snapshot-files",
            _snapshot_actions(table, tid, doomed_snapshots, listing),
            sequential=True,
        ),
        Phase(
            "changelog-files",
            _changelog_actions(table, tid, doomed_changelogs, changelog_ids),
            sequential=True,
        ),
        Phase("tag-files", _tag_actions(table, doomed_tags), sequential=True),
        Phase(
            "restored-snapshot",
            _restored_actions(table, tid, restored, restored_raw),
            sequential=True,
        ),
        Phase("earliest-hint", _earliest_action(table, tid, restored), sequential=True),
    )
    return Plan(
        "rollback",
        table.location,
        table.branch,
        now_ms if now_ms is not None else clock_now_ms(),
        phases,
        _requirements(table, latest),
        details,
    )


def _notes(tid: int, restored: Tag | None, raw: Mapping[str, Any] | None) -> tuple[str, ...]:
    notes: tuple[str, ...] = (
        "data files, manifests and index files are kept, as Paimon (1.2+) does: those "
        "only the removed snapshots used are left for delete-orphan-files",
    )
    if restored is not None and raw != restored.snapshot.raw:
        notes += (
            f"snapshot {tid} is written from tag {restored.name} without its changelog, "
            "which expired with the snapshot (Paimon would name the deleted changelog "
            "manifest list)",
        )
    return notes


def _dependents(
    table: PaimonTable, tid: int, doomed_tags: list[Tag], *, force: bool
) -> tuple[list[Consumer], dict[str, list[str]]]:
    """Consumers that read past the target and branches created from a removed tag: a
    refusal unless ``force`` (safer than Paimon, D3)."""
    consumers = [c for c in table.consumers.consumers() if c.next_snapshot > tid + 1]
    branches = {t.name: branches_from_tag(table, t) for t in doomed_tags}
    branches = {k: v for k, v in branches.items() if v}
    if (consumers or branches) and not force:
        why = [
            f"consumer {c.id!r} has read up to snapshot {c.next_snapshot - 1}" for c in consumers
        ] + [f"branch {', '.join(v)} was created from tag {k!r}" for k, v in branches.items()]
        raise SafetyRefusalError(
            f"refusing to roll back {table.location} to snapshot {tid}: " + "; ".join(why),
            hint="pass --force to roll back anyway (consumers then re-read reused snapshot ids)",
        )
    return consumers, branches


def _snapshot_actions(
    table: PaimonTable, tid: int, doomed: list[int], listing: Mapping[int, FileInfo]
) -> tuple[FileAction, ...]:
    """Snapshot files after the target, newest first. Each delete names the commit it
    removes: a resume never removes one committed since."""
    snapshots = table.snapshots
    return tuple(
        FileAction.commit_delete(
            snapshots.path(s.id),
            "snapshot",
            listing[s.id].size,
            f"after {tid}",
            s,
        )
        for s in _present(snapshots, doomed)
    )


def _tag_actions(table: PaimonTable, doomed: list[Tag]) -> tuple[FileAction, ...]:
    listing = table.tags.listing()
    return tuple(
        FileAction.commit_delete(
            table.tags.path(t.name),
            "tag",
            file_size(listing, t.name),
            f"on snapshot {t.snapshot.id}",
            t.snapshot,
        )
        for t in doomed
    )


def _pointer_actions(table: PaimonTable, tid: int, moves: bool) -> tuple[FileAction, ...]:
    """``LATEST`` first, before anything goes (Paimon's order)."""
    if not moves:
        return ()
    latest = join(table.snapshots.directory, "LATEST")
    return (FileAction("write", latest, "hint", None, "rolled back", str(tid)),)


def _restored_actions(
    table: PaimonTable, tid: int, restored: Tag | None, raw: Mapping[str, Any] | None
) -> tuple[FileAction, ...]:
    """The target's snapshot file from its tag when it had expired, written (only where
    absent) after every later snapshot went, as Paimon does: written first, it sat below
    the snapshots still to go with a gap between, and a writer committing on it while the
    rollback was stopped there saw its next commit land on the old latest instead."""
    if restored is None:
        return ()
    return (
        FileAction(
            "create",
            table.snapshots.path(tid),
            "snapshot",
            None,
            f"restored from tag {restored.name} (its snapshot had expired)",
            snapshot_json(raw or restored.snapshot.raw),
        ),
    )


_CHANGELOG_FIELDS = ("changelogManifestList", "changelogManifestListSize", "changelogRecordCount")


def _without_lost_changelog(table: PaimonTable, raw: Mapping[str, Any]) -> dict[str, Any]:
    """A tag keeps its snapshot's data, not its changelog (D3, as Paimon): the changelog
    manifest list went when the snapshot expired, unless a long-lived changelog kept it.
    Paimon writes the tag back as it is, a snapshot naming a deleted file (streaming reads
    and ``inspect --check`` then fail); the snapshot written here names no changelog then."""
    out = dict(raw)
    name = out.get("changelogManifestList")
    if name and not table.fileio.exists(table.paths.manifest_path(str(name))):
        for key in _CHANGELOG_FIELDS:
            out.pop(key, None)
    return out


def _changelog_actions(
    table: PaimonTable, tid: int, doomed: list[int], changelog_ids: list[int]
) -> tuple[FileAction, ...]:
    """The long-lived changelogs after the target, then their ``LATEST`` hint (``-1`` when
    none remain, as Paimon writes)."""
    listing = table.changelogs.listing()
    actions = [
        FileAction.commit_delete(
            table.changelogs.path(c.id),
            "changelog-json",
            file_size(listing, c.id),
            f"after {tid}",
            c,
        )
        for c in _present(table.changelogs, doomed)
    ]
    if doomed:
        remaining = [i for i in changelog_ids if i <= tid]
        actions.append(changelog_latest_hint(table, remaining[-1] if remaining else -1))
    return tuple(actions)


def _earliest_action(table: PaimonTable, tid: int, restored: Tag | None) -> tuple[FileAction, ...]:
    """Rolling back to an expired tag leaves its snapshot the only one: ``EARLIEST`` too."""
    if restored is None:
        return ()
    return (
        FileAction(
            "write",
            join(table.snapshots.directory, "EARLIEST"),
            "hint",
            None,
            "the tag's snapshot is the only one left",
            str(tid),
        ),
    )


def _present(snapshots: SnapshotManager, ids: list[int]) -> list[Snapshot]:
    """The snapshots (or changelogs) of ``ids`` still present, in that order."""
    return [s for s in (snapshots.try_snapshot(i) for i in ids) if s is not None]


def recheck(table: PaimonTable, plan: RollbackPlan) -> RollbackPlan:
    """Before acting: the table must not have moved (a commit or a tag change) since planning."""
    now = _requirements(table, table.snapshots.ids()[-1] if table.snapshots.ids() else None)
    if now.latest_snapshot != plan.requirements.latest_snapshot:
        raise StalePlanError(
            f"snapshot {now.latest_snapshot} is the latest now, not "
            f"{plan.requirements.latest_snapshot}: plan the rollback again"
        )
    if dict(now.tags) != dict(plan.requirements.tags):
        raise StalePlanError("tags changed since planning: plan the rollback again")
    return plan


def landed_commits(table: PaimonTable, plan: RollbackPlan) -> list[int]:
    """Snapshot ids present now that the rollback neither keeps nor writes, once its
    snapshot files went: commits a writer made while it ran (each on the snapshot before
    it, as Paimon commits). Rolling back to an expired tag, the table has no snapshot until
    the tag's is written: a commit then lands below the target, on an empty table."""
    target = plan.details.target_snapshot
    restored = plan.details.snapshot_restored_from_tag
    return [i for i in table.snapshots.ids() if i > target or (restored and i < target)]


class RollbackRaced(RollbackError):
    kind = "rollback_raced"


def raced_error(table: PaimonTable, plan: RollbackPlan, landed: list[int]) -> RollbackRaced:
    """The failure of a rollback a writer committed into, naming each commit and its base
    and what the rollback had removed when it stopped."""
    target = plan.details.target_snapshot
    planned = list(plan.details.snapshots)
    commits = []
    for sid in landed:
        snap = table.snapshots.try_snapshot(sid)
        who = f" by {snap.commit_user!r} ({snap.commit_kind})" if snap is not None else ""
        base = f"snapshot {sid - 1}" if sid > 1 else "an empty table"
        commits.append(f"snapshot {sid}{who} on {base}")
    removed = [i for i in planned if i not in landed and table.snapshots.try_snapshot(i) is None]
    kept = [i for i in planned if i not in landed and i not in removed]
    done = f"removed snapshots {_span(removed)}" if removed else "removed no snapshot"
    if kept:
        done += f" and kept snapshots {_span(kept)} (ids stay contiguous)"
    return RollbackRaced(
        f"rollback of {table.location} to snapshot {target} failed: a writer committed "
        f"{', '.join(commits)} while it ran; the rollback stopped there: it {done}, and "
        f"snapshot {landed[-1]} is the latest now (it reads what its base held plus its "
        "own commit)",
        hint="stop the writers, check the table (paimon inspect TABLE --check) and roll back "
        "again; a --quarantine run is undone with paimon restore",
    )


def _span(ids: list[int]) -> str:
    return f"{min(ids)}..{max(ids)}" if len(ids) > 1 else str(ids[0])


def race_watch(table: PaimonTable, plan: RollbackPlan) -> SnapshotRaceWatch:
    """Before each phase after the snapshot files went: a snapshot id above the target means
    a writer committed while the rollback ran; stop there (tags, changelogs and EARLIEST
    stay) and fail (issue 22 defect 7). Within the snapshot files, ``Rollback.action_guard``
    stops before a removal that would leave a gap below a writer's commit."""
    return SnapshotRaceWatch(
        lambda: landed_commits(table, plan), lambda landed: raced_error(table, plan, landed)
    )


@dataclass(frozen=True)
class Rollback(Deletion[RollbackDetails]):
    """Paimon's rollback_to as an operation: journaled and quarantinable. After the
    snapshot files go, the snapshot listing is read again before each phase and at the
    end: a commit that landed while the rollback ran fails the run (exit 1), naming it and
    its base (issue 22 defect 7)."""

    command: ClassVar[str] = "rollback"
    removes_partitions: ClassVar[bool] = True
    journaled: ClassVar[bool] = True
    quarantinable: ClassVar[bool] = True
    details_type: ClassVar[type[Record]] = RollbackDetails

    snapshot_id: int | None = None
    tag: str | None = None
    force: bool = False
    timestamp_ms: int | None = None  # --to-timestamp, resolved (DECISIONS D4)

    def __post_init__(self) -> None:
        if sum(x is not None for x in (self.snapshot_id, self.tag, self.timestamp_ms)) != 1:
            raise refuse(None, "give exactly one of --to-snapshot, --to-tag and --to-timestamp")
        at_least("to_snapshot", self.snapshot_id)

    def saved_plan_problem(self, plan: RollbackPlan) -> str | None:
        d = plan.details
        planned = (d.target_snapshot, d.target_tag, d.target_timestamp_ms)
        if self.snapshot_id is not None and planned[0] != self.snapshot_id:
            return f"it rolls back to snapshot {planned[0]}, not {self.snapshot_id}"
        if self.tag is not None and planned[1] != self.tag:
            return f"it rolls back to tag {planned[1]!r}, not {self.tag!r}"
        if self.timestamp_ms is not None and planned[2] != self.timestamp_ms:
            return f"it rolls back to the time {planned[2]}, not {self.timestamp_ms}"
        return None

    def plan(self, table: PaimonTable, env: Env) -> RollbackPlan:
        return plan_rollback(
            table,
            snapshot_id=self.snapshot_id,
            tag=self.tag,
            force=self.force,
            now_ms=env.now_ms,
            timestamp_ms=self.timestamp_ms,
        )

    def recheck(self, table: PaimonTable, plan: RollbackPlan) -> RollbackPlan:
        return recheck(table, plan)

    def apply(self, table: PaimonTable, plan: RollbackPlan, env: Env) -> None:
        if table.catalog.version_managed:  # the catalog rolls back (REST), as in Paimon
            from core.ops.undo.catalog_rollback import rollback_through_catalog

            return rollback_through_catalog(table, plan, env)
        return super().apply(table, plan, env)

    def before_phase(self, table: PaimonTable, plan: RollbackPlan, env: Env) -> BeforePhase:
        return race_watch(table, plan).before_phase

    def after_phases(
        self, table: PaimonTable, plan: RollbackPlan, env: Env, before_phase: BeforePhase | None
    ) -> None:
        race_watch(table, plan).check()

    @classmethod
    def action_guard(cls, table: PaimonTable, plan: RollbackPlan) -> ActionGuard:
        return NewestFirstGuard(table, lambda landed: raced_error(table, plan, landed))

    @classmethod
    def resume_problem(cls, table: PaimonTable, plan: RollbackPlan) -> str | None:
        """Why an interrupted rollback must not be finished, or None: a writer committed after
        it planned (an id above its latest), or the snapshot it keeps is another commit now. A
        commit that reused a removed id is caught by the identities on its deletes
        (``core.runtime.resume.replaced_commit``). Nothing is filtered from its journal
        (``filter_for_resume``): this refuses every journal the table moved away from."""
        latest_then = plan.requirements.latest_snapshot
        newer = [i for i in table.snapshots.ids() if latest_then is None or i > latest_then]
        if newer:
            return (
                f"snapshot {newer[0]} was committed after the rollback was planned (the latest "
                f"was {latest_then})"
            )
        if plan.details.snapshot_restored_from_tag:
            target = plan.details.target_snapshot
            below = [i for i in table.snapshots.ids() if i < target]
            if below:
                return (
                    f"snapshot {below[-1]} was committed while the rollback ran (the table had "
                    f"no snapshot before snapshot {target} was written from its tag)"
                )
        identity = plan.details.journal_guard.target
        if identity is None:
            return None
        return commit_problem(
            table.fileio,
            table.snapshots.path(identity.id),
            identity,
            must_exist=True,
            role="the rollback's target",
        )
