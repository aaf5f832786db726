"""One table's maintenance, in the order of Paimon's commit-time maintenance (semantics 2.12).

Each step runs only when the table's options ask for it, and is the same planner and
executor the single command uses (same plans, journals, re-checks and results). Every
branch is maintained as Paimon maintains it when that branch is written: with the options
of its own latest schema and its own tags, consumers and snapshots, main first:

1. ``auto-tags``           automatic tag creation (``tag.automatic-creation``)
2. ``expire-tags``         tag retention (``tagTimeRetained``, ``tag.num-retained-max``)
3. ``expire-partitions``   ``partition.expiration-time``
4. ``expire-consumers``    ``consumer.expiration-time`` (before snapshots: dead readers
                           must not hold snapshots back)
5. ``expire-snapshots``    always (table options, else Paimon's defaults)
6. ``expire-changelogs``   decoupled changelog lifecycle
7. ``compact``             only when asked (``--compact``), within its byte budget
8. ``compact-manifests``   with ``--compact``, once the latest snapshot has at least
                           ``manifest.merge-min-count`` data manifests (Paimon's trigger
                           for merging them at commit; pypaimon never merges)

then, once for the whole table (every branch):

9. ``check``               the integrity check of ``inspect --check`` (read-only)
10. ``delete-orphan-files`` only when asked, last

A step that fails stops its branch's later steps, and orphan cleaning never runs after any
failed step; the check always runs (it changes nothing, and says what is broken). Every
step is reported, with why it ran or not.
"""

from __future__ import annotations

import datetime as dt
import logging
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from typing import Any

from core.compaction.config import UnsupportedTableError
from core.compaction.details import CompactDetails
from core.compaction.planner import CompactPlan
from core.errors import PaimonError, RunInterruptedError
from core.format.options import parse_bool
from core.ops.compaction.compact import Compact, CompactRequest
from core.ops.compaction.compact_manifests import CompactManifests, ManifestCompactPlan
from core.ops.details.expiry import ExpireSnapshotsDetails
from core.ops.details.partitions import PartitionExpiryDetails
from core.ops.details.tags import AutoTagsDetails, ConsumerExpiryDetails, TagDeletionDetails
from core.ops.expiry.consumer_expire import ExpireConsumers
from core.ops.expiry.expire_partitions import (
    ExpirePartitions,
    PartitionExpireFlags,
    unexpirable_error,
)
from core.ops.expiry.expire_snapshots import ExpireSnapshots
from core.ops.inspection.check import CheckReport, IntegrityError, check_table
from core.ops.lifecycle import RunRequest, leased, run
from core.ops.orphans.delete_orphan_files import delete_orphan_files
from core.ops.orphans.orphan_files import DEFAULT_AGE_MS, OrphanRequest, validate_cutoff
from core.ops.tags.auto_tags import AutoTagPlan, AutoTags, creation_mode
from core.ops.tags.tag_operations import ExpireTags
from core.retention.expire_range import expire_config
from core.runtime.clock import FixedClock
from core.runtime.executors.base import Executor
from core.runtime.lease import LeaseHeldError
from core.runtime.log_context import at
from core.runtime.operation import Operation, Outcome
from core.runtime.plans import Plan
from core.runtime.progress import NullProgress, Progress
from core.runtime.report import ExecutionReport
from core.runtime.requests import about, one_of, refuse
from core.runtime.runs import Run
from core.table.table import PaimonTable
from core.write.publication import non_avro_manifests

logger = logging.getLogger(__name__)

