"""run(): the one lifecycle of every changing command.

    take the table lease -> finish unfinished journals -> plan -> (dry run: stop)
    -> re-check -> apply -> (stale plan: plan once more, re-check, apply)
    -> record the run -> release the lease

Everything an :class:`~core.runtime.operation.Operation` gets for free lives here and in
``core.runtime``: a real run holds the table's lease (``core.runtime.lease``) from before it
finishes journals until its record is written, so two runs never interleave on a table;
journals of interrupted runs are finished (or discarded, with the reason) before planning;
a saved plan (``--plan``) is re-checked and never re-planned; SIGINT and SIGTERM stop the
run at a safe point (its journal stays for the next run) and never undo a published
commit; ``--quarantine`` turns deletes into moves; every real run of a changing command
leaves a run record. docs/ARCHITECTURE.md shows where a new command plugs in.
"""

from __future__ import annotations

import logging
import os
import signal
from collections.abc import Iterator, Mapping
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field, replace
from functools import cache
from typing import Any, TypeVar

from core.errors import (
    PaimonError,
    RunInterruptedError,
    SafetyRefusalError,
    StalePlanError,
    StorageError,
)
from core.ops.expiry import metastore_partitions
from core.runtime.clock import Clock, SystemClock
from core.runtime.executors.base import Executor
from core.runtime.interrupts import Interrupted, stoppable
from core.runtime.journal import unfinished_journals
from core.runtime.lease import Holder, Lease, acquire
from core.runtime.operation import Env, Operation, Outcome
from core.runtime.plans import typed
from core.runtime.progress import NullProgress, Progress
from core.runtime.quarantine import Quarantine
from core.runtime.report import ExecutionReport
from core.runtime.resume import Resumer
from core.runtime.resume import finish_journals as finish_journals_with
from core.runtime.runs import Run, record_run, start_run
from core.table.table import PaimonTable

logger = logging.getLogger(__name__)

P = TypeVar("P")
R = TypeVar("R")


@cache
def journaled() -> Mapping[str, Resumer]:
    """Every operation whose deletions (or moves) are journaled, by command: a journal any
    of them left is finished by the next run of any command, so each must be known here.
    Imported when a journal is found: a run that finds none (almost every run) does not
    import every operation at start-up (issue 27)."""
    from core.ops.branches.branches import DeleteBranch
    from core.ops.branches.fast_forward import FastForward
    from core.ops.expiry.expire_changelogs import ExpireChangelogs
    from core.ops.expiry.expire_snapshots import ExpireSnapshots
    from core.ops.tags.tag_operations import DeleteTags, ExpireTags
    from core.ops.undo.restore import Restore
    from core.ops.undo.rollback import Rollback

    by_command: Mapping[str, Resumer] = {
        op.command: op
        for op in (
            ExpireSnapshots,
            ExpireChangelogs,
            DeleteTags,
            ExpireTags,
            Rollback,
            DeleteBranch,
            FastForward,
            Restore,
        )
    }
    return by_command


def resumer_for(command: str) -> Resumer | None:
    return journaled().get(command)


def finish_journals(table: PaimonTable, env: Env) -> None:
    """Finish (or discard, saying why) the journals of interrupted runs."""
    finish_journals_with(
        table,
        resumers=resumer_for,
        executor=env.executor,
        progress=env.progress,
        report=env.report,
        fence=env.run.fence() if env.run is not None else None,
    )


def pending_journals(table: PaimonTable) -> int:
    """Unfinished runs a real run would finish first (dry runs say so)."""
    return len(unfinished_journals(table.fileio, table.location))


@dataclass(frozen=True, slots=True)
class RunRequest:
    """How the caller wants the operation run (the command line's shared switches)."""

    dry_run: bool = False
    saved_plan: Any = None  # --plan FILE (a Plan): re-checked, applied, never re-planned
    quarantine: bool = False  # --quarantine: deletes are moves `paimon restore` undoes
    options: Mapping[str, Any] = field(default_factory=dict)  # for the run record
    # A record the caller owns (maintain: one per table for all its steps): used, not written;
    # the caller holds the table's lease for it (``leased``).
    record: Run | None = None
    # How long to wait for another run's lease on the table before refusing (0: refuse at once).
    wait_lease_ms: int = 0


@contextmanager
def leased(table: PaimonTable, record: Run, *, wait_ms: int = 0) -> Iterator[Lease]:
    """Hold the table's lease for ``record``'s run (every branch: the lease is the table's);
    raises ``LeaseHeldError`` when another run holds it past ``wait_ms``. Released at the
    end, also on errors and interrupts."""
    holder = Holder(record.command, record.id, record.user, record.host, os.getpid())
    lease = acquire(table.fileio, table.location, holder, wait_ms=wait_ms)
    record.lease, record.lease_took_over = lease, lease.took_over
    try:
        yield lease
    finally:
        record.lease = None
        try:
            lease.release()
        except StorageError as exc:
            # Renewals stopped: the lease expires on its own (a same-host run takes it at once).
            logger.warning("could not release the lease of %s: %s", table.location, exc.message)


