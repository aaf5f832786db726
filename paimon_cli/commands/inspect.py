"""paimon inspect: what is in a table, what retention would do, and whether it is intact."""

from __future__ import annotations

from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

if TYPE_CHECKING:
    from core.format.model import Snapshot
    from core.ops.check import CheckReport
    from core.ops.inspect import Summary
    from core.runtime.executors.base import Executor
    from core.table.table import PaimonTable
from paimon_cli.convert import consumer_json, instant, plain, snapshot_json, tag_json
from paimon_cli.engine import EngineChoice, ExecutorHolder
from paimon_cli.output import (
    Mode,
    Output,
    bold,
    green,
    human_bytes,
    human_duration,
    human_limit,
    human_time,
    human_wall_clock,
    plural,
    red,
)
from paimon_cli.params import (
    BranchOpt,
    Engine,
    EngineOpt,
    FsOpt,
    JsonOpt,
    ParallelismOpt,
    RateOpt,
    SparkConfOpt,
    SparkMasterOpt,
    SparkRemoteOpt,
    TableArg,
    TimezoneOpt,
    WarehouseOpt,
    as_usage_error,
    parse_fs_options,
)
from paimon_cli.progress import progress_for
from paimon_cli.selection import Selection, TableJob, run_job
from paimon_cli.state import state_of


class View(str, Enum):
    summary = "summary"
    snapshots = "snapshots"
    files = "files"
    manifests = "manifests"
    partitions = "partitions"
    tags = "tags"
    consumers = "consumers"
    branches = "branches"
    schema = "schema"
    options = "options"
    retention = "retention"
    runs = "runs"


SCREEN = 40

EPILOG = """Examples:

  paimon inspect s3://lake/wh/db.db/orders

  paimon inspect orders --warehouse /wh -w /wh files --snapshot 12 --json

  paimon inspect /wh/db.db/orders --check
"""


def inspect(
    ctx: typer.Context,
    table: TableArg,
    view: Annotated[View, typer.Argument(help="What to show.")] = View.summary,
    snapshot: Annotated[
        int | None,
        typer.Option(
            "--snapshot",
            help="Snapshot id for files, manifests and partitions (default: latest).",
            show_default=False,
        ),
    ] = None,
    tag: Annotated[
        str | None,
        typer.Option(
            "--tag",
            help="Tag for files, manifests and partitions instead of a snapshot.",
            show_default=False,
        ),
    ] = None,
    check: Annotated[
        bool,
        typer.Option(
            "--check",
            help="Verify that every file referenced by "
            "every snapshot, tag and changelog exists with its recorded size; exit 1 "
            "and list the problems otherwise.",
        ),
    ] = False,
    skip_storage: Annotated[
        bool,
        typer.Option(
            "--skip-storage",
            help="Summary: do not list storage to total the bytes on disk (faster on huge tables).",
        ),
    ] = False,
    warehouse: WarehouseOpt = None,
    branch: BranchOpt = "main",
    fs_option: FsOpt = None,
    max_rps: RateOpt = None,
    parallelism: ParallelismOpt = None,
    engine: EngineOpt = Engine.local,
    spark_master: SparkMasterOpt = None,
    spark_remote: SparkRemoteOpt = None,
    spark_conf: SparkConfOpt = None,
    timezone: TimezoneOpt = None,
    json_out: JsonOpt = False,
    metrics_file: Annotated[
        Path | None,
        typer.Option(
            "--metrics-file",
            help="Summary: also write the paimon_table_* gauges to this Prometheus text "
            "file (replaced atomically; other tables' series are kept).",
            show_default=False,
            dir_okay=False,
        ),
    ] = None,
) -> None:
    """Show a table's snapshots, files, partitions, tags and retention; or check its integrity."""
    from core.ops.check import check_table
    from core.runtime.timeparse import resolve_zone

    state = state_of(ctx)
    if snapshot is not None and tag is not None:
        raise typer.BadParameter("give --snapshot or --tag, not both")
    if metrics_file is not None and (check or view is not View.summary):
        raise typer.BadParameter(
            "goes with the summary view (not --check)", param_hint="--metrics-file"
        )
    out = Output(Mode.JSON if json_out else Mode.HUMAN, no_color=state.no_color)
    zone = as_usage_error(lambda: resolve_zone(timezone), "--timezone")
    sel = Selection(
        table, warehouse, branch, parse_fs_options(fs_option), {}, max_requests_per_second=max_rps
    )
    holder = ExecutorHolder(
        EngineChoice.of(engine, parallelism, spark_master, spark_remote, spark_conf)
    )
    try:
        if check:
            job: TableJob[Any] = TableJob(
                "inspect",
                lambda t: check_table(t, executor=holder.get(), progress=progress_for(out)),
                _check_json,
                lambda r, o: _render_check(r, o),
                failed=lambda r: not r.ok,
            )
        else:
            job = TableJob(
                "inspect",
                lambda t: _with_metrics(
                    _build_view(t, view, snapshot, tag, holder.get(), zone, skip_storage),
                    metrics_file,
                ),
                lambda r: {"view": view.value, view.value: r[1]},
                lambda r, o: _RENDER[view](r[0], r[1], o, zone),
            )
        run_job(sel, job, out, debug=state.debug)
    finally:
        holder.close()


