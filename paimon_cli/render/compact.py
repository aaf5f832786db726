"""compact: the merge engine, the tasks (files in, files out) and the COMPACT commit."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any, TypeVar

from core.runtime.wording import plural
from paimon_cli.convert import commit_json, plan_doc
from paimon_cli.output import Output, human_bytes, partition_text
from paimon_cli.render import Renderer, RunView
from paimon_cli.render.journals import journals_json, journals_of, render_journals
from paimon_cli.render.plans import header, render_commit

if TYPE_CHECKING:
    from core.compaction.compact import CompactPlan, CompactResult
    from core.compaction.details import CompactDetails, CompactTaskDetails
    from core.ops.compaction.compact_manifests import ManifestCompactPlan, ManifestCompactResult
    from core.runtime.operation import Outcome

    Compacted = Outcome[CompactPlan, CompactResult]

C = TypeVar("C", "CompactResult", "ManifestCompactResult")


def _committed(
    o: Outcome[Any, Any], view: RunView, counts: Callable[[Any], dict[str, int]]
) -> dict[str, Any]:
    """The document of a compaction: its plan, its COMMIT (with ``counts`` of the result)
    and the journals finished first."""
    r = o.result
    report = None
    if r is not None and r.commit is not None and r.commit.snapshot is not None:
        report = commit_json(r.commit.snapshot, r.commit.attempts, r.notes, **counts(r))
    doc = plan_doc(view.dry_run, o.plan.plan, report)
    doc["journals"] = journals_json(journals_of(o.report))
    return doc


def document(o: Compacted, view: RunView) -> dict[str, Any]:
    return _committed(
        o,
        view,
        lambda r: {
            "files_before": r.files_before,
            "files_after": r.files_after,
            "bytes_before": r.bytes_before,
            "bytes_after": r.bytes_after,
            "rows_before": r.rows_before,
            "rows_after": r.rows_after,
            "changelog_files": r.changelog_files,
            "changelog_records": r.changelog_records,
        },
    )


def _settings(d: CompactDetails, out: Output) -> None:
    target = d.config.get("target-file-size")
    size = f"{option_size(target.value)} ({target.source})" if target else "-"
    out.line(f"  {d.mode} table, strategy {d.strategy}, target file size {size}")
    merge = d.merge
    if merge is not None:
        line = f"  merge engine {merge.engine}"
        if merge.sequence_fields:
            line += f", sequence.field {','.join(merge.sequence_fields)} "
            line += f"({merge.sequence_order})"
        if merge.aggregate_functions:
            funcs = ", ".join(f"{k}={v}" for k, v in merge.aggregate_functions.items())
            line += f", aggregates {funcs}"
        out.line(line + "; every bucket is merged into the max level")
    if d.changelog_producer:
        out.line(
            f"  changelog-producer {d.changelog_producer}: the compaction writes changelog "
            "files as Paimon's does"
        )


def option_size(value: str | int | None) -> str:
    """A size option's value as every size is shown (``128.0 MiB``), whatever Paimon syntax
    it was given in (``128 mb``)."""
    from core.errors import InvalidOptionError
    from core.format.options import parse_memory_size

    if value is None or isinstance(value, int):
        return human_bytes(value)
    try:
        return human_bytes(parse_memory_size(value))
    except InvalidOptionError:
        return value


def _tasks(tasks: tuple[CompactTaskDetails, ...], table: str, out: Output) -> None:
    out.table(
        None,
        ["bucket directory", "level", "files", "rows", "bytes", "files after (est.)"],
        (
            [
                out.rel(t.path, table),
                t.output_level,
                t.files,
                t.rows,
                human_bytes(t.bytes),
                t.files_after_estimate,
            ]
            for t in tasks
        ),
        listing=True,
    )
    vectors = sum(t.deletion_vectors for t in tasks)
    dropped = sum(len(t.index_files_dropped) for t in tasks)
    kept = sum(len(t.vectors_kept) for t in tasks)
    if vectors or dropped:
        line = (
            f"  {plural(vectors, 'deletion vector')} applied while reading; "
            f"{plural(dropped, 'vector index file')} dropped from the index manifest"
        )
        if kept:
            line += f"; {plural(kept, 'vector')} of files not compacted move to new index files"
        out.line(line)


def _render_compact_commit(r: C | None, out: Output, summary: Callable[[C], str]) -> bool:
    """The COMPACT commit line of a compaction's result (``summary``: what it changed) and
    its notes; False when nothing was committed."""
    if r is None or r.commit is None or r.commit.snapshot is None:
        return False
    render_commit(out, r.commit.snapshot.id, f"(COMPACT): {summary(r)}", r.notes)
    return True


def _files_changed(r: CompactResult, changelog_producer: str | None) -> str:
    return (
        f"{plural(r.files_before, 'file')} ({human_bytes(r.bytes_before)}) -> "
        f"{plural(r.files_after, 'file')} ({human_bytes(r.bytes_after)})"
        + (
            f", {plural(r.changelog_files, 'changelog file')} "
            f"({plural(r.changelog_records, 'record')})"
            if changelog_producer
            else ""
        )
        + "; replaced files are deleted later by expire-snapshots"
    )


def human(o: Compacted, out: Output, view: RunView) -> None:
    d = o.plan.plan.details
    header("compact", o.plan.plan.table, out, view)
    _settings(d, out)
    render_journals(journals_of(o.report), out)
    if d.latest_snapshot is None:
        out.line("  the table has no snapshots: nothing to do")
        return
    for s in d.skipped:
        where = f"partition {partition_text(s.partition)} " if s.partition else ""
        out.line(f"  skipped {where}bucket {s.bucket}: {s.reason}")
    if not d.tasks:
        out.line("  nothing to compact")
        return
    _tasks(d.tasks, o.plan.plan.table, out)
    sums = d.sums
    if sums is not None:
        out.line(
            f"  {plural(sums.files_before, 'file')} ({human_bytes(sums.bytes_before)}) -> about "
            f"{plural(sums.files_after_estimate, 'file')} "
            f"(about {human_bytes(sums.bytes_after_estimate)})"
        )
    _render_compact_commit(o.result, out, lambda r: _files_changed(r, d.changelog_producer))


def quiet(o: Compacted, _view: RunView) -> Iterator[str]:
    """The input files of every task."""
    for t in o.plan.plan.details.tasks:
        for f in t.inputs:
            yield f"{t.path}/{f.name}"


RENDERER: Renderer[CompactPlan, CompactResult] = Renderer("compact", document, human, quiet)


# -- compact --manifests -------------------------------------------------------------------------
def manifests_document(
    o: Outcome[ManifestCompactPlan, ManifestCompactResult], view: RunView
) -> dict[str, Any]:
    return _committed(
        o,
        view,
        lambda r: {
            "manifests_before": r.manifests_before,
            "manifests_after": r.manifests_after,
            "bytes_before": r.bytes_before,
            "bytes_after": r.bytes_after,
            "entries_before": r.entries_before,
            "entries_after": r.entries_after,
        },
    )


def _manifests_changed(r: ManifestCompactResult) -> str:
    return (
        f"{plural(r.manifests_before, 'manifest')} ({human_bytes(r.bytes_before)}) -> "
        f"{r.manifests_after} ({human_bytes(r.bytes_after)}); the old manifests are "
        "deleted later by expire-snapshots"
    )


def manifests_human(
    o: Outcome[ManifestCompactPlan, ManifestCompactResult], out: Output, view: RunView
) -> None:
    d = o.plan.plan.details
    header("compact --manifests", o.plan.plan.table, out, view)
    target = d.config["manifest.target-file-size"]
    render_journals(journals_of(o.report), out)
    if d.latest_snapshot is None:
        out.line("  the table has no snapshots: nothing to do")
        return
    out.line(
        f"  snapshot {d.latest_snapshot}: {plural(d.manifests_before, 'data manifest')}, "
        f"{human_bytes(d.bytes_before)}, {plural(d.entries_before, 'entry', 'entries')}; target "
        f"{human_bytes(target.value)} ({target.source})"
    )
    for note in d.notes:
        out.line(f"  note: {note}")
    if not d.changed:
        out.line("  nothing to compact: Paimon's merge would keep every manifest as it is")
        return
    rewritten = d.manifests_before - d.manifests_kept
    out.line(
        f"  {d.merge} merge: {plural(rewritten, 'manifest')} rewritten, {d.manifests_kept} kept; "
        f"{d.entries_before} entries -> {d.entries_after} (ADD and DELETE of a file cancel)"
    )
    committed = _render_compact_commit(o.result, out, _manifests_changed)
    if o.result is not None and not committed:
        out.line("  nothing committed: the latest snapshot's manifests needed no merge")


def manifests_quiet(
    o: Outcome[ManifestCompactPlan, ManifestCompactResult], _view: RunView
) -> Iterator[str]:
    """The manifests a real run would rewrite."""
    return (m.path for m in o.plan.plan.details.manifests if m.action == "rewritten")


MANIFESTS: Renderer[ManifestCompactPlan, ManifestCompactResult] = Renderer(
    "compact", manifests_document, manifests_human, manifests_quiet
)
