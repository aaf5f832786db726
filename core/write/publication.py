"""Publishing a snapshot, the point of no return, and the gate that decides whether files
written for a commit may still be removed (``Publication``).

Atomic create is a hard link on local file systems (never replaces a target) and a
conditional put (``If-None-Match: *``) on S3. Other object stores cannot refuse an
overwrite, so committing there is refused unless the caller opts in (``allow_unsafe``).
"Already exists" and errors are ambiguous after a retry (our own PUT may have landed): the
snapshot is read back and is ours when it carries our uuid.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from core.errors import PaimonError, SafetyRefusalError, StorageError, WriteOutcomeUnknownError
from core.format.model import Snapshot
from core.io.fileio import FileIO, join
from core.table.table import PaimonTable
from core.write.java_json import snapshot_json

logger = logging.getLogger(__name__)


def check_publishable(table: PaimonTable, *, allow_unsafe: bool) -> None:
    """Refuse before writing anything when the store cannot create files atomically."""
    if table.fileio.conditional_create_supported(table.snapshots.directory) or allow_unsafe:
        return
    raise SafetyRefusalError(
        f"{table.location} is on a store without an atomic create-if-absent, so a concurrent "
        "writer could overwrite (lose) this commit",
        hint="stop other writers and pass --allow-unsafe-commit, or use a local/HDFS/S3 table",
    )


def non_avro_manifests(table: PaimonTable) -> str | None:
    """The table's ``manifest.format`` when it is not Avro, the only one we write."""
    fmt = (table.options.get("manifest.format") or "avro").strip().lower()
    return None if fmt == "avro" else fmt


def refuse_non_avro_manifests(table: PaimonTable) -> None:
    """Java <= 2.0 reads manifests in the table's ``manifest.format``; we only write Avro."""
    fmt = non_avro_manifests(table)
    if fmt is not None:
        raise SafetyRefusalError(
            f"the table uses manifest.format={fmt}; paimon-cli writes Avro manifests only, "
            "which Paimon up to 2.0 would fail to read in this table",
            hint="run this operation with Paimon itself (e.g. the Spark or Flink procedure)",
        )


def publish_if_absent(
    fileio: FileIO, path: str, data: bytes, *, allow_unsafe: bool = False
) -> bool:
    """Create ``path`` only if absent; False when another writer's file is there."""
    if not fileio.conditional_create_supported(path):
        if not allow_unsafe:
            raise SafetyRefusalError(f"no atomic create-if-absent for {path}")
        logger.warning("non-atomic create of %s (opted in): a concurrent writer may win", path)
    return create_if_absent(fileio, path, data)


def create_if_absent(fileio: FileIO, path: str, data: bytes) -> bool:
    """Create ``path`` only if absent, atomically where the store can; otherwise check, then
    write (as Java does for tags). True when it holds ``data`` now (also when an earlier try
    of ours landed but its answer was lost); False when it holds something else."""
    if fileio.conditional_create_supported(path):
        return fileio.write_if_absent(path, data)
    if fileio.exists(path):
        return False
    fileio.write_bytes(path, data)
    return True


class PublishState(Enum):
    OPEN = "open"  # nothing published yet: what was written may be removed
    PUBLISHING = "publishing"  # creating the snapshot: its outcome may be unknown
    PUBLISHED = "published"  # the snapshot is ours: the commit has happened


class CommitOutcomeUnknownError(StorageError):
    """Creating the snapshot failed in a way that may still have stored it, and reading it
    back did not settle it; the files it would reference are kept (orphans if it did not
    land)."""

    kind = "commit_outcome_unknown"


