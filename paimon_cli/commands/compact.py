"""paimon compact: merge small data files into right-sized ones (one COMPACT commit)."""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING, Annotated, Any

import typer

if TYPE_CHECKING:
    from core.compaction.compact import CompactPlan, CompactResult
    from core.runtime.operation import Outcome
from paimon_cli.convert import commit_json, plan_doc
from paimon_cli.engine import EngineChoice, ExecutorHolder
from paimon_cli.journals import journals_json, journals_of, render_journals
from paimon_cli.output import Mode, Output, bold, human_bytes
from paimon_cli.params import (
    AllowUnsafeOpt,
    BranchOpt,
    DryRunOpt,
    Engine,
    EngineOpt,
    FsOpt,
    JsonOpt,
    OptionsOpt,
    ParallelismOpt,
    QuietOpt,
    SparkConfOpt,
    SparkMasterOpt,
    SparkRemoteOpt,
    TableArg,
    WarehouseOpt,
    as_usage_error,
    parse_fs_options,
    parse_options_arg,
)
from paimon_cli.render import render_commit
from paimon_cli.selection import Selection, operation_job, run_job, run_request
from paimon_cli.state import state_of

EPILOG = """Examples:

  paimon compact /wh/db.db/events --dry-run

  paimon compact db.events -w /wh --partition dt=2024-07-01 --target-file-size '128 mb'

  paimon compact /wh/db.db/orders --engine spark --spark-master 'local[8]'
"""


def compact(
    ctx: typer.Context,
    table: TableArg,
    partition: Annotated[
        list[str] | None,
        typer.Option(
            "--partition",
            metavar="K=V[,K2=V2]",
            help="Only this partition (repeatable: any of them). Values as in the partition "
            "directory names, e.g. dt=2024-07-01,hr=10.",
            show_default=False,
        ),
    ] = None,
    compact_strategy: Annotated[
        str | None,
        typer.Option(
            "--compact-strategy",
            help="full or minor (default: full). minor only changes fixed-bucket append "
            "tables; primary-key tables support full only.",
            show_default=False,
        ),
    ] = None,
    target_file_size: Annotated[
        str | None,
        typer.Option(
            "--target-file-size",
            help="Size of the files written, e.g. '128 mb' (default: table option "
            "target-file-size, else 256 mb for append and 128 mb for primary-key tables).",
            show_default=False,
        ),
    ] = None,
    options: OptionsOpt = None,
    allow_unsafe_commit: AllowUnsafeOpt = False,
    dry_run: DryRunOpt = False,
    json_out: JsonOpt = False,
    quiet: QuietOpt = False,
    warehouse: WarehouseOpt = None,
    branch: BranchOpt = "main",
    fs_option: FsOpt = None,
    parallelism: ParallelismOpt = None,
    engine: EngineOpt = Engine.local,
    spark_master: SparkMasterOpt = None,
    spark_remote: SparkRemoteOpt = None,
    spark_conf: SparkConfOpt = None,
) -> None:
    """Merge small data files into right-sized ones as Paimon's compaction does; rows unchanged."""
    from core.compaction.compact import (
        STRATEGIES,
        CompactFlags,
        parse_partition_filter,
    )
    from core.format.options import parse_memory_size
    from core.ops.compact import Compact

    state = state_of(ctx)
    if compact_strategy is not None and compact_strategy not in STRATEGIES:
        raise typer.BadParameter(
            f"unknown strategy {compact_strategy!r} (use {' or '.join(STRATEGIES)})",
            param_hint="--compact-strategy",
        )
    if target_file_size is not None:
        size = as_usage_error(lambda: parse_memory_size(target_file_size), "--target-file-size")
        if size <= 0:
            raise typer.BadParameter("must be positive", param_hint="--target-file-size")
    filters = tuple(
        as_usage_error(partial(parse_partition_filter, p), "--partition") for p in partition or ()
    )
    out = Output(Mode.of(json_out, quiet), no_color=state.no_color)
    flags = CompactFlags(filters, compact_strategy, target_file_size)
    sel = Selection(
        table, warehouse, branch, parse_fs_options(fs_option), parse_options_arg(options)
    )
    holder = ExecutorHolder(
        EngineChoice.of(engine, parallelism, spark_master, spark_remote, spark_conf)
    )

    job = operation_job(
        "compact",
        lambda _ex: Compact(flags, allow_unsafe_commit),
        holder.get,
        run_request(dry_run=dry_run),
        out,
        to_json=lambda o: _to_json(o, dry_run),
        render=lambda o, output: _render(o, output, dry_run),
    )
    try:
        run_job(sel, job, out, debug=state.debug)
    finally:
        holder.close()


