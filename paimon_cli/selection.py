"""Run a command body on one table or on every table a glob selects (each in isolation)."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, TypeVar

import typer

if TYPE_CHECKING:
    from core.catalog.catalog import Catalog, TableRef
    from core.runtime.executors.base import Executor
    from core.runtime.operation import Operation, Outcome
    from core.table.table import PaimonTable
from core.runtime.wording import plural
from paimon_cli.engine import ExecutorHolder
from paimon_cli.errors import EXIT_DAMAGED, EXIT_FAILURE, guard, report_error
from paimon_cli.output import SCHEMA_VERSION, Output, bold
from paimon_cli.progress import progress_for
from paimon_cli.render import Renderer, RunView
from paimon_cli.shared import Common, Selection

logger = logging.getLogger(__name__)

R = TypeVar("R")
P = TypeVar("P")
T = TypeVar("T")


@dataclass(frozen=True)
class TableJob(Generic[R]):
    command: str
    run: Callable[[PaimonTable], R]
    to_json: Callable[[R], dict[str, Any]]
    render: Callable[[R, Output], None]
    failed: Callable[[R], bool] = lambda _result: False
    # A check that ran and found damage (exit 3, not 1: "checked: damaged", not "failed").
    damaged: Callable[[R], bool] = lambda _result: False
    # Keys added to the table's JSON document (the run record's id).
    extra: Callable[[R], dict[str, Any]] = lambda _result: {}


@dataclass(frozen=True)
class CatalogFinding:
    """What a job judges of the catalog itself, after its tables (inspect --check: drift
    between the catalog and its warehouse)."""

    document: dict[str, Any]  # keys added to the glob's JSON document
    lines: list[str]  # its human form
    damaged: bool  # the check found drift (exit 3, as a damaged table)


def document(command: str, table: str, body: dict[str, Any]) -> dict[str, Any]:
    return {"command": command, "schema_version": SCHEMA_VERSION, "table": table, **body}


def run_operation(
    common: Common,
    operation: Callable[[Executor], Operation[P, T]],
    renderer: Renderer[P, T],
) -> None:
    """A changing command on each selected table, through the one lifecycle
    (``core.ops.lifecycle.run``), shown by its renderer; ``operation`` is built per table
    for the executor used (``--engine``)."""
    from core.ops.lifecycle import run

    out = common.output
    holder = ExecutorHolder(common.engine)
    request = common.run_request()
    shown = RunView(common.dry_run, common.zone)

    def run_one(table: PaimonTable) -> Outcome[P, T]:
        ex = holder.get()
        return run(operation(ex), table, executor=ex, progress=progress_for(out), request=request)

    job = TableJob(
        renderer.command,
        run_one,
        lambda o: renderer.document(o, shown),
        lambda o, output: renderer.show(o, output, shown),
        failed=lambda o: renderer.failed(o, shown),
        extra=lambda o: {"run_id": o.run_id} if o.run_id else {},
    )
    try:
        run_job(common.selection, job, out, debug=common.debug)
    finally:
        holder.close()


def _run_table(job: TableJob[R], table: PaimonTable) -> tuple[R, dict[str, Any]]:
    """Run the job on one table; returns the result and its extra JSON keys."""
    result = job.run(table)
    return result, job.extra(result)


def run_job(
    sel: Selection,
    job: TableJob[R],
    out: Output,
    *,
    debug: bool,
    about_catalog: Callable[[Catalog], CatalogFinding] | None = None,
) -> None:
    """Run ``job`` on each table ``sel`` names, through the run's one catalog; over a glob
    in a configured catalog, ``about_catalog`` then judges the catalog itself."""
    from core.errors import PaimonError, RunInterruptedError
    from core.table.warehouse import is_glob

    as_json = out.mode.value == "json"
    with guard(as_json=as_json, debug=debug):
        catalog = sel.open_catalog()
    try:
        if not is_glob(sel.spec):
            _run_single(catalog, sel, job, out, as_json=as_json, debug=debug)
            return
        with guard(as_json=as_json, debug=debug):
            refs = catalog.resolve(sel.spec)
        docs: list[dict[str, Any]] = []
        failures = damaged = 0
        # An interrupt stops the whole command (guard: its exit code), never one table only.
        with guard(as_json=as_json, debug=debug):
            for ref in refs:
                try:
                    table = catalog.load_table(
                        ref, branch=sel.branch, dynamic_options=sel.dynamic_options
                    )
                    result, extra = _run_table(job, table)
                except RunInterruptedError:
                    raise
                except PaimonError as exc:
                    failures += 1
                    docs.append(
                        {
                            "table": ref.location,
                            **_named(catalog, ref),
                            "status": "failed",
                            "error": {"kind": exc.kind, "message": exc.message},
                        }
                    )
                    if not as_json:
                        report_error(
                            exc.kind, f"{ref.name}: {exc.message}", exc.hint, as_json=False
                        )
                    continue
                bad = job.failed(result)
                failures += int(bad)
                damaged += int(job.damaged(result))
                docs.append(
                    {
                        "table": ref.location,
                        **_named(catalog, ref),
                        "status": "failed" if bad else "ok",
                        **job.to_json(result),
                        **extra,
                    }
                )
                if not as_json:
                    out.table_root = table.location
                    out.line(bold(f"== {ref.name}"))
                    job.render(result, out)
                    out.line()
        finding = None
        if about_catalog is not None and catalog.configured:
            with guard(as_json=as_json, debug=debug):
                finding = about_catalog(catalog)
    finally:
        catalog.close()
    if as_json:
        out.json(
            {
                "command": job.command,
                "schema_version": SCHEMA_VERSION,
                "tables": docs,
                **(finding.document if finding else {}),
                "summary": {"tables": len(refs), "failed": failures},
            }
        )
    else:
        for line in finding.lines if finding else []:
            out.line(line)
        out.line(f"{plural(len(refs), 'table')}, {failures} failed")
    # Damage found (a table's, or drift between the catalog and its warehouse) outranks
    # other failures: it is what a gate must not miss.
    if damaged or (finding and finding.damaged):
        raise typer.Exit(EXIT_DAMAGED)
    if failures:
        raise typer.Exit(EXIT_FAILURE)


def _named(catalog: Catalog, ref: TableRef) -> dict[str, Any]:
    """A table's ``db.table`` in a configured catalog, beside its location in the JSON
    documents (those of paths and --warehouse stay as they were)."""
    return {"identifier": ref.name} if ref.identifier is not None and catalog.configured else {}


def _run_single(
    catalog: Catalog, sel: Selection, job: TableJob[R], out: Output, *, as_json: bool, debug: bool
) -> None:
    with guard(as_json=as_json, debug=debug):
        ref = catalog.resolve(sel.spec)[0]
        table = catalog.load_table(ref, branch=sel.branch, dynamic_options=sel.dynamic_options)
        result, extra = _run_table(job, table)
        out.table_root = table.location
        if as_json:
            body = {**_named(catalog, ref), **job.to_json(result), **extra}
            out.json(document(job.command, table.location, body))
        else:
            job.render(result, out)
    if job.damaged(result):
        raise typer.Exit(EXIT_DAMAGED)
    if job.failed(result):
        raise typer.Exit(EXIT_FAILURE)
