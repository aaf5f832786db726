"""Planning a restore of a quarantined run (``restore.py`` runs it): which files go back
where, read from the run's record bound to the table at hand, and what refuses the whole
restore before the first move: a file at its old place with other content, a snapshot id
taken again, a gap between the restored snapshots and the table's, or a file a restored
snapshot, tag or changelog needs that is neither in the table nor in the run's quarantine
(the same walk as ``inspect --check``, over the storage as it will be after the restore).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from core.errors import PaimonError, SafetyRefusalError, TableNotFoundError
from core.format.metadata_io import read_json
from core.format.model import Snapshot
from core.io.fileio import FileInfo, FileIO, basename, parent
from core.ops.inspection.check import Problem, check_roots
from core.runtime.apply import same_file
from core.runtime.executors.local import LocalExecutor
from core.runtime.journal import unfinished_journals
from core.runtime.plans import Plan, SnapshotIdentity
from core.runtime.quarantine import (
    Quarantine,
    QuarantinedRun,
    bind_record,
    records,
    relative_to_table,
)
from core.runtime.wording import plural
from core.table.snapshot_manager import SnapshotManager
from core.table.table import PaimonTable

_SNAPSHOT = re.compile(r"snapshot-(\d+)$")


class RestoreError(PaimonError):
    kind = "restore_refused"


@dataclass(frozen=True, slots=True)
class RestoreItem:
    path: str  # where the file goes back to
    source: str  # where it is in the quarantine
    kind: str
    size: int | None
    state: str  # move | duplicate (both present, same file) | in-place | missing
    op: str = "move"  # move | put-back (an overwritten file's old content) | remove (we made it)
    branch: str = "main"  # the branch of the plan that removed it
    phase: str = "hints"  # the run's phase that removed it: a restore phase undoes one
    sequential: bool = True  # that phase went strictly in order (snapshot files)
    written: str | None = None  # put-back: what the run wrote there (None: not recorded)


@dataclass(frozen=True)
class RestorePlan:
    run_id: str
    command: str
    created_ms: int
    record_path: str
    items: tuple[RestoreItem, ...]
    conflicts: tuple[str, ...]
    snapshots: tuple[int, ...]  # snapshot ids brought back
    tags: tuple[str, ...]
    notes: tuple[str, ...] = ()
    incomplete: tuple[Problem, ...] = ()  # what restored roots need and nothing holds

    def to_json(self) -> dict[str, Any]:
        return {
            "run_id": self.run_id,
            "command": self.command,
            "created_ms": self.created_ms,
            "snapshots": list(self.snapshots),
            "tags": list(self.tags),
            "conflicts": list(self.conflicts),
            "incomplete": [
                {
                    "path": p.path,
                    "kind": p.kind,
                    "role": p.role,
                    "referenced_by": p.referenced_by,
                    "detail": p.detail,
                }
                for p in self.incomplete
            ],
            "notes": list(self.notes),
            "files": [
                {
                    "path": i.path,
                    "quarantined_at": i.source,
                    "kind": i.kind,
                    "size": i.size,
                    "state": i.state,
                    "op": i.op,
                }
                for i in self.items
            ],
        }


@dataclass
class RestoreReport:
    restored: int = 0
    already_in_place: int = 0
    missing: int = 0
    bytes: int = 0
    seconds: float = 0.0
    notes: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            "status": "ok",
            "restored": self.restored,
            "already_in_place": self.already_in_place,
            "missing": self.missing,
            "bytes": self.bytes,
            "seconds": round(self.seconds, 3),
            "notes": self.notes,
        }


def pick_record(fileio: FileIO, table_root: str, run_id: str | None) -> dict[str, Any]:
    """The quarantine record of ``run_id``, or the newest not yet restored (``--last``)."""
    found = records(fileio, table_root)
    if run_id is None:
        open_ = [r for r in found if r.get("status") == "quarantined"]
        if not open_:
            raise RestoreError(f"{table_root} has no quarantined run to restore")
        return open_[-1]
    for record in found:
        if record.get("run_id") == run_id:
            if record.get("status") != "quarantined":
                raise RestoreError(f"run {run_id} was already {record.get('status')}")
            return record
    raise RestoreError(
        f"no quarantined run {run_id!r} in {table_root}",
        hint="list runs with: paimon inspect TABLE runs",
    )


def _describe(path: str) -> str:
    name = basename(path)
    m = _SNAPSHOT.match(name)
    if m and basename(parent(path)) == "snapshot":
        return f"snapshot {m.group(1)} ({path})"
    if name.startswith("tag-") and basename(parent(path)) == "tag":
        return f"tag {name[4:]!r} ({path})"
    return path


@dataclass(frozen=True, slots=True)
class _Removed:
    """One file the run removed, with the phase that removed it."""

    path: str
    kind: str
    size: int | None
    branch: str
    phase: str
    sequential: bool


def _ordered(plans: Sequence[Plan[Any]]) -> list[_Removed]:
    """Every delete of the run, in the reverse of the run's order."""
    out = []
    seen: set[str] = set()
    for plan in reversed(plans):
        for phase in reversed(plan.phases):
            for action in reversed(phase.actions):
                if action.op == "delete" and action.path not in seen:
                    seen.add(action.path)
                    out.append(
                        _Removed(
                            action.path,
                            action.kind,
                            action.size,
                            plan.branch,
                            phase.name,
                            phase.sequential,
                        )
                    )
    return out


