"""The COMPACT commit of a compaction: DELETE every input at its level, ADD every output
(``_FILE_SOURCE = 1``), the changelog files and the new vector index files, only if every
input is still live.

Conflicts abandon the commit, as Paimon's ``File deletion conflicts`` do: an input removed
by a concurrent writer, a compacted partition whose buckets were rescaled, or deletion
vectors written into a compacted bucket after planning. The check reads as little as it
can: nothing on the planned snapshot, the delta manifests of the commits in between
(``changes_since``), and the full live set only when that history cannot be read.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from core.compaction.task import CompactTask, PostponeTask, TaskOutput
from core.errors import MissingFileError
from core.format.deletion_vectors import bucket_index_files
from core.format.model import FileKind, Snapshot
from core.table.table import PaimonTable
from core.write.commit import Changes, CommitConflictError, entry_identifier
from core.write.live_entries import live_raw_entries


class CompactConflictError(CommitConflictError):
    """A concurrent writer removed an input file: Paimon's 'File deletion conflicts'."""


def _same_snapshot(a: Snapshot, b: Snapshot) -> bool:
    """The same commit: ids are reused after a rollback, manifest list names are not."""
    return (a.id, a.base_manifest_list, a.delta_manifest_list) == (
        b.id,
        b.base_manifest_list,
        b.delta_manifest_list,
    )


Added = set[tuple[bytes, int, int]]  # (partition, bucket, total buckets) of ADD entries


def changes_since(
    table: PaimonTable, base: Snapshot, latest: Snapshot
) -> tuple[set[Any], Added] | None:
    """What the snapshots after ``base`` up to ``latest`` did, from their delta manifests
    alone (each commit's delta holds exactly its ADD and DELETE entries): the identifiers
    they removed (net of re-adds) and the (partition, bucket, total buckets) they added to.

    None when that chain cannot be read as one history on top of ``base`` (a snapshot or
    manifest expired meanwhile, or ``base`` was rolled back and its id reused): the caller
    then checks against the full live set of ``latest``."""
    if latest.id < base.id:
        return None
    if latest.id == base.id:
        return (set(), set()) if _same_snapshot(latest, base) else None
    current = table.snapshots.try_snapshot(base.id)
    if current is None or not _same_snapshot(current, base):
        return None
    removed: set[Any] = set()
    added: Added = set()
    try:
        for sid in range(base.id + 1, latest.id + 1):
            snap = latest if sid == latest.id else table.snapshots.try_snapshot(sid)
            if snap is None:
                return None
            for meta in table.manifest_list(snap, snap.delta_manifest_list):
                for entry in table.manifest(meta):
                    if entry.kind is FileKind.DELETE:
                        removed.add(entry.identifier)
                    else:
                        removed.discard(entry.identifier)
                        added.add((entry.partition, entry.bucket, entry.total_buckets))
    except MissingFileError:
        return None
    return removed, added


def compact_builder(
    table: PaimonTable,
    tasks: Sequence[CompactTask],
    outputs: Sequence[TaskOutput],
    *,
    planned_on: Snapshot | None = None,
    postpone: Sequence[PostponeTask] = (),
) -> Callable[[Any], Changes]:
    """DELETE every input and ADD every output, only if every input is still live.

    On the snapshot the plan was made from every input is live by construction, so nothing
    is read; when other commits came in between, only their delta manifests are read
    (``changes_since``), and the full live set of the latest snapshot only if that history
    cannot be read."""
    return _CompactChanges(table, tasks, outputs, planned_on, postpone)


