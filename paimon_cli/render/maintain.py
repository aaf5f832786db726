"""maintain: per table and step what ran and why; the JSON document holds, per step, the
single command's document."""

from __future__ import annotations

import datetime as dt
from collections.abc import Collection
from typing import TYPE_CHECKING, Any

from core.ops.details.manifests import ManifestCompactDetails
from core.ops.maintain.maintain import table_name
from core.runtime.wording import plural
from paimon_cli.convert import commit_json, plan_doc
from paimon_cli.output import (
    SCHEMA_VERSION,
    Output,
    Part,
    bold,
    dim,
    human_bytes,
    human_elapsed,
    red,
    yellow,
)
from paimon_cli.render import RunView, compact
from paimon_cli.render.inspect import check_json

if TYPE_CHECKING:
    from core.ops.maintain.maintain import StepResult, TableResult


def step_document(step: StepResult, location: str, dry_run: bool) -> dict[str, Any] | None:
    """The single command's JSON document for what this step planned and did."""
    if step.check is not None:  # inspect --check's document
        return _doc("inspect", location, check_json(step.check))
    if step.plan is None:
        return None
    plan = step.plan
    if step.name in ("compact", "compact-manifests") and step.outcome is not None:
        view = RunView(dry_run, dt.timezone.utc)  # compact documents carry no local times
        body = (compact.document if step.name == "compact" else compact.manifests_document)(
            step.outcome, view
        )
    elif step.name == "expire-partitions":
        c = step.commit
        report = None
        if c is not None and c.snapshot is not None:
            files = len(c.changes.entries) if c.changes else 0
            report = commit_json(c.snapshot, c.attempts, c.notes, files_marked_delete=files)
        body = plan_doc(dry_run, plan, report)
    elif step.name == "expire-snapshots":
        body = plan_doc(
            dry_run,
            plan,
            step.report.to_json() if step.report else None,
            unfinished_journals=step.pending_journals,
        )
    else:
        report = step.report.to_json() if step.report else None
        if report is None and not dry_run and step.status == "ok":
            report = {"status": "ok"}
        if step.name == "auto-tags":
            body = plan_doc(dry_run, plan, report, created=step.created_tags)
        else:
            body = plan_doc(dry_run, plan, report)
    return _doc(plan.command, location, body)


def _doc(command: str, location: str, body: dict[str, Any]) -> dict[str, Any]:
    return {"command": command, "schema_version": SCHEMA_VERSION, "table": location, **body}


def _error(exc: Any) -> dict[str, Any] | None:
    return None if exc is None else {"kind": exc.kind, "message": exc.message}


def document(
    results: list[TableResult],
    skipped: list[tuple[str, str]],
    dry_run: bool,
    run_id: str,
    recorded: Collection[str],
) -> dict[str, Any]:
    """``run_id``: the maintain run's, as its first line says; the tables ``recorded``
    (a run record written) carry it too."""
    tables = []
    for r in results:
        extra = {"run_id": run_id} if r.location in recorded else {}
        tables.append(
            {
                **extra,
                "table": r.location,
                "name": r.name,
                "status": "failed" if r.failed else "ok",
                "seconds": round(r.seconds, 3),
                "error": _error(r.error),
                "totals": _totals(r, dry_run),
                "steps": [
                    {
                        "step": s.name,
                        "branch": s.branch,
                        "status": s.status,
                        "reason": s.reason,
                        "seconds": round(s.seconds, 3),
                        "error": _error(s.error),
                        "document": step_document(s, r.location, dry_run),
                    }
                    for s in r.steps
                ],
            }
        )
    return {
        "command": "maintain",
        "schema_version": SCHEMA_VERSION,
        "run_id": run_id,
        "dry_run": dry_run,
        "tables": tables,
        "skipped": [{"table": loc, "reason": reason} for loc, reason in skipped],
        "summary": {
            "tables": len(results) + len(skipped),
            "maintained": sum(not r.failed for r in results),
            "failed": sum(r.failed for r in results),
            "skipped": len(skipped),
        },
    }


