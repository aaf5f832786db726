"""expire-partitions: the partitions dropped, with their time, size and last update."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from paimon_cli.convert import plan_doc
from paimon_cli.errors import report_error
from paimon_cli.output import Output, human_bytes, human_wall_clock, plural, red
from paimon_cli.render import Renderer, RunView
from paimon_cli.render.journals import journals_json, journals_of, render_journals
from paimon_cli.render.plans import commit_report, header, render_commit

if TYPE_CHECKING:
    from core.ops.expire_partitions import UnexpirablePartitionsError
    from core.runtime.operation import Outcome
    from core.runtime.plans import Plan
    from core.write.commit import CommitResult


def _unexpirable(
    o: Outcome[Plan[Any], CommitResult], view: RunView
) -> UnexpirablePartitionsError | None:
    """The error a real run ends with when it kept partitions it can never judge."""
    from core.ops.expire_partitions import unexpirable_error

    return None if view.dry_run else unexpirable_error(o.plan)


def document(o: Outcome[Plan[Any], CommitResult], view: RunView) -> dict[str, Any]:
    doc = plan_doc(view.dry_run, o.plan, commit_report(o.result))
    doc["journals"] = journals_json(journals_of(o.report))
    error = _unexpirable(o, view)
    if error is not None:
        doc["error"] = {"kind": error.kind, "message": error.message, "hint": error.hint}
    return doc


def human(o: Outcome[Plan[Any], CommitResult], out: Output, view: RunView) -> None:
    d = o.plan.details
    parts = d.get("partitions") or []
    cfg = d.get("config", {})
    zone = view.zone
    header("expire-partitions", o.plan.table, out, view)
    strategy = cfg.get("strategy", {}).get("value")
    out.line(
        f"  strategy {strategy}, expiration {cfg.get('expiration_time', {}).get('value')} "
        f"({cfg.get('expiration_time', {}).get('source')}): expiring partitions older than "
        f"{human_wall_clock(d.get('expire_before_local'), zone)}"
    )
    render_journals(journals_of(o.report), out)
    if d.get("latest_snapshot") is None:
        out.line("  the table has no snapshots: nothing to do")
        return
    if not parts:
        out.line("  no expired partitions")
    else:
        out.table(
            None,
            [
                "partition",
                "time" if strategy == "values-time" else "last update",
                "files",
                "rows",
                "bytes",
                "last update",
            ],
            (
                [
                    p["path"],
                    human_wall_clock(p["time_local"], zone),
                    p["files"],
                    p["rows"],
                    human_bytes(p["bytes"]),
                    human_wall_clock(p["last_update_local"], zone),
                ]
                for p in parts
            ),
            limit=40,
            total=len(parts),
        )
    if d.get("capped"):
        out.line(f"  {d['capped']} more expired partitions left for the next run (max expires)")
    if d.get("skipped"):
        out.line(
            "  ",
            red(
                f"{plural(len(d['skipped']), 'partition')} kept: no time can be read from their "
                "values, they never expire"
            ),
        )
        if view.dry_run:  # a real run ends with it as its error's hint
            out.line(f"  {d.get('skipped_hint')}")
    r = o.result
    if r is not None and r.snapshot is not None:
        render_commit(
            out,
            r.snapshot.id,
            f"(OVERWRITE) after {plural(r.attempts, 'attempt')}; files are deleted later by "
            "expire-snapshots",
            r.notes,
        )
    error = _unexpirable(o, view)
    if error is not None:
        report_error(error.kind, error.message, error.hint, as_json=False)


def quiet(o: Outcome[Plan[Any], CommitResult], _view: RunView) -> list[str]:
    return [p["path"] for p in o.plan.details.get("partitions") or []]


def failed(o: Outcome[Plan[Any], CommitResult], view: RunView) -> bool:
    # A real run that kept partitions it can never judge fails (after dropping the rest):
    # a cron job must not pass forever while they stay.
    return o.failed or _unexpirable(o, view) is not None


RENDERER: Renderer[Plan[Any], CommitResult] = Renderer(
    "expire-partitions", document, human, quiet, failed
)