@dataclass
class Publication:
    """The one gate between a commit and the removal of the files written for it.

    Files written before the snapshot (compaction's data and index files: ``outputs``; each
    attempt's manifests and lists) may be removed only while the publication is ``OPEN``:
    once creating the snapshot was attempted its outcome may be unknown, and once it is
    ours the commit has happened, whatever exception arrives afterwards."""

    fileio: FileIO
    state: PublishState = PublishState.OPEN
    outputs: list[str] = field(default_factory=list)

    @property
    def may_discard(self) -> bool:
        return self.state is PublishState.OPEN

    def discard(self, paths: Iterable[str], what: str = "") -> list[str]:
        """Remove ``paths`` when still allowed; returns those left behind (the reason is
        logged when the gate keeps them)."""
        paths = list(paths)
        if not paths:
            return []
        if not self.may_discard:
            logger.warning(
                "keeping %d file(s) written for the commit: the snapshot is %s",
                len(paths),
                "committed" if self.state is PublishState.PUBLISHED else "possibly committed",
            )
            return paths
        return delete_quietly(self.fileio, paths, what)

    def discard_outputs(self) -> list[str]:
        left = self.discard(self.outputs)
        if self.may_discard:
            self.outputs.clear()
        return left


def delete_quietly(fileio: FileIO, paths: Iterable[str], what: str = "") -> list[str]:
    """Delete files this run wrote, logging each failure (``could not remove <what><path>``)
    instead of raising; returns the paths that could not be removed."""
    failed = []
    for path in paths:
        try:
            fileio.delete(path)
        except StorageError as exc:
            logger.warning("could not remove %s%s: %s", what, path, exc.message)
            failed.append(path)
    return failed


def write_latest_hint(table: PaimonTable, snapshot_id: int) -> str | None:
    """Overwrite ``LATEST``; a failure does not fail the commit (Paimon tolerates it too)."""
    try:
        table.fileio.write_bytes(
            join(table.snapshots.directory, "LATEST"), str(snapshot_id).encode()
        )
        return None
    except StorageError as exc:
        return f"could not update the LATEST hint: {exc.message}"


def publish_snapshot(
    table: PaimonTable, raw: dict[str, Any], publication: Publication, *, allow_unsafe: bool
) -> Snapshot | None:
    """Create the snapshot file; None if another writer's snapshot has the id.

    "Already exists" and errors are ambiguous after a retry (our own PUT may have landed):
    the file is read back and is ours when it carries our uuid, as Paimon master does.
    The publication stays ``PUBLISHING`` (nothing discarded) while that is unknown."""
    path = table.snapshots.path(raw["id"])
    data = snapshot_json(raw).encode("utf-8")
    publication.state = PublishState.PUBLISHING
    try:
        created = publish_if_absent(table.fileio, path, data, allow_unsafe=allow_unsafe)
    except StorageError as exc:
        return _settle_after_error(table, raw, publication, exc)
    if not created:
        publication.state = PublishState.OPEN  # another writer's snapshot: a lost race
        return None
    publication.state = PublishState.PUBLISHED
    return Snapshot.from_json(raw, path)


def _settle_after_error(
    table: PaimonTable, raw: dict[str, Any], publication: Publication, exc: StorageError
) -> Snapshot | None:
    """Read the snapshot back after a failed create: ours, another writer's, or unknown."""
    try:
        theirs = table.snapshots.try_snapshot(raw["id"])
    except PaimonError as read_error:
        raise CommitOutcomeUnknownError(
            f"creating snapshot {raw['id']} failed ({exc.message}) and it could not be read "
            f"back ({read_error.message}): it may or may not be committed; the files it "
            "references were kept",
            hint="run `paimon inspect TABLE snapshots`: if it is not there, the kept files are "
            "orphans for delete-orphan-files",
        ) from exc
    if theirs is not None and theirs.raw.get("uuid") == raw["uuid"]:
        publication.state = PublishState.PUBLISHED
        return theirs
    if theirs is not None:
        publication.state = PublishState.OPEN  # someone else's: ours never landed there
        return None
    if isinstance(exc, WriteOutcomeUnknownError):
        # Absent now, yet a PUT still in flight could land: keep what it would reference.
        raise CommitOutcomeUnknownError(
            f"creating snapshot {raw['id']} failed ({exc.message}) and it is not there now, "
            "but the write may still land: the files it references were kept",
            hint="rerun the command; files of a commit that did not land are orphans for "
            "delete-orphan-files",
        ) from exc
    publication.state = PublishState.OPEN  # refused before anything was stored
    raise exc
