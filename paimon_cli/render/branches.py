"""create-branch, delete-branch and fast-forward: the branch and what moves with it."""

from __future__ import annotations

from typing import TYPE_CHECKING

from core.runtime.wording import plural
from paimon_cli.output import Output
from paimon_cli.render import Renderer, RunView
from paimon_cli.render.plans import deletion_document, header, render_plan_and_report

if TYPE_CHECKING:
    from core.ops.details.branches import (
        CreateBranchDetails,
        DeleteBranchDetails,
        FastForwardDetails,
    )
    from core.runtime.operation import Outcome
    from core.runtime.plans import Plan


def _span(ids: tuple[int, ...]) -> str:
    return "none" if not ids else (f"{ids[0]}..{ids[-1]}" if len(ids) > 1 else str(ids[0]))


def _names(names: tuple[str, ...]) -> str:
    return ", ".join(names) or "none"


def _create(o: Outcome[Plan[CreateBranchDetails], None], out: Output, view: RunView) -> None:
    d = o.plan.details
    header("create-branch", o.plan.table, out, view, f" {d.branch}")
    if d.from_tag:
        source = f" of branch {d.from_branch}" if d.from_branch != "main" else ""
        restored = " (written from the tag: the snapshot expired)"
        out.line(
            f"  from tag {d.from_tag}{source}: snapshot {d.snapshot_id}"
            + (restored if d.snapshot_restored_from_tag else "")
            + f", schemas {_span(d.schemas)}"
        )
    else:
        out.line(f"  empty branch (no snapshot): schemas {_span(d.schemas)}")
    render_plan_and_report(o.plan, d.notes, o.report, out, show_actions=view.dry_run)


def _delete(o: Outcome[Plan[DeleteBranchDetails], None], out: Output, view: RunView) -> None:
    d = o.plan.details
    header("delete-branch", o.plan.table, out, view, f" {d.branch}")
    out.line(
        f"  snapshots {_span(d.snapshots)}, tags {_names(d.tags)}; {plural(d.files, 'file')} "
        "in the branch directory"
    )
    render_plan_and_report(o.plan, d.notes, o.report, out, show_actions=view.dry_run)


def _fast_forward(o: Outcome[Plan[FastForwardDetails], None], out: Output, view: RunView) -> None:
    d = o.plan.details
    header("fast-forward", o.plan.table, out, view, f" {d.target} to branch {d.branch}")
    out.line(
        f"  {d.target} snapshots removed: {_span(d.snapshots_removed)}; copied from the "
        f"branch: {_span(d.snapshots_copied)}"
    )
    out.line(
        f"  schemas removed: {_span(d.schemas_removed)}, copied: "
        f"{_span(d.schemas_copied)}; tags removed: {_names(d.tags_removed)}, copied: "
        f"{_names(d.tags_copied)}"
    )
    if d.forced:
        out.warn("forced past consumers or branches that depend on replaced snapshots")
    render_plan_and_report(o.plan, d.notes, o.report, out, show_actions=view.dry_run)


CREATE: Renderer[Plan[CreateBranchDetails], None] = Renderer(
    "create-branch", deletion_document, _create
)
DELETE: Renderer[Plan[DeleteBranchDetails], None] = Renderer(
    "delete-branch", deletion_document, _delete
)
FAST_FORWARD: Renderer[Plan[FastForwardDetails], None] = Renderer(
    "fast-forward", deletion_document, _fast_forward
)
