"""Details of the undo and repair commands: rollback and remove-unexisting-files."""

from __future__ import annotations

from dataclasses import dataclass, field

from core.runtime.details import OMIT_NONE, Record
from core.runtime.plans import SnapshotIdentity


@dataclass(frozen=True, slots=True)
class RemovedTag(Record):
    name: str
    snapshot_id: int


@dataclass(frozen=True, slots=True)
class ConsumerAhead(Record):
    """A consumer that read past the target (a rollback needs --force)."""

    id: str
    next_snapshot: int


@dataclass(frozen=True, slots=True)
class RollbackGuard(Record):
    """The snapshot kept as latest, when it exists: a resume finds the same commit there."""

    target: SnapshotIdentity | None


@dataclass(frozen=True, slots=True)
class RollbackDetails(Record):
    target_snapshot: int
    target_tag: str | None
    # --to-timestamp: the time asked for (the snapshot is the latest at or before it)
    target_timestamp_ms: int | None
    snapshot_restored_from_tag: bool  # written back from the tag (it had expired)
    latest_snapshot: int | None
    snapshots: tuple[int, ...]  # removed
    changelogs: tuple[int, ...]  # removed
    tags: tuple[RemovedTag, ...]
    consumers_ahead: tuple[ConsumerAhead, ...]
    branches_from_removed_tags: dict[str, tuple[str, ...]]  # tag -> branches created from it
    forced: bool
    journal_guard: RollbackGuard
    notes: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class MissingFile(Record):
    path: str
    partition: dict[str, str | None]
    bucket: int
    level: int
    rows: int
    size: int


@dataclass(frozen=True, slots=True)
class RemoveUnexistingDetails(Record):
    snapshot_id: int | None  # the latest snapshot, repaired
    files: tuple[MissingFile, ...]
    # (partition BinaryRow hex, bucket, level, file name): what the commit marks DELETE
    identifiers: tuple[tuple[str, int, int, str], ...] | None = field(
        default=None, metadata=OMIT_NONE
    )
    rows: int = 0