def run(
    op: Operation[P, R],
    table: PaimonTable,
    *,
    executor: Executor,
    progress: Progress | None = None,
    request: RunRequest | None = None,
    clock: Clock | None = None,
) -> Outcome[P, R]:
    """Run ``op`` on one table, the same way for every command."""
    request = request or RunRequest()
    if op.rewrites_history and table.catalog.version_managed:
        raise SafetyRefusalError(
            f"{op.command} on {table.name}: catalog {table.catalog.catalog} keeps this "
            "table's snapshots, and paimon-cli changes them only by committing through it",
            hint=f"run {op.command} with Paimon's own procedure, which goes through the catalog",
        )
    clock = clock or SystemClock()
    progress = progress or NullProgress()
    if request.saved_plan is not None and op.details_type is not None:
        saved = typed(request.saved_plan, op.details_type, source="the saved plan (--plan)")
        request = replace(request, saved_plan=saved)
    if request.saved_plan is not None:
        check_saved_plan(op, table, request.saved_plan)
    if request.dry_run or not op.changes:
        env = Env(executor, clock.now_ms(), progress)
        plan: P = request.saved_plan or op.plan(table, env)
        return Outcome(plan, None, pending_journals=pending_journals(table) if op.changes else 0)
    owned = request.record is None
    record = request.record or start_run(op.command, request.options, quarantine=request.quarantine)
    with leased(table, record, wait_ms=request.wait_lease_ms) if owned else nullcontext():
        outcome = _recorded(op, table, record, owned, request, executor, progress, clock)
    outcome.run_id = record.id
    return outcome


def _recorded(
    op: Operation[P, R],
    table: PaimonTable,
    record: Run,
    owned: bool,
    request: RunRequest,
    executor: Executor,
    progress: Progress,
    clock: Clock,
) -> Outcome[P, R]:
    """Plan and act inside the run's record (written here when the run owns it)."""
    quarantine = None
    if record.quarantine and op.quarantinable:
        quarantine = Quarantine.of(table, record.id)
    env = Env(executor, clock.now_ms(), progress, ExecutionReport(), record, quarantine)
    try:
        with stoppable():
            outcome = _plan_and_act(op, table, env, request.saved_plan, clock)
    except KeyboardInterrupt as exc:  # Ctrl-C, or SIGINT/SIGTERM through stoppable()
        signum = exc.signum if isinstance(exc, Interrupted) else signal.SIGINT
        signal_name = signal.Signals(signum).name
        message = (
            f"interrupted by {signal_name}: what was done stands (a published commit is kept); an "
            "unfinished deletion's journal stays and the next run of any command finishes it"
        )
        if owned:
            _record(table, record, "interrupted", message, always=True)
        raise RunInterruptedError(message, signum) from None
    except PaimonError as exc:
        if owned:
            _record(table, record, "failed", exc.message, always=False)
        raise
    if owned:
        _record(table, record, "partial" if outcome.failed else "ok", None, always=True)
    return outcome


def check_saved_plan(op: Operation[Any, Any], table: PaimonTable, saved: Any) -> None:
    """A saved plan (``--plan``) is for this table and branch, is what the command line
    asks for, and nothing was committed since it was made: it is applied as it is or
    refused, never re-planned (the operation's own re-check follows, as for every plan)."""
    where = saved.table.rstrip("/")
    if where != table.location.rstrip("/") or saved.branch != table.branch:
        raise SafetyRefusalError(
            f"the saved plan is for {saved.table} (branch {saved.branch}), not "
            f"{table.location} (branch {table.branch}); nothing was changed"
        )
    problem = op.saved_plan_problem(saved)
    if problem is not None:
        raise SafetyRefusalError(
            f"the saved plan is not what this command line asks for: {problem}; nothing was changed"
        )
    stale = op.committed_since(table, saved)
    if stale is not None:
        raise StalePlanError(
            f"the saved plan is stale: {stale}; nothing was changed",
            hint="plan again (--dry-run --json) and review the new plan",
        )


def _plan_and_act(
    op: Operation[P, R], table: PaimonTable, env: Env, saved: P | None, clock: Clock
) -> Outcome[P, R]:
    finish_journals(table, env)
    if saved is not None:
        check_saved_plan(op, table, saved)  # again: the journals finished may have moved it
    plan = saved or op.plan(table, env)
    try:
        result = _act(op, table, plan, env)
    except StalePlanError:
        if saved is not None:
            raise
        # The table moved between planning and acting: plan once more, then act or refuse.
        env = env.at(clock.now_ms())
        plan = op.plan(table, env)
        env.report.notes.append("re-planned once: the table changed while planning")
        result = _act(op, table, plan, env)
    return Outcome(plan, env.report, result)


def _act(op: Operation[P, R], table: PaimonTable, plan: P, env: Env) -> R | None:
    if op.removes_partitions:
        # A metastore mirroring the table's partitions follows what this run removed.
        with metastore_partitions.following(table):
            return op.apply(table, op.recheck(table, plan), env)
    return op.apply(table, op.recheck(table, plan), env)


def _record(
    table: PaimonTable, record: Run, status: str, error: str | None, *, always: bool
) -> None:
    """The run record; a run refused before any change leaves none."""
    if always or record.acted:
        record_run(table, record, status=status, error=error)
