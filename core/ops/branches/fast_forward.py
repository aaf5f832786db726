"""The fast-forward operation (planned in ``fast_forward_plan.py``) and its race watch:
once the target's replaced snapshots went, a snapshot from the branch's earliest on that
the plan neither keeps, removes nor copies in is a writer's commit; the run stops there
(that commit stays) and fails. Resuming re-validates the same way and never deletes the
run's own copies.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import ClassVar

from core.errors import StalePlanError
from core.io.fileio import FileIO
from core.ops.branches.branches import FastForwardRaced, other_branch
from core.ops.branches.fast_forward_plan import ForwardPlan, plan_fast_forward
from core.ops.details.branches import FastForwardDetails
from core.runtime.apply import BeforePhase
from core.runtime.details import Record
from core.runtime.operation import Deletion, Env
from core.runtime.plans import Phase, SnapshotIdentity
from core.runtime.races import ActionGuard, NewestFirstGuard, SnapshotRaceWatch
from core.runtime.requests import parsed
from core.table.branch_manager import validate_branch_name
from core.table.table import PaimonTable


def _creates(plan: ForwardPlan, *phases: str) -> dict[str, str]:
    return {a.path: a.content or "" for p in plan.phases if p.name in phases for a in p.actions}


def _holds(fileio: FileIO, path: str, content: str) -> bool:
    try:
        return fileio.read_text(path) == content
    except FileNotFoundError:
        return False


def _is_planned_commit(table: PaimonTable, sid: int, identity: SnapshotIdentity | None) -> bool:
    snap = table.snapshots.try_snapshot(sid)
    return (
        snap is not None
        and identity is not None
        and not identity.differences(SnapshotIdentity.of(snap))
    )


def _foreign_snapshots(table: PaimonTable, plan: ForwardPlan, *, copied: bool) -> list[int]:
    """Target snapshots from the branch's earliest on that hold none of the commits the plan
    keeps, removes or copies in: a writer's. Before the copies (``copied`` False) every id
    the plan removes must be gone already."""
    d = plan.details
    copies = _creates(plan, "new-snapshot-files")
    doomed = {
        a.path: a.identity for p in plan.phases if p.name == "snapshot-files" for a in p.actions
    }
    unchanged = {i.id: i for i in d.snapshots_unchanged}
    out = []
    for sid in table.snapshots.ids():
        if sid < d.branch_earliest:
            continue
        path = table.snapshots.path(sid)
        if sid in unchanged and _is_planned_commit(table, sid, unchanged[sid]):
            continue
        if copied and path in copies and _holds(table.fileio, path, copies[path]):
            continue
        if copied and path in doomed and _is_planned_commit(table, sid, doomed[path]):
            continue
        out.append(sid)
    return out


def _raced(table: PaimonTable, plan: ForwardPlan, landed: list[int]) -> FastForwardRaced:
    who = []
    for sid in landed:
        snap = table.snapshots.try_snapshot(sid)
        who.append(f"snapshot {sid}" + (f" by {snap.commit_user!r}" if snap else ""))
    return FastForwardRaced(
        f"fast-forward of {table.branch} to branch {plan.details.branch} stopped: a writer "
        f"committed {', '.join(who)} to {table.branch} while it ran; that commit was kept, and "
        f"{table.branch} holds what was done so far",
        hint=f"stop the writers of {table.branch}, check it (paimon inspect TABLE --check) and "
        "run fast-forward again",
    )


class _RaceWatch(SnapshotRaceWatch):
    """Once the target's replaced snapshots went, before each later phase and at the end:
    any snapshot from the branch's earliest on that is neither kept nor copied by the plan
    is a writer's commit; stop there (it stays) and fail."""

    def __init__(self, table: PaimonTable, plan: ForwardPlan) -> None:
        super().__init__(
            lambda: _foreign_snapshots(table, plan, copied=self.copied),
            lambda landed: _raced(table, plan, landed),
        )
        self.copied = False

    def before_phase(self, phase: Phase) -> Phase:
        super().before_phase(phase)
        if phase.name == "new-snapshot-files":
            self.copied = True
        return phase


