"""paimon expire-snapshots: Paimon's snapshot expiry, pointers first, with a readable plan."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

if TYPE_CHECKING:
    from core.runtime.operation import Outcome
    from core.runtime.plans import Plan
from paimon_cli.convert import plan_doc
from paimon_cli.engine import EngineChoice, ExecutorHolder
from paimon_cli.output import Mode, Output, bold, human_duration, human_limit, human_time, yellow
from paimon_cli.params import (
    BranchOpt,
    DryRunOpt,
    Engine,
    EngineOpt,
    FsOpt,
    JsonOpt,
    OptionsOpt,
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
    parse_options_arg,
)
from paimon_cli.render import render_plan_and_report
from paimon_cli.selection import Selection, operation_job, run_job, run_request
from paimon_cli.state import state_of

EPILOG = """Examples:

  paimon expire-snapshots s3://lake/wh/db.db/orders --retain-max 5 --retain-min 1

  paimon expire-snapshots /wh/db.db/orders --older-than '7 d' --retain-min 3 --dry-run

  paimon expire-snapshots 'db.*' --warehouse s3://lake/wh --json
"""


def expire_snapshots(
    ctx: typer.Context,
    table: TableArg,
    retain_min: Annotated[
        int | None,
        typer.Option(
            "--retain-min",
            help="Newest snapshots always kept (default: table option "
            "snapshot.num-retained.min, else 10). Must be at least 1.",
            show_default=False,
        ),
    ] = None,
    retain_max: Annotated[
        int | None,
        typer.Option(
            "--retain-max",
            help="Snapshots beyond this count expire whatever their age (default: "
            "table option snapshot.num-retained.max, else unlimited).",
            show_default=False,
        ),
    ] = None,
    older_than: Annotated[
        str | None,
        typer.Option(
            "--older-than",
            help="Expire a snapshot once its successor is older than this: a "
            "duration (90m, 7 d), epoch millis, ISO-8601, or 'YYYY-MM-DD HH:MM:SS' in local time "
            "(default: now minus table option snapshot.time-retained, else 1 h).",
            show_default=False,
        ),
    ] = None,
    max_deletes: Annotated[
        int | None,
        typer.Option(
            "--max-deletes",
            help="At most this many snapshot ids per run (default: table option "
            "snapshot.expire.limit, else 50).",
            show_default=False,
        ),
    ] = None,
    options: OptionsOpt = None,
    plan_file: Annotated[
        Path | None,
        typer.Option(
            "--plan",
            help="Apply a plan saved from --dry-run --json (re-checked first).",
            show_default=False,
            exists=True,
            dir_okay=False,
        ),
    ] = None,
    dry_run: DryRunOpt = False,
    quarantine: QuarantineOpt = False,
    json_out: JsonOpt = False,
    quiet: QuietOpt = False,
    warehouse: WarehouseOpt = None,
    branch: BranchOpt = "main",
    fs_option: FsOpt = None,
    max_rps: RateOpt = None,
    parallelism: ParallelismOpt = None,
    engine: EngineOpt = Engine.local,
    spark_master: SparkMasterOpt = None,
    spark_remote: SparkRemoteOpt = None,
    spark_conf: SparkConfOpt = None,
    timezone: TimezoneOpt = None,
) -> None:
    """Expire old snapshots and delete the files only they used, exactly as Paimon does."""
    from core.ops.expire_snapshots import ExpireFlags, ExpireSnapshots
    from core.runtime.clock import SystemClock
    from core.runtime.timeparse import parse_instant, resolve_zone

    state = state_of(ctx)
    for name, value in (
        ("--retain-min", retain_min),
        ("--retain-max", retain_max),
        ("--max-deletes", max_deletes),
    ):
        if value is not None and value < 1:
            raise typer.BadParameter(
                f"must be at least 1, got {value}"
                + (
                    " (retain-min 0 loses the changelogs of kept snapshots in Paimon; refused)"
                    if name == "--retain-min"
                    else ""
                ),
                param_hint=name,
            )
    if retain_min is not None and retain_max is not None and retain_min > retain_max:
        raise typer.BadParameter(
            f"--retain-min ({retain_min}) is greater than --retain-max ({retain_max})"
        )
    zone = as_usage_error(lambda: resolve_zone(timezone), "--timezone")
    now = SystemClock().now_ms()
    older_than_ms = None
    if older_than is not None:
        older_than_ms = as_usage_error(
            lambda: parse_instant(older_than, now_ms=now, zone=zone), "--older-than"
        )
    out = Output(Mode.of(json_out, quiet), no_color=state.no_color)
    flags = ExpireFlags(retain_min, retain_max, older_than_ms, max_deletes)
    sel = Selection(
        table,
        warehouse,
        branch,
        parse_fs_options(fs_option),
        parse_options_arg(options),
        max_requests_per_second=max_rps,
    )
    holder = ExecutorHolder(
        EngineChoice.of(engine, parallelism, spark_master, spark_remote, spark_conf)
    )
    job = operation_job(
        "expire-snapshots",
        lambda _ex: ExpireSnapshots(flags),
        holder.get,
        run_request(dry_run=dry_run, saved_plan=_load_plan(plan_file) if plan_file else None),
        out,
        to_json=lambda o: plan_doc(
            dry_run,
            o.plan,
            o.report.to_json() if o.report else None,
            unfinished_journals=o.pending_journals,
        ),
        render=lambda o, output: _render(o, output, zone, dry_run),
    )
    try:
        run_job(sel, job, out, debug=state.debug)
    finally:
        holder.close()


def _load_plan(path: Path) -> Plan:
    from core.errors import CorruptMetadataError
    from core.runtime.plans import Plan

    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise typer.BadParameter(f"cannot read plan: {exc}", param_hint="--plan") from None
    if isinstance(data, dict) and "plan" in data:
        data = data["plan"]
    try:
        plan = Plan.from_json(data, source=str(path))
    except CorruptMetadataError as exc:
        raise typer.BadParameter(exc.message, param_hint="--plan") from None
    if plan.command != "expire-snapshots":
        raise typer.BadParameter(f"plan is for {plan.command}", param_hint="--plan")
    return plan


def _render(o: Outcome[Plan, None], out: Output, zone: Any, dry_run: bool) -> None:
    d = o.plan.details
    if out.mode is Mode.QUIET:
        if dry_run:
            for phase in o.plan.phases:
                for action in phase.actions:
                    if action.op == "delete":
                        out.plain(action.path)
        return
    cfg = d.get("config", {})
    title = "expire-snapshots" + (" (dry run)" if dry_run else "")
    out.line(
        bold(title),
        f" {o.plan.table}" + (f" (branch {o.plan.branch})" if o.plan.branch != "main" else ""),
    )
    if cfg:
        rmax = cfg["retain_max"]["value"]
        out.line(
            f"  retain-min {cfg['retain_min']['value']} ({cfg['retain_min']['source']}), "
            f"retain-max {human_limit(rmax)} "
            f"({cfg['retain_max']['source']}), max-deletes {cfg['max_deletes']['value']} "
            f"({cfg['max_deletes']['source']})"
        )
        out.line(
            f"  older than {human_time(cfg['older_than_ms'], zone)} "
            f"(time-retained {human_duration(cfg['time_retained_ms']['value'])}, "
            f"{cfg['time_retained_ms']['source']})"
        )
    earliest, latest = d.get("earliest_snapshot"), d.get("latest_snapshot")
    if earliest is None:
        out.line("  the table has no snapshots")
    else:
        snaps = d.get("snapshots") or []
        span = f"{snaps[0]}..{snaps[-1]}" if snaps else "none"
        out.line(
            f"  snapshots {earliest}..{latest}: expiring {span} ({len(snaps)}); "
            f"stopped by {d['stopped_by']}: {d['stop_detail']}"
        )
    if d.get("stale_consumers"):
        out.line(
            f"  stale consumers (past consumer.expiration-time, not blocking): "
            f"{', '.join(d['stale_consumers'])}"
        )
    if d.get("kept_by_tag"):
        tags: dict[str, int] = {}
        for k in d["kept_by_tag"]:
            tags[k["tag"]] = tags.get(k["tag"], 0) + 1
        out.line(
            "  kept because of tags: "
            + ", ".join(f"{t} ({n} files)" for t, n in sorted(tags.items()))
        )
    if d.get("kept_for_changelog"):
        out.line(f"  kept for the decoupled changelog: {d['kept_for_changelog']} files")
    if d.get("changelog_expiry") is not None:
        from paimon_cli.commands.expire_changelogs import render_changelog_details

        render_changelog_details(d["changelog_expiry"], out)
    if o.pending_journals:
        out.line(
            "  ",
            yellow(f"{o.pending_journals} unfinished run(s) found: a real run finishes them first"),
        )
    render_plan_and_report(o.plan, d.get("notes") or [], o.report, out, show_actions=dry_run)


def register(app: typer.Typer) -> None:
    app.command("expire-snapshots", epilog=EPILOG)(expire_snapshots)
