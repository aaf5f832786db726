"""One table's maintenance, in the order of Paimon's commit-time maintenance (semantics 2.12).

Each step runs only when the table's options ask for it, and is the same planner and
executor the single command uses (same plans, journals, re-checks and results):

1. ``auto-tags``           automatic tag creation (``tag.automatic-creation``)
2. ``expire-tags``         tag retention (``tagTimeRetained``, ``tag.num-retained-max``)
3. ``expire-partitions``   ``partition.expiration-time``
4. ``expire-consumers``    ``consumer.expiration-time`` (before snapshots: dead readers
                           must not hold snapshots back)
5. ``expire-snapshots``    always (table options, else Paimon's defaults)
6. ``expire-changelogs``   decoupled changelog lifecycle
7. ``delete-orphan-files`` only when asked, last

A step that fails stops the table's later steps: orphan cleaning never runs after a
failed expiry. Every step is reported, with why it ran or not.
"""

from __future__ import annotations

import datetime as dt
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from core.errors import PaimonError
from core.format.options import parse_bool
from core.ops.auto_tags import AutoTagPlan, AutoTags, creation_mode
from core.ops.consumer_expire import ExpireConsumers
from core.ops.delete_orphan_files import delete_orphan_files
from core.ops.expire_partitions import (
    ExpirePartitions,
    PartitionExpireFlags,
    unexpirable_error,
)
from core.ops.expire_snapshots import ExpireSnapshots
from core.ops.lifecycle import RunRequest, leased, run
from core.ops.orphan_files import DEFAULT_AGE_MS, OrphanRequest, validate_cutoff
from core.ops.tag_operations import ExpireTags
from core.retention.expire_range import expire_config
from core.runtime.clock import FixedClock
from core.runtime.executors.base import Executor
from core.runtime.lease import LeaseHeldError
from core.runtime.operation import Operation
from core.runtime.plans import Plan
from core.runtime.progress import NullProgress, Progress
from core.runtime.report import ExecutionReport
from core.runtime.requests import about, refuse
from core.runtime.runs import Run
from core.table.table import PaimonTable

logger = logging.getLogger(__name__)

STEPS = (
    "auto-tags",
    "expire-tags",
    "expire-partitions",
    "expire-consumers",
    "expire-snapshots",
    "expire-changelogs",
    "delete-orphan-files",
)


@dataclass(frozen=True, slots=True)
class MaintainConfig:
    """The maintain request, validated: what every table's steps are run with."""

    now_ms: int
    zone: dt.tzinfo
    dry_run: bool = False
    orphans: bool = False
    orphans_older_than_ms: int | None = None  # None: Paimon's default, one day ago
    allow_unsafe_commit: bool = False
    wait_lease_ms: int = 0  # how long to wait for another run's lease on a table

    def __post_init__(self) -> None:
        cutoff = self.orphans_older_than_ms
        if cutoff is None:
            return
        if not self.orphans:
            raise refuse("orphans_older_than", "needs --orphans")
        with about("orphans_older_than"):
            validate_cutoff(cutoff, self.now_ms, allow_recent=False)


@dataclass(slots=True)
class StepResult:
    """One step of one table: ran (ok / failed), skipped with a reason, or not reached."""

    name: str
    status: str  # ok | failed | skipped | not-run
    reason: str
    plan: Plan[Any] | None = None
    report: ExecutionReport | None = None
    commit: Any = None  # CommitResult of expire-partitions
    created_tags: list[str] = field(default_factory=list)
    changelogs: list[int] = field(default_factory=list)  # expired within expire-snapshots
    error: PaimonError | None = None
    seconds: float = 0.0
    pending_journals: int = 0  # dry runs: unfinished runs a real run would finish first

    @property
    def ran(self) -> bool:
        return self.status in ("ok", "failed")

    @property
    def finished(self) -> bool:
        """Did its work, even if it then failed with an error that lets later steps run
        (expire-partitions keeping partitions it can never judge)."""
        return self.status == "ok" or (self.error is not None and not self.error.blocks_later_steps)

    @property
    def files_deleted(self) -> int:
        """Files deleted: not hints or changelog-N written, not directories removed."""
        if self.report is None:
            return 0
        others: dict[str, int] = {}
        for phase in self.plan.phases if self.plan is not None else ():
            others[phase.name] = sum(a.op != "delete" for a in phase.actions)
        return sum(max(p.done - others.get(p.name, 0), 0) for p in self.report.phases)

    @property
    def bytes_deleted(self) -> int:
        return 0 if self.report is None else sum(p.bytes for p in self.report.phases)

    def planned_totals(self) -> tuple[int, int]:
        """(files, bytes) the plan deletes: what a dry run would have deleted."""
        if self.plan is None or self.status != "ok":
            return 0, 0
        totals = self.plan.totals()
        return int(totals["files"]), int(totals["bytes"])

    def planned(self, key: str) -> list[Any]:
        """A list from the plan's details (``snapshots``, ``partitions``, ``tags``, ...)."""
        if self.plan is None:
            return []
        return list(self.plan.details.get(key) or [])


