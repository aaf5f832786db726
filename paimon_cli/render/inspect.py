"""inspect: each view as JSON and as human output, and the --check report."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from enum import Enum
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from core.format.model import Snapshot
    from core.ops.inspection.check import CheckReport, Problem
    from core.ops.inspection.inspect import Summary
    from core.ops.inspection.space import FileSizes, SpaceView
from core.runtime.wording import plural
from core.table.catalog_env import NO_LOCK
from paimon_cli.convert import (
    consumer_json,
    instant,
    plain,
    snapshot_json,
    tag_json,
    wall_clock,
)
from paimon_cli.output import (
    Mode,
    Output,
    Styled,
    bold,
    dim,
    green,
    human_bytes,
    human_duration,
    human_limit,
    human_time,
    human_wall_clock,
    listed,
    partition_text,
    red,
)


class View(str, Enum):
    """What ``inspect`` shows (its VIEW argument)."""

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


def _summary_json(s: Summary, zone: dt.tzinfo) -> dict[str, Any]:
    t = s.table
    # Which catalog the table came from: only a table found by name has one.
    named = {"catalog": t.catalog.describe()} if t.catalog.identifier else {}
    return {
        "location": t.location,
        **named,
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
        "tags": [tag_json(tag, zone) for tag in s.tags],
        "consumers": [consumer_json(c) for c in s.consumers],
        "branches": s.branches,
        "retention": _retention_json(s.retention) if s.retention else None,
        "retention_error": s.retention_error,
        "space": _space_json(s.space) if s.space else None,
        "space_error": s.space_error,
        "file_sizes": _file_sizes_json(s.file_sizes) if s.file_sizes else None,
    }


def _space_json(v: SpaceView) -> dict[str, Any]:
    return {
        "files": v.files,
        "bytes": v.bytes,
        "categories": [
            {
                "name": c.name,
                "label": c.label,
                "files": c.files,
                "bytes": c.bytes,
                "command": c.command,
                "reclaimable_bytes": c.reclaimable,
                "note": c.note,
            }
            for c in v.categories
        ],
    }


def _file_sizes_json(f: FileSizes) -> dict[str, Any]:
    from core.ops.inspection.space import SIZE_CLASSES

    return {
        "size_classes": [{"label": label, "below_bytes": bound} for label, bound in SIZE_CLASSES],
        "partitions": [
            {
                "partition": p.partition,
                "files": p.files,
                "bytes": p.bytes,
                "histogram": list(p.histogram),
                "compact": None
                if p.compact_files is None
                else {"files": p.compact_files, "files_after_estimate": p.compact_files_after},
            }
            for p in f.partitions
        ],
        "compact_refused": f.compact_refused,
    }


def _partition_json(row: dict[str, Any], zone: dt.tzinfo) -> dict[str, Any]:
    """A partition row; ``last_updated`` is ``last_update`` (a wall clock without a zone)
    read in the table zone, as every other time in JSON (added beside it)."""
    when = row["last_update"]
    parsed = None if when is None else dt.datetime.fromisoformat(when)
    return {**row, "last_updated": wall_clock(parsed, zone)}


_JSON: dict[View, Callable[[Any, dt.tzinfo], Any]] = {
    View.summary: _summary_json,
    View.snapshots: lambda snaps, _zone: [snapshot_json(s) for s in snaps],
    View.tags: lambda tags, zone: [tag_json(t, zone) for t in tags],
    View.consumers: lambda consumers, _zone: [consumer_json(c) for c in consumers],
    View.retention: lambda r, _zone: _retention_json(r),
    View.files: lambda files, _zone: [_file_json(row) for row in plain(files)],
    View.manifests: lambda rows, _zone: plain(rows),
    View.partitions: lambda rows, zone: [_partition_json(r, zone) for r in plain(rows)],
}


def view_json(view: View, value: Any, zone: dt.tzinfo) -> Any:
    """A view's engine values as JSON (branches, schema, options and runs already are)."""
    convert = _JSON.get(view)
    return value if convert is None else convert(value, zone)


