"""How commands whose own report is a commit show the journals of interrupted runs that
the lifecycle finished (or discarded) before planning (docs/safety.md "Pointers first")."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from paimon_cli.output import red

if TYPE_CHECKING:
    from core.runtime.report import ExecutionReport
    from paimon_cli.output import Output


def journals_of(report: ExecutionReport | None) -> ExecutionReport | None:
    """The run's report when it finished or discarded journals (or removed their temp
    files): a committing command's own report is its commit, so this is all it shows."""
    if report is None:
        return None
    if report.journal_plans or report.notes:
        return report
    return None


def journals_json(report: ExecutionReport | None) -> dict[str, Any] | None:
    """The ``journals`` key of commands whose own report is a commit (additive)."""
    return None if report is None else report.to_json()


def render_journals(report: ExecutionReport | None, out: Output) -> None:
    if report is None:
        return
    for journal in report.resumed_journals:
        out.line(f"  finished an interrupted run first (journal {journal})")
    for note in report.notes:
        out.line(f"  note: {note}")
    for phase in report.phases:
        for path, error in phase.failures:
            out.line("  ", red("failed"), f" {path}: {error}")
