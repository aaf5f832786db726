"""Run a command body on one table or on every table a glob selects (each in isolation)."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, TypeVar

import typer

if TYPE_CHECKING:
    from core.runtime.runs import Run
    from core.table.table import PaimonTable
from paimon_cli.errors import EXIT_FAILURE, guard, report_error
from paimon_cli.output import SCHEMA_VERSION, Output

logger = logging.getLogger(__name__)

R = TypeVar("R")


@dataclass(frozen=True)
class TableJob(Generic[R]):
    command: str
    run: Callable[[PaimonTable], R]
    to_json: Callable[[R], dict[str, Any]]
    render: Callable[[R, Output], None]
    failed: Callable[[R], bool] = lambda _result: False
    # A real (not --dry-run) run changes the table: it leaves a run record (core.runtime.runs).
    changes: bool = True


@dataclass(frozen=True)
class Selection:
    spec: str
    warehouse: str | None
    branch: str
    fs_options: dict[str, str]
    dynamic_options: dict[str, str]
    max_requests_per_second: float | None = None


def document(command: str, table: str, body: dict[str, Any]) -> dict[str, Any]:
    return {"command": command, "schema_version": SCHEMA_VERSION, "table": table, **body}


def command_params() -> dict[str, Any]:
    """The parsed options of the running command (empty outside a command)."""
    try:  # Typer >= 0.26 vendors Click: its context stack is not click's
        from typer._click.globals import get_current_context
    except ImportError:  # pragma: no cover - older Typer uses click itself
        from click import get_current_context  # type: ignore[no-redef]
    ctx = get_current_context(silent=True)
    return dict(ctx.params) if ctx is not None else {}


def _start_run(job: TableJob[Any]) -> Run | None:
    """A run record for a real run of a changing command; its options come from the command
    line (``--quarantine``, also through PAIMON_CLI_QUARANTINE, turns quarantine on)."""
    from core.runtime.runs import start_run

    params = command_params()
    if not job.changes or params.get("dry_run"):
        return None
    return start_run(job.command, params, quarantine=bool(params.get("quarantine")))


def _run_table(job: TableJob[R], table: PaimonTable) -> tuple[R, dict[str, Any]]:
    """Run the job on one table inside its run record; returns the result and its extra
    JSON keys (``run_id``)."""
    from core.errors import PaimonError
    from core.runtime.runs import run_scope, write_record

    run = _start_run(job)
    if run is None:
        return job.run(table), {}
    with run_scope(run):
        try:
            result = job.run(table)
        except PaimonError as exc:
            if run.acted:  # refused before any change: nothing to record
                write_record(
                    table.fileio,
                    table.location,
                    run,
                    branch=table.branch,
                    status="failed",
                    error=exc.message,
                )
            raise
    status = "partial" if job.failed(result) else "ok"
    write_record(table.fileio, table.location, run, branch=table.branch, status=status)
    return result, {"run_id": run.id}


def run_job(sel: Selection, job: TableJob[R], out: Output, *, debug: bool) -> None:
    from core.errors import PaimonError
    from core.io.fileio import FileIO
    from core.table.table import open_table
    from core.table.warehouse import is_glob, resolve_tables

    as_json = out.mode.value == "json"
    fileio = FileIO(sel.fs_options, max_requests_per_second=sel.max_requests_per_second)
    if not is_glob(sel.spec):
        with guard(as_json=as_json, debug=debug):
            locations = resolve_tables(sel.spec, sel.warehouse, fileio)
            table = open_table(
                locations[0], fileio=fileio, branch=sel.branch, dynamic_options=sel.dynamic_options
            )
            result, extra = _run_table(job, table)
            out.table_root = table.location
            if as_json:
                out.json(document(job.command, table.location, {**job.to_json(result), **extra}))
            else:
                job.render(result, out)
        if job.failed(result):
            raise typer.Exit(EXIT_FAILURE)
        return
    with guard(as_json=as_json, debug=debug):
        locations = resolve_tables(sel.spec, sel.warehouse, fileio)
    docs: list[dict[str, Any]] = []
    failures = 0
    for location in locations:
        try:
            table = open_table(
                location, fileio=fileio, branch=sel.branch, dynamic_options=sel.dynamic_options
            )
            result, extra = _run_table(job, table)
        except PaimonError as exc:
            failures += 1
            docs.append(
                {
                    "table": location,
                    "status": "failed",
                    "error": {"kind": exc.kind, "message": exc.message},
                }
            )
            if not as_json:
                report_error(exc.kind, f"{location}: {exc.message}", exc.hint, as_json=False)
            continue
        bad = job.failed(result)
        failures += int(bad)
        docs.append(
            {
                "table": location,
                "status": "failed" if bad else "ok",
                **job.to_json(result),
                **extra,
            }
        )
        if not as_json:
            out.table_root = table.location
            out.line(f"[bold]== {location}[/bold]")
            job.render(result, out)
            out.line()
    if as_json:
        out.json(
            {
                "command": job.command,
                "schema_version": SCHEMA_VERSION,
                "tables": docs,
                "summary": {"tables": len(locations), "failed": failures},
            }
        )
    else:
        out.line(f"{len(locations)} tables, {failures} failed")
    if failures:
        raise typer.Exit(EXIT_FAILURE)
