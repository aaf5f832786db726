"""paimon expire-partitions: drop expired partitions with an OVERWRITE commit, as Paimon does."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

import typer

if TYPE_CHECKING:
    from core.runtime.operation import Outcome
    from core.runtime.plans import Plan
    from core.write.commit import CommitResult
from paimon_cli.convert import commit_json, plan_doc
from paimon_cli.errors import report_error
from paimon_cli.journals import journals_json, journals_of, render_journals
from paimon_cli.output import Mode, Output, bold, human_bytes, human_wall_clock, red
from paimon_cli.params import (
    AllowUnsafeOpt,
    BranchOpt,
    DryRunOpt,
    FsOpt,
    JsonOpt,
    OptionsOpt,
    QuietOpt,
    RateOpt,
    TableArg,
    TimezoneOpt,
    WarehouseOpt,
    as_usage_error,
    parse_fs_options,
    parse_options_arg,
)
from paimon_cli.render import render_commit
from paimon_cli.selection import Selection, operation_job, run_job, run_request
from paimon_cli.state import state_of

EPILOG = """Examples:

  paimon expire-partitions /wh/db.db/events --expiration-time '30 d' --dry-run

  paimon expire-partitions db.events -w /wh --expiration-time 7d --timestamp-formatter yyyyMMdd

  paimon expire-partitions /wh/db.db/logs --expiration-time 2d --timestamp-pattern '$dt $hour:00:00'