def _with_metrics(built: tuple[Any, Any], path: Path | None) -> tuple[Any, Any]:
    """Write the summary's table gauges (merged into the file) and pass the view on."""
    if path is None:
        return built
    from core.errors import StorageError
    from core.ops.maintain import table_name
    from core.ops.metrics import table_gauges, write_metrics
    from core.runtime.clock import SystemClock

    summary = built[0]
    gauges = table_gauges(summary, now_ms=SystemClock().now_ms())
    try:
        write_metrics(str(path), gauges.samples(table_name(summary.table.location)))
    except OSError as exc:
        raise StorageError(f"cannot write the metrics file {path}: {exc}") from None
    return built


# -- building views ---------------------------------------------------------------------------
def _pick_snapshot(table: PaimonTable, snapshot: int | None, tag: str | None) -> Snapshot | None:
    from core.errors import MissingFileError

    if tag is not None:
        return table.tags.tag(tag).snapshot
    if snapshot is not None:
        found = table.snapshots.try_snapshot(snapshot)
        if found is None:
            raise MissingFileError(table.snapshots.path(snapshot), f"snapshot {snapshot}")
        return found
    return table.snapshots.latest()


def _build_view(
    table: PaimonTable,
    view: View,
    snapshot: int | None,
    tag: str | None,
    executor: Executor,
    zone: Any,
    skip_storage: bool,
) -> tuple[Any, Any]:
    from core.ops.inspect import file_rows, manifest_rows, partition_rows, retention_view, summarize
    from core.runtime.clock import SystemClock

    now = SystemClock().now_ms()
    if view is View.summary:
        s = summarize(table, now_ms=now, executor=executor, zone=zone, storage=not skip_storage)
        return s, _summary_json(s)
    if view is View.snapshots:
        snaps = table.snapshots.snapshots()
        return snaps, [snapshot_json(s) for s in snaps]
    if view is View.tags:
        tags = table.tags.tags()
        return tags, [tag_json(t) for t in tags]
    if view is View.consumers:
        consumers = table.consumers.consumers()
        return consumers, [consumer_json(c) for c in consumers]
    if view is View.branches:
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
        return rows, rows
    if view is View.schema:
        schema = table.schema
        data = {
            "id": schema.id,
            "fields": [{"id": f.id, "name": f.name, "type": str(f.type)} for f in schema.fields],
            "partition_keys": list(schema.partition_keys),
            "primary_keys": list(schema.primary_keys),
            "comment": schema.comment,
            "schema_ids": table.schemas.ids(),
        }
        return data, data
    if view is View.options:
        rows = [
            {"key": k, "value": v.value, "source": v.source}
            for k, v in table.options.effective().items()
        ]
        return rows, rows
    if view is View.runs:
        from core.runtime.runs import read_records

        records = read_records(table.fileio, table.location)
        return records, records
    if view is View.retention:
        r = retention_view(table, now, table.consumers.consumers(), table.tags.tags(), zone)
        return r, _retention_json(r)
    snap = _pick_snapshot(table, snapshot, tag)
    if snap is None:
        return [], []
    if view is View.manifests:
        manifests = manifest_rows(table, snap)
        return manifests, plain(manifests)
    live = table.live_files(snap)
    if view is View.files:
        files = file_rows(table, live, zone=zone)
        return files, [_file_json(row) for row in plain(files)]
    parts = partition_rows(table, live)
    return parts, plain(parts)


