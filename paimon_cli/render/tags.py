"""create-tag, delete-tag, expire-tags and rename-tag: the tags and what goes with them."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from core.runtime.wording import plural
from paimon_cli.convert import plan_doc
from paimon_cli.output import Output, green, human_time
from paimon_cli.render import Renderer, RunView
from paimon_cli.render.journals import journals_json, journals_of, render_journals
from paimon_cli.render.plans import header, render_plan, render_report

if TYPE_CHECKING:
    from core.ops.details.tags import CreateTagDetails, RenameTagDetails, TagDeletionDetails
    from core.ops.tags.tag_operations import Renamed
    from core.runtime.operation import Outcome
    from core.runtime.plans import Plan
    from core.runtime.report import ExecutionReport

    Created = Outcome[Plan[CreateTagDetails], None]
    Deleted = Outcome[Plan[TagDeletionDetails], None]
    RenamedTag = Outcome[Plan[RenameTagDetails], Renamed]


def _shown(o: Outcome[Plan[Any], None], journals_only: bool) -> ExecutionReport | None:
    """The report to show: a write-only command (create-tag) shows only the journals it
    finished first, else a plain "done"."""
    if o.report is None or not journals_only:
        return o.report
    return journals_of(o.report)


def _document(journals_only: bool) -> Callable[[Outcome[Plan[Any], None], RunView], Any]:
    def document(o: Outcome[Plan[Any], None], view: RunView) -> dict[str, Any]:
        shown = _shown(o, journals_only)
        report = shown.to_json() if shown else (None if o.report is None else {"status": "ok"})
        return plan_doc(view.dry_run, o.plan, report)

    return document


def _tail(o: Outcome[Plan[Any], None], out: Output, view: RunView, journals_only: bool) -> None:
    """The plan, then what the run did."""
    render_plan(o.plan, out, show_actions=view.dry_run)
    shown = _shown(o, journals_only)
    if shown is not None:
        render_report(shown, out)
    elif o.report is not None:
        out.line("  ", green("done"))


def _created(o: Created, out: Output, view: RunView) -> None:
    d = o.plan.details
    header("create-tag", o.plan.table, out, view)
    verb = "replace" if d.replace else "create"
    out.line(f"  {verb} tag {d.tag} on snapshot {d.snapshot_id}")
    if d.from_timestamp_ms is not None:
        out.line(
            f"  the first committed at or after {human_time(d.from_timestamp_ms, view.zone)} "
            f"(at {human_time(d.snapshot_time_ms, view.zone)})"
        )
    _tail(o, out, view, journals_only=True)


def _deleted(command: str) -> Callable[[Deleted, Output, RunView], None]:
    def human(o: Deleted, out: Output, view: RunView) -> None:
        d = o.plan.details
        header(command, o.plan.table, out, view)
        for name in d.missing:
            out.warn(f"tag {name!r} does not exist")
        for t in d.tags:
            state = (
                "snapshot still exists: tag file only"
                if t.snapshot_exists
                else f"{plural(t.files_freed, 'file')} only it kept"
            )
            out.line(f"  tag {t.tag} (snapshot {t.snapshot_id}): {t.reason}; {state}")
        _tail(o, out, view, journals_only=False)

    return human


def _every_action(o: Outcome[Plan[Any], Any], _view: RunView) -> Iterator[str]:
    """Every file the plan writes or deletes (the tag files included)."""
    return (a.path for phase in o.plan.phases for a in phase.actions)


CREATE: Renderer[Plan[CreateTagDetails], None] = Renderer(
    "create-tag", _document(journals_only=True), _created, _every_action
)
DELETE: Renderer[Plan[TagDeletionDetails], None] = Renderer(
    "delete-tag", _document(journals_only=False), _deleted("delete-tag"), _every_action
)
EXPIRE: Renderer[Plan[TagDeletionDetails], None] = Renderer(
    "expire-tags", _document(journals_only=False), _deleted("expire-tags"), _every_action
)


def _rename_document(o: RenamedTag, _view: RunView) -> dict[str, Any]:
    d = o.plan.details
    if o.report is None:
        return {"dry_run": True, "from": d.old, "to": d.new, "possible": d.possible}
    assert o.result is not None
    return {
        "dry_run": False,
        "from": d.old,
        "to": d.new,
        "old_path": o.result.old_path,
        "new_path": o.result.new_path,
        "journals": journals_json(journals_of(o.report)),
    }


def _rename_human(o: RenamedTag, out: Output, _view: RunView) -> None:
    d = o.plan.details
    if o.report is None:
        verdict = "would rename" if d.possible else "cannot rename (check the names)"
        out.line(f"rename-tag (dry run): {verdict} {d.old} -> {d.new}")
        return
    out.line(f"renamed tag {d.old} -> {d.new}")
    render_journals(journals_of(o.report), out)


RENAME: Renderer[Plan[RenameTagDetails], Renamed] = Renderer(
    "rename-tag", _rename_document, _rename_human, lambda _o, _v: ()
)
