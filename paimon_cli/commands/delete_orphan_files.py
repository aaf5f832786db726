"""paimon delete-orphan-files: reclaim storage without ever touching live data."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

if TYPE_CHECKING:
    from core.runtime.operation import Outcome
    from core.runtime.plans import Plan
from paimon_cli.convert import plan_doc
from paimon_cli.engine import EngineChoice, ExecutorHolder
from paimon_cli.output import Mode, Output, bold, human_bytes, human_duration, human_time
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
from paimon_cli.render import SCREEN, render_report
from paimon_cli.selection import Selection, operation_job, run_job, run_request
from paimon_cli.state import state_of

EPILOG = """Examples:

  paimon delete-orphan-files s3://lake/wh/db.db/orders --dry-run

  paimon delete-orphan-files /wh/db.db/orders --older-than '3 d' --json

  paimon delete-orphan-files 'db.*' --warehouse /wh
"""


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
    from core.ops.delete_orphan_files import delete_orphan_files
    from core.ops.orphan_files import DEFAULT_AGE_MS, OrphanRequest
    from core.runtime.clock import SystemClock
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
    request = OrphanRequest(
        cutoff,
        allow_recent=allow_recent,
        external_exclusive=external_root_is_exclusive,
        report_file=str(report_file) if report_file else None,
    )
    job = operation_job(
        "delete-orphan-files",
        lambda ex: delete_orphan_files(request, ex),
        holder.get,
        run_request(dry_run=dry_run),
        out,
        to_json=lambda o: plan_doc(dry_run, o.plan, o.report.to_json() if o.report else None),
        render=lambda o, output: _render(o, output, zone, dry_run),
    )
    try:
        run_job(sel, job, out, debug=state.debug)
    finally:
        holder.close()


def _render(o: Outcome[Plan, None], out: Output, zone: Any, dry_run: bool) -> None:
    d = o.plan.details
    orphans: list[Mapping[str, Any]] = d["orphans"]
    if out.mode is Mode.QUIET:
        if dry_run:
            for orphan in orphans:
                out.plain(orphan["path"])
        return
    title = "delete-orphan-files" + (" (dry run)" if dry_run else "")
    out.line(bold(title), f" {o.plan.table}")
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