def _file_json(row: dict[str, Any]) -> dict[str, Any]:
    """A file row; ``created`` is the creation time as every other time in JSON."""
    return {**row, "created": instant(row.pop("creation_ms"))}


def _retention_json(r: Any) -> dict[str, Any]:
    rng = r.range
    return {
        "config": r.config,
        "earliest_snapshot": rng.earliest,
        "latest_snapshot": rng.latest,
        "expire_until": rng.end,
        "expirable_snapshots": r.expirable,
        "kept_snapshots": r.kept,
        "stopped_by": rng.stop,
        "stop_detail": rng.stop_detail,
        "blocking_consumer": rng.blocking_consumer,
        "stale_consumers": list(r.stale_consumers),
        "tags_due_to_expire": list(r.tags_due),
        "changelogs": None
        if r.changelogs is None
        else {
            "decoupled": r.changelogs.decoupled,
            "count": r.changelogs.count,
            "earliest": r.changelogs.earliest,
            "latest": r.changelogs.latest,
            "expirable": r.changelogs.expirable,
            "stopped_by": r.changelogs.stop,
            "stop_detail": r.changelogs.stop_detail,
        },
    }


def _summary_json(s: Summary) -> dict[str, Any]:
    t = s.table
    return {
        "location": t.location,
        "branch": t.branch,
        "schema_id": t.schema.id,
        "primary_keys": list(t.schema.primary_keys),
        "partition_keys": list(t.schema.partition_keys),
        "bucket": t.options.bucket,
        "file_format": t.options.get("file.format"),
        "snapshots": {
            "count": s.snapshot_count,
            "earliest": s.earliest,
            "latest": s.latest.id if s.latest else None,
        },
        "latest_snapshot": snapshot_json(s.latest) if s.latest else None,
        "live": {
            "files": s.live_files,
            "records": s.live_records,
            "reader_rows": s.reader_rows,
            "rows": s.live_records,  # schema 1 name of records, kept for compatibility
            "bytes": s.live_bytes,
            "partitions": s.partitions,
        },
        "storage": None
        if s.storage_bytes is None
        else {"files": s.storage_files, "bytes": s.storage_bytes},
        "tags": [tag_json(tag) for tag in s.tags],
        "consumers": [consumer_json(c) for c in s.consumers],
        "branches": s.branches,
        "retention": _retention_json(s.retention) if s.retention else None,
        "retention_error": s.retention_error,
    }


def _check_json(r: CheckReport) -> dict[str, Any]:
    return {
        "check": {
            "ok": r.ok,
            "roots": r.roots,
            "files_checked": r.files_checked,
            "problems": plain(list(r.problems)),
        }
    }


# -- rendering --------------------------------------------------------------------------------
def _render_check(r: CheckReport, out: Output) -> None:
    if r.ok:
        out.line(
            green("OK"),
            f": {r.files_checked} files referenced by {r.roots} snapshots, "
            "tags and changelogs all present with their recorded sizes",
        )
        return
    out.line(
        red(plural(len(r.problems), "problem")),
        f" among {r.files_checked} referenced files ({r.roots} roots):",
    )
    out.table(
        None,
        ["problem", "role", "path", "referenced by", "detail"],
        ([p.kind, p.role, p.path, p.referenced_by, p.detail] for p in r.problems),
    )


