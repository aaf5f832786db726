"""paimon maintain: what Paimon's commit-time maintenance would have done, for many tables."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

if TYPE_CHECKING:
    from core.io.fileio import FileIO
    from core.ops.maintain import MaintainConfig, StepResult, TableResult
    from core.ops.metrics import TableGauges
    from core.runtime.executors.base import Executor
    from core.runtime.progress import Progress
    from core.table.table import PaimonTable
from paimon_cli.convert import commit_json, plan_doc
from paimon_cli.engine import EngineChoice, ExecutorHolder
from paimon_cli.errors import EXIT_FAILURE, guard
from paimon_cli.output import SCHEMA_VERSION, Mode, Output, Part, bold, dim, human_bytes, red
from paimon_cli.params import (
    AllowUnsafeOpt,
    DryRunOpt,
    Engine,
    EngineOpt,
    FsOpt,
    JsonOpt,
    ParallelismOpt,
    QuarantineOpt,
    RateOpt,
    SparkConfOpt,
    SparkMasterOpt,
    SparkRemoteOpt,
    TableArg,
    TimezoneOpt,
    WarehouseOpt,
    as_usage_error,
    parse_fs_options,
)
from paimon_cli.progress import progress_for
from paimon_cli.selection import command_params
from paimon_cli.state import state_of

logger = logging.getLogger(__name__)

EPILOG = """Examples:

  paimon maintain '*.*' --warehouse s3://lake/wh --metrics-file /var/lib/node_exporter/paimon.prom

  paimon maintain 'db.*' -w /wh --orphans --max-duration 50m --parallel-tables 4

  paimon maintain /wh/db.db/orders --dry-run --json