@dataclass(slots=True)
class TableResult:
    location: str
    name: str
    steps: list[StepResult] = field(default_factory=list)
    error: PaimonError | None = None  # the table could not even be opened
    busy: LeaseHeldError | None = None  # another run held the table's lease: not maintained
    started_ms: int = 0
    seconds: float = 0.0

    @property
    def failed(self) -> bool:
        return self.error is not None or any(s.status == "failed" for s in self.steps)

    def step(self, name: str) -> StepResult | None:
        return next((s for s in self.steps if s.name == name), None)

    @property
    def files_deleted(self) -> int:
        return sum(s.files_deleted for s in self.steps)

    @property
    def bytes_deleted(self) -> int:
        return sum(s.bytes_deleted for s in self.steps)

    def count(self, step: str, key: str) -> int:
        """How many items a step expired (or, dry run, would expire)."""
        found = self.step(step)
        if found is None or not found.ran or (found.status == "failed" and not found.finished):
            return 0
        if step == "expire-changelogs":
            return len(found.changelogs)
        return len(found.planned(key))


def table_name(location: str) -> str:
    """``db.table`` for ``<warehouse>/<db>.db/<table>``, else the location."""
    parts = location.rstrip("/").rsplit("/", 2)
    if len(parts) == 3 and parts[1].endswith(".db") and len(parts[1]) > 3:
        return f"{parts[1][:-3]}.{parts[2]}"
    return location


@dataclass(frozen=True, slots=True)
class _Ctx:
    table: PaimonTable
    executor: Executor
    config: MaintainConfig
    progress: Progress
    warn: Callable[[str], None]
    result: TableResult
    record: Run | None


@dataclass(frozen=True, slots=True)
class _Skip:
    reason: str


@dataclass(frozen=True, slots=True)
class _Run:
    reason: str
    op: Operation[Any, Any]


_Decision = _Skip | _Run


# -- steps: each decides from the table's options whether it runs, and as which operation --
def _auto_tags(ctx: _Ctx) -> _Decision:
    mode = creation_mode(ctx.table)
    if mode == "none":
        return _Skip("tag.automatic-creation is not set")
    return _Run(f"tag.automatic-creation={mode}", AutoTags(ctx.config.zone))


def _expire_tags(ctx: _Ctx) -> _Decision:
    t = ctx.table
    enabled = t.options.get("tag.time-expire-enabled")
    if enabled is not None and not parse_bool(enabled, "tag.time-expire-enabled"):
        return _Skip("tag.time-expire-enabled=false")
    if not t.tags.names():
        return _Skip("the table has no tags")
    return _Run(
        "the table has tags: tagTimeRetained and tag.num-retained-max",
        ExpireTags(zone=ctx.config.zone),
    )


def _expire_partitions(ctx: _Ctx) -> _Decision:
    t = ctx.table
    expiration = t.options.get("partition.expiration-time")
    if expiration is None:
        return _Skip("partition.expiration-time is not set")
    if not t.schema.partition_keys:
        return _Skip("the table is not partitioned")
    op = ExpirePartitions(
        PartitionExpireFlags(),
        ctx.config.zone,
        allow_unsafe=ctx.config.allow_unsafe_commit,
        warn=ctx.warn,
    )
    return _Run(f"partition.expiration-time={expiration}", op)


def _expire_consumers(ctx: _Ctx) -> _Decision:
    expiration = ctx.table.options.get("consumer.expiration-time")
    if expiration is None:
        return _Skip("consumer.expiration-time is not set")
    return _Run(f"consumer.expiration-time={expiration}", ExpireConsumers(ctx.config.zone))


def _expire_snapshots(ctx: _Ctx) -> _Decision:
    return _Run("always: the table's snapshot.* options, else Paimon's defaults", ExpireSnapshots())


def _expire_changelogs(ctx: _Ctx) -> _Decision:
    if not expire_config(ctx.table.options).changelog_decoupled:
        return _Skip("changelog lifecycle not decoupled: changelog files go with their snapshots")
    # On decoupled tables expire-snapshots plans changelog expiry after the snapshots, in
    # the same plan (as Paimon's commit does); this step reports that part.
    return _Skip("")


