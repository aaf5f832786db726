"""rollback: the target, and the snapshots, changelogs and tags removed."""

from __future__ import annotations

from typing import TYPE_CHECKING

from paimon_cli.output import Output, human_time
from paimon_cli.render import Renderer, RunView
from paimon_cli.render.plans import deletion_document, header, render_plan_and_report

if TYPE_CHECKING:
    from core.ops.details.repair import RollbackDetails
    from core.runtime.operation import Outcome
    from core.runtime.plans import Plan


def _span(ids: tuple[int, ...]) -> str:
    return "none" if not ids else (f"{ids[0]}..{ids[-1]}" if len(ids) > 1 else str(ids[0]))


def human(o: Outcome[Plan[RollbackDetails], None], out: Output, view: RunView) -> None:
    d = o.plan.details
    target = f"snapshot {d.target_snapshot}" + (f" (tag {d.target_tag})" if d.target_tag else "")
    header("rollback", o.plan.table, out, view, f" to {target}")
    if d.target_timestamp_ms is not None:
        out.line(
            "  the latest snapshot committed at or before "
            f"{human_time(d.target_timestamp_ms, view.zone)}"
        )
    out.line(
        f"  snapshots removed: {_span(d.snapshots)}; changelogs removed: "
        f"{_span(d.changelogs)}; tags removed: " + (", ".join(t.name for t in d.tags) or "none")
    )
    if d.snapshot_restored_from_tag:
        out.line(f"  snapshot {d.target_snapshot} is written back from the tag")
    if d.forced:
        out.warn("forced past consumers or branches that depend on removed snapshots")
    render_plan_and_report(o.plan, d.notes, o.report, out, show_actions=view.dry_run)


RENDERER: Renderer[Plan[RollbackDetails], None] = Renderer("rollback", deletion_document, human)
