"""plan_compact() / apply_compact(): rewrite small data files as Paimon's compaction does.

Which files are merged follows Paimon:
* unaware-bucket append tables (``bucket = -1``): ``AppendCompactCoordinator`` — per
  partition, files smaller than ``target-file-size × compaction.small-file-ratio`` sorted by
  size, packed into bins that close at ``2 × target`` (counting
  ``source.split.open-file-cost`` per file); a last bin needs ``compaction.min.file-num``.
  With deletion vectors, files whose vector deletes more than
  ``compaction.delete-ratio-threshold`` of their rows are picked too, files with a vector
  are grouped by their vector index file (a group never splits over bins) and always
  compacted; each task rewrites the vectors its inputs' index files keep for other files
  into new index files (``AppendDeleteFileMaintainer``);
* fixed-bucket append tables: ``BucketedAppendCompactManager`` per bucket (``full``: skip
  leading big files, compact when at least 3 remain and small ones outnumber big ones —
  with deletion vectors: skip only leading big files without a vector, compact the rest
  always; ``minor``: the first sliding window of ``compaction.min.file-num`` files);
* primary-key tables: full compaction of every bucket into the max level
  (``num-levels − 1``), merged per key by the table's merge engine (``core.compaction.merge_tree``:
  deduplicate, partial-update, aggregation, first-row; ``sequence.field``), dropping
  ``-U``/``-D`` results as Paimon does at the top level.

Rewrites are tasks (one per append bin, one per PK bucket) mapped over the executor, so
Spark runs them on its workers; the driver then makes one COMPACT commit (DELETE of every
input at its level, ADD of every output with ``_FILE_SOURCE = 1``). If a concurrent writer
removed any input (or rescaled a partition's buckets) the commit is abandoned and every file
written by this run is deleted: nothing is lost, the next run plans again. The manifests are
read once, to plan: on the planned snapshot the commit reads none, after other commits only
their delta manifests (the full live set only if that history has expired meanwhile).

This module is the compactor's public face (``core.ops.compaction.compact`` runs it as an
operation); the rooms a compaction goes through, in order, are modules of their own:

* ``config``: flags over table options over Paimon's defaults, and the refusals;
* ``planner``: the tasks, with ``selection`` (which files, per table kind) and
  ``vector_maintenance`` (which vector index files a task replaces);
* ``rewrite``: one task on a worker: read, merge (``merge_tree``, ``merge_engines``,
  ``compact_changelog``), write rolling outputs; ``task`` holds the values passed along;
* ``compact_commit``: the COMMIT entries and the conflict checks;
* here: ``apply_compact`` runs the tasks on the executor and commits once.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial

from core.compaction.compact_commit import CompactConflictError, changes_since, compact_builder
from core.compaction.config import (
    STRATEGIES,
    CompactConfig,
    CompactFlags,
    UnsupportedTableError,
    compact_config,
    parse_partition_filter,
    refusals,
)
from core.compaction.planner import COMMAND, CompactPlan, plan_compact
from core.compaction.rewrite import TaskFailure, rewrite_or_failure, rewrite_task
from core.compaction.task import CompactTask, PostponeTask, TaskOutput
from core.runtime.executors.base import Executor
from core.runtime.runs import Run
from core.table.table import PaimonTable
from core.write.commit import CommitResult, Publication, commit

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class CompactResult:
    commit: CommitResult | None
    files_before: int
    files_after: int
    bytes_before: int
    bytes_after: int
    rows_before: int
    rows_after: int
    notes: tuple[str, ...] = field(default=())
    changelog_files: int = 0  # changelog-producer full-compaction / lookup
    changelog_records: int = 0


def apply_compact(
    table: PaimonTable,
    cplan: CompactPlan,
    *,
    executor: Executor,
    allow_unsafe: bool = False,
    on_task: Callable[[TaskOutput], None] | None = None,
    before_commit: Callable[[], None] | None = None,
    run: Run | None = None,
) -> CompactResult:
    """Rewrite every task on the executor, then commit once (COMPACT) on the driver."""
    work = cplan.work
    if not work:
        return CompactResult(None, 0, 0, 0, 0, 0, 0)
    outputs: list[TaskOutput] = []
    # The written files are removed on failure only through this gate: never once the
    # snapshot referencing them was (possibly) created, whatever exception arrives.
    publication = Publication(table.fileio)

    def finished(result: TaskOutput | TaskFailure) -> None:
        if on_task is not None and isinstance(result, TaskOutput):
            on_task(result)

    try:
        # Every task runs to its end, so a failed one cannot hide files the others wrote.
        results = executor.map(partial(rewrite_or_failure, table), work, on_result=finished)
        outputs = [r for r in results if isinstance(r, TaskOutput)]
        publication.outputs.extend(p for o in outputs for p in o.paths)
        failures = [r for r in results if isinstance(r, TaskFailure)]
        if failures:
            raise failures[0].error
        if before_commit is not None:
            before_commit()
        result = commit(
            table,
            compact_builder(
                table,
                cplan.bucket_tasks,
                outputs,
                planned_on=cplan.snapshot,
                postpone=cplan.postpone,
            ),
            commit_kind="COMPACT",
            allow_unsafe=allow_unsafe,
            publication=publication,
            run=run,
        )
    except BaseException:
        left = publication.discard_outputs()
        if left and publication.may_discard:
            logger.warning("%d written file(s) could not be removed (orphans)", len(left))
        raise
    if result.snapshot is None:
        publication.discard_outputs()
    adds = [e["_FILE"] for o in outputs for e in o.entries]
    changelog = [e["_FILE"] for o in outputs for e in o.changelog]
    replaced: list[CompactTask | PostponeTask] = [*cplan.bucket_tasks, *cplan.postpone]
    return CompactResult(
        commit=result,
        files_before=sum(len(t.inputs) for t in replaced),
        files_after=len(adds),
        bytes_before=sum(t.bytes for t in replaced),
        bytes_after=sum(int(f["_FILE_SIZE"]) for f in adds),
        rows_before=sum(o.rows_in for o in outputs),
        rows_after=sum(o.rows_out for o in outputs),
        notes=result.notes,
        changelog_files=len(changelog),
        changelog_records=sum(int(f["_ROW_COUNT"]) for f in changelog),
    )


__all__ = [
    "COMMAND",
    "STRATEGIES",
    "CompactConfig",
    "CompactConflictError",
    "CompactFlags",
    "CompactPlan",
    "CompactResult",
    "CompactTask",
    "TaskOutput",
    "UnsupportedTableError",
    "apply_compact",
    "changes_since",
    "compact_builder",
    "compact_config",
    "parse_partition_filter",
    "plan_compact",
    "refusals",
    "rewrite_task",
]
