"""paimon expire-changelogs: Paimon's expire_changelogs procedure, pointers first."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

import typer

if TYPE_CHECKING:
    from core.runtime.operation import Outcome
    from core.runtime.plans import Plan
from paimon_cli.convert import plan_doc
from paimon_cli.engine import EngineChoice, ExecutorHolder
from paimon_cli.output import Mode, Output, bold, yellow
from paimon_cli.params import (
    BranchOpt,
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
from paimon_cli.render import render_plan_and_report
from paimon_cli.selection import Selection, operation_job, run_job, run_request
from paimon_cli.state import state_of

EPILOG = """Examples:

  paimon expire-changelogs /wh/db.db/orders --retain-max 100 --dry-run

  paimon expire-changelogs s3://lake/wh/db.db/orders --older-than '7 d' --retain-min 10

  paimon expire-changelogs /wh/db.db/orders --delete-all
"""


def expire_changelogs(
    ctx: typer.Context,
    table: TableArg,
    retain_max: Annotated[
        int | None,
        typer.Option(
            "--retain-max",
            help="Changelogs beyond this many snapshot ids from the latest expire "
            "(default: unlimited; table options are not consulted, as in the procedure).",
            show_default=False,
        ),
    ] = None,
    retain_min: Annotated[
        int | None,
        typer.Option(
            "--retain-min",
            help="Changelogs of the newest N snapshot ids are kept (default: 1).",
            show_default=False,
        ),
    ] = None,
    older_than: Annotated[
        str | None,
        typer.Option(
            "--older-than",
            help="Only changelogs committed before this expire: a duration (90m, 7 d), epoch "
            "millis, ISO-8601, or 'YYYY-MM-DD HH:MM:SS' in local time (default: no time "
            "bound, so only --retain-max expires anything).",
            show_default=False,
        ),
    ] = None,
    max_deletes: Annotated[
        int | None,
        typer.Option(
            "--max-deletes",
            help="At most this many changelogs per run (default: unlimited).",
            show_default=False,
        ),
    ] = None,
    delete_all: Annotated[
        bool,
        typer.Option(
            "--delete-all",
            help="Expire every long-lived changelog (all must be older than the earliest "
            "snapshot) and remove the changelog hints.",
        ),
    ] = False,
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
    """Expire long-lived changelogs (changelog/changelog-N) and the files only they use,
    as Paimon's expire_changelogs procedure does."""
    from core.ops.expire_changelogs import ExpireChangelogs
    from core.retention.changelog_range import ChangelogFlags
    from core.runtime.clock import SystemClock
    from core.runtime.timeparse import parse_instant, resolve_zone

    state = state_of(ctx)
    for name, value in (
        ("--retain-min", retain_min),
        ("--retain-max", retain_max),
        ("--max-deletes", max_deletes),
    ):
        if value is not None and value < 1:
            raise typer.BadParameter(f"must be at least 1, got {value}", param_hint=name)
    if retain_min is not None and retain_max is not None and retain_min > retain_max:
        raise typer.BadParameter(
            f"--retain-min ({retain_min}) is greater than --retain-max ({retain_max})"
        )
    if delete_all and any(v is not None for v in (retain_max, retain_min, older_than, max_deletes)):
        raise typer.BadParameter(
            "--delete-all takes no retention options", param_hint="--delete-all"
        )
    zone = as_usage_error(lambda: resolve_zone(timezone), "--timezone")
    now = SystemClock().now_ms()
    older_than_ms = None
    if older_than is not None:
        older_than_ms = as_usage_error(
            lambda: parse_instant(older_than, now_ms=now, zone=zone), "--older-than"
        )
    out = Output(Mode.of(json_out, quiet), no_color=state.no_color)
    flags = ChangelogFlags(retain_max, retain_min, older_than_ms, max_deletes, delete_all)
    sel = Selection(
        table, warehouse, branch, parse_fs_options(fs_option), {}, max_requests_per_second=max_rps
    )
    holder = ExecutorHolder(
        EngineChoice.of(engine, parallelism, spark_master, spark_remote, spark_conf)
    )

    job = operation_job(
        "expire-changelogs",
        lambda _ex: ExpireChangelogs(flags),
        holder.get,
        run_request(dry_run=dry_run),
        out,
        to_json=lambda o: plan_doc(
            dry_run,
            o.plan,
            o.report.to_json() if o.report else None,
            unfinished_journals=o.pending_journals,
        ),
        render=lambda o, output: _render(o, output, dry_run),
    )
    try:
        run_job(sel, job, out, debug=state.debug)
    finally:
        holder.close()


def _render(o: Outcome[Plan, None], out: Output, dry_run: bool) -> None:
    d: dict[str, Any] = dict(o.plan.details)
    if out.mode is Mode.QUIET:
        if dry_run:
            for phase in o.plan.phases:
                for action in phase.actions:
                    if action.op == "delete":
                        out.plain(action.path)
        return
    title = "expire-changelogs" + (" (dry run)" if dry_run else "")
    out.line(
        bold(title),
        f" {o.plan.table}" + (f" (branch {o.plan.branch})" if o.plan.branch != "main" else ""),
    )
    render_changelog_details(d, out)
    if o.pending_journals:
        out.line(
            "  ",
            yellow(f"{o.pending_journals} unfinished run(s) found: a real run finishes them first"),
        )
    render_plan_and_report(o.plan, d.get("notes") or [], o.report, out, show_actions=dry_run)


def render_changelog_details(d: dict[str, Any], out: Output) -> None:
    """The changelog expiry lines (also shown by expire-snapshots on decoupled tables)."""
    if d.get("earliest_changelog") is None:
        out.line("  no long-lived changelogs: nothing to do")
        return
    ids = d.get("changelogs") or []
    span = f"{ids[0]}..{ids[-1]}" if ids else "none"
    out.line(
        f"  changelogs {d['earliest_changelog']}..{d['latest_changelog']}: expiring {span} "
        f"({len(ids)}); stopped by {d['stopped_by']}: {d['stop_detail']}"
    )
    if d.get("kept"):
        out.line(
            f"  kept because a tag, branch or remaining changelog needs them: {len(d['kept'])}"
        )


def register(app: typer.Typer) -> None:
    app.command("expire-changelogs", epilog=EPILOG)(expire_changelogs)
