"""remove-unexisting-files: the missing data files and the commit that marks them DELETE."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from core.runtime.wording import plural
from paimon_cli.convert import plan_doc
from paimon_cli.output import Output, human_bytes, partition_text
from paimon_cli.render import Renderer, RunView
from paimon_cli.render.plans import commit_report, header, render_commit

if TYPE_CHECKING:
    from core.ops.details.repair import RemoveUnexistingDetails
    from core.runtime.operation import Outcome
    from core.runtime.plans import Plan
    from core.write.commit import CommitResult

    Repaired = Outcome[Plan[RemoveUnexistingDetails], CommitResult]


def document(o: Repaired, view: RunView) -> dict[str, Any]:
    return plan_doc(view.dry_run, o.plan, commit_report(o.result))


def human(o: Repaired, out: Output, view: RunView) -> None:
    d = o.plan.details
    files = d.files
    header("remove-unexisting-files", o.plan.table, out, view)
    if d.snapshot_id is None:
        out.line("  the table has no snapshots: nothing to do")
        return
    if not files:
        out.line(f"  every data file of snapshot {d.snapshot_id} exists: nothing to do")
        return
    out.line(
        f"  snapshot {d.snapshot_id}: {plural(len(files), 'data file')} missing, "
        f"{plural(d.rows, 'row')} "
        "(these rows are gone for good)"
    )
    out.table(
        None,
        ["partition", "bucket", "level", "rows", "size", "path"],
        (
            [
                partition_text(f.partition),
                f.bucket,
                f.level,
                f.rows,
                human_bytes(f.size),
                out.rel(f.path),
            ]
            for f in files
        ),
        listing=True,
    )
    r = o.result
    if r is not None and r.snapshot is not None:
        render_commit(
            out, r.snapshot.id, f"(APPEND) after {plural(r.attempts, 'attempt')}", r.notes
        )


def quiet(o: Repaired, _view: RunView) -> list[str]:
    return [f.path for f in o.plan.details.files]


RENDERER: Renderer[Plan[RemoveUnexistingDetails], CommitResult] = Renderer(
    "remove-unexisting-files", document, human, quiet
)