#: Run on every branch (main first), with that branch's own options.
BRANCH_STEPS = (
    "auto-tags",
    "expire-tags",
    "expire-partitions",
    "expire-consumers",
    "expire-snapshots",
    "expire-changelogs",
    "compact",
    "compact-manifests",
)
#: Run once per table: they cover every branch themselves.
TABLE_STEPS = ("check", "delete-orphan-files")
STEPS = BRANCH_STEPS + TABLE_STEPS
#: the check step: what it probes (metadata: manifests and schemas, not data files; off: the
#: step is skipped). The shell's --check/--no-check and --check-level make it.
CHECK_LEVELS = ("full", "metadata", "off")


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
    check: str = "full"  # one of CHECK_LEVELS
    compact: bool = False  # the compaction step (opt-in)
    compact_max_bytes: int | None = None  # input bytes one table's compaction may rewrite

    def __post_init__(self) -> None:
        one_of("check", self.check, CHECK_LEVELS, "check level")
        if self.compact_max_bytes is not None:
            if not self.compact:
                raise refuse("compact_max_bytes", "needs --compact")
            if self.compact_max_bytes <= 0:
                raise refuse("compact_max_bytes", "must be positive")
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
    branch: str = "main"  # the table-wide steps (check, delete-orphan-files) say main
    plan: Plan[Any] | None = None
    report: ExecutionReport | None = None
    commit: Any = None  # CommitResult of expire-partitions
    outcome: Outcome[Any, Any] | None = None  # compact: what its document is made of
    check: CheckReport | None = None  # the check step's report
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

    def planned(self) -> tuple[Any, ...]:
        """What the step's plan names: the snapshots, partitions or tags it expires, the
        tags it creates, the consumers it expires (nothing for the other steps)."""
        details = None if self.plan is None else self.plan.details
        if isinstance(details, ExpireSnapshotsDetails):
            return details.snapshots
        if isinstance(details, PartitionExpiryDetails):
            return details.partitions
        if isinstance(details, (TagDeletionDetails, AutoTagsDetails)):
            return details.tags
        if isinstance(details, ConsumerExpiryDetails):
            return tuple(c for c in details.consumers if c.expired)
        return ()

    @property
    def compaction(self) -> CompactDetails | None:
        """The compaction plan's details (the compact step)."""
        details = None if self.plan is None else self.plan.details
        return details if isinstance(details, CompactDetails) else None

    def compacted(self) -> tuple[int, int]:
        """(files, bytes) the compact step merged (or, dry run, would merge)."""
        found = self.compaction
        if self.status != "ok" or found is None or found.sums is None:
            return 0, 0
        return found.sums.files_before, found.sums.bytes_before

    @property
    def unexpirable_partitions(self) -> int:
        """Partitions values-time can never judge (expire-partitions)."""
        details = None if self.plan is None else self.plan.details
        return len(details.skipped) if isinstance(details, PartitionExpiryDetails) else 0


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

    def step(self, name: str, branch: str = "main") -> StepResult | None:
        return next((s for s in self.steps if s.name == name and s.branch == branch), None)

    def steps_named(self, name: str) -> list[StepResult]:
        """The step of every branch (one for the table-wide steps)."""
        return [s for s in self.steps if s.name == name]

    @property
    def files_deleted(self) -> int:
        return sum(s.files_deleted for s in self.steps)

    @property
    def bytes_deleted(self) -> int:
        return sum(s.bytes_deleted for s in self.steps)

    def count(self, step: str) -> int:
        """How many items a step expired (or, dry run, would expire) on every branch:
        ``planned``."""
        total = 0
        for found in self.steps_named(step):
            if not found.ran or (found.status == "failed" and not found.finished):
                continue
            total += len(found.changelogs if step == "expire-changelogs" else found.planned())
        return total

    @property
    def integrity_problems(self) -> int | None:
        """Problems the check step found; None when it did not run."""
        found = self.step("check")
        return None if found is None or found.check is None else len(found.check.problems)


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


@dataclass(frozen=True, slots=True)
class _Check:
    reason: str
    files: bool  # probe data, changelog and index files too (not only metadata)


_Decision = _Skip | _Run | _Check


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
        PartitionExpireFlags(), ctx.config.zone, allow_unsafe=ctx.config.allow_unsafe_commit
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


