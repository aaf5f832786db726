"""expire-partitions: the partitions dropped, with their time, size and last update."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from core.runtime.wording import plural
from paimon_cli.convert import plan_doc
from paimon_cli.output import Output, human_bytes, human_wall_clock, partition_text, red
from paimon_cli.render import Renderer, RunView
from paimon_cli.render.journals import journals_json, journals_of, render_journals
from paimon_cli.render.plans import commit_report, header, render_commit

if TYPE_CHECKING:
    from core.ops.details.partitions import ExpiredPartition, PartitionExpiryDetails
    from core.ops.expiry.expire_partitions import UnexpirablePartitionsError
    from core.runtime.operation import Outcome
    from core.runtime.plans import Plan
    from core.write.commit import CommitResult

    Dropped = Outcome[Plan[PartitionExpiryDetails], CommitResult]


def _unexpirable(o: Dropped, _view: RunView) -> UnexpirablePartitionsError | None:
    """The error a run ends with when it kept partitions it can never judge: a real run
    after dropping the rest, and a dry run too, which so exits as the real run will."""
    from core.ops.expiry.expire_partitions import unexpirable_error

    return unexpirable_error(o.plan)


def document(o: Dropped, view: RunView) -> dict[str, Any]:
    doc = plan_doc(view.dry_run, o.plan, commit_report(o.result))
    doc["journals"] = journals_json(journals_of(o.report))
    error = _unexpirable(o, view)
    if error is not None:
        doc["error"] = {"kind": error.kind, "message": error.message, "hint": error.hint}
    return doc


def human(o: Dropped, out: Output, view: RunView) -> None:
    d = o.plan.details
    zone = view.zone
    header("expire-partitions", o.plan.table, out, view)
    strategy = d.config.strategy.value
    expiration = d.config.expiration_time
    out.line(
        f"  strategy {strategy}, expiration {expiration.value} ({expiration.source}): "
        f"expiring partitions older than {human_wall_clock(d.expire_before_local, zone)}"
    )
    render_journals(journals_of(o.report), out)
    if d.latest_snapshot is None:
        out.line("  the table has no snapshots: nothing to do")
        return
    _partitions(d.partitions, out, strategy, view)
    if d.capped:
        out.line(f"  {d.capped} more expired partitions left for the next run (max expires)")
    if d.skipped:
        out.line(
            "  ",
            red(
                f"{plural(len(d.skipped), 'partition')} kept: no time can be read from their "
                "values, they never expire"
            ),
        )
        out.table(
            None,
            ["partition", "why no time"],
            ([partition_text(p.partition), p.reason] for p in d.skipped),
            listing=True,
        )
        if view.dry_run:
            out.line("  a real run drops the expired partitions, then exits 1 (see Error)")
    _metastore(d, out, view)
    r = o.result
    if r is not None and r.snapshot is not None:
        render_commit(
            out,
            r.snapshot.id,
            f"(OVERWRITE) after {plural(r.attempts, 'attempt')}; files are deleted later by "
            "expire-snapshots",
            r.notes,
        )


def _metastore(d: PartitionExpiryDetails, out: Output, view: RunView) -> None:
    m = d.metastore
    if m is None:
        return
    if not m.drops:
        out.line(f"  metastore ({m.metastore}): no partitions to drop")
        return
    verb = "would drop" if view.dry_run else "drops"
    out.line(f"  metastore ({m.metastore}) {verb} {plural(len(m.drops), 'partition')}:")
    shown = m.drops if out.row_limit is None else m.drops[: out.row_limit]
    for drop in shown:
        out.line(f"    {partition_text(drop.partition)}  ({drop.reason})")
    if len(shown) < len(m.drops):
        out.more(len(m.drops) - len(shown))


def _partitions(
    parts: tuple[ExpiredPartition, ...], out: Output, strategy: str | None, view: RunView
) -> None:
    if not parts:
        out.line("  no expired partitions")
        return
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
                p.path,
                human_wall_clock(p.time_local, view.zone),
                p.files,
                p.rows,
                human_bytes(p.bytes),
                human_wall_clock(p.last_update_local, view.zone),
            ]
            for p in parts
        ),
        listing=True,
    )


def quiet(o: Dropped, _view: RunView) -> list[str]:
    return [p.path for p in o.plan.details.partitions]


def failed(o: Dropped, view: RunView) -> bool:
    # A run that kept partitions it can never judge fails (a real one after dropping the
    # rest): a cron job must not pass forever while they stay.
    return o.failed or _unexpirable(o, view) is not None


RENDERER: Renderer[Plan[PartitionExpiryDetails], CommitResult] = Renderer(
    "expire-partitions", document, human, quiet, failed, _unexpirable
)
