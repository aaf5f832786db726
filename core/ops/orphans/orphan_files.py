"""plan_orphan_clean(): Paimon's OrphanFilesClean, as a plan, with the safety of DECISIONS D3.

Used names are built first from every root (snapshot, tag, long-lived changelog) of every
branch, matching by file name as Paimon does; then Paimon-shaped directories are listed
level by level (streamed, in parallel) and old files whose name is unused become orphans.
Right before each deletion batch the roots are re-read and anything new joins the used set.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from operator import attrgetter
from typing import ClassVar

from core.errors import InvalidOptionError, SafetyRefusalError
from core.io.fileio import parent
from core.ops.details.orphans import OrphanDetails
from core.ops.orphans.orphan_inventory import (
    Inventory,
    InventoryRecheck,
    check_inventory_age,
    read_inventory,
    scan_inventory,
)
from core.ops.orphans.orphan_listing import (
    CLOCK_TOLERANCE_MS,
    OrphanSearch,
    check_manifest_listing,
    latest_manifest_lists,
    scan_for_orphans,
    skipped_external_roots,
)
from core.ops.orphans.orphan_roots import (
    RootsSeen,
    check_used_set,
    collect_roots,
    collect_used,
    used_names,
    views_of,
)
from core.ops.orphans.orphan_sets import LazySpill, Orphan, OrphanSink
from core.runtime.details import Record
from core.runtime.executors.base import Executor
from core.runtime.lease import local_clock
from core.runtime.operation import Deletion, Env
from core.runtime.plans import FileAction, LazyPhases, Phase, Plan, Requirements
from core.runtime.progress import NullProgress, Progress
from core.runtime.spill import Spilled
from core.runtime.timeparse import format_duration, format_utc, iso_utc
from core.table.table import PaimonTable

logger = logging.getLogger(__name__)


OrphanPlan = Plan[OrphanDetails]
COMMAND = "delete-orphan-files"
DEFAULT_AGE_MS = 86_400_000  # Paimon's default older_than: now - 1 day
RECENT_FLOOR_MS = 3_600_000  # newer cut-offs need --allow-recent (D3)
BATCH = 1000  # deletions per phase; roots are re-read between phases (RECHECK_S)
RECHECK_S = 1.0  # re-read roots before a batch once this long has passed since the last read


def empty_dir_actions(
    table: PaimonTable, deleted_parents: Iterable[str], empty_dirs: Iterable[str]
) -> list[FileAction]:
    """Bucket dirs of deleted files, then their partition parents; never the table root."""
    depth = len(table.schema.partition_keys)
    roots = {table.location, table.paths.data_root, *table.paths.external_roots}
    levels: dict[int, dict[str, None]] = {}
    starts = [d for d in deleted_parents if "bucket-" in d.rpartition("/")[2]] + list(empty_dirs)
    for start in starts:
        current = start
        for step in range(depth + 1):
            if current in roots or not table.paths.is_inside_table(current):
                break
            levels.setdefault(step, {})[current] = None
            current = parent(current)
    actions: list[FileAction] = []
    for step in sorted(levels):
        actions += [
            FileAction("rmdir", d, "directory", None, "emptied by orphan cleaning")
            for d in sorted(levels[step])
        ]
    return actions


def orphan_clock(table: PaimonTable, host_now_ms: int) -> int:
    """'Now' for orphan cleaning. A file's age is its LastModified against now, and an
    object store stamps LastModified with its own clock, so the store's clock decides: a
    machine whose clock is minutes off it is refused, naming both clocks (a host two days
    ahead would see a writer's uncommitted upload of a second ago as two days old). Within
    the tolerance this machine's clock is kept (the store's Date has whole seconds)."""
    store = table.fileio.store_now_ms(table.location)
    if store is None:
        return host_now_ms
    store_ms, source = store
    if abs(store_ms - host_now_ms) > CLOCK_TOLERANCE_MS:
        ahead = "ahead of" if host_now_ms > store_ms else "behind"
        raise SafetyRefusalError(
            f"this machine's clock ({format_utc(host_now_ms)}) is "
            f"{format_duration(abs(host_now_ms - store_ms))} {ahead} the store's "
            f"({format_utc(store_ms)}, from {source}): file ages would be wrong, so orphan "
            "cleaning could delete files a writer has just uploaded",
            hint="fix this machine's clock (NTP) and run again",
        )
    return host_now_ms


def check_not_in_future(future: list[Orphan], now_ms: int) -> None:
    """A candidate modified after now (beyond the tolerance) means the clock that stamps
    files and the one deciding their age disagree: no age can be trusted."""
    if not future:
        return
    newest = max(future, key=lambda o: o.mtime_ms)
    raise SafetyRefusalError(
        f"{newest.path} was last modified at {format_utc(newest.mtime_ms)}, "
        f"{format_duration(newest.mtime_ms - now_ms)} after now ({format_utc(now_ms)}); "
        f"{len(future)} candidate file(s) lie in the future: the clock of the storage and "
        "this machine's disagree, so file ages cannot be trusted",
        hint="fix the clock that is wrong (NTP) and run again",
    )


def validate_cutoff(older_than_ms: int, now_ms: int, *, allow_recent: bool) -> None:
    if older_than_ms > now_ms:
        raise InvalidOptionError(
            "--older-than must not be in the future: files being written now would be removed"
        )
    if older_than_ms > now_ms - RECENT_FLOOR_MS and not allow_recent:
        raise InvalidOptionError(
            "--older-than is less than one hour ago: files of running writers, not yet "
            "committed, could be removed",
            hint="pass --allow-recent only when no writer can be running (default: 1 day)",
        )


def build_plan(
    table: PaimonTable,
    views: list[PaimonTable],
    roots: RootsSeen,
    *,
    used_count: int,
    orphans: Sequence[Orphan],
    empty_dirs: list[str],
    older_than_ms: int,
    now_ms: int,
    allow_recent: bool,
    total: tuple[int, int] | None = None,
    external_exclusive: bool = False,
    sink: OrphanSink | None = None,
    inventory: Inventory | None = None,
) -> OrphanPlan:
    """The plan both engines produce; ``total`` (count, bytes) when ``orphans`` is a sample.
    ``sink``: what ``orphans`` (sorted, each path locked) adds up to, when they came from
    one; spilled orphans become phases read from disk a batch at a time."""
    if sink is None:
        orphans = sorted(orphans, key=attrgetter("path"))
        inside = table.paths.is_inside_table
        for o in orphans:
            if not inside(o.path):
                raise SafetyRefusalError(f"listing returned {o.path}, outside the table")
        parents: Iterable[str] = {o.path.rpartition("/")[0] for o in orphans}
        kinds: Iterable[str] = {o.kind for o in orphans}
    else:
        parents, kinds = sink.parents, sink.by_kind
    reasons = {k: f"unreferenced {k} file" for k in kinds}
    dirs = empty_dir_actions(table, parents, empty_dirs)
    dirs_phase = [Phase("empty-directories", tuple(dirs), sequential=True)] if dirs else []
    phases: Sequence[Phase]
    if isinstance(orphans, Spilled) and sink is not None:
        phases = _spilled_phases(orphans, reasons, dirs_phase, sink)
    else:
        actions = [FileAction("delete", o.path, o.kind, o.size, reasons[o.kind]) for o in orphans]
        batches = [
            Phase(f"orphan-files-{i // BATCH + 1}", tuple(actions[i : i + BATCH]))
            for i in range(0, len(actions), BATCH)
        ]
        phases = tuple(batches + dirs_phase)
    if sink is not None:
        count, size = total or (sink.count, sink.bytes)
    else:
        count, size = total or (len(orphans), sum(o.size for o in orphans))
    details = OrphanDetails(
        older_than_ms=older_than_ms,
        older_than=iso_utc(older_than_ms),
        now_ms=now_ms,
        allow_recent=allow_recent,
        used_names=used_count,
        roots=roots,
        orphans=orphans,  # rows are made on access: --json streams them
        orphan_count=count,
        orphan_bytes=size,
        truncated=count > len(orphans),
        empty_directories=tuple(sorted(empty_dirs)),
        branches=tuple(v.branch for v in views),
        external_roots_skipped=tuple(skipped_external_roots(table, external_exclusive)),
        # its files are HEADed before deletion
        inventory=None if inventory is None else inventory.summary(),
    )
    requirements = Requirements(
        latest_snapshot=table.snapshots.latest_id(),
        expire_end=None,
        tags={f"{b}/{n}": i for b, tags in roots.tags.items() for n, i in tags.items()},
        branches=tuple(v.branch for v in views if v.branch != "main"),
        consumers_min_next=None,
    )
    return Plan(
        COMMAND,
        table.location,
        table.branch,
        now_ms,
        phases,
        requirements,
        details,
    )


def _spilled_phases(
    orphans: Spilled[Orphan], reasons: dict[str, str], tail: list[Phase], sink: OrphanSink
) -> LazyPhases:
    """The batches of deletions (BATCH each) read from the spilled orphans when a phase is
    made, then ``tail``."""
    batches = -(-len(orphans) // BATCH)

    def phase(i: int) -> Phase:
        if i >= batches:
            return tail[i - batches]
        actions = tuple(
            FileAction("delete", o.path, o.kind, o.size, reasons[o.kind])
            for o in orphans[i * BATCH : (i + 1) * BATCH]
        )
        return Phase(f"orphan-files-{i + 1}", actions)

    by_kind = {k: dict(sink.by_kind[k]) for k in sorted(sink.by_kind)}
    totals = {"files": sink.count, "bytes": sink.bytes, "by_kind": by_kind}
    return LazyPhases(batches + len(tail), phase, totals)


def plan_orphan_clean(
    table: PaimonTable,
    *,
    older_than_ms: int,
    now_ms: int,
    executor: Executor,
    allow_recent: bool = False,
    progress: Progress | None = None,
    external_exclusive: bool = False,
    inventory: str | None = None,
) -> OrphanPlan:
    """Pure planner: what delete-orphan-files would remove, with age and directory kind.
    ``external_exclusive``: the external roots belong to this table alone (else skipped);
    ``inventory``: the listing comes from this inventory (``orphan_inventory``), not LIST."""
    progress = progress or NullProgress()
    now_ms = orphan_clock(table, now_ms)
    validate_cutoff(older_than_ms, now_ms, allow_recent=allow_recent)
    source = None
    if inventory is not None:
        source = read_inventory(table.fileio, inventory, table)
        check_inventory_age(source, older_than_ms, now_ms)
    views = views_of(table)
    roots = collect_roots(views)
    spill = LazySpill()  # local disk, for tables whose sets memory should not hold
    used = collect_used(views, roots, executor, progress, spill=spill)
    check_used_set(used.written, roots)
    watch = frozenset(latest_manifest_lists(table))
    search = OrphanSearch(
        table, views, used, older_than_ms, now_ms, watch, external_exclusive, spill
    )
    if source is None:
        found = scan_for_orphans(search, executor, progress)
    else:
        found = scan_inventory(search, source, executor, progress)
    check_not_in_future(found.future, now_ms)
    check_manifest_listing(table, found.watched, older_than_ms)
    return build_plan(
        table,
        views,
        roots,
        used_count=found.used_count if found.used_count is not None else used.written,
        orphans=found.orphans,
        empty_dirs=found.empty_dirs,
        older_than_ms=older_than_ms,
        now_ms=now_ms,
        allow_recent=allow_recent,
        external_exclusive=external_exclusive,
        sink=found.sink,
        inventory=source,
    )


class RootWatcher:
    """Re-reads roots right before the first batch and again before any batch that starts
    ``interval_s`` or more after the last read; names used by a new root are kept (D3).

    Per batch of 1,000 a re-read would cost as much as the deletions themselves on local
    disk; once a second bounds the overhead and keeps the window short everywhere. The
    second is measured on the lease's local clock, which counts a pause (SIGSTOP, a
    suspended host): a run that was paused re-reads before its next batch, and the lease
    fence stops a batch that a pause past a takeover cut in two (DECISIONS D13)."""

    def __init__(
        self,
        table: PaimonTable,
        plan: OrphanPlan,
        executor: Executor,
        *,
        interval_s: float = RECHECK_S,
    ) -> None:
        self.table = table
        self.executor = executor
        self.interval_s = interval_s
        self.seen = plan.details.roots
        self.protected: set[str] = set()
        self.dropped: list[str] = []
        self.rereads = 0
        self._last_read: float | None = None

    def _reread(self) -> None:
        views = views_of(self.table)
        now = collect_roots(views)
        new = used_names(views, now, self.executor, NullProgress(), only_new_since=self.seen)
        self.seen = now
        self.protected |= new
        self.rereads += 1
        self._last_read = local_clock()

    def filter(self, phase: Phase) -> Phase:
        if phase.name == "empty-directories":
            return phase
        if self._last_read is None or local_clock() - self._last_read >= self.interval_s:
            self._reread()
        if not self.protected:
            return phase
        kept = []
        for action in phase.actions:
            if action.path.rpartition("/")[2] in self.protected:
                self.dropped.append(action.path)
            else:
                kept.append(action)
        return replace(phase, actions=tuple(kept))


@dataclass(frozen=True, slots=True)
class OrphanRequest:
    """What delete-orphan-files was asked for, on either engine."""

    older_than_ms: int  # candidates were last modified strictly before this instant
    allow_recent: bool = False  # --older-than less than an hour ago
    external_exclusive: bool = False  # also clean the data-file.external-paths roots
    report_file: str | None = None  # every orphan as a JSON line
    inventory: str | None = None  # the listing from this inventory (orphan_inventory)


def write_orphan_report(path: str, plan: OrphanPlan) -> None:
    """Every orphan of the plan as one JSON line (``--report-file``)."""
    import json

    with open(path, "w", encoding="utf-8") as fh:
        for row in plan.details.rows():
            fh.write(json.dumps(dict(row)) + "\n")


@dataclass(frozen=True)
class LocalOrphanFiles(Deletion[OrphanDetails]):
    """Paimon's OrphanFilesClean on this machine's thread pool. No journal: an orphan that
    survives an interruption is found again; roots are re-read before the batches."""

    command: ClassVar[str] = COMMAND
    details_type: ClassVar[type[Record]] = OrphanDetails
    quarantinable: ClassVar[bool] = True

    request: OrphanRequest

    def plan(self, table: PaimonTable, env: Env) -> OrphanPlan:
        plan = plan_orphan_clean(
            table,
            older_than_ms=self.request.older_than_ms,
            now_ms=env.now_ms,
            executor=env.executor,
            allow_recent=self.request.allow_recent,
            progress=env.progress,
            external_exclusive=self.request.external_exclusive,
            inventory=self.request.inventory,
        )
        if self.request.report_file is not None:
            write_orphan_report(self.request.report_file, plan)
        return plan

    def before_phase(
        self, table: PaimonTable, plan: OrphanPlan, env: Env
    ) -> Callable[[Phase], Phase]:
        watcher = RootWatcher(table, plan, env.executor).filter
        if plan.details.inventory is None:
            return watcher
        heads = InventoryRecheck(table, plan.details.older_than_ms, env.executor)
        return lambda phase: watcher(heads(phase))
