"""Human rendering of plans and execution reports, shared by destructive commands."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace
from itertools import groupby
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from core.runtime.plans import Plan
    from core.runtime.report import ExecutionReport, PhaseReport
from paimon_cli.output import Output, Part, green, human_bytes, human_duration, red

SCREEN = 40


class _Reported(Protocol):
    @property
    def report(self) -> ExecutionReport | None: ...


def report_failed(outcome: _Reported) -> bool:
    """A job's outcome failed when its execution report has failures (a dry run has none)."""
    return outcome.report is not None and outcome.report.failed


def render_commit(out: Output, snapshot_id: int, summary: str, notes: Iterable[str]) -> None:
    """The "committed snapshot N (KIND)..." line of a commit, then its notes."""
    out.line("  ", green("committed"), f" snapshot {snapshot_id} {summary}")
    for note in notes:
        out.line(f"  note: {note}")


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
    if totals["files"]:  # a plan that only writes (create-tag) has no totals to show
        out.table(None, ["kind", "files", "bytes"], rows)
    if not show_actions:
        return
    actions = [(p.name, a) for p in plan.phases for a in p.actions]
    out.table(
        None,
        ["phase", "op", "kind", "size", "path"],
        (
            [
                phase,
                a.op,
                a.kind,
                human_bytes(a.size) if a.size is not None else "-",
                out.rel(a.path, plan.table),
            ]
            for phase, a in actions
        ),
        limit=SCREEN,
        total=len(actions),
    )


def _batch_stem(name: str) -> str | None:
    """``orphan-files-2`` -> ``orphan-files``; None when the name is not a numbered batch."""
    stem, _, number = name.rpartition("-")
    return stem if stem and number.isdigit() else None


def _grouped(phases: list[PhaseReport]) -> list[tuple[str, PhaseReport]]:
    """Consecutive batches of one phase (``orphan-files-1``, ``-2``, ...) as one row."""
    rows: list[tuple[str, PhaseReport]] = []
    for stem, group in groupby(phases, key=lambda p: _batch_stem(p.name)):
        batch = list(group)
        if stem is None or len(batch) == 1:
            rows.extend((p.name, p) for p in batch)
            continue
        total = replace(
            batch[0],
            done=sum(p.done for p in batch),
            already_absent=sum(p.already_absent for p in batch),
            skipped=sum(p.skipped for p in batch),
            bytes=sum(p.bytes for p in batch),
            failures=[f for p in batch for f in p.failures],
            seconds=sum(p.seconds for p in batch),
        )
        rows.append((f"{stem} ({len(batch)} batches)", total))
    return rows


def render_plan_and_report(
    plan: Plan,
    notes: Iterable[str],
    report: ExecutionReport | None,
    out: Output,
    *,
    show_actions: bool,
) -> None:
    """A deleting command's tail: its plan, the plan's notes, then what the run did."""
    render_plan(plan, out, show_actions=show_actions)
    for note in notes:
        out.line(f"  note: {note}")
    if report is not None:
        render_report(report, out)


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
            out.line("  ", red("failed"), f" {path}: {error}")
    status: list[Part] = (
        [red("partial"), ": the journal stays and the next run finishes it"]
        if report.failed
        else [green("done")]
    )
    ms = round(report.seconds * 1000)
    out.line("  ", *status, f" in {human_duration(ms if ms < 1000 else ms - ms % 1000)}")
