"""paimon create-tag / delete-tag / rename-tag / expire-tags (listing is `inspect tags`)."""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Annotated, Any

import typer

if TYPE_CHECKING:
    from core.runtime.executors.local import LocalExecutor
    from core.runtime.plans import Plan
    from core.runtime.report import ExecutionReport
    from core.table.table import PaimonTable
from paimon_cli.convert import plan_doc
from paimon_cli.journals import finish_unfinished, journals_json
from paimon_cli.output import Mode, Output
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
from paimon_cli.progress import progress_for
from paimon_cli.render import render_plan, render_report, report_failed
from paimon_cli.selection import Selection, TableJob, run_job
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


@dataclass(frozen=True)
class Outcome:
    plan: Plan
    report: ExecutionReport | None
    done: bool = False


def _doc(o: Outcome, dry_run: bool) -> dict[str, Any]:
    report = o.report.to_json() if o.report else ({"status": "ok"} if o.done else None)
    return plan_doc(dry_run, o.plan, report)


def _render(o: Outcome, out: Output, dry_run: bool, title: str) -> None:
    if out.mode is Mode.QUIET:
        if dry_run:
            for phase in o.plan.phases:
                for a in phase.actions:
                    out.plain(a.path)
        return
    d = o.plan.details
    out.line(f"[bold]{title}{' (dry run)' if dry_run else ''}[/bold] {o.plan.table}")
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
    if o.report is not None:
        render_report(o.report, out)
    elif o.done:
        out.line("  [green]done[/green]")


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
    from core.ops.tags import apply_create_tag, plan_create_tag, validate_tag_name
    from core.runtime.clock import SystemClock
    from core.runtime.timeparse import local_datetime, resolve_zone

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

    def run(t: PaimonTable) -> Outcome:
        now = SystemClock().now_ms()
        plan = plan_create_tag(
            t,
            name,
            snapshot_id=snapshot,
            time_retained_ms=retained,
            replace_existing=replace,
            now_local=local_datetime(now, zone),
            now_ms=now,
        )
        if dry_run:
            return Outcome(plan, None)
        journals = finish_unfinished(t)
        if journals is not None:
            plan = plan_create_tag(
                t,
                name,
                snapshot_id=snapshot,
                time_retained_ms=retained,
                replace_existing=replace,
                now_local=local_datetime(now, zone),
                now_ms=now,
            )
        apply_create_tag(t, plan)
        return Outcome(plan, journals, done=True)

    sel = Selection(
        table, warehouse, branch, parse_fs_options(fs_option), {}, max_requests_per_second=max_rps
    )
    job = TableJob(
        "create-tag",
        run,
        lambda o: _doc(o, dry_run),
        lambda o, output: _render(o, output, dry_run, "create-tag"),
    )
    run_job(sel, job, out, debug=state.debug)


def _run_deletion(
    t: PaimonTable, plan: Plan, executor: LocalExecutor, out: Output
) -> ExecutionReport:
    from core.ops.tags import filter_for_resume
    from core.runtime.apply import apply, finish_journals
    from core.runtime.report import ExecutionReport

    progress = progress_for(out)
    report = ExecutionReport()
    finish_journals(t, executor=executor, progress=progress, report=report)
    apply(t, plan, recheck=filter_for_resume, executor=executor, progress=progress, report=report)
    return report


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
    from core.ops.tags import plan_delete_tags, validate_tag_name
    from core.runtime.clock import SystemClock
    from core.runtime.executors.local import LocalExecutor

    state = state_of(ctx)
    wanted = [n.strip() for item in names for n in item.split(",") if n.strip()]
    if not wanted:
        raise typer.BadParameter("give at least one tag name", param_hint="NAMES")
    for n in wanted:
        as_usage_error(partial(validate_tag_name, n), "NAMES")
    out = Output(Mode.of(json_out, quiet), no_color=state.no_color)
    executor = LocalExecutor(parallelism)

    def run(t: PaimonTable) -> Outcome:
        plan = plan_delete_tags(
            t, wanted, executor=executor, now_ms=SystemClock().now_ms(), force=force
        )
        _refuse_missing(t, plan.details.get("missing") or [])
        if dry_run:
            return Outcome(plan, None)
        return Outcome(plan, _run_deletion(t, plan, executor, out))

    sel = Selection(
        table, warehouse, branch, parse_fs_options(fs_option), {}, max_requests_per_second=max_rps
    )
    job = TableJob(
        "delete-tag",
        run,
        lambda o: _doc(o, dry_run),
        lambda o, output: _render(o, output, dry_run, "delete-tag"),
        failed=report_failed,
    )
    try:
        run_job(sel, job, out, debug=state.debug)
    finally:
        executor.close()


