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

from core.errors import PaimonError, StalePlanError
from core.format.options import parse_bool
from core.ops.auto_tags import apply_auto_tags, creation_mode, plan_auto_tags
from core.ops.consumer_expire import plan_consumer_expire
from core.ops.consumer_expire import recheck as consumer_recheck
from core.ops.expire_partitions import (
    PartitionExpireFlags,
    apply_partition_expire,
    plan_partition_expire,
)
from core.ops.expire_snapshots import ExpireFlags, apply_expiry, plan_expire_snapshots
from core.ops.orphan_files import DEFAULT_AGE_MS, RootWatcher, plan_orphan_clean
from core.ops.orphan_files_spark import SparkOrphanClean
from core.ops.tags import (
    expired_tag_names,
    filter_for_resume,
    plan_delete_tags,
    select_expired_tags,
)
from core.retention.expire_range import expire_config
from core.runtime.apply import apply, finish_journals
from core.runtime.clock import SystemClock
from core.runtime.executors.base import Executor
from core.runtime.executors.spark import SparkExecutor
from core.runtime.journal import unfinished_journals
from core.runtime.plans import Plan
from core.runtime.progress import NullProgress, Progress
from core.runtime.report import ExecutionReport
from core.runtime.timeparse import local_datetime
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
    now_ms: int
    zone: dt.tzinfo
    dry_run: bool = False
    orphans: bool = False
    orphans_older_than_ms: int | None = None  # None: Paimon's default, one day ago
    allow_unsafe_commit: bool = False


@dataclass(slots=True)
class StepResult:
    """One step of one table: ran (ok / failed), skipped with a reason, or not reached."""

    name: str
    status: str  # ok | failed | skipped | not-run
    reason: str
    plan: Plan | None = None
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
        if found is None or not found.ran or found.status == "failed":
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


def _apply_deletion(ctx: _Ctx, plan: Plan, recheck: Callable[[PaimonTable, Plan], Plan]) -> Any:

    report = ExecutionReport()
    finish_journals(ctx.table, executor=ctx.executor, progress=ctx.progress, report=report)
    return apply(
        ctx.table,
        plan,
        recheck=recheck,
        executor=ctx.executor,
        progress=ctx.progress,
        report=report,
    )


# -- steps -----------------------------------------------------------------------------------
def _auto_tags(ctx: _Ctx, step: StepResult) -> None:

    t = ctx.table
    mode = creation_mode(t)
    if mode == "none":
        step.status, step.reason = "skipped", "tag.automatic-creation is not set"
        return
    step.reason = f"tag.automatic-creation={mode}"
    planned = plan_auto_tags(t, now_ms=ctx.config.now_ms, zone=ctx.config.zone)
    step.plan = planned.plan
    if ctx.config.dry_run or planned.plan.empty:
        return
    if planned.delete_first:  # batch mode: the tag moves, TagDeletion first (Paimon)
        doomed = plan_delete_tags(
            t,
            list(planned.delete_first),
            executor=ctx.executor,
            now_ms=ctx.config.now_ms,
            force=True,
        )
        step.report = _apply_deletion(ctx, doomed, filter_for_resume)
        if step.report is not None and step.report.failed:
            return
    step.created_tags = apply_auto_tags(t, planned.plan)


def _expire_tags(ctx: _Ctx, step: StepResult) -> None:

    t = ctx.table
    enabled = t.options.get("tag.time-expire-enabled")
    if enabled is not None and not parse_bool(enabled, "tag.time-expire-enabled"):
        step.status, step.reason = "skipped", "tag.time-expire-enabled=false"
        return
    if not t.tags.names():
        step.status, step.reason = "skipped", "the table has no tags"
        return
    step.reason = "the table has tags: tagTimeRetained and tag.num-retained-max"
    zone, now = ctx.config.zone, ctx.config.now_ms
    chosen = select_expired_tags(
        t, now_local=local_datetime(now, zone), older_than_local=None, zone=zone
    )
    reasons = expired_tag_names(chosen)
    step.plan = plan_delete_tags(
        t,
        list(reasons),
        executor=ctx.executor,
        now_ms=now,
        force=True,
        command="expire-tags",
        reasons=reasons,
    )
    if not ctx.config.dry_run and not step.plan.empty:
        step.report = _apply_deletion(ctx, step.plan, filter_for_resume)


def _expire_partitions(ctx: _Ctx, step: StepResult) -> None:

    t = ctx.table
    if t.options.get("partition.expiration-time") is None:
        step.status, step.reason = "skipped", "partition.expiration-time is not set"
        return
    if not t.schema.partition_keys:
        step.status, step.reason = "skipped", "the table is not partitioned"
        return
    step.reason = f"partition.expiration-time={t.options.get('partition.expiration-time')}"
    step.plan = plan_partition_expire(
        t, PartitionExpireFlags(), now_ms=ctx.config.now_ms, zone=ctx.config.zone, warn=ctx.warn
    )
    if not ctx.config.dry_run:
        step.commit = apply_partition_expire(
            t, step.plan, allow_unsafe=ctx.config.allow_unsafe_commit
        )


