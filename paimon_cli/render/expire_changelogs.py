"""expire-changelogs: the long-lived changelogs that expire and why the rest stay."""

from __future__ import annotations

from typing import TYPE_CHECKING

from paimon_cli.output import Output
from paimon_cli.render import Renderer, RunView
from paimon_cli.render.plans import (
    deleting_header,
    journaled_document,
    render_plan_and_report,
    unfinished_runs,
)

if TYPE_CHECKING:
    from core.ops.details.expiry import ChangelogPartDetails, ExpireChangelogsDetails
    from core.runtime.operation import Outcome
    from core.runtime.plans import Plan


def human(o: Outcome[Plan[ExpireChangelogsDetails], None], out: Output, view: RunView) -> None:
    d = o.plan.details
    deleting_header("expire-changelogs", o.plan, out, view)
    render_changelog_details(d.part, out)
    unfinished_runs(o, out)
    render_plan_and_report(o.plan, d.part.notes, o.report, out, show_actions=view.dry_run)


def render_range(
    noun: str,
    present: tuple[int | None, int | None],
    ids: tuple[int, ...],
    stopped_by: str,
    stop_detail: str,
    out: Output,
) -> None:
    """``snapshots 1..9: expiring 1..4 (4); stopped by time: ...``"""
    span = f"{ids[0]}..{ids[-1]}" if ids else "none"
    out.line(
        f"  {noun} {present[0]}..{present[1]}: expiring {span} ({len(ids)}); "
        f"stopped by {stopped_by}: {stop_detail}"
    )


def render_changelog_details(d: ChangelogPartDetails, out: Output) -> None:
    """The changelog expiry lines (also shown by expire-snapshots on decoupled tables)."""
    if d.earliest_changelog is None:
        out.line("  no long-lived changelogs")  # the plan says "nothing to do"
        return
    render_range(
        "changelogs",
        (d.earliest_changelog, d.latest_changelog),
        d.changelogs,
        d.stopped_by,
        d.stop_detail,
        out,
    )
    if d.kept:
        out.line(f"  kept because a tag, branch or remaining changelog needs them: {len(d.kept)}")


RENDERER: Renderer[Plan[ExpireChangelogsDetails], None] = Renderer(
    "expire-changelogs", journaled_document, human
)