_AVRO_ONLY = "paimon-cli writes Avro manifests only"


def _compact(ctx: _Ctx) -> _Decision:
    if not ctx.config.compact:
        return _Skip("not asked (--compact)")
    fmt = non_avro_manifests(ctx.table)
    if fmt is not None:  # permanent: a refusal is a skip, the other steps run (as below)
        return _Skip(f"compact refuses this table: manifest.format={fmt}, {_AVRO_ONLY}")
    budget = ctx.config.compact_max_bytes
    if budget is not None:
        budget -= sum(s.compacted()[1] for s in ctx.result.steps_named("compact"))
        if budget <= 0:
            return _Skip("--compact-max-bytes used up by the branches before")
    limit = "" if budget is None else f", at most {budget} bytes"
    request = CompactRequest(allow_unsafe_commit=ctx.config.allow_unsafe_commit, max_bytes=budget)
    return _Run(f"--compact{limit}", Compact(request))


def _compact_manifests(ctx: _Ctx) -> _Decision:
    if not ctx.config.compact:
        return _Skip("not asked (--compact)")
    t = ctx.table
    fmt = non_avro_manifests(t)
    if fmt is not None:
        return _Skip(f"manifest.format={fmt}: {_AVRO_ONLY}")
    latest = t.snapshots.latest()
    if latest is None:
        return _Skip("the table has no snapshot")
    count = len(t.data_manifests(latest))
    least = t.options.get_int("manifest.merge-min-count") or 1
    if count < least:
        return _Skip(f"{count} data manifests, fewer than manifest.merge-min-count ({least})")
    return _Run(
        f"{count} data manifests, at least manifest.merge-min-count ({least})",
        CompactManifests(allow_unsafe_commit=ctx.config.allow_unsafe_commit),
    )


def _check(ctx: _Ctx) -> _Decision:
    level = ctx.config.check
    if level == "off":
        return _Skip("--no-check")
    if level == "metadata":
        return _Check(
            "--check-level metadata: manifest lists, manifests, index manifests, schemas", False
        )
    return _Check("every file each snapshot, tag and changelog of every branch needs", True)


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
    "compact": _compact,
    "compact-manifests": _compact_manifests,
    "check": _check,
    "delete-orphan-files": _delete_orphan_files,
}


def _changelog_step(ctx: _Ctx, step: StepResult) -> None:
    """Within expire-snapshots on decoupled tables: report its changelog part."""
    snapshots = ctx.result.step("expire-snapshots", ctx.table.branch)
    plan = snapshots.plan if snapshots is not None else None
    part = None
    if plan is not None and isinstance(plan.details, ExpireSnapshotsDetails):
        part = plan.details.changelog_expiry
    if part is None:
        step.status = "skipped"
        step.reason = "decoupled changelog lifecycle, but expire-snapshots planned no part"
        return
    step.reason = "decoupled changelog lifecycle: planned and run within expire-snapshots"
    step.changelogs = list(part.part.changelogs)


def _run_step(ctx: _Ctx, name: str, step: StepResult) -> None:
    decision = _STEPS[name](ctx)
    if isinstance(decision, _Skip):
        if name == "expire-changelogs" and not decision.reason:
            _changelog_step(ctx, step)
            return
        step.status, step.reason = "skipped", decision.reason
        return
    step.reason = decision.reason
    if isinstance(decision, _Check):
        step.check = check_table(
            ctx.table, executor=ctx.executor, progress=ctx.progress, files=decision.files
        )
        if not step.check.ok:
            raise IntegrityError(step.check)
        return
    try:
        outcome = _run_operation(ctx, decision.op)
    except UnsupportedTableError as exc:
        # --compact over a warehouse: a table compact refuses is left as it is, not failed.
        step.status, step.reason = "skipped", f"compact refuses this table: {exc.message}"
        return
    step.report = outcome.report
    step.pending_journals = outcome.pending_journals
    step.outcome = outcome
    if isinstance(outcome.plan, (AutoTagPlan, CompactPlan, ManifestCompactPlan)):
        step.plan = outcome.plan.plan
    else:
        step.plan = outcome.plan
    if isinstance(outcome.plan, AutoTagPlan):
        step.created_tags = list(outcome.result or [])
    if isinstance(decision.op, ExpirePartitions):
        step.commit = outcome.result
        # Partitions values-time can never judge fail the run (after the rest is dropped),
        # so a scheduled maintain cannot pass while they stay forever; a dry run says so
        # (and exits) as the real run will.
        error = unexpirable_error(outcome.plan)
        if error is not None:
            raise error