def _to_json(o: Outcome[CompactPlan, CompactResult], dry_run: bool) -> dict[str, Any]:
    r = o.result
    report = None
    if r is not None and r.commit is not None and r.commit.snapshot is not None:
        report = commit_json(
            r.commit.snapshot,
            r.commit.attempts,
            r.notes,
            files_before=r.files_before,
            files_after=r.files_after,
            bytes_before=r.bytes_before,
            bytes_after=r.bytes_after,
            rows_before=r.rows_before,
            rows_after=r.rows_after,
            changelog_files=r.changelog_files,
            changelog_records=r.changelog_records,
        )
    doc = plan_doc(dry_run, o.plan.plan, report)
    doc["journals"] = journals_json(journals_of(o.report))
    return doc


def _render(o: Outcome[CompactPlan, CompactResult], out: Output, dry_run: bool) -> None:
    d = o.plan.plan.details
    tasks = d.get("tasks") or []
    if out.mode is Mode.QUIET:
        if dry_run:
            for t in tasks:
                for f in t["inputs"]:
                    out.plain(f"{t['path']}/{f['name']}")
        return
    title = "compact" + (" (dry run)" if dry_run else "")
    out.line(bold(title), f" {o.plan.plan.table}")
    target = d.get("config", {}).get("target-file-size", {})
    out.line(
        f"  {d.get('mode')} table, strategy {d.get('strategy')}, target file size "
        f"{target.get('value')} ({target.get('source')})"
    )
    merge = d.get("merge")
    if merge:
        line = f"  merge engine {merge['engine']}"
        if merge["sequence_fields"]:
            line += f", sequence.field {','.join(merge['sequence_fields'])} "
            line += f"({merge['sequence_order']})"
        if merge["aggregate_functions"]:
            funcs = ", ".join(f"{k}={v}" for k, v in merge["aggregate_functions"].items())
            line += f", aggregates {funcs}"
        out.line(line + "; every bucket is merged into the max level")
    if d.get("changelog_producer"):
        out.line(
            f"  changelog-producer {d['changelog_producer']}: the compaction writes changelog "
            "files as Paimon's does"
        )
    render_journals(journals_of(o.report), out)
    if d.get("latest_snapshot") is None:
        out.line("  the table has no snapshots: nothing to do")
        return
    for s in d.get("skipped") or []:
        where = f"partition {s['partition']} " if s["partition"] else ""
        out.line(f"  skipped {where}bucket {s['bucket']}: {s['reason']}")
    if not tasks:
        out.line("  nothing to compact")
        return
    out.table(
        None,
        ["bucket directory", "level", "files", "rows", "bytes", "files after (est.)"],
        (
            [
                t["path"],
                t["output_level"],
                t["files"],
                t["rows"],
                human_bytes(t["bytes"]),
                t["files_after_estimate"],
            ]
            for t in tasks
        ),
        limit=40,
        total=len(tasks),
    )
    vectors = sum(t.get("deletion_vectors", 0) for t in tasks)
    dropped = sum(len(t.get("index_files_dropped") or ()) for t in tasks)
    kept = sum(len(t.get("vectors_kept") or ()) for t in tasks)
    if vectors or dropped:
        line = (
            f"  {vectors} deletion vectors applied while reading; {dropped} vector index "
            "files dropped from the index manifest"
        )
        if kept:
            line += f"; {kept} vectors of files not compacted move to new index files"
        out.line(line)
    out.line(
        f"  {d['files_before']} files ({human_bytes(d['bytes_before'])}) -> about "
        f"{d['files_after_estimate']} files (about {human_bytes(d['bytes_after_estimate'])})"
    )
    r = o.result
    if r is not None and r.commit is not None and r.commit.snapshot is not None:
        render_commit(
            out,
            r.commit.snapshot.id,
            f"(COMPACT): {r.files_before} files ({human_bytes(r.bytes_before)}) -> "
            f"{r.files_after} files ({human_bytes(r.bytes_after)})"
            + (
                f", {r.changelog_files} changelog files ({r.changelog_records} records)"
                if d.get("changelog_producer")
                else ""
            )
            + "; replaced files are deleted later by expire-snapshots",
            r.notes,
        )


def register(app: typer.Typer) -> None:
    app.command("compact", epilog=EPILOG)(compact)