def _problem_json(p: Problem) -> dict[str, Any]:
    """A problem; ``roots`` (every root that needs the file, snapshots as runs of ids),
    ``root_count`` and ``needed_by`` were added beside the first root, ``referenced_by``."""
    return {
        "path": p.path,
        "kind": p.kind,
        "role": p.role,
        "referenced_by": p.referenced_by,
        "detail": p.detail,
        "roots": [span.to_json() for span in p.roots],
        "root_count": p.root_count,
        "needed_by": p.needed_by,
    }


def check_json(r: CheckReport) -> dict[str, Any]:
    return {
        "check": {
            "ok": r.ok,
            "scope": r.scope.to_json(),
            "roots": r.roots,
            "files_checked": r.files_checked,
            "problems": [_problem_json(p) for p in r.problems],
        }
    }


# -- rendering --------------------------------------------------------------------------------
def _scope_text(r: CheckReport) -> str:
    scope = r.scope
    if scope.kind == "tag":
        return f"tag {scope.tag}"
    if scope.kind == "snapshot":
        return f"snapshot {scope.snapshot}"
    if scope.kind == "latest":
        return "the latest snapshot"
    return f"{plural(r.roots, 'root')} (snapshots, tags and changelogs)"


def render_check(r: CheckReport, out: Output) -> None:
    if out.mode is Mode.QUIET:  # -q: a CI gate; the exit status says it, the paths name it
        for p in r.problems:
            out.plain(p.path)
        return
    if r.ok:
        out.line(
            green("OK"),
            f": {plural(r.files_checked, 'file')} referenced by {_scope_text(r)} "
            "all present with their recorded sizes",
        )
        return
    out.line(
        red(plural(len(r.problems), "problem")),
        f" among {plural(r.files_checked, 'file')} referenced by {_scope_text(r)}:",
    )
    out.table(
        None,
        ["problem", "role", "path", "needed by", "detail"],
        ([p.kind, p.role, out.rel(p.path), p.needed_by, p.detail] for p in r.problems),
        listing=True,
    )


def _when(ms: int | None, zone: Any) -> str:
    return human_time(ms, zone)


def _render_summary(s: Summary, _data: Any, out: Output, zone: Any) -> None:
    t = s.table
    kind = "primary-key" if t.is_primary_key else "append-only"
    keys = f" by ({', '.join(t.schema.partition_keys)})" if t.schema.partition_keys else ""
    branch = f"  (branch {t.branch})" if t.branch != "main" else ""
    out.line(bold(t.location), branch)
    if t.catalog.identifier:
        env = t.catalog
        lock = f", commits under the {env.lock.description}" if env.lock is not NO_LOCK else ""
        out.line(f"  {env.identifier} in the {env.kind} catalog {env.catalog} ({env.where}){lock}")
    out.line(
        f"  {kind} table{keys}, bucket {t.options.bucket}, "
        f"format {t.options.get('file.format')}, schema {t.schema.id}"
    )
    if s.latest is None:
        out.line("  no snapshots yet")
    else:
        out.line(
            f"  snapshots {s.earliest}..{s.latest.id} ({plural(s.snapshot_count, 'file')}); latest "
            f"{s.latest.commit_kind} at {_when(s.latest.time_millis, zone)}"
        )
    rows = (
        f"{s.reader_rows} rows" if s.reader_rows is not None else "rows merged on read, not counted"
    )
    out.line(
        f"  live data: {plural(s.live_files, 'file')}, {plural(s.live_records, 'record')} "
        f"({rows}), {human_bytes(s.live_bytes)} in {plural(s.partitions, 'partition')}"
    )
    if s.storage_bytes is not None:
        ratio = f" ({s.storage_bytes / s.live_bytes:.1f}x live)" if s.live_bytes else ""
        files = plural(s.storage_files or 0, "file")
        out.line(f"  on storage: {files}, {human_bytes(s.storage_bytes)}{ratio}")
    out.line(f"  tags {len(s.tags)}, consumers {len(s.consumers)}, branches {len(s.branches)}")
    if s.retention is not None:
        _render_retention(s.retention, None, out, zone, indent="  ")
    elif s.retention_error:
        out.line(f"  retention: cannot evaluate ({s.retention_error})")
    if s.space is not None:
        _render_space(s.space, out)
    elif s.space_error:
        out.line(f"  where the bytes are: cannot tell ({s.space_error})")
    if s.file_sizes is not None:
        _render_file_sizes(s.file_sizes, out)