@dataclass(frozen=True)
class FastForward(Deletion[FastForwardDetails]):
    """Paimon's fast_forward: the branch's history replaces the target's from the branch's
    earliest snapshot on; journaled (every removed commit file with its identity)."""

    command: ClassVar[str] = "fast-forward"
    removes_partitions: ClassVar[bool] = True
    journaled: ClassVar[bool] = True
    details_type: ClassVar[type[Record]] = FastForwardDetails

    name: str
    force: bool = False

    def saved_plan_problem(self, plan: ForwardPlan) -> str | None:
        return other_branch(plan.details.branch, self.name)

    def __post_init__(self) -> None:
        parsed("name", lambda: validate_branch_name(self.name))

    def plan(self, table: PaimonTable, env: Env) -> ForwardPlan:
        return plan_fast_forward(table, self.name, force=self.force, now_ms=env.now_ms)

    def apply(self, table: PaimonTable, plan: ForwardPlan, env: Env) -> None:
        if table.catalog.version_managed:  # the catalog fast-forwards (REST), as in Paimon
            from core.ops.branches.catalog_branches import fast_forward_through_catalog

            d = plan.details
            return fast_forward_through_catalog(table, d.branch, d.branch_latest, env)
        return super().apply(table, plan, env)

    def recheck(self, table: PaimonTable, plan: ForwardPlan) -> ForwardPlan:
        ids = table.snapshots.ids()
        if (ids[-1] if ids else None) != plan.requirements.latest_snapshot:
            raise StalePlanError(f"{table.branch} got a commit while planning")
        tags = {f"{table.branch}/{t.name}": t.snapshot.id for t in table.tags.tags()}
        if tags != dict(plan.requirements.tags):
            raise StalePlanError(f"the tags of {table.branch} changed while planning")
        source = table.for_branch(plan.details.branch)
        if source.snapshots.ids() != list(plan.details.branch_snapshots):
            raise StalePlanError(f"branch {plan.details.branch} got a commit while planning")
        return plan

    def before_phase(self, table: PaimonTable, plan: ForwardPlan, env: Env) -> BeforePhase:
        return _RaceWatch(table, plan).before_phase

    def after_phases(
        self, table: PaimonTable, plan: ForwardPlan, env: Env, before_phase: BeforePhase | None
    ) -> None:
        if not env.report.failed and not plan.empty:
            watch = _RaceWatch(table, plan)
            watch.copied = True
            watch.check()

    @classmethod
    def action_guard(cls, table: PaimonTable, plan: ForwardPlan) -> ActionGuard:
        """Main's snapshots go newest first: stop before one whose successor is a writer's
        commit (no gap in the ids; that commit stays)."""
        return NewestFirstGuard(table, lambda landed: _raced(table, plan, landed))

    @classmethod
    def resume_problem(cls, table: PaimonTable, plan: ForwardPlan) -> str | None:
        """A journal is finished only while the target holds nothing but the commits it
        keeps, removes or copies in, and no schema newer than planned."""
        landed = _foreign_snapshots(table, plan, copied=True)
        if landed:
            return (
                f"snapshot {landed[0]} was committed to {table.branch} after the fast-forward "
                "was planned"
            )
        schemas = table.schemas.ids()
        planned = plan.details.latest_schema
        copied = max(plan.details.schemas_copied, default=-1)
        if schemas and planned is not None and schemas[-1] > max(planned, copied):
            return f"schema {schemas[-1]} was added to {table.branch} after planning"
        return None

    @classmethod
    def filter_for_resume(cls, table: PaimonTable, plan: ForwardPlan) -> ForwardPlan:
        """Deletes of files that already hold what the plan copies there are done: never
        delete (or quarantine over) the run's own copies."""
        copies = _creates(plan, "new-schema-files", "new-snapshot-files", "new-tag-files")
        phases = tuple(
            replace(
                p,
                actions=tuple(
                    a
                    for a in p.actions
                    if not (
                        a.op == "delete"
                        and a.path in copies
                        and _holds(table.fileio, a.path, copies[a.path])
                    )
                ),
            )
            for p in plan.phases
        )
        return replace(plan, phases=phases)


__all__ = ["FastForward"]
