"""What one commit changes (``Changes``), built by the caller from the latest snapshot it is
based on, again on every attempt; and the identifier Paimon matches manifest entries by."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from core.format.model import Snapshot


@dataclass(frozen=True)
class KeptManifest:
    """A data manifest a rewrite keeps as it is: its manifest-list row."""

    row: Mapping[str, Any]


@dataclass(frozen=True)
class NewManifests:
    """Manifest entries a rewrite writes into new manifests, rolled at ``target_size``."""

    entries: tuple[Mapping[str, Any], ...]
    target_size: int


@dataclass(frozen=True)
class ManifestRewrite:
    """A commit that replaces the data manifests instead of adding a delta (Paimon's manifest
    compaction): the new base list is ``parts`` in order, the delta list is empty, and the
    snapshot keeps the table's rows, index manifest, statistics and properties."""

    parts: tuple[KeptManifest | NewManifests, ...]


@dataclass(frozen=True)
class Changes:
    """What one commit attempt changes, built from the latest snapshot it is based on."""

    entries: tuple[dict[str, Any], ...]  # delta manifest rows (Java layout), ADD and DELETE
    # Index entries to drop, by (partition, bucket, index type, file name).
    index_deletes: frozenset[tuple[bytes, int, str, str]] = frozenset()
    details: Mapping[str, Any] = field(default_factory=dict)
    # The builder already verified that every DELETE is live in the snapshot it was given
    # (compaction checks against its own plan), so the commit need not re-read the manifests.
    deletes_verified: bool = False
    # Changelog files (ADD manifest rows) the commit lists in its changelog manifest list,
    # as Paimon commits a compaction's changelog (changelog-producer = full-compaction).
    changelog: tuple[dict[str, Any], ...] = ()
    # Index manifest rows (Java layout) of index files to add.
    index_adds: tuple[dict[str, Any], ...] = ()
    # The data manifests rewritten (manifest compaction); then ``entries`` is empty.
    rewrite: ManifestRewrite | None = None

    @property
    def empty(self) -> bool:
        return (
            not self.entries
            and not self.index_deletes
            and not self.index_adds
            and self.rewrite is None
        )


Builder = Callable[[Snapshot], Changes]


def entry_identifier(entry: Mapping[str, Any]) -> tuple[Any, ...]:
    """Paimon's FileEntry identifier of a raw manifest row (matches ManifestEntry.identifier)."""
    f = entry["_FILE"]
    return (
        bytes(entry["_PARTITION"]),
        entry["_BUCKET"],
        f["_LEVEL"],
        f["_FILE_NAME"],
        tuple(f.get("_EXTRA_FILES") or ()),
        f.get("_EMBEDDED_FILE_INDEX"),
        f.get("_EXTERNAL_PATH"),
    )