def _when(ms: int | None, zone: Any) -> str:
    return human_time(ms, zone)


def _render_summary(s: Summary, _data: Any, out: Output, zone: Any) -> None:
    t = s.table
    kind = "primary-key" if t.is_primary_key else "append-only"
    keys = f" by ({', '.join(t.schema.partition_keys)})" if t.schema.partition_keys else ""
    branch = f"  (branch {t.branch})" if t.branch != "main" else ""
    out.line(bold(t.location), branch)
    out.line(
        f"  {kind} table{keys}, bucket {t.options.bucket}, "
        f"format {t.options.get('file.format')}, schema {t.schema.id}"
    )
    if s.latest is None:
        out.line("  no snapshots yet")
    else:
        out.line(
            f"  snapshots {s.earliest}..{s.latest.id} ({s.snapshot_count} files); latest "
            f"{s.latest.commit_kind} at {_when(s.latest.time_millis, zone)}"
        )
    rows = (
        f"{s.reader_rows} rows" if s.reader_rows is not None else "rows merged on read, not counted"
    )
    out.line(
        f"  live data: {s.live_files} files, {s.live_records} records ({rows}), "
        f"{human_bytes(s.live_bytes)} in {s.partitions} partition(s)"
    )
    if s.storage_bytes is not None:
        ratio = f" ({s.storage_bytes / s.live_bytes:.1f}x live)" if s.live_bytes else ""
        out.line(f"  on storage: {s.storage_files} files, {human_bytes(s.storage_bytes)}{ratio}")
    out.line(f"  tags {len(s.tags)}, consumers {len(s.consumers)}, branches {len(s.branches)}")
    if s.retention is not None:
        _render_retention(s.retention, None, out, zone, indent="  ")
    elif s.retention_error:
        out.line(f"  retention: cannot evaluate ({s.retention_error})")


def _render_retention(r: Any, _data: Any, out: Output, zone: Any, indent: str = "") -> None:
    c = r.config
    out.line(
        f"{indent}retention (table settings): retain-min {c['retain_min']}, retain-max "
        f"{human_limit(c['retain_max'])}, time {human_duration(c['time_retained_ms'])}, "
        f"limit {c['expire_limit']}"
    )
    out.line(
        f"{indent}  would expire now: {plural(r.expirable, 'snapshot')}, keep {r.kept}; "
        f"stopped by {r.range.stop}: {r.range.stop_detail}"
    )
    if r.stale_consumers:
        out.line(f"{indent}  stale consumers (no longer block): {', '.join(r.stale_consumers)}")
    if r.tags_due:
        out.line(f"{indent}  tags due to expire: {', '.join(r.tags_due)}")
    cl = r.changelogs
    if cl is not None and (cl.count or cl.decoupled):
        span = f" ({cl.earliest}..{cl.latest})" if cl.count else ""
        line = f"{indent}  long-lived changelogs: {cl.count}{span}; "
        if cl.decoupled:
            line += f"would expire now: {cl.expirable}; stopped by {cl.stop}: {cl.stop_detail}"
        else:
            line += cl.stop_detail
        out.line(line)


def _render_snapshots(snaps: list[Snapshot], _d: Any, out: Output, zone: Any) -> None:
    out.table(
        None,
        ["id", "time", "kind", "schema", "records", "delta", "user"],
        (
            [
                s.id,
                _when(s.time_millis, zone),
                s.commit_kind,
                s.schema_id,
                s.total_record_count,
                s.delta_record_count,
                s.commit_user[:12],
            ]
            for s in snaps
        ),
    )


# Times Paimon stores as a wall clock without a zone; shown in the table zone.
_WALL_CLOCK_KEYS = frozenset({"last_update", "create_time_local", "expire_at_local"})
_INT_MAX_TEXT = str(2**31 - 1)  # an option at Integer.MAX_VALUE: no limit


