"""paimon delete-orphan-files: reclaim storage without ever touching live data."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

if TYPE_CHECKING:
    from core.runtime.plans import Plan
    from core.runtime.report import ExecutionReport
    from core.table.table import PaimonTable
from paimon_cli.convert import plan_doc
from paimon_cli.engine import EngineChoice, ExecutorHolder
from paimon_cli.output import Mode, Output, human_bytes, human_duration, human_time
from paimon_cli.params import (
    DryRunOpt,
    Engine,
    EngineOpt,
    FsOpt,
    JsonOpt,
    ParallelismOpt,
    QuarantineOpt,
    QuietOpt,
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
from paimon_cli.render import SCREEN, render_report, report_failed
from paimon_cli.selection import Selection, TableJob, run_job
from paimon_cli.state import state_of

EPILOG = """Examples:

  paimon delete-orphan-files s3://lake/wh/db.db/orders --dry-run

  paimon delete-orphan-files /wh/db.db/orders --older-than '3 d' --json

  paimon delete-orphan-files 'db.*' --warehouse /wh
"""


@dataclass(frozen=True)
class Outcome:
    plan: Plan
    report: ExecutionReport | None


def delete_orphan_files(
    ctx: typer.Context,
    table: TableArg,
    older_than: Annotated[
        str | None,
        typer.Option(
            "--older-than",
            help="Only files last modified strictly before this are candidates: "
            "a duration (3 d), epoch millis, ISO-8601 or 'YYYY-MM-DD HH:MM:SS' local time "
            "(default: 1 day ago, as Paimon). Less than 1 hour ago needs --allow-recent.",
            show_default=False,
        ),
    ] = None,
    allow_recent: Annotated[
        bool,
        typer.Option(
            "--allow-recent",
            help="Allow --older-than less than one hour ago (only when no "
            "writer can be running: their uncommitted files would look like orphans).",
        ),
    ] = False,
    external_root_is_exclusive: Annotated[
        bool,
        typer.Option(
            "--external-root-is-exclusive",
            help="Also clean the data-file.external-paths roots. Only when no other table "
            "writes there: its live files would look like orphans (skipped by default).",
        ),
    ] = False,
    dry_run: DryRunOpt = False,
    quarantine: QuarantineOpt = False,
    json_out: JsonOpt = False,
    quiet: QuietOpt = False,
    warehouse: WarehouseOpt = None,
    fs_option: FsOpt = None,
    max_rps: RateOpt = None,
    parallelism: ParallelismOpt = None,
    timezone: TimezoneOpt = None,
    engine: EngineOpt = Engine.local,
    spark_master: SparkMasterOpt = None,
    spark_remote: SparkRemoteOpt = None,
    spark_conf: SparkConfOpt = None,
    report_file: Annotated[
        Path | None,
        typer.Option(
            "--report-file",
            help="Also write every orphan as a JSON line to this file (the plan lists at "
            "most 10,000 with --engine spark).",
            show_default=False,
            dir_okay=False,
        ),
    ] = None,
) -> None:
    """Delete files no snapshot, tag, branch or changelog references (by name, as Paimon)."""
    from core.ops.orphan_files import DEFAULT_AGE_MS, RootWatcher, plan_orphan_clean
    from core.ops.orphan_files_spark import SparkOrphanClean
    from core.runtime.apply import apply, finish_journals
    from core.runtime.clock import SystemClock
    from core.runtime.executors.spark import SparkExecutor
    from core.runtime.report import ExecutionReport
    from core.runtime.timeparse import parse_instant, resolve_zone

    state = state_of(ctx)
    zone = as_usage_error(lambda: resolve_zone(timezone), "--timezone")
    now = SystemClock().now_ms()
    cutoff = now - DEFAULT_AGE_MS
    if older_than is not None:
        cutoff = as_usage_error(
            lambda: parse_instant(older_than, now_ms=now, zone=zone), "--older-than"
        )
    out = Output(Mode.of(json_out, quiet), no_color=state.no_color)
    sel = Selection(
        table, warehouse, "main", parse_fs_options(fs_option), {}, max_requests_per_second=max_rps
    )
    choice = EngineChoice.of(engine, parallelism, spark_master, spark_remote, spark_conf)
    holder = ExecutorHolder(choice)

    def run(t: PaimonTable) -> Outcome:
        progress = progress_for(out)
        executor = holder.get()
        report = None if dry_run else ExecutionReport()
        if report is not None:
            finish_journals(t, executor=executor, progress=progress, report=report)
        if isinstance(executor, SparkExecutor):
            clean = SparkOrphanClean(
                t,
                executor,
                cutoff,
                now,
                allow_recent=allow_recent,
                external_exclusive=external_root_is_exclusive,
            )
            plan = clean.plan(progress, str(report_file) if report_file else None)
            if report is not None:
                clean.apply(plan, report)
            return Outcome(plan, report)
        plan = plan_orphan_clean(
            t,
            older_than_ms=cutoff,
            now_ms=now,
            executor=executor,
            allow_recent=allow_recent,
            progress=progress,
            external_exclusive=external_root_is_exclusive,
        )
        if report is not None:
            watcher = RootWatcher(t, plan, executor)
            apply(
                t,
                plan,
                recheck=lambda _t, p: p,
                executor=executor,
                progress=progress,
                report=report,
                journal=False,
                before_phase=watcher.filter,
            )
        if report_file is not None:
            _write_report(report_file, plan)
        return Outcome(plan, report)

    job = TableJob(
        "delete-orphan-files",
        run,
        lambda o: plan_doc(dry_run, o.plan, o.report.to_json() if o.report else None),
        lambda o, output: _render(o, output, zone, dry_run),
        failed=report_failed,
    )
    try:
        run_job(sel, job, out, debug=state.debug)
    finally:
        holder.close()


def _write_report(path: Path, plan: Plan) -> None:
    with path.open("w", encoding="utf-8") as fh:
        for orphan in plan.details["orphans"]:
            fh.write(json.dumps(dict(orphan)) + "\n")


def _render(o: Outcome, out: Output, zone: Any, dry_run: bool) -> None:
    d = o.plan.details
    orphans: list[Mapping[str, Any]] = d["orphans"]
    if out.mode is Mode.QUIET:
        if dry_run:
            for orphan in orphans:
                out.plain(orphan["path"])
        return
    title = "delete-orphan-files" + (" (dry run)" if dry_run else "")
    out.line(f"[bold]{title}[/bold] {o.plan.table}")
    out.line(
        f"  files older than {human_time(d['older_than_ms'], zone)}; "
        f"{d['used_names']} names in use by {len(d['branches'])} branch(es)"
    )
    for ext in d.get("external_roots_skipped") or []:
        out.line(
            f"  external root {ext} not cleaned: another table may write there "
            "(--external-root-is-exclusive cleans it)"
        )
    # Each listed orphan is one delete action whose kind is its directory kind.
    by_kind: dict[str, dict[str, int]] = o.plan.totals()["by_kind"]
    if not orphans:
        out.line("  no orphan files")
    else:
        out.line(f"  {d['orphan_count']} orphan files, {human_bytes(d['orphan_bytes'])}")
        if d["truncated"]:
            out.line(f"  (the plan lists the first {len(orphans)}; --report-file writes all)")
        out.table(
            "sample" if d["truncated"] else None,
            ["directory kind", "files", "bytes"],
            [(k, v["files"], human_bytes(v["bytes"])) for k, v in sorted(by_kind.items())],
        )
        out.table(
            None,
            ["size", "age", "kind", "path"],
            (
                [
                    human_bytes(x["size"]),
                    _age(x["age_ms"]),
                    x["dir_kind"],
                    out.rel(x["path"], o.plan.table),
                ]
                for x in orphans
            ),
            limit=SCREEN,
            total=len(orphans),
        )
    if d["empty_directories"]:
        out.line(f"  {len(d['empty_directories'])} empty directories")
    if o.report is not None:
        render_report(o.report, out)


def _age(ms: int) -> str:
    return human_duration(ms - ms % 60_000) if ms >= 60_000 else human_duration(ms - ms % 1000)


def register(app: typer.Typer) -> None:
    app.command("delete-orphan-files", epilog=EPILOG)(delete_orphan_files)