"""


def maintain(
    ctx: typer.Context,
    table: TableArg,
    orphans: Annotated[
        bool,
        typer.Option(
            "--orphans", help="Also delete orphan files, last (never after a failed step)."
        ),
    ] = False,
    orphans_older_than: Annotated[
        str | None,
        typer.Option(
            "--orphans-older-than",
            help="Orphan cut-off with --orphans: a duration (3 d), epoch millis, ISO-8601 or "
            "'YYYY-MM-DD HH:MM:SS' local time (default: 1 day ago; at least 1 hour ago).",
            show_default=False,
        ),
    ] = None,
    metrics_file: Annotated[
        Path | None,
        typer.Option(
            "--metrics-file",
            help="Write Prometheus metrics here (text format, replaced atomically; tables "
            "not run this time keep their previous values), e.g. for node_exporter's "
            "textfile collector. Not with --dry-run.",
            show_default=False,
            dir_okay=False,
        ),
    ] = None,
    max_duration: Annotated[
        str | None,
        typer.Option(
            "--max-duration",
            help="Start no new table after this long (e.g. 50m); the tables left are reported "
            "as skipped, so cron runs never pile up (default: no limit).",
            show_default=False,
        ),
    ] = None,
    parallel_tables: Annotated[
        int,
        typer.Option("--parallel-tables", min=1, max=64, help="Tables maintained at once."),
    ] = 1,
    allow_unsafe_commit: AllowUnsafeOpt = False,
    dry_run: DryRunOpt = False,
    quarantine: QuarantineOpt = False,
    json_out: JsonOpt = False,
    warehouse: WarehouseOpt = None,
    fs_option: FsOpt = None,
    max_rps: RateOpt = None,
    parallelism: ParallelismOpt = None,
    engine: EngineOpt = Engine.local,
    spark_master: SparkMasterOpt = None,
    spark_remote: SparkRemoteOpt = None,
    spark_conf: SparkConfOpt = None,
    timezone: TimezoneOpt = None,
) -> None:
    """Do what Paimon's commit-time maintenance would have, from each table's own options."""
    from core.format.options import parse_duration_ms
    from core.io.fileio import FileIO
    from core.ops.maintain import MaintainConfig
    from core.ops.orphan_files import validate_cutoff
    from core.runtime.clock import SystemClock
    from core.runtime.timeparse import parse_instant, resolve_zone
    from core.table.warehouse import resolve_tables

    state = state_of(ctx)
    zone = as_usage_error(lambda: resolve_zone(timezone), "--timezone")
    now = SystemClock().now_ms()
    cutoff = None
    if orphans_older_than is not None:
        if not orphans:
            raise typer.BadParameter("needs --orphans", param_hint="--orphans-older-than")
        cutoff = as_usage_error(
            lambda: parse_instant(orphans_older_than, now_ms=now, zone=zone),
            "--orphans-older-than",
        )
        as_usage_error(
            lambda: validate_cutoff(cutoff, now, allow_recent=False), "--orphans-older-than"
        )
    budget_s = None
    if max_duration is not None:
        budget_s = as_usage_error(lambda: parse_duration_ms(max_duration), "--max-duration") / 1000
    if metrics_file is not None and dry_run:
        raise typer.BadParameter(
            "a dry run maintains nothing, so it writes no metrics", param_hint="--metrics-file"
        )
    out = Output(Mode.of(json_out, False), no_color=state.no_color)
    holder = ExecutorHolder(
        EngineChoice.of(engine, parallelism, spark_master, spark_remote, spark_conf)
    )
    fileio = FileIO(parse_fs_options(fs_option), max_requests_per_second=max_rps)
    base = MaintainConfig(
        now_ms=now,
        zone=zone,
        dry_run=dry_run,
        orphans=orphans,
        orphans_older_than_ms=cutoff,
        allow_unsafe_commit=allow_unsafe_commit,
    )
    try:
        with guard(as_json=json_out, debug=state.debug):
            locations = resolve_tables(table, warehouse, fileio)
            runner = _Runner(fileio, holder, base, out, parallel_tables == 1)
            # Worker threads cannot see the command line: take its options here.
            runner.params = None if dry_run else command_params()
            runner.gauges = {} if metrics_file is not None else None
            results, skipped = runner.run_all(locations, parallel_tables, budget_s)
    finally:
        holder.close()
    if json_out:
        out.json(_document(results, skipped, dry_run, runner.run_ids))
    else:
        _render(results, skipped, out, dry_run)
    if metrics_file is not None:
        with guard(as_json=json_out, debug=state.debug):
            _write_metrics(metrics_file, results, runner.gauges or {})
    if any(r.failed for r in results):
        raise typer.Exit(EXIT_FAILURE)


class _Runner:
    """Opens and maintains tables; one failure never stops the others."""

    def __init__(
        self,
        fileio: FileIO,
        holder: ExecutorHolder,
        base: MaintainConfig,
        out: Output,
        show_progress: bool,
    ) -> None:
        self.fileio = fileio
        self.holder = holder
        self.base = base
        self.out = out
        self.show_progress = show_progress
        # location -> table gauges after maintenance, when metrics are wanted
        self.gauges: dict[str, TableGauges] | None = None
        # options of a real run (each table then gets a run record), None for a dry run
        self.params: dict[str, Any] | None = None
        self.run_ids: dict[str, str] = {}

    def one(self, location: str) -> TableResult:
        from dataclasses import replace

        from core.errors import PaimonError
        from core.ops.maintain import TableResult, table_name
        from core.runtime.clock import SystemClock
        from core.runtime.progress import NullProgress
        from core.table.table import open_table

        result = TableResult(location, table_name(location), started_ms=SystemClock().now_ms())
        start = time.monotonic()
        try:
            executor: Executor = self.holder.get()
            table = open_table(location, fileio=self.fileio)
            # Each table is judged at its own start, as a single command run then would be.
            config = replace(self.base, now_ms=result.started_ms)
            progress = progress_for(self.out) if self.show_progress else NullProgress()
            self._maintain(table, config, executor, progress, result)
            gauges = _gauges(table, executor, config) if self.gauges is not None else None
            if self.gauges is not None and gauges is not None:
                self.gauges[location] = gauges
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
        from core.ops.maintain import maintain_table
        from core.runtime.runs import start_run, write_record

        record = None
        if self.params is not None:
            quarantine = bool(self.params.get("quarantine"))
            record = start_run("maintain", self.params, quarantine=quarantine)
        maintain_table(
            table,
            config,
            executor=executor,
            progress=progress,
            warn=self.out.warn,
            result=result,
            record=record,
        )
        if record is None:
            return
        status = "partial" if result.failed else "ok"
        write_record(table.fileio, table.location, record, branch=table.branch, status=status)
        self.run_ids[table.location] = record.id

    def run_all(
        self, locations: list[str], parallel: int, budget_s: float | None
    ) -> tuple[list[TableResult], list[str]]:
        """Maintain every table; after ``budget_s`` no new table starts (returned as skipped)."""
        start = time.monotonic()

        def within_budget() -> bool:
            return budget_s is None or time.monotonic() - start < budget_s

        def guarded(location: str) -> TableResult | None:
            return self.one(location) if within_budget() else None

        mapper: Callable[..., Any] = map
        pool = ThreadPoolExecutor(parallel) if parallel > 1 else None
        if pool is not None:
            mapper = pool.map
        try:
            outcomes = list(mapper(guarded, locations))
        finally:
            if pool is not None:
                pool.shutdown()
        results = [r for r in outcomes if r is not None]
        skipped = [loc for loc, r in zip(locations, outcomes, strict=True) if r is None]
        return results, skipped


def _gauges(table: PaimonTable, executor: Executor, config: MaintainConfig) -> TableGauges | None:
    """The table gauges after maintenance (storage is not listed: no total bytes); None
    when the table cannot be read (its failure is reported by its steps)."""
    from core.errors import PaimonError
    from core.ops.inspect import summarize
    from core.ops.metrics import table_gauges
    from core.runtime.clock import SystemClock

    now = SystemClock().now_ms()
    try:
        summary = summarize(table, now_ms=now, executor=executor, zone=config.zone, storage=False)
    except PaimonError as exc:
        logger.info("%s: no table gauges: %s", table.location, exc.message)
        return None
    return table_gauges(summary, now_ms=now)


def _write_metrics(path: Path, results: list[TableResult], gauges: dict[str, TableGauges]) -> None:
    from core.errors import StorageError
    from core.ops.metrics import maintenance_samples, write_metrics
    from core.runtime.clock import SystemClock

    finished = SystemClock().now_ms()
    samples = []
    for r in results:
        samples += maintenance_samples(r, finished_ms=finished)
        if r.location in gauges:
            samples += gauges[r.location].samples(r.name)
    try:
        write_metrics(str(path), samples)
    except OSError as exc:
        raise StorageError(f"cannot write the metrics file {path}: {exc}") from None


# -- documents -------------------------------------------------------------------------------
def step_document(step: StepResult, location: str, dry_run: bool) -> dict[str, Any] | None:
    """The single command's JSON document for what this step planned and did."""
    if step.plan is None:
        return None
    plan = step.plan
    if step.name == "expire-partitions":
        c = step.commit
        report = None
        if c is not None and c.snapshot is not None:
            files = len(c.changes.entries) if c.changes else 0
            report = commit_json(c.snapshot, c.attempts, c.notes, files_marked_delete=files)
        body = plan_doc(dry_run, plan, report)
    elif step.name == "expire-snapshots":
        body = plan_doc(
            dry_run,
            plan,
            step.report.to_json() if step.report else None,
            unfinished_journals=step.pending_journals,
        )
    else:
        report = step.report.to_json() if step.report else None
        if report is None and not dry_run and step.status == "ok":
            report = {"status": "ok"}
        if step.name == "auto-tags":
            body = plan_doc(dry_run, plan, report, created=step.created_tags)
        else:
            body = plan_doc(dry_run, plan, report)
    return {"command": plan.command, "schema_version": SCHEMA_VERSION, "table": location, **body}


