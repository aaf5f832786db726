"""paimon create-tag / delete-tag / rename-tag / expire-tags (listing is `inspect tags`)."""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING, Annotated, Any

import typer

if TYPE_CHECKING:
    from core.ops.tag_operations import Renamed
    from core.runtime.operation import Outcome
    from core.runtime.plans import Plan
    from core.runtime.report import ExecutionReport
from paimon_cli.convert import plan_doc
from paimon_cli.journals import journals_json, journals_of, render_journals
from paimon_cli.output import Mode, Output, bold, green
from paimon_cli.params import (
    BranchOpt,
    DryRunOpt,
    FsOpt,
    JsonOpt,
    OptionsOpt,
    ParallelismOpt,
    QuarantineOpt,
    QuietOpt,
    RateOpt,
    TableArg,
    TimezoneOpt,
    WarehouseOpt,
    as_usage_error,
    parse_fs_options,
    parse_options_arg,
)
from paimon_cli.render import render_plan, render_report
from paimon_cli.selection import Selection, operation_job, run_job, run_request
from paimon_cli.state import state_of

CREATE_EPILOG = """Examples:

  paimon create-tag /wh/db.db/orders release-1

  paimon create-tag /wh/db.db/orders nightly --snapshot 42 --time-retained '7 d' --replace
"""
DELETE_EPILOG = """Examples:

  paimon delete-tag /wh/db.db/orders release-1 --dry-run

  paimon delete-tag db.orders -w s3://lake/wh old-1 old-2 --json
"""
RENAME_EPILOG = """Examples:

  paimon rename-tag /wh/db.db/orders nightly release-2

  paimon rename-tag db.orders -w /wh tmp keep --json
"""
EXPIRE_EPILOG = """Examples:

  paimon expire-tags /wh/db.db/orders --dry-run

  paimon expire-tags /wh/db.db/orders --older-than '2024-07-01 00:00:00'
"""


def _shown(o: Outcome[Plan, Any], journals_only: bool) -> ExecutionReport | None:
    """The report to show: a write-only command (create-tag) shows only the journals it
    finished first, else a plain "done"."""
    if o.report is None or not journals_only:
        return o.report
    return journals_of(o.report)


def _doc(o: Outcome[Plan, Any], dry_run: bool, journals_only: bool = False) -> dict[str, Any]:
    shown = _shown(o, journals_only)
    report = shown.to_json() if shown else (None if o.report is None else {"status": "ok"})
    return plan_doc(dry_run, o.plan, report)


def _render(
    o: Outcome[Plan, Any], out: Output, dry_run: bool, title: str, journals_only: bool = False
) -> None:
    if out.mode is Mode.QUIET:
        if dry_run:
            for phase in o.plan.phases:
                for a in phase.actions:
                    out.plain(a.path)
        return
    d = o.plan.details
    out.line(bold(title + (" (dry run)" if dry_run else "")), f" {o.plan.table}")
    for name in d.get("missing") or []:
        out.warn(f"tag {name!r} does not exist")
    for t in d.get("tags") or []:
        state = (
            "snapshot still exists: tag file only"
            if t["snapshot_exists"]
            else (f"{t['files_freed']} files only it kept")
        )
        out.line(f"  tag {t['tag']} (snapshot {t['snapshot_id']}): {t['reason']}; {state}")
    if "tag" in d and "snapshot_id" in d:
        verb = "replace" if d.get("replace") else "create"
        out.line(f"  {verb} tag {d['tag']} on snapshot {d['snapshot_id']}")
    render_plan(o.plan, out, show_actions=dry_run)
    shown = _shown(o, journals_only)
    if shown is not None:
        render_report(shown, out)
    elif o.report is not None:
        out.line("  ", green("done"))


