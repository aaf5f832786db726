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

from core.compaction.task import CompactTask, TaskOutput
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


def changes_since(
    table: PaimonTable, base: Snapshot, latest: Snapshot
) -> tuple[set[Any], set[tuple[bytes, int]]] | None:
    """What the snapshots after ``base`` up to ``latest`` did, from their delta manifests
    alone (each commit's delta holds exactly its ADD and DELETE entries): the identifiers
    they removed (net of re-adds) and the (partition, total buckets) pairs they added.

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
    added: set[tuple[bytes, int]] = set()
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
                        added.add((entry.partition, entry.total_buckets))
    except MissingFileError:
        return None
    return removed, added


def compact_builder(
    table: PaimonTable,
    tasks: Sequence[CompactTask],
    outputs: Sequence[TaskOutput],
    *,
    planned_on: Snapshot | None = None,
) -> Callable[[Any], Changes]:
    """DELETE every input and ADD every output, only if every input is still live.

    On the snapshot the plan was made from every input is live by construction, so nothing
    is read; when other commits came in between, only their delta manifests are read
    (``changes_since``), and the full live set of the latest snapshot only if that history
    cannot be read."""
    inputs = [row for t in tasks for row in t.inputs]
    index_deletes = frozenset(d for t in tasks for d in t.index_deletes)
    index_adds = tuple(e for o in outputs for e in o.index_entries)
    planned_index = {
        (t.partition, t.bucket): t.index_seen for t in tasks if t.index_seen is not None
    }
    seen = {d for v in planned_index.values() if v is not None for d in v}
    buckets = {(t.partition, t.total_buckets) for t in tasks}
    partitions = {p for p, _ in buckets}
    adds = [e for o in outputs for e in o.entries]
    entries = tuple([{**r, "_KIND": 1} for r in inputs] + adds)
    changelog = tuple(e for o in outputs for e in o.changelog)

    def conflict(gone: list[Any]) -> CompactConflictError:
        return CompactConflictError(
            f"File deletion conflicts detected: {len(gone)} input file(s) were removed by "
            f"a concurrent writer since planning (e.g. {gone[0]}); nothing committed",
            hint="run compact again: it plans from the new latest snapshot",
        )

    def check_rescaled(partition: bytes, total: int) -> None:
        if partition in partitions and total > 0 and (partition, total) not in buckets:
            raise CompactConflictError(
                "the bucket number of a compacted partition changed without overwrite; "
                "nothing committed"
            )

    def check_full(latest: Snapshot) -> None:
        live = live_raw_entries(table, latest)
        ids = {entry_identifier(r) for r in live}
        gone = [r["_FILE"]["_FILE_NAME"] for r in inputs if entry_identifier(r) not in ids]
        if gone:
            raise conflict(gone)
        for r in live:
            check_rescaled(bytes(r["_PARTITION"]), int(r["_TOTAL_BUCKETS"]))

    def build(latest: Snapshot) -> Changes:
        since = None if planned_on is None else changes_since(table, planned_on, latest)
        if since is None:
            check_full(latest)
        else:
            removed, added = since
            if removed:
                gone = [r["_FILE"]["_FILE_NAME"] for r in inputs if entry_identifier(r) in removed]
                if gone:
                    raise conflict(gone)
            for p, total in added:
                check_rescaled(p, total)
        if planned_index:
            # Vectors written after planning would delete rows our outputs still hold.
            now = bucket_index_files(table.index_files(latest), planned_index)
            if now != seen:
                raise CompactConflictError(
                    "the deletion vectors of a compacted bucket changed since planning; "
                    "nothing committed",
                    hint="run compact again: it plans from the new latest snapshot",
                )
        return Changes(
            entries,
            index_deletes=index_deletes,
            changelog=changelog,
            index_adds=index_adds,
            details={"based_on": latest.id},
            deletes_verified=True,
        )

    return build


__all__ = ["CompactConflictError", "changes_since", "compact_builder"]
