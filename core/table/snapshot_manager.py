"""SnapshotManager: snapshot files and the EARLIEST/LATEST hints of one branch."""

from __future__ import annotations

from core.errors import CorruptMetadataError, MissingFileError
from core.format.metadata_io import KindDirectory, list_versioned, read_hint, read_json
from core.format.model import Snapshot
from core.io.fileio import FileInfo, FileIO


class SnapshotManager(KindDirectory):
    """Also serves long-lived changelogs, which share the snapshot layout."""

    def __init__(self, fileio: FileIO, branch_root: str, *, kind: str = "snapshot") -> None:
        super().__init__(fileio, branch_root, kind)
        self.kind = kind

    def listing(self) -> dict[int, FileInfo]:
        return list_versioned(self.fileio, self.directory, self.prefix)

    def ids(self) -> list[int]:
        return sorted(self.listing())

    def earliest_hint(self) -> int | None:
        return read_hint(self.fileio, self.directory, "EARLIEST")

    def latest_hint(self) -> int | None:
        return read_hint(self.fileio, self.directory, "LATEST")

    def latest_id(self) -> int | None:
        # Paimon trusts LATEST when snapshot-(h+1) is absent; we also require snapshot-h to
        # exist, so a stale too-high hint can never widen an expiry range (safer, D3).
        hint = self.latest_hint()
        if (
            hint is not None
            and hint > 0
            and self.fileio.exists(self.path(hint))
            and not self.fileio.exists(self.path(hint + 1))
        ):
            return hint
        ids = self.ids()
        return ids[-1] if ids else None

    def earliest_id(self) -> int | None:
        # Paimon trusts EARLIEST when snapshot-h exists; a too-high hint then hides older
        # snapshots whose files the expiry deltas would delete (issue 12). The smallest id
        # listed is the truth (safer, D3); ``earliest_hint_note`` says when the hint lies.
        ids = self.ids()
        return ids[0] if ids else None

    def earliest_hint_note(self, earliest: int | None) -> str | None:
        """A sentence for the plan when the EARLIEST hint disagrees with the listing."""
        hint = self.earliest_hint()
        if hint is None or earliest is None or hint == earliest:
            return None
        return (
            f"the {self.kind} EARLIEST hint says {hint} but {self.prefix}{earliest} is the "
            f"oldest present; {earliest} is used (the hint is not trusted, D3)"
        )

    def missing(self, snapshot_id: int) -> MissingFileError:
        """The error for a snapshot a user named that is not there, with the ones that are."""
        ids = self.ids()
        hint = f"its {self.kind}s are {ids[0]}..{ids[-1]}" if ids else f"it has no {self.kind}s"
        return MissingFileError(self.path(snapshot_id), f"{self.kind} {snapshot_id}", hint=hint)

    def snapshot(self, snapshot_id: int) -> Snapshot:
        path = self.path(snapshot_id)
        try:
            data = read_json(self.fileio, path)
        except FileNotFoundError:
            raise MissingFileError(path, f"{self.kind} {snapshot_id}") from None
        snap = Snapshot.from_json(data, path)
        if snap.id != snapshot_id:
            raise CorruptMetadataError(path, f"holds id {snap.id}, file name says {snapshot_id}")
        return snap

    def try_snapshot(self, snapshot_id: int) -> Snapshot | None:
        """The snapshot, or None if its file is absent (expired concurrently)."""
        try:
            return self.snapshot(snapshot_id)
        except MissingFileError:
            return None

    def latest(self) -> Snapshot | None:
        latest = self.latest_id()
        return self.snapshot(latest) if latest is not None else None

    def earlier_or_equal_time(self, time_ms: int) -> Snapshot | None:
        """The latest snapshot committed at or before ``time_ms``, or None: Paimon's
        ``earlierOrEqualTimeMills`` (a binary search over the ids, commit times ascending;
        None when even the earliest is later)."""
        ids = self.ids()
        if not ids or self.snapshot(ids[0]).time_millis > time_ms:
            return None
        return self._search_time(ids, time_ms, later=False)

    def later_or_equal_time(self, time_ms: int) -> Snapshot | None:
        """The earliest snapshot committed at or after ``time_ms``, or None: Paimon's
        ``laterOrEqualTimeMills`` (None when even the latest is earlier)."""
        ids = self.ids()
        if not ids or self.snapshot(ids[-1]).time_millis < time_ms:
            return None
        return self._search_time(ids, time_ms, later=True)

    def _search_time(self, ids: list[int], time_ms: int, *, later: bool) -> Snapshot | None:
        """A binary search over ``ids`` (commit times ascending): the snapshot committed at
        ``time_ms``, else the nearest one after it (``later``) or before it."""
        low, high, found = 0, len(ids) - 1, None
        while low <= high:
            mid = (low + high) // 2
            snap = self.snapshot(ids[mid])
            if snap.time_millis == time_ms:
                return snap
            if snap.time_millis > time_ms:
                high = mid - 1
                found = snap if later else found
            else:
                low = mid + 1
                found = found if later else snap
        return found

    def snapshots(self) -> list[Snapshot]:
        """Every snapshot present, ascending; files vanishing meanwhile are skipped."""
        out = []
        for sid in self.ids():
            snap = self.try_snapshot(sid)
            if snap is not None:
                out.append(snap)
        return out