def create_tag(
    ctx: typer.Context,
    table: TableArg,
    name: Annotated[str, typer.Argument(help="Tag name.", show_default=False)],
    snapshot: Annotated[
        int | None,
        typer.Option(
            "--snapshot", help="Snapshot id to tag (default: the latest).", show_default=False
        ),
    ] = None,
    time_retained: Annotated[
        str | None,
        typer.Option(
            "--time-retained",
            help="Keep the tag this long, e.g. '7 d' (default: no retention, as Paimon's "
            "create_tag procedure; table option tag.default-time-retained is not applied).",
            show_default=False,
        ),
    ] = None,
    replace: Annotated[
        bool, typer.Option("--replace", help="Move an existing tag instead of failing.")
    ] = False,
    dry_run: DryRunOpt = False,
    json_out: JsonOpt = False,
    quiet: QuietOpt = False,
    warehouse: WarehouseOpt = None,
    branch: BranchOpt = "main",
    fs_option: FsOpt = None,
    max_rps: RateOpt = None,
    timezone: TimezoneOpt = None,
) -> None:
    """Create (or with --replace move) a tag on a snapshot, written exactly as Paimon writes it."""
    from core.format.options import parse_duration_ms
    from core.ops.tag_operations import CreateTag
    from core.ops.tags import validate_tag_name
    from core.runtime.executors.local import LocalExecutor
    from core.runtime.timeparse import resolve_zone

    state = state_of(ctx)
    as_usage_error(lambda: validate_tag_name(name), "NAME")
    retained = (
        as_usage_error(lambda: parse_duration_ms(time_retained), "--time-retained")
        if time_retained
        else None
    )
    if retained is not None and retained <= 0:
        raise typer.BadParameter("must be positive", param_hint="--time-retained")
    if snapshot is not None and snapshot < 1:
        raise typer.BadParameter("must be at least 1", param_hint="--snapshot")
    zone = as_usage_error(lambda: resolve_zone(timezone), "--timezone")
    out = Output(Mode.of(json_out, quiet), no_color=state.no_color)
    sel = Selection(
        table, warehouse, branch, parse_fs_options(fs_option), {}, max_requests_per_second=max_rps
    )
    executor = LocalExecutor(1)
    op = CreateTag(name, zone, snapshot, retained, replace)
    job = operation_job(
        "create-tag",
        lambda _ex: op,
        lambda: executor,
        run_request(dry_run=dry_run),
        out,
        to_json=lambda o: _doc(o, dry_run, journals_only=True),
        render=lambda o, output: _render(o, output, dry_run, "create-tag", journals_only=True),
    )
    try:
        run_job(sel, job, out, debug=state.debug)
    finally:
        executor.close()


