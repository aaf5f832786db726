"""delete-orphan-files: the orphans found (a screenful; --json has all) and their totals."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from core.runtime.wording import plural
from paimon_cli.output import Output, human_bytes, human_duration, human_time
from paimon_cli.render import Renderer, RunView
from paimon_cli.render.plans import deletion_document, header, render_report

if TYPE_CHECKING:
    from core.ops.details.orphans import OrphanDetails
    from core.runtime.operation import Outcome
    from core.runtime.plans import Plan


def human(o: Outcome[Plan[OrphanDetails], None], out: Output, view: RunView) -> None:
    d = o.plan.details
    orphans = d.orphans
    header("delete-orphan-files", o.plan.table, out, view)
    out.line(
        f"  files older than {human_time(d.older_than_ms, view.zone)}; "
        f"{plural(d.used_names, 'name')} in use by {plural(len(d.branches), 'branch', 'branches')}"
    )
    for ext in d.external_roots_skipped:
        out.line(
            f"  external root {ext} not cleaned: another table may write there "
            "(--external-root-is-exclusive cleans it)"
        )
    if not orphans:
        out.line("  no orphan files")
    else:
        _orphans(o.plan, out)
    if d.empty_directories:
        out.line(f"  {plural(len(d.empty_directories), 'empty directory', 'empty directories')}")
    if o.report is not None:
        render_report(o.report, out)


def _orphans(plan: Plan[OrphanDetails], out: Output) -> None:
    d = plan.details
    out.line(f"  {plural(d.orphan_count, 'orphan file')}, {human_bytes(d.orphan_bytes)}")
    if d.truncated:
        out.line(f"  (the plan lists the first {len(d.orphans)}; --report-file writes all)")
    # Each listed orphan is one delete action whose kind is its directory kind.
    by_kind: dict[str, dict[str, int]] = plan.totals()["by_kind"]
    out.table(
        "sample" if d.truncated else None,
        ["directory kind", "files", "bytes"],
        [(k, v["files"], human_bytes(v["bytes"])) for k, v in sorted(by_kind.items())],
    )
    out.table(
        None,
        ["size", "age", "kind", "path"],
        (
            [human_bytes(x.size), _age(d.age_ms(x)), x.kind, out.rel(x.path, plan.table)]
            for x in d.orphans
        ),
        listing=True,
    )


def _age(ms: int) -> str:
    return human_duration(ms - ms % 60_000) if ms >= 60_000 else human_duration(ms - ms % 1000)


def quiet(o: Outcome[Plan[OrphanDetails], None], _view: RunView) -> Iterator[str]:
    return (orphan.path for orphan in o.plan.details.orphans)


RENDERER: Renderer[Plan[OrphanDetails], None] = Renderer(
    "delete-orphan-files", deletion_document, human, quiet
)
