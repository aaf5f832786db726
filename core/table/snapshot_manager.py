"""SnapshotManager: snapshot files and the EARLIEST/LATEST hints of one branch."""

from __future__ import annotations

from collections.abc import Callable

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
        """The latest snapshot committed at or before ``time_ms`` (the highest id of those,
        when several share a millisecond), or None: Paimon's ``earlierOrEqualTimeMills``,
        whose search stops at whichever equal one it reads first (DECISIONS D4)."""
        return self._time_boundary(lambda snap: snap.time_millis > time_ms)[0]

    def later_or_equal_time(self, time_ms: int) -> Snapshot | None:
        """The earliest snapshot committed at or after ``time_ms`` (the lowest id of those),
        or None: Paimon's ``laterOrEqualTimeMills``."""
        return self._time_boundary(lambda snap: snap.time_millis >= time_ms)[1]

    def _time_boundary(
        self, beyond: Callable[[Snapshot], bool]
    ) -> tuple[Snapshot | None, Snapshot | None]:
        """The last snapshot before, and the first at, the boundary of ``beyond`` (false up
        to some id and true from there on, as commit times ascend with ids): a binary
        search by predicate, so equal times never end it early."""
        ids = self.ids()
        low, high = 0, len(ids)  # ids[:low] are not beyond, ids[high:] are
        before: Snapshot | None = None
        first: Snapshot | None = None
        while low < high:
            mid = (low + high) // 2
            snap = self.snapshot(ids[mid])
            if beyond(snap):
                high, first = mid, snap
            else:
                low, before = mid + 1, snap
        return before, first

    def snapshots(self) -> list[Snapshot]:
        """Every snapshot present, ascending; files vanishing meanwhile are skipped."""
        out = []
        for sid in self.ids():
            snap = self.try_snapshot(sid)
            if snap is not None:
                out.append(snap)
        return out
