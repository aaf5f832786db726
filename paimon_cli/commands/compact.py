"""paimon compact: merge small data files into right-sized ones (one COMPACT commit)."""

from __future__ import annotations

from typing import Annotated

import typer

from paimon_cli.params import optional, partition_option
from paimon_cli.render.compact import MANIFESTS, RENDERER
from paimon_cli.selection import run_operation
from paimon_cli.shared import CHANGING, ENGINE, OPTIONS, UNSAFE_COMMIT, Common, command

EPILOG = """Examples:

  paimon compact /wh/db.db/events --dry-run

  paimon compact db.events -w /wh --partition dt=2024-07-01 \\
    --target-file-size '128 mb'

  paimon compact /wh/db.db/orders --engine spark --spark-master 'local[8]'

  paimon compact /wh/db.db/events --manifests --dry-run
"""


@command("compact", EPILOG, CHANGING | OPTIONS | UNSAFE_COMMIT | ENGINE)
def compact(
    common: Common,
    partition: Annotated[
        list[str] | None,
        partition_option(
            "Only this partition (repeatable: any of them). Values as in the partition "
            "directory names, e.g. dt=2024-07-01,hr=10."
        ),
    ] = None,
    compact_strategy: Annotated[
        str | None,
        optional(
            "--compact-strategy",
            help="full or minor. minor only changes fixed-bucket append "
            "tables; primary-key tables support full only.",
            default_text="full",
        ),
    ] = None,
    target_file_size: Annotated[
        str | None,
        optional(
            "--target-file-size",
            help="Size of the files written, e.g. '128 mb'.",
            default_text="table option target-file-size, else 256 mb for append and 128 mb "
            "for primary-key tables",
        ),
    ] = None,
    manifests: Annotated[
        bool,
        typer.Option(
            "--manifests",
            help="Merge the latest snapshot's data manifests instead of data files, as Paimon's "
            "compact_manifest procedure (table option manifest.target-file-size, else 8 mb).",
        ),
    ] = False,
) -> None:
    """Merge small data files into right-sized ones as Paimon's compaction does.

    What stays the same is what a read merging every file returns: each key keeps its merged
    record (append tables: the same rows). Batch readers of primary-key tables with deletion
    vectors or the first-row merge engine skip level-0 files until they are compacted: the
    rows they see gain what those files held.
    """
    from core.ops.compaction.compact import Compact, CompactRequest

    if manifests:
        _compact_manifests(common, partition, compact_strategy, target_file_size)
        return
    request = CompactRequest.of(
        partition,
        compact_strategy,
        target_file_size,
        allow_unsafe_commit=common.allow_unsafe_commit,
    )
    run_operation(common, lambda _ex: Compact(request), RENDERER)


def _compact_manifests(
    common: Common,
    partition: list[str] | None,
    strategy: str | None,
    target_file_size: str | None,
) -> None:
    """compact --manifests: the data-file options do not apply; runs on this machine."""
    from core.ops.compaction.compact_manifests import CompactManifests
    from core.runtime.requests import refuse

    for name, value in (
        ("partition", partition),
        ("compact_strategy", strategy),
        ("target_file_size", target_file_size),
    ):
        if value:
            raise refuse(
                name,
                "does not apply with --manifests (the manifests of every partition are "
                "merged; their size is manifest.target-file-size)",
            )
    if common.engine.spark:
        raise refuse("engine", "--manifests runs on this machine: leave out --engine spark")
    op = CompactManifests(common.allow_unsafe_commit)
    run_operation(common, lambda _ex: op, MANIFESTS)
