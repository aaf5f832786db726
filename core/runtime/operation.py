"""The contract every changing command implements: plan, re-check, apply.

An operation says *what* changes; ``core.ops.lifecycle.run`` owns everything around it, the
same for every command: unfinished journals are finished first, a dry run stops after
planning, the plan is re-checked right before acting and re-planned once when the table
moved, deletions are journaled (with the identity of every commit file they remove) and
quarantinable, interrupts never undo a published commit, and every real run leaves a run
record. docs/ARCHITECTURE.md walks through it.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field, replace
from functools import partial
from typing import TYPE_CHECKING, Any, ClassVar, Generic, TypeVar

from core.runtime.apply import BeforePhase, Finish, apply_phases
from core.runtime.details import Details, Record
from core.runtime.plans import Plan
from core.runtime.progress import NullProgress, Progress
from core.runtime.races import ActionGuard
from core.runtime.report import ExecutionReport

if TYPE_CHECKING:
    from core.runtime.executors.base import Executor
    from core.runtime.quarantine import Quarantine
    from core.runtime.runs import Run
    from core.table.table import PaimonTable

P = TypeVar("P")  # the plan: a Plan (phases of file actions), or an operation's own kind
D = TypeVar("D", bound=Details)  # a Plan's details
R = TypeVar("R")  # what applying gives back besides the report (a commit, created tags)


@dataclass(frozen=True, slots=True)
class Env:
    """What the lifecycle hands an operation: where work runs, how it reports, the run's
    "now", and, for a real run, its record and quarantine."""

    executor: Executor
    now_ms: int
    progress: Progress = field(default_factory=NullProgress)
    report: ExecutionReport = field(default_factory=ExecutionReport)
    run: Run | None = None  # None on dry runs and for commands that change nothing
    quarantine: Quarantine | None = None  # deletes become moves into it (--quarantine)

    def at(self, now_ms: int) -> Env:
        """The same run, planning again at a later instant (the one re-plan)."""
        return replace(self, now_ms=now_ms)

    def apply_phases(
        self,
        table: PaimonTable,
        plan: Plan[Any],
        *,
        journal: bool,
        quarantined: bool = True,
        before_phase: BeforePhase | None = None,
        guard: ActionGuard | None = None,
        finish: Finish | None = None,
    ) -> None:
        """Act on ``plan`` with this run's executor, progress, report and record; deletes
        move into the run's quarantine unless ``quarantined`` is False (a restore moves
        files out of one)."""
        apply_phases(
            table,
            plan,
            executor=self.executor,
            progress=self.progress,
            report=self.report,
            run=self.run,
            quarantine=self.quarantine if quarantined else None,
            journal=journal,
            before_phase=before_phase,
            guard=guard,
            finish=finish,
        )


@dataclass(slots=True)
class Outcome(Generic[P, R]):
    """What one table's run gives back: the plan acted on (or printed), what was done, and
    what the operation itself produced (a commit, created tags, ...)."""

    plan: P
    report: ExecutionReport | None  # None on a dry run
    result: R | None = None
    pending_journals: int = 0  # dry runs: unfinished runs a real run would finish first
    run_id: str | None = None  # the run record of a real run

    @property
    def failed(self) -> bool:
        return self.report is not None and self.report.failed


class Operation(ABC, Generic[P, R]):
    """One changing command on one table. Subclasses hold their validated request as
    fields and implement :meth:`plan` and :meth:`apply`."""

    #: the command name: journals, run records and JSON documents carry it
    command: ClassVar[str]
    #: deletions are journaled: an interrupted run is finished (or discarded) by the next
    #: run of any command, after :meth:`resume_problem` and :meth:`filter_for_resume`
    journaled: ClassVar[bool] = False
    #: ``--quarantine`` applies: deletes are moves that ``paimon restore`` undoes
    quarantinable: ClassVar[bool] = False
    #: a real run changes the table (a run record is written)
    changes: ClassVar[bool] = True
    #: a real run can leave partitions without live data (rollback, fast-forward, repair):
    #: a metastore that mirrors them drops those afterwards (core.ops.expiry.metastore_partitions)
    removes_partitions: ClassVar[bool] = False
    #: the run creates or removes snapshot files other than by committing (rollback,
    #: branches, restore): refused where a catalog keeps the snapshots (REST), since there
    #: Paimon does that through the catalog's own endpoints
    rewrites_history: ClassVar[bool] = False
    #: the type a journal's (or a ``--plan`` file's) plan details are read as: when a
    #: journal is resumed (one whose details do not read is discarded, saying why), and
    #: before a saved plan is checked and applied
    details_type: ClassVar[type[Record] | None] = None

    @abstractmethod
    def plan(self, table: PaimonTable, env: Env) -> P:
        """Read the table and decide; never change it."""

    def recheck(self, table: PaimonTable, plan: P) -> P:
        """Right before acting: raise ``StalePlanError`` when the table moved so that the
        plan is wrong, or return it without actions that became protected."""
        return plan

    @abstractmethod
    def apply(self, table: PaimonTable, plan: P, env: Env) -> R | None:
        """Act on a re-checked plan."""

    def committed_since(self, table: PaimonTable, plan: Any) -> str | None:
        """Why a saved plan (a Plan) is stale before any re-check: a commit to its branch
        since it was made (the table it planned on is gone), or None."""
        latest = table.snapshots.latest_id()
        made = plan.requirements.latest_snapshot
        if latest == made:
            return None
        return f"it was made at snapshot {made}, the latest is {latest} now"

    def saved_plan_problem(self, plan: P) -> str | None:
        """Why a saved plan (``--plan``) is not what this command line asks for (another
        tag, branch or target), or None; limits and cut-offs are the saved plan's own."""
        return None

    # -- resuming a journal of this operation (journaled operations) ----------------------
    @classmethod
    def resume_problem(cls, table: PaimonTable, plan: Plan[Any]) -> str | None:
        """Why a journal of this operation must not be finished now, or None."""
        return None

    @classmethod
    def filter_for_resume(cls, table: PaimonTable, plan: Plan[Any]) -> Plan[Any]:
        """The journal's plan without what became protected since it was written."""
        return plan

    @classmethod
    def action_guard(cls, table: PaimonTable, plan: Plan[Any]) -> ActionGuard | None:
        """Checks around each action of a sequential phase, in a run and in the
        resume of its journal (a writer's commit racing the removal of snapshots); raising
        a PaimonError stops the run there. None: no such check."""
        return None

    @classmethod
    def finish(cls, table: PaimonTable, plan: Plan[Any]) -> None:
        """What is left once every phase of a journaled plan ran, before its journal goes
        (a fresh run and a resumed journal alike): nothing for most operations."""


class Deletion(Operation[Plan[D], None], Generic[D]):
    """An operation whose plan is phases of file actions, applied in order (pointers
    first), journaled when :attr:`journaled`, moved into the quarantine when one is given;
    ``D`` is the type of its plan's details."""

    def apply(self, table: PaimonTable, plan: Plan[D], env: Env) -> None:
        before_phase = self.before_phase(table, plan, env)
        env.apply_phases(
            table,
            plan,
            journal=self.journaled,
            before_phase=before_phase,
            guard=self.action_guard(table, plan),
            finish=partial(self.finish, table, plan),
        )
        self.after_phases(table, plan, env, before_phase)

    def before_phase(self, table: PaimonTable, plan: Plan[D], env: Env) -> BeforePhase | None:
        """A last-moment check run before each phase (new tags, new roots), or None."""
        return None

    def after_phases(
        self, table: PaimonTable, plan: Plan[D], env: Env, before_phase: BeforePhase | None
    ) -> None:
        """Once the phases ran, after the journal went (``before_phase``: what
        :meth:`before_phase` returned for this run): a last check for a writer that raced the
        last phase, or what the watch saw, for the report. Nothing by default."""