def _being_deleted(table: PaimonTable) -> set[str]:
    """Tags an interrupted tag deletion already removed (tag files go first): its journal
    still names them, and this run finishes it."""
    from core.runtime.journal import unfinished_journals

    return {
        entry["tag"]
        for journal in unfinished_journals(table.fileio, table.location)
        if journal.plan.branch == table.branch
        for entry in journal.plan.details.get("tags") or []
        if isinstance(entry, dict) and "tag" in entry
    }


def _refuse_missing(table: PaimonTable, missing: list[str]) -> None:
    """A tag name that does not exist is a typo, not success (Paimon's deleteTag fails too):
    refuse before anything is deleted, and suggest the closest existing names. A tag an
    interrupted deletion removed is no typo: finishing that deletion is what was asked."""
    import difflib

    from core.ops.tags import TagError

    if missing:
        missing = [name for name in missing if name not in _being_deleted(table)]
    if not missing:
        return
    existing = table.tags.names()
    close = [m for name in missing for m in difflib.get_close_matches(name, existing, n=1)]
    names = ", ".join(repr(n) for n in missing)
    raise TagError(
        f"tag {names} does not exist" if len(missing) == 1 else f"tags {names} do not exist",
        hint=f"did you mean {', '.join(repr(c) for c in close)}?"
        if close
        else f"existing tags: {', '.join(existing) or 'none'}",
    )


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
    from core.ops.tags import rename_tag, validate_tag_name

    state = state_of(ctx)
    as_usage_error(lambda: validate_tag_name(old), "OLD")
    as_usage_error(lambda: validate_tag_name(new), "NEW")
    out = Output(Mode.of(json_out, quiet), no_color=state.no_color)

    def run(t: PaimonTable) -> dict[str, Any]:
        if dry_run:
            names = t.tags.names()
            return {
                "dry_run": True,
                "from": old,
                "to": new,
                "possible": old in names and new not in names,
            }
        journals = finish_unfinished(t)
        src, dst = rename_tag(t, old, new)
        return {
            "dry_run": False,
            "from": old,
            "to": new,
            "old_path": src,
            "new_path": dst,
            "journals": journals_json(journals),
        }

    def render(doc: dict[str, Any], output: Output) -> None:
        if output.mode is Mode.QUIET:
            return
        if doc["dry_run"]:
            verdict = "would rename" if doc["possible"] else "cannot rename (check the names)"
            output.line(f"rename-tag (dry run): {verdict} {old} -> {new}")
        else:
            output.line(f"renamed tag {old} -> {new}")
            journals = doc.get("journals") or {}
            for journal in journals.get("resumed_journals") or []:
                output.line(f"  finished an interrupted run first (journal {journal})")
            for note in journals.get("notes") or []:
                output.line(f"  note: {note}")

    sel = Selection(
        table, warehouse, branch, parse_fs_options(fs_option), {}, max_requests_per_second=max_rps
    )
    run_job(sel, TableJob("rename-tag", run, lambda d: d, render), out, debug=state.debug)


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
    from core.ops.tags import expired_tag_names, plan_delete_tags, select_expired_tags
    from core.runtime.clock import SystemClock
    from core.runtime.executors.local import LocalExecutor
    from core.runtime.timeparse import local_datetime, parse_instant, resolve_zone

    state = state_of(ctx)
    zone = as_usage_error(lambda: resolve_zone(timezone), "--timezone")
    now = SystemClock().now_ms()
    older_local = None
    if older_than is not None:
        ms = as_usage_error(
            lambda: parse_instant(older_than, now_ms=now, zone=zone), "--older-than"
        )
        older_local = local_datetime(ms, zone)
    out = Output(Mode.of(json_out, quiet), no_color=state.no_color)
    executor = LocalExecutor(parallelism)

    def run(t: PaimonTable) -> Outcome:
        chosen = select_expired_tags(
            t, now_local=local_datetime(now, zone), older_than_local=older_local, zone=zone
        )
        reasons = expired_tag_names(chosen)
        plan = plan_delete_tags(
            t,
            list(reasons),
            executor=executor,
            now_ms=now,
            force=True,
            command="expire-tags",
            reasons=reasons,
        )
        if dry_run or plan.empty:
            return Outcome(plan, None, done=not dry_run)
        return Outcome(plan, _run_deletion(t, plan, executor, out))

    sel = Selection(
        table,
        warehouse,
        branch,
        parse_fs_options(fs_option),
        parse_options_arg(options),
        max_requests_per_second=max_rps,
    )
    job = TableJob(
        "expire-tags",
        run,
        lambda o: _doc(o, dry_run),
        lambda o, output: _render(o, output, dry_run, "expire-tags"),
        failed=report_failed,
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