def _totals(r: TableResult, dry_run: bool) -> dict[str, int | None]:
    """What each table's run expired and deleted (dry run: would have)."""
    files, size = r.files_deleted, r.bytes_deleted
    if dry_run:
        planned = [s.planned_totals() for s in r.steps]
        files, size = sum(f for f, _ in planned), sum(b for _, b in planned)
    return {
        "steps_run": sum(s.ran for s in r.steps),
        "tags_created": r.count("auto-tags"),
        "tags_expired": r.count("expire-tags"),
        "partitions_expired": r.count("expire-partitions"),
        "consumers_expired": _ran_planned(r, "expire-consumers"),
        "snapshots_expired": r.count("expire-snapshots"),
        "changelogs_expired": r.count("expire-changelogs"),
        "files_deleted": files,
        "bytes_deleted": size,
        "files_compacted": sum(s.compacted()[0] for s in r.steps_named("compact")),
        "integrity_problems": r.integrity_problems,
    }


def _ran_planned(r: TableResult, step: str) -> int:
    """What a step that ran planned, on every branch (even when it failed afterwards)."""
    return sum(len(s.planned()) for s in r.steps_named(step) if s.ran)


#: why a table was not started (``skipped[].reason`` in the JSON document)
BUDGET_REASON = "--max-duration reached"


# -- human output ----------------------------------------------------------------------------
# What the plans of these steps list.
_LISTING = {"auto-tags": "tags", "expire-tags": "tags", "expire-partitions": "partitions"}


def _step_line(s: StepResult) -> list[Part]:
    name = s.name if s.branch == "main" else f"{s.branch}: {s.name}"
    if s.status in ("skipped", "not-run"):
        return [f"    {name:<20} {s.status:<8} {s.reason}"]
    if s.status == "failed":
        message = s.error.message if s.error is not None else "a phase failed (see --json)"
        return [f"    {name:<20} ", red("failed"), f"   {message}"]
    return [f"    {name:<20} ran      {_what(s)} ", dim(f"({s.reason})")]


def _what(s: StepResult) -> str:
    """What a step that ran did (or, dry run, would do), in a few words."""
    if s.check is not None:
        return f"{plural(s.check.files_checked, 'file')} of {plural(s.check.roots, 'root')} present"
    compaction = s.compaction
    if compaction is not None and compaction.tasks and compaction.sums is not None:
        left = compaction.deferred.tasks if compaction.deferred is not None else 0
        later = f", {plural(left, 'task')} left for later runs" if left else ""
        sums = compaction.sums
        return (
            f"{plural(sums.files_before, 'file')} ({human_bytes(sums.bytes_before)}) into about "
            f"{sums.files_after_estimate}{later}"
        )
    d = None if s.plan is None else s.plan.details
    if isinstance(d, ManifestCompactDetails) and d.changed:
        return f"{plural(d.manifests_before, 'data manifest')} merged"
    what = "nothing to do"
    if s.changelogs:
        what = f"changelogs {s.changelogs[0]}..{s.changelogs[-1]} ({len(s.changelogs)})"
    if s.plan is not None and not s.plan.empty:
        totals = s.plan.totals()
        what = f"{plural(totals['files'], 'file')}, {human_bytes(totals['bytes'])}"
        items = s.planned()
        if s.name == "expire-snapshots" and items:
            what = f"snapshots {items[0]}..{items[-1]} ({len(items)}), " + what
        elif s.name in _LISTING and items:
            what = f"{len(items)} {_LISTING[s.name]}, " + what
    return what