def _expire_consumers(ctx: _Ctx, step: StepResult) -> None:

    t = ctx.table
    expiration = t.options.get("consumer.expiration-time")
    if expiration is None:
        step.status, step.reason = "skipped", "consumer.expiration-time is not set"
        return
    step.reason = f"consumer.expiration-time={expiration}"
    step.plan = plan_consumer_expire(t, now_ms=ctx.config.now_ms)
    if not ctx.config.dry_run and not step.plan.empty:
        # No journal: an interrupted run leaves consumer files a rerun plans again.
        step.report = apply(
            t,
            step.plan,
            recheck=consumer_recheck,
            executor=ctx.executor,
            progress=ctx.progress,
            journal=False,
        )


def _expire_snapshots(ctx: _Ctx, step: StepResult) -> None:

    t, ex, progress = ctx.table, ctx.executor, ctx.progress
    step.reason = "always: the table's snapshot.* options, else Paimon's defaults"
    flags = ExpireFlags()
    if ctx.config.dry_run:
        step.pending_journals = len(unfinished_journals(t.fileio, t.location))
        step.plan = plan_expire_snapshots(
            t, flags, now_ms=ctx.config.now_ms, executor=ex, progress=progress
        )
        return
    report = ExecutionReport()
    finish_journals(t, executor=ex, progress=progress, report=report)
    step.report = report
    step.plan = plan_expire_snapshots(
        t, flags, now_ms=ctx.config.now_ms, executor=ex, progress=progress
    )
    try:
        apply_expiry(t, step.plan, executor=ex, progress=progress, report=report)
    except StalePlanError:
        # As expire-snapshots: the table moved between planning and acting; plan once more.
        step.plan = plan_expire_snapshots(
            t, flags, now_ms=SystemClock().now_ms(), executor=ex, progress=progress
        )
        report.notes.append("re-planned once: the table changed while planning")
        apply_expiry(t, step.plan, executor=ex, progress=progress, report=report)


def _expire_changelogs(ctx: _Ctx, step: StepResult) -> None:
    if not expire_config(ctx.table.options).changelog_decoupled:
        step.status = "skipped"
        step.reason = "changelog lifecycle not decoupled: changelog files go with their snapshots"
        return
    # On decoupled tables expire-snapshots plans changelog expiry after the snapshots, in
    # the same plan (as Paimon's commit does); this step reports that part.
    snapshots = ctx.result.step("expire-snapshots")
    plan = snapshots.plan if snapshots is not None else None
    part = plan.details.get("changelog_expiry") if plan is not None else None
    if part is None:
        step.status = "skipped"
        step.reason = "decoupled changelog lifecycle, but expire-snapshots planned no part"
        return
    step.reason = "decoupled changelog lifecycle: planned and run within expire-snapshots"
    step.changelogs = [int(i) for i in part.get("changelogs") or ()]


def _delete_orphan_files(ctx: _Ctx, step: StepResult) -> None:

    if not ctx.config.orphans:
        step.status, step.reason = "skipped", "not asked (--orphans)"
        return
    t, ex, now = ctx.table, ctx.executor, ctx.config.now_ms
    cutoff = ctx.config.orphans_older_than_ms
    cutoff = now - DEFAULT_AGE_MS if cutoff is None else cutoff
    step.reason = "--orphans"
    report = None if ctx.config.dry_run else ExecutionReport()
    if isinstance(ex, SparkExecutor):
        clean = SparkOrphanClean(t, ex, cutoff, now)
        step.plan = clean.plan(ctx.progress, None)
        if report is not None:
            clean.apply(step.plan, report)
        step.report = report
        return
    step.plan = plan_orphan_clean(
        t, older_than_ms=cutoff, now_ms=now, executor=ex, progress=ctx.progress
    )
    if report is not None:
        watcher = RootWatcher(t, step.plan, ex)
        apply(
            t,
            step.plan,
            recheck=lambda _t, p: p,
            executor=ex,
            progress=ctx.progress,
            report=report,
            journal=False,
            before_phase=watcher.filter,
        )
    step.report = report


_RUNNERS: dict[str, Callable[[_Ctx, StepResult], None]] = {
    "auto-tags": _auto_tags,
    "expire-tags": _expire_tags,
    "expire-partitions": _expire_partitions,
    "expire-consumers": _expire_consumers,
    "expire-snapshots": _expire_snapshots,
    "expire-changelogs": _expire_changelogs,
    "delete-orphan-files": _delete_orphan_files,
}


def maintain_table(
    table: PaimonTable,
    config: MaintainConfig,
    *,
    executor: Executor,
    progress: Progress | None = None,
    warn: Callable[[str], None] | None = None,
    result: TableResult | None = None,
) -> TableResult:
    """Run every step on one table; a failed step stops the ones after it."""
    result = result or TableResult(table.location, table_name(table.location))
    ctx = _Ctx(table, executor, config, progress or NullProgress(), warn or logger.warning, result)
    failed: str | None = None
    for name in STEPS:
        step = StepResult(name, "ok", "")
        result.steps.append(step)
        if failed is not None:
            step.status, step.reason = "not-run", f"{failed} failed"
            continue
        start = time.monotonic()
        try:
            _RUNNERS[name](ctx, step)
        except PaimonError as exc:
            step.status, step.error = "failed", exc
            logger.warning("%s: %s failed: %s", table.location, name, exc.message)
        step.seconds = time.monotonic() - start
        if step.status == "ok" and step.report is not None and step.report.failed:
            step.status = "failed"
        if step.status == "failed":
            failed = name
    return result