def delete_tag(
    ctx: typer.Context,
    table: TableArg,
    names: Annotated[list[str], typer.Argument(help="Tag names (also comma-separated).")],
    force: Annotated[
        bool,
        typer.Option(
            "--force",
            help="Delete even a tag a branch was created from (files the branch uses stay).",
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
) -> None:
    """Delete tags and the files only they kept alive (Paimon's TagDeletion, branch-safe)."""
    from core.ops.tag_operations import DeleteTags
    from core.ops.tags import validate_tag_name
    from core.runtime.executors.local import LocalExecutor

    state = state_of(ctx)
    wanted = [n.strip() for item in names for n in item.split(",") if n.strip()]
    if not wanted:
        raise typer.BadParameter("give at least one tag name", param_hint="NAMES")
    for n in wanted:
        as_usage_error(partial(validate_tag_name, n), "NAMES")
    out = Output(Mode.of(json_out, quiet), no_color=state.no_color)
    executor = LocalExecutor(parallelism)
    sel = Selection(
        table, warehouse, branch, parse_fs_options(fs_option), {}, max_requests_per_second=max_rps
    )
    job = operation_job(
        "delete-tag",
        lambda _ex: DeleteTags(tuple(wanted), force),
        lambda: executor,
        run_request(dry_run=dry_run),
        out,
        to_json=lambda o: _doc(o, dry_run),
        render=lambda o, output: _render(o, output, dry_run, "delete-tag"),
    )
    try:
        run_job(sel, job, out, debug=state.debug)
    finally:
        executor.close()


def rename_tag_cmd(
    ctx: typer.Context,
    table: TableArg,
    old: Annotated[str, typer.Argument(help="Existing tag name.", show_default=False)],
    new: Annotated[str, typer.Argument(help="New tag name.", show_default=False)],
    dry_run: DryRunOpt = False,
    json_out: JsonOpt = False,
    quiet: QuietOpt = False,
    warehouse: WarehouseOpt = None,
    branch: BranchOpt = "main",
    fs_option: FsOpt = None,
    max_rps: RateOpt = None,
) -> None:
    """Rename a tag (the new name is created if absent, then the old file goes)."""
    from core.ops.tag_operations import RenameTag
    from core.ops.tags import validate_tag_name
    from core.runtime.executors.local import LocalExecutor

    state = state_of(ctx)
    as_usage_error(lambda: validate_tag_name(old), "OLD")
    as_usage_error(lambda: validate_tag_name(new), "NEW")
    out = Output(Mode.of(json_out, quiet), no_color=state.no_color)

    def to_json(o: Outcome[Plan, Renamed]) -> dict[str, Any]:
        if o.report is None:
            return {"dry_run": True, "from": old, "to": new, "possible": o.plan.details["possible"]}
        assert o.result is not None
        return {
            "dry_run": False,
            "from": old,
            "to": new,
            "old_path": o.result.old_path,
            "new_path": o.result.new_path,
            "journals": journals_json(journals_of(o.report)),
        }

    def render(o: Outcome[Plan, Renamed], output: Output) -> None:
        if output.mode is Mode.QUIET:
            return
        if o.report is None:
            possible = o.plan.details["possible"]
            verdict = "would rename" if possible else "cannot rename (check the names)"
            output.line(f"rename-tag (dry run): {verdict} {old} -> {new}")
            return
        output.line(f"renamed tag {old} -> {new}")
        render_journals(journals_of(o.report), output)

    sel = Selection(
        table, warehouse, branch, parse_fs_options(fs_option), {}, max_requests_per_second=max_rps
    )
    executor = LocalExecutor(1)
    job = operation_job(
        "rename-tag",
        lambda _ex: RenameTag(old, new),
        lambda: executor,
        run_request(dry_run=dry_run),
        out,
        to_json=to_json,
        render=render,
    )
    try:
        run_job(sel, job, out, debug=state.debug)
    finally:
        executor.close()


def expire_tags(
    ctx: typer.Context,
    table: TableArg,
    older_than: Annotated[
        str | None,
        typer.Option(
            "--older-than",
            help="Also expire tags created before this (local time, a duration, epoch millis "
            "or ISO-8601); tags without retention use their file time (default: only tags "
            "whose tagTimeRetained has passed, plus table option tag.num-retained-max).",
            show_default=False,
        ),
    ] = None,
    options: OptionsOpt = None,
    dry_run: DryRunOpt = False,
    quarantine: QuarantineOpt = False,
    json_out: JsonOpt = False,
    quiet: QuietOpt = False,
    warehouse: WarehouseOpt = None,
    branch: BranchOpt = "main",
    fs_option: FsOpt = None,
    max_rps: RateOpt = None,
    parallelism: ParallelismOpt = None,
    timezone: TimezoneOpt = None,
) -> None:
    """Expire tags whose retention has passed (or beyond tag.num-retained-max), with their files."""
    from core.ops.tag_operations import ExpireTags
    from core.runtime.clock import SystemClock
    from core.runtime.executors.local import LocalExecutor
    from core.runtime.timeparse import parse_instant, resolve_zone

    state = state_of(ctx)
    zone = as_usage_error(lambda: resolve_zone(timezone), "--timezone")
    now = SystemClock().now_ms()
    older_ms = None
    if older_than is not None:
        older_ms = as_usage_error(
            lambda: parse_instant(older_than, now_ms=now, zone=zone), "--older-than"
        )
    out = Output(Mode.of(json_out, quiet), no_color=state.no_color)
    executor = LocalExecutor(parallelism)
    sel = Selection(
        table,
        warehouse,
        branch,
        parse_fs_options(fs_option),
        parse_options_arg(options),
        max_requests_per_second=max_rps,
    )
    job = operation_job(
        "expire-tags",
        lambda _ex: ExpireTags(zone, older_ms),
        lambda: executor,
        run_request(dry_run=dry_run),
        out,
        to_json=lambda o: _doc(o, dry_run),
        render=lambda o, output: _render(o, output, dry_run, "expire-tags"),
    )
    try:
        run_job(sel, job, out, debug=state.debug)
    finally:
        executor.close()


def register(app: typer.Typer) -> None:
    app.command("create-tag", epilog=CREATE_EPILOG)(create_tag)
    app.command("delete-tag", epilog=DELETE_EPILOG)(delete_tag)
    app.command("rename-tag", epilog=RENAME_EPILOG)(rename_tag_cmd)
    app.command("expire-tags", epilog=EXPIRE_EPILOG)(expire_tags)
