"""expire-snapshots: the plan (the range, why it stopped, what tags and branches kept)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from core.runtime.wording import plural
from paimon_cli.output import Output, human_duration, human_limit, human_time
from paimon_cli.render import Renderer, RunView
from paimon_cli.render.expire_changelogs import render_changelog_details, render_range
from paimon_cli.render.plans import (
    deleting_header,
    journaled_document,
    render_plan_and_report,
    unfinished_runs,
)

if TYPE_CHECKING:
    from core.ops.details.expiry import ExpireSnapshotsDetails, SnapshotExpiryConfig
    from core.runtime.operation import Outcome
    from core.runtime.plans import Plan


def _settings(c: SnapshotExpiryConfig, out: Output, view: RunView) -> None:
    out.line(
        f"  retain-min {c.retain_min.value} ({c.retain_min.source}), "
        f"retain-max {human_limit(c.retain_max.value)} ({c.retain_max.source}), "
        f"max-deletes {c.max_deletes.value} ({c.max_deletes.source})"
    )
    out.line(
        f"  older than {human_time(c.older_than_ms, view.zone)} "
        f"(time-retained {human_duration(c.time_retained_ms.value)}, "
        f"{c.time_retained_ms.source})"
    )


def human(o: Outcome[Plan[ExpireSnapshotsDetails], None], out: Output, view: RunView) -> None:
    d = o.plan.details
    deleting_header("expire-snapshots", o.plan, out, view)
    _settings(d.config, out, view)
    if d.earliest_snapshot is None:
        out.line("  the table has no snapshots")
    else:
        present = (d.earliest_snapshot, d.latest_snapshot)
        render_range("snapshots", present, d.snapshots, d.stopped_by, d.stop_detail, out)
    if d.stale_consumers:
        out.line(
            "  stale consumers (past consumer.expiration-time, not blocking): "
            + ", ".join(d.stale_consumers)
        )
    if d.kept_by_tag:
        tags: dict[str, int] = {}
        for k in d.kept_by_tag:
            tags[k.tag] = tags.get(k.tag, 0) + 1
        out.line(
            "  kept because of tags: "
            + ", ".join(f"{t} ({plural(n, 'file')})" for t, n in sorted(tags.items()))
        )
    if d.kept_for_changelog:
        kept = plural(d.kept_for_changelog, "file")
        out.line(f"  kept for the decoupled changelog: {kept}")
    if d.changelog_expiry is not None:
        render_changelog_details(d.changelog_expiry.part, out)
    unfinished_runs(o, out)
    render_plan_and_report(o.plan, d.notes, o.report, out, show_actions=view.dry_run)


RENDERER: Renderer[Plan[ExpireSnapshotsDetails], None] = Renderer(
    "expire-snapshots", journaled_document, human
)
