"""Human rendering of plans and execution reports, shared by destructive commands."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from core.plans import Plan
    from core.report import ExecutionReport, PhaseReport
from paimon_cli.output import Output, human_bytes

SCREEN = 40


def render_plan(plan: Plan, out: Output, *, show_actions: bool) -> None:
    totals = plan.totals()
    if plan.empty:
        out.line("  nothing to do")
        return
    # Sizes of snapshot files and manifest lists are not recorded: say "-", not "0 B".
    sized = {a.kind for p in plan.phases for a in p.actions if a.size is not None}
    rows = [
        (kind, v["files"], human_bytes(v["bytes"]) if kind in sized else "-")
        for kind, v in totals["by_kind"].items()
    ]
    rows.append(("total", totals["files"], human_bytes(totals["bytes"])))
    out.table(None, ["kind", "files", "bytes"], rows)
    if not show_actions:
        return
    actions = [(p.name, a) for p in plan.phases for a in p.actions]
    root = plan.table + "/"
    out.table(
        None,
        ["phase", "op", "kind", "size", "path"],
        (
            [
                phase,
                a.op,
                a.kind,
                human_bytes(a.size) if a.size is not None else "-",
                a.path[len(root) :] if a.path.startswith(root) else a.path,
            ]
            for phase, a in actions
        ),
        limit=SCREEN,
        total=len(actions),
    )


def _grouped(phases: list[PhaseReport]) -> list[tuple[str, PhaseReport]]:
    """Consecutive batches of one phase (``orphan-files-1``, ``-2``, ...) as one row."""
    rows: list[tuple[str, PhaseReport, int]] = []
    for p in phases:
        stem, _, number = p.name.rpartition("-")
        if stem and number.isdigit() and rows and rows[-1][0] == stem and rows[-1][2] > 0:
            _, acc, count = rows[-1]
            acc.done += p.done
            acc.already_absent += p.already_absent
            acc.skipped += p.skipped
            acc.bytes += p.bytes
            acc.failures = acc.failures + p.failures
            acc.seconds += p.seconds
            rows[-1] = (stem, acc, count + 1)
        elif stem and number.isdigit():
            rows.append((stem, replace(p, failures=list(p.failures)), 1))
        else:
            rows.append((p.name, p, 0))
    return [
        (f"{name} ({count} batches)" if count > 1 else p.name if count == 1 else name, p)
        for name, p, count in rows
    ]


def render_report(report: ExecutionReport, out: Output) -> None:
    for journal in report.resumed_journals:
        out.line(f"  finished an interrupted run first (journal {journal})")
    for note in report.notes:
        out.line(f"  note: {note}")
    if report.phases:
        out.table(
            None,
            ["phase", "done", "already absent", "skipped", "failed", "bytes", "seconds"],
            (
                [
                    name,
                    p.done,
                    p.already_absent,
                    p.skipped,
                    len(p.failures),
                    human_bytes(p.bytes),
                    f"{p.seconds:.2f}",
                ]
                for name, p in _grouped(report.phases)
            ),
        )
    for phase in report.phases:
        for path, error in phase.failures:
            out.line(f"  [red]failed[/red] {path}: {error}", markup=True)
    status = (
        "[red]partial[/red]: the journal stays and the next run finishes it"
        if report.failed
        else "[green]done[/green]"
    )
    out.line(f"  {status} in {report.seconds:.2f}s")
