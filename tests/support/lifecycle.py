"""The steps of the lifecycle (``core.ops.lifecycle.run``) one at a time, for tests that
re-check, apply or resume a plan they built themselves."""

from __future__ import annotations

import time
from collections.abc import Callable

from core.ops.lifecycle import finish_journals as finish_journals_now
from core.runtime.apply import BeforePhase, apply_phases
from core.runtime.executors.base import Executor
from core.runtime.operation import Env
from core.runtime.plans import Plan
from core.runtime.progress import NullProgress, Progress
from core.runtime.report import ExecutionReport
from core.table.table import PaimonTable


def apply(
    table: PaimonTable,
    plan: Plan,
    *,
    recheck: Callable[[PaimonTable, Plan], Plan],
    executor: Executor,
    progress: Progress | None = None,
    report: ExecutionReport | None = None,
    journal: bool = True,
    before_phase: BeforePhase | None = None,
) -> ExecutionReport:
    """Re-check ``plan`` (StalePlanError when stale), then run its phases as a real run
    does (journaled unless ``journal=False``); no run record, no quarantine."""
    report = report or ExecutionReport()
    apply_phases(
        table,
        recheck(table, plan),
        executor=executor,
        progress=progress or NullProgress(),
        report=report,
        run=None,
        quarantine=None,
        journal=journal,
        before_phase=before_phase,
    )
    return report


def finish_journals(
    table: PaimonTable,
    *,
    executor: Executor,
    progress: Progress | None = None,
    report: ExecutionReport,
) -> None:
    """Finish or discard every unfinished journal, as a run of any command does first."""
    env = Env(executor, int(time.time() * 1000), progress or NullProgress(), report)
    finish_journals_now(table, env)
