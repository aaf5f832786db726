"""expire-snapshots: the plan (the range, why it stopped, what tags and branches kept)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from paimon_cli.output import Output, human_duration, human_limit, human_time, plural
from paimon_cli.render import Renderer, RunView
from paimon_cli.render.expire_changelogs import render_changelog_details
from paimon_cli.render.plans import (
    deleting_header,
    journaled_document,
    render_plan_and_report,
    unfinished_runs,
)

if TYPE_CHECKING:
    from core.runtime.operation import Outcome
    from core.runtime.plans import Plan


def human(o: Outcome[Plan[Any], None], out: Output, view: RunView) -> None:
    d = o.plan.details
    cfg = d.get("config", {})
    deleting_header("expire-snapshots", o.plan, out, view)
    if cfg:
        rmax = cfg["retain_max"]["value"]
        out.line(
            f"  retain-min {cfg['retain_min']['value']} ({cfg['retain_min']['source']}), "
            f"retain-max {human_limit(rmax)} "
            f"({cfg['retain_max']['source']}), max-deletes {cfg['max_deletes']['value']} "
            f"({cfg['max_deletes']['source']})"
        )
        out.line(
            f"  older than {human_time(cfg['older_than_ms'], view.zone)} "
            f"(time-retained {human_duration(cfg['time_retained_ms']['value'])}, "
            f"{cfg['time_retained_ms']['source']})"
        )
    earliest, latest = d.get("earliest_snapshot"), d.get("latest_snapshot")
    if earliest is None:
        out.line("  the table has no snapshots")
    else:
        snaps = d.get("snapshots") or []
        span = f"{snaps[0]}..{snaps[-1]}" if snaps else "none"
        out.line(
            f"  snapshots {earliest}..{latest}: expiring {span} ({len(snaps)}); "
            f"stopped by {d['stopped_by']}: {d['stop_detail']}"
        )
    if d.get("stale_consumers"):
        out.line(
            f"  stale consumers (past consumer.expiration-time, not blocking): "
            f"{', '.join(d['stale_consumers'])}"
        )
    if d.get("kept_by_tag"):
        tags: dict[str, int] = {}
        for k in d["kept_by_tag"]:
            tags[k["tag"]] = tags.get(k["tag"], 0) + 1
        out.line(
            "  kept because of tags: "
            + ", ".join(f"{t} ({plural(n, 'file')})" for t, n in sorted(tags.items()))
        )
    if d.get("kept_for_changelog"):
        kept = plural(d["kept_for_changelog"], "file")
        out.line(f"  kept for the decoupled changelog: {kept}")
    if d.get("changelog_expiry") is not None:
        render_changelog_details(d["changelog_expiry"], out)
    unfinished_runs(o, out)
    render_plan_and_report(o.plan, d.get("notes") or [], o.report, out, show_actions=view.dry_run)


RENDERER: Renderer[Plan[Any], None] = Renderer("expire-snapshots", journaled_document, human)