def _error(exc: Any) -> dict[str, Any] | None:
    return None if exc is None else {"kind": exc.kind, "message": exc.message}


def _document(
    results: list[TableResult], skipped: list[str], dry_run: bool, run_ids: dict[str, str]
) -> dict[str, Any]:
    tables = []
    for r in results:
        extra = {"run_id": run_ids[r.location]} if r.location in run_ids else {}
        tables.append(
            {
                **extra,
                "table": r.location,
                "name": r.name,
                "status": "failed" if r.failed else "ok",
                "seconds": round(r.seconds, 3),
                "error": _error(r.error),
                "totals": _totals(r, dry_run),
                "steps": [
                    {
                        "step": s.name,
                        "status": s.status,
                        "reason": s.reason,
                        "seconds": round(s.seconds, 3),
                        "error": _error(s.error),
                        "document": step_document(s, r.location, dry_run),
                    }
                    for s in r.steps
                ],
            }
        )
    return {
        "command": "maintain",
        "schema_version": SCHEMA_VERSION,
        "dry_run": dry_run,
        "tables": tables,
        "skipped": [{"table": loc, "reason": "--max-duration reached"} for loc in skipped],
        "summary": {
            "tables": len(results) + len(skipped),
            "maintained": sum(not r.failed for r in results),
            "failed": sum(r.failed for r in results),
            "skipped": len(skipped),
        },
    }


