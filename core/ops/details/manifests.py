"""Details of manifest compaction (compact --manifests)."""

from __future__ import annotations

from dataclasses import dataclass

from core.ops.details.expiry import Sourced
from core.runtime.details import Record


@dataclass(frozen=True, slots=True)
class ManifestEntryCount(Record):
    """One data manifest of the latest snapshot and what the merge does with it."""

    name: str
    path: str
    size: int
    added: int
    deleted: int
    action: str  # kept | rewritten


@dataclass(frozen=True, slots=True)
class ManifestCompactDetails(Record):
    target: str  # "manifests"
    latest_snapshot: int | None
    config: dict[str, Sourced]  # manifest.target-file-size
    merge: str | None  # the merge's mode (full)
    changed: bool  # False: Paimon's merge keeps every manifest as it is
    manifests: tuple[ManifestEntryCount, ...]
    manifests_before: int
    bytes_before: int
    entries_before: int
    manifests_kept: int
    entries_after: int
    notes: tuple[str, ...]
