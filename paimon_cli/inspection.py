"""inspect: the views of a table (read, never changed) and its --check, on each selected
table; the views' JSON and human forms are in ``paimon_cli.render.inspect``."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from core.catalog.catalog import Catalog
    from core.format.model import Snapshot
    from core.ops.inspection.check import CheckReport, CheckScope
    from core.ops.inspection.inspect import Summary
    from core.runtime.executors.base import Executor
    from core.table.table import PaimonTable
    from paimon_cli.shared import Common
from core.runtime.wording import plural
from paimon_cli.engine import ExecutorHolder
from paimon_cli.progress import progress_for
from paimon_cli.render import inspect as render
from paimon_cli.render.inspect import View
from paimon_cli.selection import CatalogFinding, TableJob, run_job


@dataclass(frozen=True, slots=True)
class ViewRequest:
    view: View
    snapshot: int | None  # files, manifests, partitions: this snapshot (default: latest)
    tag: str | None  # ... or this tag's
    skip_storage: bool  # summary: do not list storage
    zone: dt.tzinfo


def _pick_snapshot(table: PaimonTable, req: ViewRequest) -> Snapshot | None:
    from core.errors import MissingFileError

    if req.tag is not None:
        try:
            return table.tags.tag(req.tag).snapshot
        except MissingFileError:
            raise table.tags.missing(req.tag) from None
    if req.snapshot is not None:
        found = table.snapshots.try_snapshot(req.snapshot)
        if found is None:
            raise table.snapshots.missing(req.snapshot)
        return found
    return table.snapshots.latest()


def _summary(table: PaimonTable, req: ViewRequest, executor: Executor, now: int) -> Any:
    from core.ops.inspection.inspect import summarize

    storage = not req.skip_storage
    return summarize(table, now_ms=now, executor=executor, zone=req.zone, storage=storage)


def _retention(table: PaimonTable, req: ViewRequest, _executor: Executor, now: int) -> Any:
    from core.ops.inspection.inspect import retention_view

    consumers, tags = table.consumers.consumers(), table.tags.tags()
    return retention_view(table, now, consumers, tags, req.zone)


def _branches(table: PaimonTable, *_: Any) -> list[dict[str, Any]]:
    rows = []
    for name in table.branches.branches():
        b = table.for_branch(name)
        rows.append(
            {
                "name": name,
                "earliest_snapshot": b.snapshots.earliest_id(),
                "latest_snapshot": b.snapshots.latest_id(),
                "tags": b.tags.names(),
                "schema_id": b.schema.id,
            }
        )
    return rows


def _schema(table: PaimonTable, *_: Any) -> dict[str, Any]:
    schema = table.schema
    return {
        "id": schema.id,
        "fields": [{"id": f.id, "name": f.name, "type": str(f.type)} for f in schema.fields],
        "partition_keys": list(schema.partition_keys),
        "primary_keys": list(schema.primary_keys),
        "comment": schema.comment,
        "schema_ids": table.schemas.ids(),
    }


def _options(table: PaimonTable, *_: Any) -> list[dict[str, Any]]:
    return [
        {"key": k, "value": v.value, "source": v.source}
        for k, v in table.options.effective().items()
    ]


def _runs(table: PaimonTable, *_: Any) -> list[dict[str, Any]]:
    from core.runtime.runs import read_records

    return read_records(table.fileio, table.location)


def _of_snapshot(table: PaimonTable, req: ViewRequest, _executor: Executor, _now: int) -> Any:
    """files, manifests and partitions: of the latest snapshot, or --snapshot / --tag."""
    from core.ops.inspection.inspect import file_rows, manifest_rows, partition_rows

    snap = _pick_snapshot(table, req)
    if snap is None:
        return []
    if req.view is View.manifests:
        return manifest_rows(table, snap)
    live = table.live_files(snap)
    if req.view is View.files:
        return file_rows(table, live, zone=req.zone)
    return partition_rows(table, live)


Builder = Callable[[Any, ViewRequest, Any, int], Any]
_BUILDERS: dict[View, Builder] = {
    View.summary: _summary,
    View.snapshots: lambda table, *_: table.snapshots.snapshots(),
    View.tags: lambda table, *_: table.tags.tags(),
    View.consumers: lambda table, *_: table.consumers.consumers(),
    View.branches: _branches,
    View.schema: _schema,
    View.options: _options,
    View.runs: _runs,
    View.retention: _retention,
    View.files: _of_snapshot,
    View.manifests: _of_snapshot,
    View.partitions: _of_snapshot,
}


def build_view(table: PaimonTable, req: ViewRequest, executor: Executor) -> Any:
    """What the view shows, as engine values (``render.inspect`` makes JSON of them)."""
    from core.runtime.clock import SystemClock

    return _BUILDERS[req.view](table, req, executor, SystemClock().now_ms())


def write_table_gauges(summary: Summary, path: Path) -> None:
    """The summary's table gauges, merged into the metrics file."""
    from core.ops.maintain.maintain import table_name
    from core.ops.maintain.metrics import table_gauges
    from core.runtime.clock import SystemClock

    gauges = table_gauges(summary, now_ms=SystemClock().now_ms())
    _write_gauges(path, gauges.samples(table_name(summary.table.location)))