def _run_operation(ctx: _Ctx, op: Operation[Any, Any]) -> Outcome[Any, Any]:
    return run(
        op,
        ctx.table,
        executor=ctx.executor,
        progress=ctx.progress,
        request=RunRequest(dry_run=ctx.config.dry_run, record=ctx.record),
        clock=FixedClock(ctx.config.now_ms),
    )


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
    with at(result.name):  # log lines name the table (and, in a step, the step)
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
    failed: str | None = None  # the first step that failed, on any branch
    for branch, view, problem in _branches(ctx.table):
        stopped = _branch_steps(replace(ctx, table=view), branch, problem)
        failed = failed or stopped
    for name in TABLE_STEPS:
        step = StepResult(name, "ok", "")
        ctx.result.steps.append(step)
        if failed is not None and name != "check":  # the check changes nothing: always
            step.status, step.reason = "not-run", f"{failed} failed"
            continue
        _attempt(ctx, name, step)
        if step.status == "failed" and not step.finished:
            failed = failed or name


def _branches(table: PaimonTable) -> Iterator[tuple[str, PaimonTable, PaimonError | None]]:
    """Main, then every branch by name, each as its own view; a branch that cannot be
    opened (an incomplete branch directory) comes with why, and main's view."""
    yield "main", table, None
    for name in sorted(table.branches.branches()):
        try:
            yield name, table.for_branch(name), None
        except PaimonError as exc:
            yield name, table, exc


def _branch_steps(ctx: _Ctx, branch: str, problem: PaimonError | None) -> str | None:
    """One branch's steps; returns the step that failed (``branch b1: expire-snapshots``)."""
    where = "" if branch == "main" else f"branch {branch}: "
    failed: str | None = None
    for name in BRANCH_STEPS:
        step = StepResult(name, "ok", "", branch=branch)
        ctx.result.steps.append(step)
        if problem is not None and failed is None:
            step.status, step.error = "failed", problem  # the branch cannot be read
            failed = f"{where}{name}"
            continue
        if failed is not None:
            step.status, step.reason = "not-run", f"{failed} failed"
            continue
        _attempt(ctx, name, step)
        if step.status == "failed" and not step.finished:
            failed = f"{where}{name}"
    return failed


def step_label(table: str, step: str, branch: str = "main") -> str:
    """How log lines name a step: ``db.orders expire-snapshots``, on another branch
    ``db.orders expire-snapshots (branch b1)``."""
    return f"{table} {step}" + ("" if branch == "main" else f" (branch {branch})")


def _attempt(ctx: _Ctx, name: str, step: StepResult) -> None:
    start = time.monotonic()
    with at(step_label(ctx.result.name, name, step.branch)):
        try:
            _run_step(ctx, name, step)
        except RunInterruptedError:
            raise  # stops the whole maintain run, not this step only
        except PaimonError as exc:
            step.status, step.error = "failed", exc
            # Reported with the table (human, JSON and -q summary); as it happens with -v.
            logger.info("failed: %s", exc.message)
    step.seconds = time.monotonic() - start
    if step.status == "ok" and step.report is not None and step.report.failed:
        step.status = "failed"
