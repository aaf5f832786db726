"""Human rendering of plans and execution reports, shared by destructive commands."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace
from itertools import groupby
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from core.runtime.operation import Outcome
    from core.runtime.plans import Plan
    from core.runtime.report import ExecutionReport, PhaseReport
    from core.write.commit import CommitResult
    from paimon_cli.render import RunView
from core.runtime.wording import plural
from paimon_cli.convert import commit_json, plan_doc
from paimon_cli.output import Output, bold, green, human_bytes, human_elapsed, red, yellow


def deletion_document(o: Outcome[Plan[Any], Any], view: RunView) -> dict[str, Any]:
    """A deleting command's document: the plan and what was done."""
    return plan_doc(view.dry_run, o.plan, o.report.to_json() if o.report else None)


def journaled_document(o: Outcome[Plan[Any], Any], view: RunView) -> dict[str, Any]:
    """An expiry's document, with the unfinished runs a real run would finish first."""
    return {**deletion_document(o, view), "unfinished_journals": o.pending_journals}


def header(command: str, table: str, out: Output, view: RunView, suffix: str = "") -> None:
    """The first line: the command (a dry run says so) and the table."""
    title = command + (" (dry run)" if view.dry_run else "")
    out.line(bold(title), f" {table}{suffix}")


def deleting_header(command: str, plan: Plan[Any], out: Output, view: RunView) -> None:
    """The first line of an expiry: the table, and its branch when not main."""
    branch = f" (branch {plan.branch})" if plan.branch != "main" else ""
    header(command, plan.table, out, view, branch)


def unfinished_runs(o: Outcome[Any, Any], out: Output) -> None:
    """A dry run says how many interrupted runs a real run would finish first."""
    if o.pending_journals:
        out.line(
            "  ",
            yellow(
                f"{plural(o.pending_journals, 'unfinished run')} found: a real run finishes "
                + ("it" if o.pending_journals == 1 else "them")
                + " first"
            ),
        )


def commit_report(result: CommitResult | None) -> dict[str, Any] | None:
    """The report of a command whose work is one commit (None: nothing was committed)."""
    if result is None or result.snapshot is None:
        return None
    marked = len(result.changes.entries) if result.changes else 0
    return commit_json(result.snapshot, result.attempts, result.notes, files_marked_delete=marked)


def render_commit(out: Output, snapshot_id: int, summary: str, notes: Iterable[str]) -> None:
    """The "committed snapshot N (KIND)..." line of a commit, then its notes."""
    out.line("  ", green("committed"), f" snapshot {snapshot_id} {summary}")
    for note in notes:
        out.line(f"  note: {note}")


def render_plan(plan: Plan[Any], out: Output, *, show_actions: bool) -> None:
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
        listing=True,
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
    plan: Plan[Any],
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
            ["phase", "done", "already absent", "skipped", "failed", "bytes", "took"],
            (
                [
                    name,
                    p.done,
                    p.already_absent,
                    p.skipped,
                    len(p.failures),
                    human_bytes(p.bytes),
                    human_elapsed(p.seconds),
                ]
                for name, p in _grouped(report.phases)
            ),
        )
    for phase in report.phases:
        for path, error in phase.failures:
            out.line("  ", red("failed"), f" {path}: {error}")
    took = f" in {human_elapsed(report.seconds)}"
    if report.failed:
        out.line("  ", red("partial"), took, ": the journal stays and the next run finishes it")
    else:
        out.line("  ", green("done"), took)
