"""Details of the branch commands (create-branch, delete-branch, fast-forward)."""

from __future__ import annotations

from dataclasses import dataclass

from core.ops.details.repair import ConsumerAhead
from core.runtime.details import Record
from core.runtime.plans import SnapshotIdentity


@dataclass(frozen=True, slots=True)
class CreateBranchDetails(Record):
    branch: str
    from_branch: str
    from_tag: str | None
    snapshot_id: int | None  # the tag's snapshot (None: an empty branch)
    snapshot_restored_from_tag: bool  # written from the tag: the snapshot had expired
    schemas: tuple[int, ...]  # schema ids copied
    finishing: bool  # an interrupted create-branch left the branch incomplete
    notes: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class DeleteBranchDetails(Record):
    branch: str
    snapshots: tuple[int, ...]  # the branch's, at planning (a new one stops the deletion)
    tags: tuple[str, ...]
    files: int  # in the branch directory
    notes: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class FastForwardDetails(Record):
    branch: str
    target: str
    branch_earliest: int  # the target's snapshots from here on are replaced
    branch_latest: int
    branch_snapshots: tuple[int, ...]  # at planning (a new one makes the plan stale)
    branch_schema: int
    snapshots_removed: tuple[int, ...]
    snapshots_copied: tuple[int, ...]
    snapshots_unchanged: tuple[SnapshotIdentity, ...]  # the same commit on both sides
    schemas_removed: tuple[int, ...]
    schemas_copied: tuple[int, ...]
    tags_removed: tuple[str, ...]
    tags_copied: tuple[str, ...]
    consumers_ahead: tuple[ConsumerAhead, ...]
    branches_from_removed_tags: dict[str, tuple[str, ...]]
    forced: bool
    latest_schema: int | None  # the target's, at planning
    notes: tuple[str, ...]
