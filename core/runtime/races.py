"""Writers committing while a run removes snapshot files newest first (rollback,
fast-forward): the guard that keeps the snapshot ids free of gaps.

Paimon commits ``snapshot-<latest+1>`` with a create-if-absent, finding the latest by the
``LATEST`` hint and probing up. A run that removes ``snapshot-N`` while a writer has just
committed ``snapshot-N+1`` on it would leave that commit above a gap: readers and streaming
jobs stall there, expiry and ``inspect --check`` see a hole. The guard looks before each
removal and again after it: a commit found after the removal gets ``snapshot-N`` back (the
same bytes, only where absent: nothing of it was deleted but the file) and the run stops.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from core.errors import PaimonError
from core.io.fileio import basename
from core.runtime.plans import FileAction, Phase
from core.table.table import PaimonTable


class ActionGuard(Protocol):
    """Checks around each action of a sequential phase; raising a PaimonError stops the run
    there (what was done so far is reported, the journal stays)."""

    def before(self, action: FileAction) -> None: ...

    def after(self, action: FileAction) -> None: ...


def newer_commits(table: PaimonTable, after: int) -> list[int]:
    """The snapshot ids present from ``after + 1`` on, as Paimon finds a latest snapshot:
    probing up while the next one exists."""
    found = []
    sid = after + 1
    while table.fileio.exists(table.snapshots.path(sid)):
        found.append(sid)
        sid += 1
    return found


def _snapshot_id(action: FileAction) -> int | None:
    if action.op != "delete" or action.kind != "snapshot":
        return None
    name = basename(action.path)
    if not name.startswith("snapshot-") or not name[9:].isdigit():
        return None
    return int(name[9:])


class NewestFirstGuard:
    """Before removing ``snapshot-N``: ``snapshot-N+1`` must be absent (this run removed it,
    or it never existed); present, it is a writer's commit on N, and the run stops. After
    the removal, the same look closes the window between the two: a commit that landed on N
    meanwhile gets ``snapshot-N`` back. ``raced`` builds the error from the commits found."""

    def __init__(self, table: PaimonTable, raced: Callable[[list[int]], PaimonError]) -> None:
        self.table = table
        self.raced = raced
        self._content: dict[str, bytes] = {}

    def before(self, action: FileAction) -> None:
        sid = _snapshot_id(action)
        if sid is None:
            return
        landed = newer_commits(self.table, sid)
        if landed:
            raise self.raced(landed)
        try:
            self._content[action.path] = self.table.fileio.read_bytes(action.path)
        except FileNotFoundError:
            self._content.pop(action.path, None)  # gone already (a resumed run)

    def after(self, action: FileAction) -> None:
        sid = _snapshot_id(action)
        if sid is None:
            return
        content = self._content.pop(action.path, None)
        landed = newer_commits(self.table, sid)
        if not landed:
            return
        if content is not None:
            self._put_back(action.path, content)
        raise self.raced(landed)

    def _put_back(self, path: str, content: bytes) -> None:
        fileio = self.table.fileio
        if fileio.conditional_create_supported(path):
            fileio.write_if_absent(path, content)
        elif not fileio.exists(path):
            fileio.write_bytes(path, content)


class SnapshotRaceWatch:
    """Once the run's snapshot files went (its phase ``snapshot-files``), before each later
    phase and at the end (``check``): ``landed()`` names the snapshots a writer committed
    meanwhile; any stops the run there with ``raced(landed)`` (what was done stands).
    ``before_phase`` is the operation's before-phase hook."""

    def __init__(
        self, landed: Callable[[], list[int]], raced: Callable[[list[int]], PaimonError]
    ) -> None:
        self.landed = landed
        self.raced = raced
        self.snapshots_gone = False

    def before_phase(self, phase: Phase) -> Phase:
        if self.snapshots_gone:
            self.check()
        if phase.name == "snapshot-files":
            self.snapshots_gone = True
        return phase

    def check(self) -> None:
        landed = self.landed()
        if landed:
            raise self.raced(landed)
