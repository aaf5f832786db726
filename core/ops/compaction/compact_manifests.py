"""compact --manifests: Paimon's ``compact_manifest`` procedure as an operation.

The latest snapshot's data manifests (base list, then delta list) are merged as
``core.write.manifest_merge`` describes (full compaction forced, ADD and DELETE of a file
cancelled) and committed as one COMPACT snapshot whose base list is the merged manifests
and whose delta list is empty; rows, index manifest, statistics and properties stay. If
another writer commits first, the merge is done again on its snapshot (the commit's retry
loop), so no commit is ever lost. Nothing is deleted: the replaced manifests stay until
``expire-snapshots`` removes them with the snapshots that use them.

Writers that never merge manifests (pypaimon adds one manifest per commit) leave tables
whose every read opens one manifest per commit since the last full compaction; this
rewrites them into a few right-sized ones.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from core.format.model import Expected, Snapshot
from core.format.options import OptionValue
from core.ops.details.expiry import Sourced
from core.ops.details.manifests import ManifestCompactDetails, ManifestEntryCount
from core.runtime.operation import Env, Operation
from core.runtime.plans import Phase, Plan, Requirements
from core.runtime.runs import Run
from core.table.table import PaimonTable
from core.write.commit import (
    Changes,
    CommitResult,
    KeptManifest,
    commit,
    refuse_non_avro_manifests,
)
from core.write.manifest_merge import (
    MANIFEST_TARGET_SIZE,
    ManifestMerge,
    Reader,
    Row,
    merge_manifests,
    target_size,
)
from core.write.manifest_writer import read_raw_rows

COMMAND = "compact"


@dataclass(frozen=True)
class ManifestCompactPlan:
    plan: Plan[ManifestCompactDetails]
    merge: ManifestMerge | None  # None: no snapshot
    snapshot: Snapshot | None  # the snapshot merged


@dataclass(frozen=True)
class ManifestCompactResult:
    commit: CommitResult | None
    manifests_before: int
    manifests_after: int
    bytes_before: int
    bytes_after: int
    entries_before: int
    entries_after: int
    notes: tuple[str, ...] = ()


def _reader(table: PaimonTable) -> Reader:
    """Each manifest's raw rows, read once per merge and checked against what its list
    records (size, added + deleted entries)."""
    cache: dict[str, list[dict[str, Any]]] = {}

    def read(meta: Row) -> list[dict[str, Any]]:
        name = str(meta["_FILE_NAME"])
        if name not in cache:
            entries = int(meta["_NUM_ADDED_FILES"]) + int(meta["_NUM_DELETED_FILES"])
            cache[name] = read_raw_rows(
                table.fileio,
                table.paths.manifest_path(name),
                expect=Expected(int(meta["_FILE_SIZE"]), entries, "its manifest list"),
            )
        return cache[name]

    return read


def data_manifest_rows(table: PaimonTable, snapshot: Snapshot) -> list[dict[str, Any]]:
    """The raw manifest-list rows of a snapshot's data view: base list, then delta list."""
    return [
        row
        for name in (snapshot.base_manifest_list, snapshot.delta_manifest_list)
        for row in read_raw_rows(
            table.fileio, table.paths.manifest_path(name), expect=snapshot.list_expected(name)
        )
    ]


def merge_snapshot(table: PaimonTable, snapshot: Snapshot) -> ManifestMerge:
    """Paimon's forced full manifest compaction of ``snapshot``'s data manifests."""
    return merge_manifests(
        data_manifest_rows(table, snapshot),
        _reader(table),
        table.schema.partition_types,
        target_size(table.options),
    )


def _manifest_row(table: PaimonTable, meta: Row, action: str) -> ManifestEntryCount:
    return ManifestEntryCount(
        name=str(meta["_FILE_NAME"]),
        path=table.paths.manifest_path(str(meta["_FILE_NAME"])),
        size=int(meta["_FILE_SIZE"]),
        added=int(meta["_NUM_ADDED_FILES"]),
        deleted=int(meta["_NUM_DELETED_FILES"]),
        action=action,
    )