def _totals(r: TableResult, dry_run: bool) -> dict[str, int]:
    """What each table's run expired and deleted (dry run: would have)."""
    files, size = r.files_deleted, r.bytes_deleted
    if dry_run:
        planned = [s.planned_totals() for s in r.steps]
        files, size = sum(f for f, _ in planned), sum(b for _, b in planned)
    return {
        "steps_run": sum(s.ran for s in r.steps),
        "tags_created": r.count("auto-tags", "tags"),
        "tags_expired": r.count("expire-tags", "tags"),
        "partitions_expired": r.count("expire-partitions", "partitions"),
        "consumers_expired": len(
            [c for c in _planned(r, "expire-consumers", "consumers") if c["expired"]]
        ),
        "snapshots_expired": r.count("expire-snapshots", "snapshots"),
        "changelogs_expired": r.count("expire-changelogs", "changelogs"),
        "files_deleted": files,
        "bytes_deleted": size,
    }


def _planned(r: TableResult, step: str, key: str) -> list[Any]:
    found = r.step(step)
    return [] if found is None or not found.ran else found.planned(key)


# -- human output ----------------------------------------------------------------------------
def _step_line(s: StepResult) -> list[Part]:
    if s.status in ("skipped", "not-run"):
        return [f"    {s.name:<20} {s.status:<8} {s.reason}"]
    if s.status == "failed":
        message = s.error.message if s.error is not None else "a phase failed (see --json)"
        return [f"    {s.name:<20} ", red("failed"), f"   {message}"]
    what = "nothing to do"
    if s.changelogs:
        what = f"changelogs {s.changelogs[0]}..{s.changelogs[-1]} ({len(s.changelogs)})"
    if s.plan is not None and not s.plan.empty:
        totals = s.plan.totals()
        what = f"{totals['files']} files, {human_bytes(totals['bytes'])}"
        d = s.plan.details
        if s.name == "expire-snapshots" and d.get("snapshots"):
            snaps = d["snapshots"]
            what = f"snapshots {snaps[0]}..{snaps[-1]} ({len(snaps)}), " + what
        for key in ("tags", "partitions"):
            if s.name != "expire-snapshots" and d.get(key):
                what = f"{len(d[key])} {key}, " + what
    return [f"    {s.name:<20} ran      {what} ", dim(f"({s.reason})")]


def _render(results: list[TableResult], skipped: list[str], out: Output, dry_run: bool) -> None:
    title = "maintain" + (" (dry run: nothing changed)" if dry_run else "")
    out.line(bold(title))
    for r in results:
        if dry_run or r.failed:
            out.line(f"  {r.name}")
            if r.error is not None:
                out.line("    ", red("failed"), f": {r.error.message}")
            for s in r.steps:
                out.line(*_step_line(s))
    verb = "would be " if dry_run else ""
    rows = []
    for r in results:
        t = _totals(r, dry_run)
        rows.append(
            [
                r.name,
                t["steps_run"],
                t["snapshots_expired"],
                t["partitions_expired"],
                t["tags_expired"],
                t["changelogs_expired"],
                t["files_deleted"],
                human_bytes(t["bytes_deleted"]),
                f"{r.seconds:.2f}",
                red("failed") if r.failed else "ok",
            ]
        )
    rows += [[loc, 0, 0, 0, 0, 0, 0, "-", "-", "skipped"] for loc in skipped]
    out.table(
        None,
        [
            "table",
            "steps run",
            "snapshots",
            "partitions",
            "tags",
            "changelogs",
            "files deleted",
            "bytes deleted",
            "seconds",
            "status",
        ],
        rows,
    )
    failed = sum(r.failed for r in results)
    out.line(
        f"{len(results) + len(skipped)} tables: {len(results) - failed} {verb}maintained, "
        f"{failed} failed"
        + (f", {len(skipped)} skipped (--max-duration reached)" if skipped else "")
    )


def register(app: typer.Typer) -> None:
    app.command("maintain", epilog=EPILOG)(maintain)