"""


def expire_partitions(
    ctx: typer.Context,
    table: TableArg,
    expiration_time: Annotated[
        str | None,
        typer.Option(
            "--expiration-time",
            help="Partitions older than this expire, e.g. '7 d' (default: table option "
            "partition.expiration-time; one of the two is required).",
            show_default=False,
        ),
    ] = None,
    timestamp_formatter: Annotated[
        str | None,
        typer.Option(
            "--timestamp-formatter",
            help="Java DateTimeFormatter pattern for the partition time, e.g. yyyyMMdd "
            "(default: table option partition.timestamp-formatter, else 'y-M-d[ H:m:s]').",
            show_default=False,
        ),
    ] = None,
    timestamp_pattern: Annotated[
        str | None,
        typer.Option(
            "--timestamp-pattern",
            help="How partition values form the time, e.g. '$dt $hour:00:00' (default: table "
            "option partition.timestamp-pattern, else the first partition key).",
            show_default=False,
        ),
    ] = None,
    expire_strategy: Annotated[
        str | None,
        typer.Option(
            "--expire-strategy",
            help="values-time (parse the values) or update-time (newest file creation) "
            "(default: table option partition.expiration-strategy, else values-time).",
            show_default=False,
        ),
    ] = None,
    max_expires: Annotated[
        int | None,
        typer.Option(
            "--max-expires",
            help="At most this many partitions per run (default: table option "
            "partition.expiration-max-num, else 100).",
            show_default=False,
        ),
    ] = None,
    options: OptionsOpt = None,
    allow_unsafe_commit: AllowUnsafeOpt = False,
    dry_run: DryRunOpt = False,
    json_out: JsonOpt = False,
    quiet: QuietOpt = False,
    warehouse: WarehouseOpt = None,
    branch: BranchOpt = "main",
    fs_option: FsOpt = None,
    max_rps: RateOpt = None,
    timezone: TimezoneOpt = None,
) -> None:
    """Drop expired partitions (an OVERWRITE commit); expire-snapshots frees their files later."""
    from core.format.options import parse_duration_ms
    from core.ops.expire_partitions import (
        STRATEGIES,
        ExpirePartitions,
        PartitionExpireFlags,
    )
    from core.retention.partition_time import Formatter
    from core.runtime.executors.local import LocalExecutor
    from core.runtime.timeparse import resolve_zone

    state = state_of(ctx)
    if expiration_time is not None:
        as_usage_error(lambda: parse_duration_ms(expiration_time), "--expiration-time")
    if timestamp_formatter is not None:
        as_usage_error(lambda: Formatter.of(timestamp_formatter), "--timestamp-formatter")
    if expire_strategy is not None and expire_strategy not in STRATEGIES:
        raise typer.BadParameter(
            f"unknown strategy {expire_strategy!r} (use {' or '.join(STRATEGIES)})",
            param_hint="--expire-strategy",
        )
    if max_expires is not None and max_expires < 1:
        raise typer.BadParameter(
            f"must be at least 1, got {max_expires}", param_hint="--max-expires"
        )
    zone = as_usage_error(lambda: resolve_zone(timezone), "--timezone")
    out = Output(Mode.of(json_out, quiet), no_color=state.no_color)
    flags = PartitionExpireFlags(
        expiration_time, timestamp_formatter, timestamp_pattern, expire_strategy, max_expires
    )
    sel = Selection(
        table,
        warehouse,
        branch,
        parse_fs_options(fs_option),
        parse_options_arg(options),
        max_requests_per_second=max_rps,
    )

    executor = LocalExecutor(1)
    job = operation_job(
        "expire-partitions",
        lambda _ex: ExpirePartitions(flags, zone, allow_unsafe_commit, out.warn),
        lambda: executor,
        run_request(dry_run=dry_run),
        out,
        to_json=lambda o: _to_json(o, dry_run),
        render=lambda o, output: _render(o, output, dry_run, zone),
        # A real run that kept partitions it can never judge fails (after dropping the
        # rest): a cron job must not pass forever while they stay.
        failed=lambda o: o.failed or _unexpirable(o, dry_run) is not None,
    )
    try:
        run_job(sel, job, out, debug=state.debug)
    finally:
        executor.close()


def _to_json(o: Outcome[Plan, CommitResult], dry_run: bool) -> dict[str, Any]:
    r = o.result
    report = None
    if r is not None and r.snapshot is not None:
        report = commit_json(
            r.snapshot,
            r.attempts,
            r.notes,
            files_marked_delete=len(r.changes.entries) if r.changes else 0,
        )
    doc = plan_doc(dry_run, o.plan, report)
    doc["journals"] = journals_json(journals_of(o.report))
    error = _unexpirable(o, dry_run)
    if error is not None:
        doc["error"] = {"kind": error.kind, "message": error.message, "hint": error.hint}
    return doc


def _unexpirable(o: Outcome[Plan, CommitResult], dry_run: bool) -> Any:
    """The UnexpirablePartitionsError a real run ends with, if any (dry runs: none)."""
    from core.ops.expire_partitions import unexpirable_error

    return None if dry_run else unexpirable_error(o.plan)


def _render(o: Outcome[Plan, CommitResult], out: Output, dry_run: bool, zone: Any) -> None:
    d = o.plan.details
    parts = d.get("partitions") or []
    if out.mode is Mode.QUIET:
        if dry_run:
            for p in parts:
                out.plain(p["path"])
        return
    cfg = d.get("config", {})
    title = "expire-partitions" + (" (dry run)" if dry_run else "")
    out.line(bold(title), f" {o.plan.table}")
    strategy = cfg.get("strategy", {}).get("value")
    out.line(
        f"  strategy {strategy}, expiration {cfg.get('expiration_time', {}).get('value')} "
        f"({cfg.get('expiration_time', {}).get('source')}): expiring partitions older than "
        f"{human_wall_clock(d.get('expire_before_local'), zone)}"
    )
    render_journals(journals_of(o.report), out)
    if d.get("latest_snapshot") is None:
        out.line("  the table has no snapshots: nothing to do")
        return
    if not parts:
        out.line("  no expired partitions")
    else:
        out.table(
            None,
            [
                "partition",
                "time" if strategy == "values-time" else "last update",
                "files",
                "rows",
                "bytes",
                "last update",
            ],
            (
                [
                    p["path"],
                    human_wall_clock(p["time_local"], zone),
                    p["files"],
                    p["rows"],
                    human_bytes(p["bytes"]),
                    human_wall_clock(p["last_update_local"], zone),
                ]
                for p in parts
            ),
            limit=40,
            total=len(parts),
        )
    if d.get("capped"):
        out.line(f"  {d['capped']} more expired partitions left for the next run (max expires)")
    if d.get("skipped"):
        out.line(
            "  ",
            red(
                f"{len(d['skipped'])} partitions kept: no time can be read from their "
                "values, they never expire"
            ),
        )
        if dry_run:  # a real run ends with it as its error's hint
            out.line(f"  {d.get('skipped_hint')}")
    r = o.result
    if r is not None and r.snapshot is not None:
        render_commit(
            out,
            r.snapshot.id,
            f"(OVERWRITE) after {r.attempts} attempt(s); files are deleted later by "
            "expire-snapshots",
            r.notes,
        )
    error = _unexpirable(o, dry_run)
    if error is not None:
        report_error(error.kind, error.message, error.hint, as_json=False)


def register(app: typer.Typer) -> None:
    app.command("expire-partitions", epilog=EPILOG)(expire_partitions)
