"""restore and purge-quarantine: a quarantined run's files, back in place or gone for good."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from core.runtime.wording import plural
from paimon_cli.convert import instant
from paimon_cli.output import Output, bold, green, human_bytes, human_elapsed, human_time, red
from paimon_cli.render import Renderer, RunView
from paimon_cli.render.plans import header

if TYPE_CHECKING:
    from core.ops.undo.purge_quarantine import PurgePlan
    from core.ops.undo.restore_plan import RestorePlan, RestoreReport
    from core.runtime.operation import Outcome


def _restore_document(o: Outcome[RestorePlan, RestoreReport], view: RunView) -> dict[str, Any]:
    return {
        "dry_run": view.dry_run,
        "plan": o.plan.to_json(),
        "report": o.result.to_json() if o.result else None,
    }


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


def _restore_human(o: Outcome[RestorePlan, RestoreReport], out: Output, view: RunView) -> None:
    p = o.plan
    header("restore", f"run {p.run_id} ({p.command})", out, view)
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
    if view.dry_run:
        out.table(
            None,
            ["state", "op", "kind", "path"],
            ([i.state, i.op, i.kind, out.rel(i.path)] for i in p.items),
            listing=True,
        )
    if o.result is not None:
        r = o.result
        out.line(
            "  ",
            green("restored"),
            f" {plural(r.restored, 'file')} ({human_bytes(r.bytes)}), "
            f"{r.already_in_place} already in place, {r.missing} missing, "
            f"in {human_elapsed(r.seconds)}",
        )


def _restore_quiet(o: Outcome[RestorePlan, RestoreReport], _view: RunView) -> Iterator[str]:
    return (i.path for i in o.plan.items if i.state in ("move", "duplicate"))


RESTORE: Renderer[RestorePlan, RestoreReport] = Renderer(
    "restore",
    _restore_document,
    _restore_human,
    _restore_quiet,
    # A dry run that found conflicts fails too: the real run would be refused.
    lambda o, _view: bool(o.plan.conflicts),
)


def _purge_document(o: Outcome[PurgePlan, int], view: RunView) -> dict[str, Any]:
    runs = o.plan.runs
    return {
        "dry_run": view.dry_run,
        "older_than": instant(o.plan.older_than_ms),
        "runs": [
            {
                "run_id": r.run_id,
                "command": r.command,
                "created": instant(r.created_ms),
                "status": r.status,
                "files": len(r.files),
                "bytes": r.bytes,
            }
            for r in runs
        ],
        "totals": {"runs": len(runs), "files": o.plan.files, "bytes": o.plan.bytes},
        "report": None if o.report is None else {"status": "ok", "deleted": o.result or 0},
    }


def _purge_human(o: Outcome[PurgePlan, int], out: Output, view: RunView) -> None:
    title = "purge-quarantine" + (" (dry run)" if view.dry_run else "")
    out.line(bold(title))
    runs = o.plan.runs
    if not runs:
        out.line("  nothing to do")
        return
    out.table(
        None,
        ["run", "command", "quarantined", "status", "files", "bytes"],
        (
            [
                r.run_id,
                r.command,
                human_time(r.created_ms, view.zone),
                r.status,
                len(r.files),
                human_bytes(r.bytes),
            ]
            for r in runs
        ),
    )
    if o.report is not None:
        deleted = plural(o.result or 0, "file")
        out.line("  ", green("deleted"), f" {deleted} of {plural(len(runs), 'run')}")


def _purge_quiet(o: Outcome[PurgePlan, int], _view: RunView) -> Iterator[str]:
    return (path for r in o.plan.runs for path, _size in r.files)


PURGE: Renderer[PurgePlan, int] = Renderer(
    "purge-quarantine", _purge_document, _purge_human, _purge_quiet
)