def write_integrity_gauges(table: PaimonTable, report: CheckReport, path: Path) -> None:
    """The check's integrity gauges, merged into the metrics file."""
    from core.ops.maintain.maintain import table_name
    from core.ops.maintain.metrics import integrity_samples
    from core.runtime.clock import SystemClock

    samples = integrity_samples(report, table_name(table.location), now_ms=SystemClock().now_ms())
    _write_gauges(path, samples)


def _write_gauges(path: Path, samples: Any) -> None:
    from core.errors import StorageError
    from core.ops.maintain.metrics import write_metrics

    try:
        write_metrics(str(path), samples)
    except OSError as exc:
        raise StorageError(f"cannot write the metrics file {path}: {exc}") from None


def inspect_tables(
    common: Common, req: ViewRequest, *, scope: CheckScope | None, metrics_file: Path | None
) -> None:
    """The view (or, given a ``scope``, ``--check``) of every selected table."""
    from core.ops.inspection.check import check_table

    out = common.output
    holder = ExecutorHolder(common.engine)
    job: TableJob[Any]
    if scope is not None:

        def check_of(table: PaimonTable) -> CheckReport:
            report = check_table(
                table, executor=holder.get(), progress=progress_for(out), scope=scope
            )
            if metrics_file is not None:
                write_integrity_gauges(table, report, metrics_file)
            return report

        job = TableJob(
            "inspect",
            check_of,
            render.check_json,
            render.render_check,
            failed=lambda r: not r.ok,
            damaged=lambda r: not r.ok,
        )
    else:

        def view_of(table: PaimonTable) -> Any:
            value = build_view(table, req, holder.get())
            if metrics_file is not None:
                write_table_gauges(value, metrics_file)
            return value

        job = TableJob(
            "inspect",
            view_of,
            lambda value: {
                "view": req.view.value,
                req.view.value: render.view_json(req.view, value, req.zone),
            },
            lambda value, o: render.render_view(req.view, value, o, req.zone),
        )
    drift = _catalog_drift(common.selection.spec) if scope is not None else None
    try:
        run_job(common.selection, job, out, debug=common.debug, about_catalog=drift)
    finally:
        holder.close()


def _catalog_drift(spec: str) -> Callable[[Catalog], CatalogFinding]:
    """--check over a catalog also checks the catalog against its warehouse."""

    def judge(catalog: Catalog) -> CatalogFinding:
        from core.ops.inspection.catalog_drift import catalog_drift

        found = catalog_drift(catalog, spec)
        lines = [f"catalog {catalog.name}: {plural(len(found), 'drift')} from its warehouse"]
        lines += [f"  {d.kind}: {d.message}" for d in found]
        doc = [
            {"kind": d.kind, "identifier": d.identifier, "location": d.location}
            | ({"detail": d.detail} if d.detail else {})
            for d in found
        ]
        return CatalogFinding({"catalog_drift": doc}, lines, damaged=bool(found))

    return judge
