"""paimon rollback: Paimon's rollback_to a snapshot or tag, pointers first, with a journal."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

import typer

if TYPE_CHECKING:
    from core.runtime.operation import Outcome
    from core.runtime.plans import Plan
from paimon_cli.convert import plan_doc
from paimon_cli.output import Mode, Output, bold
from paimon_cli.params import (
    BranchOpt,
    DryRunOpt,
    FsOpt,
    JsonOpt,
    QuarantineOpt,
    QuietOpt,
    RateOpt,
    TableArg,
    WarehouseOpt,
    parse_fs_options,
)
from paimon_cli.render import render_plan_and_report
from paimon_cli.selection import Selection, operation_job, run_job, run_request
from paimon_cli.state import state_of

EPILOG = """Examples:

  paimon rollback /wh/db.db/orders --to-snapshot 42 --dry-run

  paimon rollback /wh/db.db/orders --to-tag release-1 --quarantine

  paimon rollback db.orders -w s3://lake/wh --to-snapshot 42 --force --json
"""


def rollback(
    ctx: typer.Context,
    table: TableArg,
    to_snapshot: Annotated[
        int | None,
        typer.Option(
            "--to-snapshot",
            min=1,
            help="Keep this snapshot as the latest (an expired one a tag holds works too).",
            show_default=False,
        ),
    ] = None,
    to_tag: Annotated[
        str | None,
        typer.Option(
            "--to-tag",
            help="Roll back to this tag's snapshot (restored from the tag if it expired).",
            show_default=False,
        ),
    ] = None,
    force: Annotated[
        bool,
        typer.Option(
            "--force",
            help="Roll back even when a consumer has read, or a branch was created from a "
            "tag on, a snapshot that goes.",
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
) -> None:
    """Roll a table back to a snapshot or tag, as Paimon's rollback_to does."""
    from core.ops.rollback import Rollback
    from core.runtime.executors.local import LocalExecutor

    state = state_of(ctx)
    if (to_snapshot is None) == (to_tag is None):
        raise typer.BadParameter("give exactly one of --to-snapshot and --to-tag")
    out = Output(Mode.of(json_out, quiet), no_color=state.no_color)
    executor = LocalExecutor(1)
    sel = Selection(
        table, warehouse, branch, parse_fs_options(fs_option), {}, max_requests_per_second=max_rps
    )
    job = operation_job(
        "rollback",
        lambda _ex: Rollback(to_snapshot, to_tag, force),
        lambda: executor,
        run_request(dry_run=dry_run),
        out,
        to_json=lambda o: plan_doc(dry_run, o.plan, o.report.to_json() if o.report else None),
        render=lambda o, output: _render(o, output, dry_run),
    )
    try:
        run_job(sel, job, out, debug=state.debug)
    finally:
        executor.close()


def _span(ids: list[int]) -> str:
    return "none" if not ids else (f"{ids[0]}..{ids[-1]}" if len(ids) > 1 else str(ids[0]))


def _render(o: Outcome[Plan, None], out: Output, dry_run: bool) -> None:
    d: Any = o.plan.details
    if out.mode is Mode.QUIET:
        if dry_run:
            for phase in o.plan.phases:
                for a in phase.actions:
                    if a.op == "delete":
                        out.plain(a.path)
        return
    title = "rollback" + (" (dry run)" if dry_run else "")
    target = f"snapshot {d['target_snapshot']}" + (
        f" (tag {d['target_tag']})" if d["target_tag"] else ""
    )
    out.line(bold(title), f" {o.plan.table} to {target}")
    out.line(
        f"  snapshots removed: {_span(d['snapshots'])}; changelogs removed: "
        f"{_span(d['changelogs'])}; tags removed: "
        + (", ".join(t["name"] for t in d["tags"]) or "none")
    )
    if d["snapshot_restored_from_tag"]:
        out.line(f"  snapshot {d['target_snapshot']} is written back from the tag")
    if d["forced"]:
        out.warn("forced past consumers or branches that depend on removed snapshots")
    render_plan_and_report(o.plan, d.get("notes") or [], o.report, out, show_actions=dry_run)


def register(app: typer.Typer) -> None:
    app.command("rollback", epilog=EPILOG)(rollback)
