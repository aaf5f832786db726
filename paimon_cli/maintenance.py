"""Maintaining many tables: each in isolation (one failure never stops the others), at
most ``--parallel-tables`` at once, no new table after ``--max-duration``; one run record
per table; Prometheus gauges after maintenance (``--metrics-file``)."""

from __future__ import annotations

import datetime as dt
import logging
import time
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

if TYPE_CHECKING:
    from core.catalog.catalog import Catalog, TableRef
    from core.io.fileio import FileIO
    from core.ops.maintain.maintain import MaintainConfig, TableResult
    from core.ops.maintain.metrics import TableGauges
    from core.runtime.executors.base import Executor
    from core.runtime.lease import LeaseHeldError
    from core.runtime.progress import Progress
    from core.table.table import PaimonTable
    from paimon_cli.shared import Common
from core.runtime.wording import plural
from paimon_cli.engine import ExecutorHolder
from paimon_cli.errors import EXIT_DAMAGED, EXIT_FAILURE, guard
from paimon_cli.logs import labelled, say_preface, set_preface
from paimon_cli.output import Mode, Output, human_time
from paimon_cli.progress import progress_for
from paimon_cli.render.maintain import BUDGET_REASON

logger = logging.getLogger(__name__)


@dataclass(eq=False)  # a stateful worker: compared by identity
class Runner:
    """Opens and maintains tables; one failure never stops the others."""

    catalog: Catalog
    holder: ExecutorHolder
    base: MaintainConfig
    out: Output
    show_progress: bool
    #: location -> table gauges after maintenance, when metrics are wanted
    gauges: dict[str, TableGauges] | None = None
    #: options of a real run (each table then gets a run record), None for a dry run
    params: Mapping[str, Any] | None = None
    #: the tables whose run record was written (a real run's, not busy)
    recorded: set[str] = field(default_factory=set)
    #: the run's one id: every table's run record (and quarantine) carries it
    run_id: str | None = None

    def one(self, ref: TableRef) -> TableResult:
        from dataclasses import replace

        from core.errors import PaimonError, RunInterruptedError
        from core.ops.maintain.maintain import TableResult, table_name
        from core.runtime.clock import SystemClock
        from core.runtime.progress import NullProgress

        location = ref.location
        name = ref.name if ref.identifier is not None else table_name(location)
        result = TableResult(location, name, started_ms=SystemClock().now_ms())
        start = time.monotonic()
        try:
            executor: Executor = self.holder.get()
            table = self.catalog.load_table(ref, dynamic_options=None)
            # Each table is judged at its own start, as a single command run then would be.
            config = replace(self.base, now_ms=result.started_ms)
            progress = progress_for(self.out) if self.show_progress else NullProgress()
            self._maintain(table, config, executor, progress, result)
            gauges = _gauges(table, executor, config) if self.gauges is not None else None
            if self.gauges is not None and gauges is not None:
                self.gauges[location] = gauges
        except RunInterruptedError:
            raise  # stops the whole run (guard: exit 130 or 143)
        except PaimonError as exc:
            result.error = exc
        result.seconds = time.monotonic() - start
        return result

    def _maintain(
        self,
        table: PaimonTable,
        config: MaintainConfig,
        executor: Executor,
        progress: Progress,
        result: TableResult,
    ) -> None:
        """One table's steps inside its run record (and quarantine, with --quarantine)."""
        from core.errors import RunInterruptedError
        from core.ops.maintain.maintain import maintain_table
        from core.runtime.runs import record_run, start_run

        record = None
        if self.params is not None:
            quarantine = bool(self.params.get("quarantine"))
            record = start_run("maintain", self.params, quarantine=quarantine, run_id=self.run_id)
        try:
            maintain_table(
                table,
                config,
                executor=executor,
                progress=progress,
                warn=self._warn,
                result=result,
                record=record,
            )
        except RunInterruptedError as exc:
            if record is not None:  # as a single command's interrupted run
                record_run(table, record, status="interrupted", error=exc.message)
            raise
        if record is None or result.busy is not None:
            return
        status = "partial" if result.failed else "ok"
        record_run(table, record, status=status)
        self.recorded.add(table.location)

    def _warn(self, text: str) -> None:
        """A step's warning: after the run's first line, naming the table and step."""
        say_preface()
        self.out.warn(labelled(text))

    def run_all(
        self, refs: list[TableRef], parallel: int, budget_s: float | None
    ) -> tuple[list[TableResult], list[tuple[str, str]]]:
        """Maintain every table; after ``budget_s`` no new table starts, and a table another
        run holds the lease of is left alone: both are returned as skipped, with the reason.
        With a budget the tables start oldest-maintained first (``rotation``); results and
        skipped tables come back in the order of ``refs``."""
        start = time.monotonic()
        order = rotation(self.catalog.fileio, refs) if budget_s is not None else refs

        def within_budget() -> bool:
            return budget_s is None or time.monotonic() - start < budget_s

        def guarded(ref: TableRef) -> TableResult | None:
            return self.one(ref) if within_budget() else None

        mapper: Callable[..., Any] = map
        pool = ThreadPoolExecutor(parallel) if parallel > 1 else None
        if pool is not None:
            mapper = pool.map
        try:
            done = dict(zip((r.location for r in order), mapper(guarded, order), strict=True))
        finally:
            if pool is not None:
                pool.shutdown()
        outcomes = [done[ref.location] for ref in refs]
        results = [r for r in outcomes if r is not None and r.busy is None]
        skipped = [
            (ref.location, BUDGET_REASON if r is None else _busy_reason(ref.location, r.busy))
            for ref, r in zip(refs, outcomes, strict=True)
            if r is None or r.busy is not None
        ]
        return results, skipped


