"""paimon restore / purge-quarantine: undo a quarantined run, or drop old quarantine for good."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

import typer

if TYPE_CHECKING:
    from core.ops.restore import RestorePlan, RestoreReport
    from core.runtime.operation import Outcome
    from core.runtime.quarantine import PurgeRun
from paimon_cli.convert import instant
from paimon_cli.output import Mode, Output, bold, green, human_bytes, red
from paimon_cli.params import (
    DryRunOpt,
    FsOpt,
    JsonOpt,
    QuietOpt,
    RateOpt,
    TableArg,
    TimezoneOpt,
    WarehouseOpt,
    as_usage_error,
    parse_fs_options,
)
from paimon_cli.selection import Selection, operation_job, run_job, run_request
from paimon_cli.state import state_of

RESTORE_EPILOG = """Examples:

  paimon restore /wh/db.db/orders --last --dry-run

  paimon restore /wh/db.db/orders 3f9a1c2b7d4e
"""
PURGE_EPILOG = """Examples:

  paimon purge-quarantine /wh/db.db/orders --older-than '7 d' --dry-run

  paimon purge-quarantine 'db.*' -w s3://lake/wh --older-than '7 d'
"""
SCREEN = 40


def restore(
    ctx: typer.Context,
    table: TableArg,
    run_id: Annotated[
        str | None,
        typer.Argument(help="Run id (see 'paimon inspect TABLE runs').", show_default=False),
    ] = None,
    last: Annotated[
        bool, typer.Option("--last", help="Restore the newest quarantined run.")
    ] = False,
    dry_run: DryRunOpt = False,
    json_out: JsonOpt = False,
    quiet: QuietOpt = False,
    warehouse: WarehouseOpt = None,
    fs_option: FsOpt = None,
    max_rps: RateOpt = None,
) -> None:
    """Move a quarantined run's files back (data, manifests, snapshots and tags, then hints)."""
    from core.ops.restore import Restore
    from core.runtime.executors.local import LocalExecutor

    state = state_of(ctx)
    if (run_id is None) == (not last):
        raise typer.BadParameter("give a RUN_ID or --last (one of them)")
    out = Output(Mode.of(json_out, quiet), no_color=state.no_color)
    sel = Selection(
        table, warehouse, "main", parse_fs_options(fs_option), {}, max_requests_per_second=max_rps
    )
    executor = LocalExecutor(1)
    job = operation_job(
        "restore",
        lambda _ex: Restore(None if last else run_id),
        lambda: executor,
        run_request(dry_run=dry_run),
        out,
        to_json=lambda o: {
            "dry_run": dry_run,
            "plan": o.plan.to_json(),
            "report": o.result.to_json() if o.result else None,
        },
        render=lambda o, output: _render_restore(o, output, dry_run),
        # A dry run that found conflicts fails too: the real run would be refused.
        failed=lambda o: bool(o.plan.conflicts),
    )
    try:
        run_job(sel, job, out, debug=state.debug)
    finally:
        executor.close()


def _ranges(ids: tuple[int, ...]) -> str:
    """1..4, 7, 9..10"""
    parts: list[str] = []
    start = prev = ids[0]
    for i in (*ids[1:], None):
        if i is not None and i == prev + 1:
            prev = i
            continue
        parts.append(str(start) if start == prev else f"{start}..{prev}")
        if i is not None:
            start = prev = i
    return ", ".join(parts)


def _render_restore(o: Outcome[RestorePlan, RestoreReport], out: Output, dry_run: bool) -> None:
    p = o.plan
    if out.mode is Mode.QUIET:
        if dry_run:
            for item in p.items:
                if item.state in ("move", "duplicate"):
                    out.plain(item.path)
        return
    title = "restore" + (" (dry run)" if dry_run else "")
    out.line(bold(title), f" run {p.run_id} ({p.command})")
    if p.snapshots:
        out.line(f"  snapshots {_ranges(p.snapshots)}")
    if p.tags:
        out.line(f"  tags {', '.join(p.tags)}")
    counts: dict[str, int] = {}
    for item in p.items:
        counts[item.state] = counts.get(item.state, 0) + 1
    out.line("  files: " + (", ".join(f"{n} {s}" for s, n in sorted(counts.items())) or "none"))
    for conflict in p.conflicts:
        out.warn(f"conflict: {conflict}")
    if p.conflicts:
        out.line("  ", red("refused"), ": nothing would be moved")
    for note in p.notes:
        out.line(f"  note: {note}")
    if dry_run:
        out.table(
            None,
            ["state", "op", "kind", "path"],
            ([i.state, i.op, i.kind, out.rel(i.path)] for i in p.items),
            limit=SCREEN if len(p.items) > SCREEN + 5 else None,
            total=len(p.items),
        )
    if o.result is not None:
        r = o.result
        out.line(
            "  ",
            green("restored"),
            f" {r.restored} files ({human_bytes(r.bytes)}), "
            f"{r.already_in_place} already in place, {r.missing} missing, {r.seconds:.2f}s",
        )


