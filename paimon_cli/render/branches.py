"""create-branch, delete-branch and fast-forward: the branch and what moves with it."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol, TypeVar

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
    from core.runtime.details import Details
    from core.runtime.operation import Outcome
    from core.runtime.plans import Plan

    class _Noted(Details, Protocol):
        """Plan details with notes, shown after the plan."""

        @property
        def notes(self) -> tuple[str, ...]: ...


def _span(ids: tuple[int, ...]) -> str:
    return "none" if not ids else (f"{ids[0]}..{ids[-1]}" if len(ids) > 1 else str(ids[0]))


def _names(names: tuple[str, ...]) -> str:
    return ", ".join(names) or "none"


D = TypeVar("D", bound="_Noted")


def _renderer(
    command: str, subject: Callable[[D], str], body: Callable[[D, Output], None]
) -> Renderer[Plan[D], None]:
    """A branch command's output: a header naming the branch, what moves with it (``body``),
    then the plan, its notes and what the run did."""

    def human(o: Outcome[Plan[D], None], out: Output, view: RunView) -> None:
        d = o.plan.details
        header(command, o.plan.table, out, view, f" {subject(d)}")
        body(d, out)
        render_plan_and_report(o.plan, d.notes, o.report, out, show_actions=view.dry_run)

    return Renderer(command, deletion_document, human)


def _created(d: CreateBranchDetails, out: Output) -> None:
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


def _deleted(d: DeleteBranchDetails, out: Output) -> None:
    out.line(
        f"  snapshots {_span(d.snapshots)}, tags {_names(d.tags)}; {plural(d.files, 'file')} "
        "in the branch directory"
    )


def _fast_forwarded(d: FastForwardDetails, out: Output) -> None:
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


CREATE: Renderer[Plan[CreateBranchDetails], None] = _renderer(
    "create-branch", lambda d: d.branch, _created
)
DELETE: Renderer[Plan[DeleteBranchDetails], None] = _renderer(
    "delete-branch", lambda d: d.branch, _deleted
)
FAST_FORWARD: Renderer[Plan[FastForwardDetails], None] = _renderer(
    "fast-forward", lambda d: f"{d.target} to branch {d.branch}", _fast_forwarded
)