def _delete_orphan_files(ctx: _Ctx) -> _Decision:
    if not ctx.config.orphans:
        return _Skip("not asked (--orphans)")
    cutoff = ctx.config.orphans_older_than_ms
    cutoff = ctx.config.now_ms - DEFAULT_AGE_MS if cutoff is None else cutoff
    return _Run("--orphans", delete_orphan_files(OrphanRequest(cutoff), ctx.executor))


_STEPS: dict[str, Callable[[_Ctx], _Decision]] = {
    "auto-tags": _auto_tags,
    "expire-tags": _expire_tags,
    "expire-partitions": _expire_partitions,
    "expire-consumers": _expire_consumers,
    "expire-snapshots": _expire_snapshots,
    "expire-changelogs": _expire_changelogs,
    "delete-orphan-files": _delete_orphan_files,
}


def _changelog_step(ctx: _Ctx, step: StepResult) -> None:
    """Within expire-snapshots on decoupled tables: report its changelog part."""
    snapshots = ctx.result.step("expire-snapshots")
    plan = snapshots.plan if snapshots is not None else None
    part = plan.details.get("changelog_expiry") if plan is not None else None
    if part is None:
        step.status = "skipped"
        step.reason = "decoupled changelog lifecycle, but expire-snapshots planned no part"
        return
    step.reason = "decoupled changelog lifecycle: planned and run within expire-snapshots"
    step.changelogs = [int(i) for i in part.get("changelogs") or ()]


def _run_step(ctx: _Ctx, name: str, step: StepResult) -> None:
    decision = _STEPS[name](ctx)
    if isinstance(decision, _Skip):
        if name == "expire-changelogs" and not decision.reason:
            _changelog_step(ctx, step)
            return
        step.status, step.reason = "skipped", decision.reason
        return
    step.reason = decision.reason
    outcome = run(
        decision.op,
        ctx.table,
        executor=ctx.executor,
        progress=ctx.progress,
        request=RunRequest(dry_run=ctx.config.dry_run, record=ctx.record),
        clock=FixedClock(ctx.config.now_ms),
    )
    step.report = outcome.report
    step.pending_journals = outcome.pending_journals
    if isinstance(outcome.plan, AutoTagPlan):
        step.plan = outcome.plan.plan
        step.created_tags = list(outcome.result or [])
    else:
        step.plan = outcome.plan
    if isinstance(decision.op, ExpirePartitions):
        step.commit = outcome.result
        # Partitions values-time can never judge fail the run (after the rest is dropped),
        # so a scheduled maintain cannot pass while they stay forever.
        error = None if ctx.config.dry_run else unexpirable_error(outcome.plan)
        if error is not None:
            raise error


def maintain_table(
    table: PaimonTable,
    config: MaintainConfig,
    *,
    executor: Executor,
    progress: Progress | None = None,
    warn: Callable[[str], None] | None = None,
    result: TableResult | None = None,
    record: Run | None = None,
) -> TableResult:
    """Run every step on one table; a failed step stops the ones after it. ``record`` is
    the table's run record (and quarantine) every step's changes go into; a real run holds
    the table's lease for all its steps (a table another run holds is left alone: busy)."""
    result = result or TableResult(table.location, table_name(table.location))
    ctx = _Ctx(
        table, executor, config, progress or NullProgress(), warn or logger.warning, result, record
    )
    if record is None:
        _run_steps(ctx)
        return result
    try:
        with leased(table, record, wait_ms=config.wait_lease_ms):
            _run_steps(ctx)
    except LeaseHeldError as exc:
        result.busy = exc
    return result


def _run_steps(ctx: _Ctx) -> None:
    table, result = ctx.table, ctx.result
    failed: str | None = None
    for name in STEPS:
        step = StepResult(name, "ok", "")
        result.steps.append(step)
        if failed is not None:
            step.status, step.reason = "not-run", f"{failed} failed"
            continue
        start = time.monotonic()
        try:
            _run_step(ctx, name, step)
        except PaimonError as exc:
            step.status, step.error = "failed", exc
            # Reported with the table (human, JSON and -q summary); as it happens with -v.
            logger.info("%s: %s failed: %s", table.location, name, exc.message)
        step.seconds = time.monotonic() - start
        if step.status == "ok" and step.report is not None and step.report.failed:
            step.status = "failed"
        if step.status == "failed" and not step.finished:
            failed = name
