"""paimon remove-unexisting-files: mark missing data files of the latest snapshot DELETE."""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING, Annotated, Any

import typer

if TYPE_CHECKING:
    from core.runtime.operation import Outcome
    from core.runtime.plans import Plan
    from core.write.commit import CommitResult
from paimon_cli.convert import commit_json, plan_doc
from paimon_cli.output import Mode, Output, bold, human_bytes
from paimon_cli.params import (
    AllowUnsafeOpt,
    BranchOpt,
    DryRunOpt,
    FsOpt,
    JsonOpt,
    ParallelismOpt,
    QuietOpt,
    RateOpt,
    TableArg,
    WarehouseOpt,
    as_usage_error,
    parse_fs_options,
)
from paimon_cli.render import render_commit
from paimon_cli.selection import Selection, operation_job, run_job, run_request
from paimon_cli.state import state_of

EPILOG = """Examples:

  paimon inspect /wh/db.db/orders --check

  paimon remove-unexisting-files /wh/db.db/orders --dry-run

  paimon remove-unexisting-files /wh/db.db/orders --partition dt=2024-07-01 --json
"""


def remove_unexisting_files(
    ctx: typer.Context,
    table: TableArg,
    partition: Annotated[
        list[str] | None,
        typer.Option(
            "--partition",
            metavar="K=V[,K2=V2]",
            help="Only this partition (repeatable: any of them).",
            show_default=False,
        ),
    ] = None,
    dry_run: DryRunOpt = False,
    json_out: JsonOpt = False,
    quiet: QuietOpt = False,
    warehouse: WarehouseOpt = None,
    branch: BranchOpt = "main",
    fs_option: FsOpt = None,
    max_rps: RateOpt = None,
    parallelism: ParallelismOpt = None,
    allow_unsafe_commit: AllowUnsafeOpt = False,
) -> None:
    """Commit one snapshot marking the latest snapshot's missing data files DELETE (Paimon's
    remove_unexisting_files): readers work again; the rows those files held are gone."""
    from core.compaction.compact import parse_partition_filter
    from core.ops.remove_unexisting import RemoveUnexistingFiles
    from core.runtime.executors.local import LocalExecutor

    state = state_of(ctx)
    specs = [
        as_usage_error(partial(parse_partition_filter, p), "--partition") for p in partition or ()
    ]
    out = Output(Mode.of(json_out, quiet), no_color=state.no_color)
    executor = LocalExecutor(parallelism)
    sel = Selection(
        table, warehouse, branch, parse_fs_options(fs_option), {}, max_requests_per_second=max_rps
    )
    job = operation_job(
        "remove-unexisting-files",
        lambda _ex: RemoveUnexistingFiles(tuple(specs), allow_unsafe_commit),
        lambda: executor,
        run_request(dry_run=dry_run),
        out,
        to_json=lambda o: _to_json(o, dry_run),
        render=lambda o, output: _render(o, output, dry_run),
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
    return plan_doc(dry_run, o.plan, report)


def _render(o: Outcome[Plan, CommitResult], out: Output, dry_run: bool) -> None:
    d = o.plan.details
    files = d.get("files") or []
    if out.mode is Mode.QUIET:
        if dry_run:
            for f in files:
                out.plain(f["path"])
        return
    title = "remove-unexisting-files" + (" (dry run)" if dry_run else "")
    out.line(bold(title), f" {o.plan.table}")
    if d.get("snapshot_id") is None:
        out.line("  the table has no snapshots: nothing to do")
        return
    if not files:
        out.line(f"  every data file of snapshot {d['snapshot_id']} exists: nothing to do")
        return
    out.line(
        f"  snapshot {d['snapshot_id']}: {len(files)} data files missing, {d['rows']} rows "
        "(these rows are gone for good)"
    )
    out.table(
        None,
        ["partition", "bucket", "level", "rows", "size", "path"],
        (
            [
                "/".join(f"{k}={v}" for k, v in f["partition"].items()) or "-",
                f["bucket"],
                f["level"],
                f["rows"],
                human_bytes(f["size"]),
                out.rel(f["path"]),
            ]
            for f in files
        ),
        limit=40,
        total=len(files),
    )
    r = o.result
    if r is not None and r.snapshot is not None:
        render_commit(out, r.snapshot.id, f"(APPEND) after {r.attempts} attempt(s)", r.notes)


def register(app: typer.Typer) -> None:
    app.command("remove-unexisting-files", epilog=EPILOG)(remove_unexisting_files)
