"""Every command that changes a table first finishes (or discards) the journals of
interrupted runs (README "Pointers first, with a journal"): one helper for all of them."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from core.runtime.executors.base import Executor
    from core.runtime.report import ExecutionReport
    from core.table.table import PaimonTable
    from paimon_cli.output import Output


def finish_unfinished(
    table: PaimonTable, executor: Executor | None = None
) -> ExecutionReport | None:
    """Finish or discard what interrupted runs left; None when there was nothing."""
    from core.runtime.apply import finish_journals
    from core.runtime.executors.local import LocalExecutor
    from core.runtime.journal import journal_dir
    from core.runtime.report import ExecutionReport

    if not table.fileio.list_dir(journal_dir(table.location)):
        return None
    report = ExecutionReport()
    if executor is not None:
        finish_journals(table, executor=executor, report=report)
    else:
        with LocalExecutor(1) as local:
            finish_journals(table, executor=local, report=report)
    return report


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
            out.line(f"  [red]failed[/red] {path}: {error}", markup=True)