def _details(
    table: PaimonTable, latest: Snapshot | None, merge: ManifestMerge | None
) -> ManifestCompactDetails:
    option: OptionValue = table.options.lookup(MANIFEST_TARGET_SIZE)
    source = option.source if option.value is not None else "default"
    config = {MANIFEST_TARGET_SIZE: Sourced(target_size(table.options), source)}
    latest_id = latest.id if latest else None
    if merge is None:
        return ManifestCompactDetails(
            "manifests", latest_id, config, None, False, (), 0, 0, 0, 0, 0, ()
        )
    kept = {str(p.row["_FILE_NAME"]) for p in merge.rewrite.parts if isinstance(p, KeptManifest)}
    changed = merge.changed
    notes: tuple[str, ...] = ()
    if table.options.get_bool("manifest-sort.enabled"):
        notes = (
            "manifest-sort.enabled is set: Paimon would also sort the rewritten entries by "
            "partition; the manifests written here hold the same entries, unsorted",
        )
    return ManifestCompactDetails(
        target="manifests",
        latest_snapshot=latest_id,
        config=config,
        merge=merge.mode,
        changed=changed,
        manifests=tuple(
            _manifest_row(
                table, m, "kept" if str(m["_FILE_NAME"]) in kept or not changed else "rewritten"
            )
            for m in merge.before
        ),
        manifests_before=len(merge.before),
        bytes_before=sum(int(m["_FILE_SIZE"]) for m in merge.before),
        entries_before=merge.entries_before,
        manifests_kept=len(kept) if changed else len(merge.before),
        entries_after=merge.entries_after if changed else merge.entries_before,
        notes=notes,
    )


def plan_compact_manifests(table: PaimonTable, *, now_ms: int) -> ManifestCompactPlan:
    """What a manifest compaction of the latest snapshot rewrites (read only)."""
    refuse_non_avro_manifests(table)
    latest = table.snapshots.latest()
    merge = merge_snapshot(table, latest) if latest is not None else None
    phases: tuple[Phase, ...] = ()
    if latest is not None and merge is not None and merge.changed:
        phases = (
            Phase.commit(
                table.snapshots.path(latest.id + 1),
                f"COMPACT commit: {len(merge.before)} data manifests merged",
            ),
        )
    plan = Plan(
        COMMAND,
        table.location,
        table.branch,
        now_ms,
        phases,
        Requirements.latest(latest.id if latest else None),
        _details(table, latest, merge),
    )
    return ManifestCompactPlan(plan, merge, latest)


def apply_compact_manifests(
    table: PaimonTable,
    mplan: ManifestCompactPlan,
    *,
    allow_unsafe: bool = False,
    run: Run | None = None,
) -> ManifestCompactResult | None:
    """One COMPACT commit of the merged manifests; merged again on a newer snapshot when a
    writer committed first. None when nothing changes."""
    merges: dict[int, ManifestMerge] = {}
    if mplan.snapshot is not None and mplan.merge is not None:
        merges[mplan.snapshot.id] = mplan.merge
    if not mplan.plan.phases:
        return None

    def build(latest: Snapshot) -> Changes:
        merge = merges.get(latest.id)
        if merge is None:  # a writer committed first: merge its snapshot's manifests
            merge = merges[latest.id] = merge_snapshot(table, latest)
        if not merge.changed:
            return Changes(())
        return Changes((), rewrite=merge.rewrite, details={"based_on": latest.id})

    result = commit(table, build, commit_kind="COMPACT", allow_unsafe=allow_unsafe, run=run)
    if result.snapshot is None:
        return ManifestCompactResult(result, 0, 0, 0, 0, 0, 0, result.notes)
    before = merges[result.snapshot.id - 1]
    after = table.manifest_list(result.snapshot, result.snapshot.base_manifest_list)
    return ManifestCompactResult(
        commit=result,
        manifests_before=len(before.before),
        manifests_after=len(after),
        bytes_before=sum(int(m["_FILE_SIZE"]) for m in before.before),
        bytes_after=sum(m.file_size for m in after),
        entries_before=before.entries_before,
        entries_after=sum(m.num_added_files + m.num_deleted_files for m in after),
        notes=result.notes,
    )


@dataclass(frozen=True)
class CompactManifests(Operation[ManifestCompactPlan, ManifestCompactResult]):
    """Paimon's compact_manifest: the latest snapshot's data manifests merged, committed once
    (COMPACT); nothing deleted."""

    command: ClassVar[str] = COMMAND

    allow_unsafe_commit: bool = False

    def plan(self, table: PaimonTable, env: Env) -> ManifestCompactPlan:
        return plan_compact_manifests(table, now_ms=env.now_ms)

    def apply(
        self, table: PaimonTable, plan: ManifestCompactPlan, env: Env
    ) -> ManifestCompactResult | None:
        return apply_compact_manifests(
            table, plan, allow_unsafe=self.allow_unsafe_commit, run=env.run
        )


__all__ = [
    "CompactManifests",
    "ManifestCompactPlan",
    "ManifestCompactResult",
    "apply_compact_manifests",
    "merge_snapshot",
    "plan_compact_manifests",
]