BAR = 20  # characters: the picture stays within 80 columns with its labels and numbers
_BAR_STYLE = {"live": "green", "metadata": "cyan"}


def _bar_width(part: int, whole: int) -> int:
    filled = round(part / whole * BAR) if whole else 0
    return 1 if part and not filled else filled  # bytes held are never drawn as none


def _render_space(v: SpaceView, out: Output) -> None:
    out.line(f"  where the bytes are: {human_bytes(v.bytes)} in {plural(v.files, 'file')}")
    for c in v.categories:
        share = f"{100 * c.bytes / v.bytes:3.0f}%" if v.bytes else "  -"
        filled = _bar_width(c.bytes, v.bytes)
        out.line(
            f"    {c.label:<26} ",
            Styled("█" * filled, _BAR_STYLE.get(c.name, "yellow")),
            dim("░" * (BAR - filled)),
            f" {human_bytes(c.bytes):>10} {share}",
        )
        if c.command and c.bytes:
            out.line(f"      {_reclaim(c)}")


def _reclaim(c: Any) -> str:
    if c.name == "branches":
        return "delete-branch, then delete-orphan-files"
    if c.reclaimable is None:
        return f"{c.command} ({c.note})"
    return f"{c.command} frees {human_bytes(c.reclaimable)} now"


def _render_file_sizes(f: FileSizes, out: Output) -> None:
    from core.ops.inspection.space import SIZE_CLASSES

    if not f.partitions:
        return
    files = sum(p.files for p in f.partitions)
    small = sum(p.histogram[0] + p.histogram[1] for p in f.partitions)
    out.line(f"  file sizes: {small} of {plural(files, 'live data file')} under 16 MiB")
    if f.compact_refused is not None:
        out.line(f"    compact refuses this table: {f.compact_refused}")
    else:
        rewritten = sum(p.compact_files or 0 for p in f.partitions)
        after = sum(p.compact_files_after or 0 for p in f.partitions)
        out.line(
            f"    compact would rewrite {plural(rewritten, 'file')} into about {after}"
            if rewritten
            else "    compact has nothing to do"
        )
    shown = sorted(f.partitions, key=lambda p: (-p.files, str(p.partition)))[:PARTITIONS]
    out.table(
        None,
        ["partition", "files", *(label for label, _ in SIZE_CLASSES), "compact"],
        (
            [
                partition_text(p.partition),
                p.files,
                *(n or "." for n in p.histogram),
                "-" if not p.compact_files else f"{p.compact_files}->{p.compact_files_after}",
            ]
            for p in shown
        ),
        limit=PARTITIONS,
        total=len(f.partitions),
    )


PARTITIONS = 10  # the partitions with the most files; --json has every one


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
        listing=True,
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
                return partition_text(value)
            if isinstance(value, dict) and "epoch_ms" in value:
                return human_time(value["epoch_ms"], zone)
            if isinstance(value, list):
                return ", ".join(map(str, value)) or "-"
            return value

        out.table(
            None,
            columns,
            ([cell(r, k) for k in keys] for r in data),
            listing=True,
        )
        if not data:
            out.line("(none)")

    return render


def _render_schema(data: Any, _d: Any, out: Output, _zone: Any) -> None:
    out.line(
        f"schema {data['id']} (ids {listed(data['schema_ids'])}); partition keys "
        f"{listed(data['partition_keys'])}; primary keys {listed(data['primary_keys'])}"
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
        listing=True,
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


def render_view(view: View, value: Any, out: Output, zone: Any) -> None:
    _RENDER[view](value, view_json(view, value, zone), out, zone)