def _snapshot_dirs(items: Sequence[RestoreItem], *, lost: bool = False) -> dict[str, list[int]]:
    """Restored snapshot ids by snapshot directory (one per branch); ``lost``: the ids of the
    run's snapshot files that are in neither place, which never come back."""
    out: dict[str, list[int]] = {}
    for item in items:
        m = _SNAPSHOT.match(basename(item.path))
        if not m or basename(parent(item.path)) != "snapshot" or item.op != "move":
            continue
        if (item.state == "missing") == lost:
            out.setdefault(parent(item.path), []).append(int(m.group(1)))
    return out


def _present_ids(fileio: FileIO, directory: str) -> set[int]:
    ids = set()
    for info in fileio.list_dir(directory):
        m = _SNAPSHOT.match(info.name)
        if m and not info.is_dir:
            ids.add(int(m.group(1)))
    return ids


def _items(table: PaimonTable, run: QuarantinedRun, conflicts: list[str]) -> list[RestoreItem]:
    """Where each file the run removed or wrote is now, and what restoring it means."""
    fileio, quarantine = table.fileio, run.quarantine
    items: list[RestoreItem] = []
    # A file the run created and then removed itself (a decoupled expiry's changelog-N that
    # its changelog expiry took too) was absent before the run: it stays absent.
    created = {path for path, existed in run.writes if not existed}
    for removed in _ordered(run.plans):
        path = removed.path
        if path in created:
            continue
        source = _locked(table, quarantine.target(path))
        here, there = fileio.info(path), fileio.info(source)
        if there is None:
            state = "in-place" if here is not None else "missing"
        elif here is None:
            state = "move"
        elif same_file(fileio, path, source, here.size, there.size):
            state = "duplicate"
        else:
            state = "conflict"
            conflicts.append(f"{_describe(path)} exists again with other content")
        size = removed.size or None
        items.append(
            RestoreItem(
                path,
                source,
                removed.kind,
                size,
                state,
                branch=removed.branch,
                phase=removed.phase,
                sequential=removed.sequential,
            )
        )
    written = {  # what the run wrote over each file, and its kind
        a.path: a for p in run.plans for ph in p.phases for a in ph.actions if a.op == "write"
    }
    for path, existed in run.writes:
        source = _locked(table, quarantine.target(path))
        if existed:
            there = fileio.info(source)
            state = "move" if there is not None else "in-place"
            wrote = written.get(path)
            kind, content = ("hint", None) if wrote is None else (wrote.kind, wrote.content)
            items.append(RestoreItem(path, source, kind, None, state, "put-back", written=content))
        else:
            state = "move" if fileio.exists(path) else "in-place"
            items.append(RestoreItem(path, source, "written", None, state, "remove"))
    return items