def _busy_reason(location: str, busy: LeaseHeldError) -> str:
    # "busy: maintain (run …) holds its lease until …": the table is named beside it.
    return "busy: " + busy.message.removeprefix(f"{location} is busy: ")


def rotation(fileio: FileIO, refs: list[TableRef]) -> list[TableRef]:
    """The tables oldest-maintained first (the start of each one's newest maintain run
    record; never maintained first), so a budget too short for all of them reaches the
    ones it left out first next time instead of starving the same tail every run."""
    from core.runtime.runs import last_run_ms

    last = {ref.location: last_run_ms(fileio, ref.location, "maintain") for ref in refs}
    # sorted() is stable: ties keep the selection's (alphabetical) order.
    return sorted(refs, key=lambda ref: last[ref.location] or -1)


def _gauges(table: PaimonTable, executor: Executor, config: MaintainConfig) -> TableGauges | None:
    """The table gauges after maintenance (storage is not listed: no total bytes); None
    when the table cannot be read (its failure is reported by its steps)."""
    from core.errors import PaimonError
    from core.ops.inspection.inspect import summarize
    from core.ops.maintain.metrics import table_gauges
    from core.runtime.clock import SystemClock

    now = SystemClock().now_ms()
    try:
        summary = summarize(table, now_ms=now, executor=executor, zone=config.zone, storage=False)
    except PaimonError as exc:
        logger.info("%s: no table gauges: %s", table.location, exc.message)
        return None
    return table_gauges(summary, now_ms=now)


def write_maintenance_metrics(
    path: Path,
    results: list[TableResult],
    gauges: dict[str, TableGauges],
    skipped: list[tuple[str, str]],
) -> None:
    """Every selected table's series, skipped ones included (also when all were)."""
    from core.errors import StorageError
    from core.ops.maintain.maintain import table_name
    from core.ops.maintain.metrics import (
        maintenance_samples,
        never_samples,
        skipped_samples,
        write_metrics,
    )
    from core.runtime.clock import SystemClock

    finished = SystemClock().now_ms()
    samples = []
    for r in results:
        samples += maintenance_samples(r, finished_ms=finished)
        if r.location in gauges:
            samples += gauges[r.location].samples(r.name)
    names = [r.name for r in results]
    for location, _reason in skipped:
        names.append(table_name(location))
        samples += skipped_samples(names[-1])
    defaults = [d for name in names for d in never_samples(name)]
    try:
        write_metrics(str(path), samples, defaults)
    except OSError as exc:
        raise StorageError(f"cannot write the metrics file {path}: {exc}") from None


def first_line(run_id: str, now_ms: int, zone: dt.tzinfo, dry_run: bool) -> str:
    """``paimon maintain run 3f2a9c0b1d4e started 2026-11-21 22:10:00+01:00``."""
    dry = " (dry run)" if dry_run else ""
    return f"paimon maintain run {run_id} started {human_time(now_ms, zone)}{dry}"


def maintain_tables(
    common: Common,
    config: MaintainConfig,
    *,
    parallel_tables: int,
    budget_s: float | None,
    metrics_file: Path | None,
) -> None:
    """Maintain every table the command line selects, then report and write the metrics."""
    from core.runtime.runs import new_run_id
    from paimon_cli.render import maintain as render

    out = common.output
    holder = ExecutorHolder(common.engine)
    sel = common.selection
    run_id = new_run_id()
    # The first line on stderr, what a cron mail's later lines belong to: said at once
    # in human output; with -q or --json only ahead of anything else said there.
    set_preface(first_line(run_id, common.now_ms, config.zone, config.dry_run))
    if out.mode is Mode.HUMAN:
        say_preface()
    try:
        with guard(as_json=common.json, debug=common.debug):
            catalog = sel.open_catalog()
        with guard(as_json=common.json, debug=common.debug), catalog:
            refs = catalog.resolve(sel.spec)
            logger.info("%s selected", plural(len(refs), "table"))
            runner = Runner(
                catalog,
                holder,
                config,
                out,
                show_progress=parallel_tables == 1,
                gauges={} if metrics_file is not None else None,
                params=None if config.dry_run else common.params,
                run_id=run_id,
            )
            results, skipped = runner.run_all(refs, parallel_tables, budget_s)
    except BaseException:
        set_preface(None)  # the run ends here: no later command of this process says it
        raise
    finally:
        holder.close()
    skip_lines = render.skip_lines(results, skipped)
    if (skip_lines or any(r.failed for r in results)) and out.mode is not Mode.HUMAN:
        say_preface()
    set_preface(None)
    if common.json:
        out.json(render.document(results, skipped, config.dry_run, run_id, runner.recorded))
        for line in skip_lines:  # the document has them too
            out.warn(line)
    elif out.mode is Mode.QUIET:
        render.quiet(results, skipped, out, config.dry_run, run_id, runner.recorded)
    else:
        render.render(results, skipped, out, config.dry_run)
    if metrics_file is not None:
        with guard(as_json=common.json, debug=common.debug):
            write_maintenance_metrics(metrics_file, results, runner.gauges or {}, skipped)
    # Damage a check found outranks other failures (README "Exit codes").
    if any(r.integrity_problems for r in results):
        raise typer.Exit(EXIT_DAMAGED)
    if any(r.failed for r in results):
        raise typer.Exit(EXIT_FAILURE)