def render(
    results: list[TableResult], skipped: list[tuple[str, str]], out: Output, dry_run: bool
) -> None:
    title = "maintain" + (" (dry run: nothing changed)" if dry_run else "")
    out.line(bold(title))
    for r in results:
        if dry_run or r.failed:
            out.line(f"  {r.name}")
            if r.error is not None:
                out.line("    ", red("failed"), f": {r.error.message}")
            for s in r.steps:
                out.line(*_step_line(s))
    verb = "would be " if dry_run else ""
    rows = []
    for r in results:
        t = _totals(r, dry_run)
        rows.append(
            [
                r.name,
                t["steps_run"],
                t["snapshots_expired"],
                t["partitions_expired"],
                t["tags_expired"],
                t["changelogs_expired"],
                t["files_deleted"],
                human_bytes(t["bytes_deleted"]),
                human_elapsed(r.seconds),
                red("failed") if r.failed else "ok",
            ]
        )
    rows += [[table_name(loc), 0, 0, 0, 0, 0, 0, "-", "-", "skipped"] for loc, _ in skipped]
    out.table(
        None,
        [
            "table",
            "steps run",
            "snapshots",
            "partitions",
            "tags",
            "changelogs",
            "files deleted",
            "bytes deleted",
            "took",
            "status",
        ],
        rows,
    )
    failed = sum(r.failed for r in results)
    out.line(
        f"{plural(len(results) + len(skipped), 'table')}: {len(results) - failed} "
        f"{verb}maintained, "
        f"{failed} failed" + (f", {len(skipped)} skipped" if skipped else "")
    )
    for line in skip_lines(results, skipped):
        out.line("  ", yellow("warning:"), " ", line)


def skip_lines(results: list[TableResult], skipped: list[tuple[str, str]]) -> list[str]:
    """What was not maintained, and why: a line per busy table (named once, db.table) and
    one for the tables the budget left out, which the next run starts with (rotation)."""
    lines = [
        f"{table_name(loc)}: skipped, {reason}"
        for loc, reason in skipped
        if reason != BUDGET_REASON
    ]
    late = [table_name(loc) for loc, reason in skipped if reason == BUDGET_REASON]
    if late:
        names = ", ".join(late[:5]) + (f" and {len(late) - 5} more" if len(late) > 5 else "")
        total = len(results) + len(skipped)
        lines.append(
            f"--max-duration reached: {len(late)} of {plural(total, 'table')} not started "
            f"({names}); the next run starts with them"
        )
    return lines


# -- quiet output (-q) ------------------------------------------------------------------------
def quiet(
    results: list[TableResult],
    skipped: list[tuple[str, str]],
    out: Output,
    dry_run: bool,
    run_id: str,
    recorded: Collection[str],
) -> None:
    """``-q``: a dry run prints every path its steps would delete, one per line; a real
    run nothing. When a table failed (a dry run: would fail), a short summary on stderr
    (cron mails it), after the run's first line (run id and start: the runner says it):
    each failed table by name with the id of its run record (``inspect TABLE runs``), a
    line per failed step."""
    if dry_run:
        for r in results:
            for s in r.steps:
                for phase in s.plan.phases if s.plan is not None and s.status == "ok" else ():
                    for action in phase.actions:
                        if action.op == "delete":
                            out.plain(action.path)
    # Not maintained is said even when nothing failed: a budget too short must not be silent.
    for line in skip_lines(results, skipped):
        out.warn(line)
    failed = [r for r in results if r.failed]
    if not failed:
        return
    verb = "would fail (dry run)" if dry_run else "failed"
    out.problem(f"paimon maintain: {len(failed)} of {plural(len(results), 'table')} {verb}")
    for r in failed:
        name = r.name + (f" (run {run_id})" if r.location in recorded else "")
        if r.error is not None:
            out.problem(f"  {name}: {r.error.message}")
        for s in r.steps:
            if s.status == "failed":
                message = s.error.message if s.error is not None else "a phase failed"
                where = "" if s.branch == "main" else f"branch {s.branch}: "
                out.problem(f"  {name}: {where}{s.name} failed: {message}")