def purge_quarantine(
    ctx: typer.Context,
    table: TableArg,
    older_than: Annotated[
        str | None,
        typer.Option(
            "--older-than",
            help="Only runs quarantined before this: a duration (7d), epoch millis, "
            "ISO-8601 or 'YYYY-MM-DD HH:MM:SS' (default: every quarantined run).",
            show_default=False,
        ),
    ] = None,
    dry_run: DryRunOpt = False,
    json_out: JsonOpt = False,
    quiet: QuietOpt = False,
    warehouse: WarehouseOpt = None,
    fs_option: FsOpt = None,
    max_rps: RateOpt = None,
    timezone: TimezoneOpt = None,
) -> None:
    """Delete quarantined runs for good (they can no longer be restored)."""
    from core.ops.purge_quarantine import PurgeQuarantine
    from core.runtime.clock import SystemClock
    from core.runtime.executors.local import LocalExecutor
    from core.runtime.timeparse import parse_instant, resolve_zone

    state = state_of(ctx)
    zone = as_usage_error(lambda: resolve_zone(timezone), "--timezone")
    now = SystemClock().now_ms()
    cutoff = now + 1
    if older_than is not None:
        cutoff = as_usage_error(
            lambda: parse_instant(older_than, now_ms=now, zone=zone), "--older-than"
        )
    out = Output(Mode.of(json_out, quiet), no_color=state.no_color)

    sel = Selection(
        table, warehouse, "main", parse_fs_options(fs_option), {}, max_requests_per_second=max_rps
    )
    executor = LocalExecutor(1)
    job = operation_job(
        "purge-quarantine",
        lambda _ex: PurgeQuarantine(cutoff),
        lambda: executor,
        run_request(dry_run=dry_run),
        out,
        to_json=lambda o: _purge_json(o, dry_run, cutoff),
        render=lambda o, output: _render_purge(o, output, dry_run),
    )
    try:
        run_job(sel, job, out, debug=state.debug)
    finally:
        executor.close()


def _purge_json(o: Outcome[list[PurgeRun], int], dry_run: bool, cutoff: int) -> dict[str, Any]:
    return {
        "dry_run": dry_run,
        "older_than": instant(cutoff),
        "runs": [
            {
                "run_id": r.run_id,
                "command": r.command,
                "created": instant(r.created_ms),
                "status": r.status,
                "files": len(r.files),
                "bytes": r.bytes,
            }
            for r in o.plan
        ],
        "totals": {
            "runs": len(o.plan),
            "files": sum(len(r.files) for r in o.plan),
            "bytes": sum(r.bytes for r in o.plan),
        },
        "report": None if o.report is None else {"status": "ok", "deleted": o.result or 0},
    }


def _render_purge(o: Outcome[list[PurgeRun], int], out: Output, dry_run: bool) -> None:
    from core.runtime.timeparse import iso_utc

    if out.mode is Mode.QUIET:
        if dry_run:
            for r in o.plan:
                for path, _size in r.files:
                    out.plain(path)
        return
    title = "purge-quarantine" + (" (dry run)" if dry_run else "")
    out.line(bold(title))
    if not o.plan:
        out.line("  nothing to do")
        return
    out.table(
        None,
        ["run", "command", "quarantined", "status", "files", "bytes"],
        (
            [
                r.run_id,
                r.command,
                iso_utc(r.created_ms),
                r.status,
                len(r.files),
                human_bytes(r.bytes),
            ]
            for r in o.plan
        ),
    )
    if o.report is not None:
        out.line("  ", green("deleted"), f" {o.result or 0} files of {len(o.plan)} run(s)")


def register(app: typer.Typer) -> None:
    app.command("restore", epilog=RESTORE_EPILOG)(restore)
    app.command("purge-quarantine", epilog=PURGE_EPILOG)(purge_quarantine)