def _render_rows(columns: list[str], keys: list[str]) -> Any:
    def render(_rows: Any, data: list[dict[str, Any]], out: Output, zone: Any) -> None:
        def cell(row: dict[str, Any], key: str) -> Any:
            value = row.get(key)
            if key in ("size", "bytes"):
                return human_bytes(value)
            if key in _WALL_CLOCK_KEYS:
                return human_wall_clock(value, zone)
            if key == "value" and value == _INT_MAX_TEXT:
                return human_limit(int(value))
            if key == "path" and isinstance(value, str):
                return out.rel(value)
            if key == "partition" and isinstance(value, dict):
                return "/".join(f"{k}={v}" for k, v in value.items()) or "-"
            if isinstance(value, dict) and "epoch_ms" in value:
                return human_time(value["epoch_ms"], zone)
            if isinstance(value, list):
                return ", ".join(map(str, value)) or "-"
            return value

        out.table(
            None,
            columns,
            ([cell(r, k) for k in keys] for r in data),
            limit=SCREEN if len(data) > SCREEN + 5 else None,
            total=len(data),
        )
        if not data:
            out.line("(none)")

    return render


def _render_schema(data: Any, _d: Any, out: Output, _zone: Any) -> None:
    out.line(
        f"schema {data['id']} (ids {data['schema_ids']}); partition keys "
        f"{data['partition_keys'] or '-'}; primary keys {data['primary_keys'] or '-'}"
    )
    out.table(
        None, ["id", "name", "type"], ([f["id"], f["name"], f["type"]] for f in data["fields"])
    )


def _render_runs(_rows: Any, data: list[dict[str, Any]], out: Output, zone: Any) -> None:
    def when(value: Any) -> str:
        return _when(value.get("epoch_ms"), zone) if isinstance(value, dict) else "-"

    out.table(
        None,
        ["run", "command", "started", "status", "files", "bytes", "quarantine", "by"],
        (
            [
                r.get("run_id"),
                r.get("command"),
                when(r.get("started")),
                r.get("status"),
                (r.get("totals") or {}).get("files", 0),
                human_bytes((r.get("totals") or {}).get("bytes", 0)),
                "yes" if r.get("quarantine") else "-",
                f"{r.get('user')}@{r.get('host')}",
            ]
            for r in reversed(data)  # newest first
        ),
        limit=SCREEN if len(data) > SCREEN + 5 else None,
        total=len(data),
    )
    if not data:
        out.line("(no runs recorded)")


_RENDER: dict[View, Any] = {
    View.runs: _render_runs,
    View.summary: _render_summary,
    View.retention: _render_retention,
    View.snapshots: _render_snapshots,
    View.schema: _render_schema,
    View.files: _render_rows(
        ["partition", "bucket", "level", "rows", "size", "created", "path"],
        ["partition", "bucket", "level", "rows", "size", "created", "path"],
    ),
    View.manifests: _render_rows(
        ["list", "manifest", "size", "added", "deleted", "schema"],
        ["list_kind", "name", "size", "added", "deleted", "schema_id"],
    ),
    View.partitions: _render_rows(
        ["partition", "files", "rows", "size", "last update", "path"],
        ["partition", "files", "rows", "bytes", "last_update", "path"],
    ),
    View.tags: _render_rows(
        ["tag", "snapshot", "records", "created", "expires"],
        ["name", "snapshot_id", "record_count", "create_time_local", "expire_at_local"],
    ),
    View.consumers: _render_rows(
        ["consumer", "next snapshot", "modified"], ["id", "next_snapshot", "modified"]
    ),
    View.branches: _render_rows(
        ["branch", "earliest", "latest", "tags", "schema"],
        ["name", "earliest_snapshot", "latest_snapshot", "tags", "schema_id"],
    ),
    View.options: _render_rows(["option", "value", "source"], ["key", "value", "source"]),
}


def register(app: typer.Typer) -> None:
    app.command("inspect", epilog=EPILOG)(inspect)


__all__ = ["instant", "register"]