def _snapshot_conflicts(
    fileio: FileIO, items: list[RestoreItem], conflicts: list[str]
) -> list[int]:
    """The snapshot ids the restore brings back; a gap it would leave, or a lost snapshot
    of the run above the oldest it brings back, is a conflict."""
    snapshots: list[int] = []
    for directory, ids in sorted(_snapshot_dirs(items).items()):
        present = _present_ids(fileio, directory)
        union = sorted(present | set(ids))
        gaps = [i for i in range(union[0], union[-1] + 1) if i not in union] if union else []
        if gaps:
            conflicts.append(
                f"snapshot {gaps[0]} is gone from {directory} since this run: restoring "
                f"snapshots {min(ids)}..{max(ids)} would leave a gap (restore later "
                "quarantined runs first, newest first)"
            )
        snapshots += ids
    for directory, ids in sorted(_snapshot_dirs(items, lost=True).items()):
        back = _snapshot_dirs(items).get(directory, [])
        # One above the oldest restored would leave a hole or a LATEST hint naming nothing;
        # lost ones below all restored are the oldest (expired meanwhile): harmless.
        above = [i for i in ids if back and i > min(back)]
        if above:
            conflicts.append(
                f"snapshot {above[0]} of this run is in neither {directory} nor the run's "
                "quarantine: the restored snapshots would not be contiguous up to the latest "
                "the run removed"
            )
    return snapshots


def _lineage_conflicts(
    table: PaimonTable, run: QuarantinedRun, items: list[RestoreItem], conflicts: list[str]
) -> None:
    """Snapshot files hold no parent: the run's snapshots go back only into the history they
    left. The commits next to them then (the record's ``beside``) must be the ones there
    now, and where there was none above (a rollback removed the newest), nothing may have
    been committed above since: a writer's commits after a rollback reuse its ids, and an
    expiry of those leaves room that the ids alone do not show (issue 22)."""
    beside = run.record.get("beside")
    if not isinstance(beside, dict):
        return  # a record of an earlier version: the id checks above are all it gets
    fileio = table.fileio
    for directory, back in sorted(_snapshot_dirs(items).items()):
        recorded = beside.get(relative_to_table(table, directory))
        if not isinstance(recorded, dict):
            continue
        # every snapshot file of the run here: removed (back, lost or in conflict) or
        # written by it (the restore removes those)
        run_ids = {
            int(m.group(1))
            for i in items
            if parent(i.path) == directory and (m := _SNAPSHOT.match(basename(i.path)))
        }
        present = _present_ids(fileio, directory) - run_ids
        snapshots = SnapshotManager(fileio, parent(directory))
        low, high = min(back), max(back)
        ids = f"snapshot {low}" if low == high else f"snapshots {low}..{high}"
        it = "it" if low == high else "they"
        for side, others in (
            ("below", [i for i in present if i < low]),
            ("above", [i for i in present if i > high]),
        ):
            was = recorded.get(side)
            if was is None:
                if others:
                    then = "the newest" if side == "above" else "the oldest"
                    conflicts.append(
                        f"snapshot {others[0]} in {directory} was committed since the run "
                        f"removed {ids} ({then} then): {it} would come back into a history "
                        f"{it} {'was' if low == high else 'were'} never part of"
                    )
                continue
            then_id = SnapshotIdentity.from_json(was)
            snap = snapshots.try_snapshot(then_id.id)
            if snap is None:
                continue  # gone since: the gap checks above speak for it
            changed = then_id.differences(SnapshotIdentity.of(snap))
            if changed:
                conflicts.append(
                    f"snapshot {then_id.id} in {directory} is another commit than the one "
                    f"next to {ids} when the run removed them ({'; '.join(changed)}): the "
                    "table has left the history they belonged to"
                )