class _CompactChanges:
    """The COMPACT commit's changes, built against whichever snapshot is latest."""

    def __init__(
        self,
        table: PaimonTable,
        tasks: Sequence[CompactTask],
        outputs: Sequence[TaskOutput],
        planned_on: Snapshot | None,
        postpone: Sequence[PostponeTask],
    ) -> None:
        self.table = table
        self.planned_on = planned_on
        self.inputs = [row for t in tasks for row in t.inputs]
        self.inputs += [row for p in postpone for row in p.files]
        self.index_deletes = frozenset(d for t in tasks for d in t.index_deletes)
        self.index_adds = tuple(e for o in outputs for e in o.index_entries)
        self.planned_index = {
            (t.partition, t.bucket): t.index_seen for t in tasks if t.index_seen is not None
        }
        self.seen = {d for v in self.planned_index.values() if v is not None for d in v}
        self.buckets = {(t.partition, t.total_buckets) for t in tasks}
        self.buckets |= {(p.partition, p.num_buckets) for p in postpone}
        self.partitions = {p for p, _ in self.buckets}
        # Buckets that receive postpone records: their sequence numbers follow the files
        # planned there, so a file written there since planning abandons the commit.
        self.receiving = {(p.partition, b) for p in postpone for b, _ in p.routed}
        adds = [e for o in outputs for e in o.entries]
        self.entries = tuple([{**r, "_KIND": 1} for r in self.inputs] + adds)
        self.changelog = tuple(e for o in outputs for e in o.changelog)

    def __call__(self, latest: Snapshot) -> Changes:
        planned_on = self.planned_on
        since = None if planned_on is None else changes_since(self.table, planned_on, latest)
        if since is None:
            self._check_full(latest)
        else:
            removed, added = since
            if removed:
                gone = [
                    r["_FILE"]["_FILE_NAME"] for r in self.inputs if entry_identifier(r) in removed
                ]
                if gone:
                    raise _deleted(gone)
            for partition, bucket, total in added:
                self._check_added(partition, bucket, total)
        self._check_vectors(latest)
        return Changes(
            self.entries,
            index_deletes=self.index_deletes,
            changelog=self.changelog,
            index_adds=self.index_adds,
            details={"based_on": latest.id},
            deletes_verified=True,
        )

    def _check_added(self, partition: bytes, bucket: int, total: int) -> None:
        if partition in self.partitions and total > 0 and (partition, total) not in self.buckets:
            raise CompactConflictError(
                "the bucket number of a compacted partition changed without overwrite; "
                "nothing committed"
            )
        if (partition, bucket) in self.receiving:
            raise CompactConflictError(
                "files were written into a bucket that receives postpone records since "
                "planning; nothing committed",
                hint="run compact again: it plans from the new latest snapshot",
            )

    def _check_full(self, latest: Snapshot) -> None:
        live = live_raw_entries(self.table, latest)
        ids = {entry_identifier(r) for r in live}
        gone = [r["_FILE"]["_FILE_NAME"] for r in self.inputs if entry_identifier(r) not in ids]
        if gone:
            raise _deleted(gone)
        planned = {entry_identifier(r) for r in self.inputs} if self.receiving else set()
        for r in live:
            if entry_identifier(r) not in planned:
                self._check_added(
                    bytes(r["_PARTITION"]), int(r["_BUCKET"]), int(r["_TOTAL_BUCKETS"])
                )

    def _check_vectors(self, latest: Snapshot) -> None:
        if not self.planned_index:
            return
        # Vectors written after planning would delete rows our outputs still hold.
        now = bucket_index_files(self.table.index_files(latest), self.planned_index)
        if now != self.seen:
            raise CompactConflictError(
                "the deletion vectors of a compacted bucket changed since planning; "
                "nothing committed",
                hint="run compact again: it plans from the new latest snapshot",
            )


def _deleted(gone: list[Any]) -> CompactConflictError:
    return CompactConflictError(
        f"File deletion conflicts detected: {len(gone)} input file(s) were removed by "
        f"a concurrent writer since planning (e.g. {gone[0]}); nothing committed",
        hint="run compact again: it plans from the new latest snapshot",
    )


__all__ = ["CompactConflictError", "changes_since", "compact_builder"]