def plan_restore(table: PaimonTable, run_id: str | None) -> RestorePlan:
    """What a restore would move, and every reason it must not."""
    fileio = table.fileio
    record = pick_record(fileio, table.paths.root, run_id)
    run = bind_record(table, record)  # this table's paths, locked; refused otherwise
    rid = run.run_id
    quarantine = run.quarantine
    conflicts: list[str] = []
    notes: list[str] = []
    for journal in unfinished_journals(fileio, table.location):
        if journal.quarantine_run == rid:
            conflicts.append(
                f"run {rid} did not finish (journal {journal.path}); any command finishes it "
                "first, restore after that"
            )
    items = _items(table, run, conflicts)
    snapshots = _snapshot_conflicts(fileio, items, conflicts)
    _lineage_conflicts(table, run, items, conflicts)
    missing = sum(1 for i in items if i.state == "missing")
    if missing:
        notes.append(
            f"{plural(missing, 'file is', 'files are')} in neither place (absent already when "
            "the run moved them, or purged)"
        )
    incomplete = _incomplete(table, quarantine, items)
    if incomplete:
        names = ", ".join(f"{p.path} ({p.referenced_by})" for p in incomplete[:5])
        more = f" and {len(incomplete) - 5} more" if len(incomplete) > 5 else ""
        conflicts.append(
            f"{plural(len(incomplete), 'file')} the restored snapshots, tags or changelogs "
            f"need {'is' if len(incomplete) == 1 else 'are'} in neither the table nor the "
            f"run's quarantine: {names}{more} (removed since the run, e.g. by "
            "delete-orphan-files or a later run; restore a later quarantined run that holds "
            "them first)"
        )
    tags = sorted(
        basename(i.path)[4:]
        for i in items
        if i.op == "move" and basename(i.path).startswith("tag-") and i.kind == "tag"
    )
    return RestorePlan(
        rid,
        str(record.get("command")),
        int(record.get("created_ms") or 0),
        run.record_path,
        tuple(items),
        tuple(conflicts),
        tuple(sorted(snapshots)),
        tuple(tags),
        tuple(notes),
        tuple(incomplete),
    )


def _locked(table: PaimonTable, path: str) -> str:
    if not table.paths.is_inside_table(path):
        raise SafetyRefusalError(
            f"refusing to restore through {path}: outside the table root and its declared "
            "external paths"
        )
    return path


class _AfterRestore(FileIO):
    """Storage as it will be once the restore has moved everything back: a file at its
    place, else at its place in the run's quarantine."""

    def __init__(self, inner: FileIO, quarantine: Quarantine) -> None:
        super().__init__(
            inner.storage_options,
            max_requests_per_second=inner.max_requests_per_second,
            retries=inner.retries,
        )
        self.quarantine = quarantine

    def _held(self, path: str) -> str | None:
        try:
            return self.quarantine.target(path)
        except SafetyRefusalError:
            return None  # outside every root: nothing the quarantine can hold

    def read_bytes(self, path: str) -> bytes:
        try:
            return super().read_bytes(path)
        except FileNotFoundError:
            held = self._held(path)
            if held is None:
                raise
            return super().read_bytes(held)

    def info(self, path: str) -> FileInfo | None:
        found = super().info(path)
        held = self._held(path) if found is None else None
        return found if held is None else super().info(held)


_ROOT_KINDS = {"snapshot": "snapshot", "tag": "tag", "changelog-json": "changelog"}


def _incomplete(
    table: PaimonTable, quarantine: Quarantine, items: Sequence[RestoreItem]
) -> list[Problem]:
    """Every file the restored snapshots, tags and long-lived changelogs need that is in
    neither the table nor the quarantine (or unreadable there): the same walk as
    ``inspect --check``, over the storage as it will be after the restore."""
    by_branch: dict[str, tuple[list[Snapshot], list[tuple[str, Snapshot]], list[Snapshot]]] = {}
    for item in items:
        kind = _ROOT_KINDS.get(item.kind)
        if kind is None or item.op != "move" or item.state in ("missing", "conflict"):
            continue
        if kind == "snapshot" and not _SNAPSHOT.match(basename(item.path)):
            continue  # a file of the snapshot directory orphan cleaning removed (a temp file)
        where = item.source if item.state == "move" else item.path
        root = Snapshot.from_json(read_json(table.fileio, where), where)
        snaps, tags, changelogs = by_branch.setdefault(item.branch, ([], [], []))
        if kind == "snapshot":
            snaps.append(root)
        elif kind == "tag":
            tags.append((basename(item.path).removeprefix("tag-"), root))
        else:
            changelogs.append(root)
    problems: list[Problem] = []
    after = _AfterRestore(table.fileio, quarantine)
    for branch, (snaps, tags, changelogs) in sorted(by_branch.items()):
        try:
            view = table if branch == table.branch else table.for_branch(branch)
        except TableNotFoundError:
            raise RestoreError(
                f"branch {branch} of the run's snapshots no longer exists; refusing to restore"
            ) from None
        with LocalExecutor() as executor:
            report = check_roots(
                replace(view, fileio=after),
                snapshots=snaps,
                tags=tags,
                changelogs=changelogs,
                executor=executor,
            )
        problems += report.problems
    return problems
