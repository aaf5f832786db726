"""Quarantine: move instead of delete, so a run can be undone (``paimon restore``).

A file ``<root>/<rel>`` deleted by run ``R`` goes to ``<root>/.paimon-cli/quarantine/R/<rel>``,
where ``<root>`` is the table root or, for a file under a declared external path, that
external root (a move never leaves its own file system or bucket). The run's plan, and the
old content of every file it overwrites (hints), are kept in the record
``<table>/.paimon-cli/quarantine/R.json``, written before the first move. Paimon never lists
``.paimon-cli``; orphan cleaning never looks into it.

A record is bound to the table it lies in, never to where it was written (issue 22): its
paths are stored relative to the table root (those under a declared external root stay
whole), and reading it resolves them against the table at hand, so a copied table's restore
acts on the copy and a renamed table's on its new place. Its run id must be one paimon-cli
makes, the quarantine's roots are the table's own, and every path passes the path lock
(``PathFactory.is_inside_table``) before anything follows it.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from core.errors import CorruptMetadataError, SafetyRefusalError, StorageError
from core.io.fileio import FileIO, basename, join, normalize_path, parent, protocol_of
from core.runtime.clock import now_ms as clock_now_ms
from core.runtime.lease import LOST_HINT, LeaseFence, LeaseLostError
from core.runtime.plans import Plan, SnapshotIdentity
from core.table.snapshot_manager import SnapshotManager

if TYPE_CHECKING:
    from core.table.table import PaimonTable

logger = logging.getLogger(__name__)

QUARANTINE_DIR = (".paimon-cli", "quarantine")
# 2: paths relative to the table root; 1 (read still): absolute paths of where it was written
RECORD_FORMAT = 2
_READABLE_FORMATS = (1, 2)
_RUN_ID = re.compile(r"[0-9a-f]{12}")  # core.runtime.runs.new_run_id
SNAPSHOT_FILE = re.compile(r"snapshot-(\d+)")


def quarantine_dir(root: str) -> str:
    return join(root, *QUARANTINE_DIR)


def record_path(table_root: str, run_id: str) -> str:
    return join(quarantine_dir(table_root), f"{run_id}.json")


@dataclass(frozen=True, slots=True)
class Quarantine:
    """Where one run's files go; picklable, so executor tasks can move files."""

    run_id: str
    roots: tuple[str, ...]  # the table root first, then the declared external roots

    @classmethod
    def of(cls, table: PaimonTable, run_id: str) -> Quarantine:
        return cls(run_id, (table.paths.root, *table.paths.external_roots))

    def target(self, path: str) -> str:
        """The quarantine path of ``path``, inside the root that holds it."""
        for root in sorted(self.roots, key=len, reverse=True):
            prefix = root.rstrip("/") + "/"
            if path.startswith(prefix):
                return join(quarantine_dir(root), self.run_id, path[len(prefix) :])
        raise SafetyRefusalError(f"refusing to quarantine {path}: outside the table's roots")

    def move_in(self, fileio: FileIO, path: str) -> bool:
        """Move ``path`` into the quarantine; False when it was already gone."""
        return fileio.move(path, self.target(path))


def write_record(
    fileio: FileIO, table: PaimonTable, quarantine: Quarantine, plan: Plan[Any]
) -> None:
    """Before the first move: the plan, and a copy of every file it will overwrite.

    A second plan of the same run (rare: a re-plan) is appended to the same record."""
    path = record_path(table.paths.root, check_run_id(quarantine.run_id, where="this run"))
    record = read_record(fileio, path)
    if record is None:
        record = {
            "format": RECORD_FORMAT,
            "run_id": quarantine.run_id,
            "command": plan.command,
            "table": table.location,  # where it was written: informative, never followed
            "branch": plan.branch,
            "created_ms": clock_now_ms(),
            "status": "quarantined",
            "plans": [],
            "writes": [],
        }
    stored = {w["path"] for w in record["writes"]}
    for phase in plan.phases:
        for action in phase.actions:
            if action.op != "write":
                continue
            rel = relative_to_table(table, action.path)
            if rel in stored:
                continue
            try:
                old: bytes | None = fileio.read_bytes(action.path)
            except FileNotFoundError:
                old = None
            if old is not None:
                fileio.write_bytes(quarantine.target(action.path), old)
            record["writes"].append({"path": rel, "existed": old is not None})
            stored.add(rel)
    beside = record.setdefault("beside", {})
    for directory, ids in _removed_snapshot_ids(plan).items():
        rel = relative_to_table(table, directory)
        if rel not in beside:
            beside[rel] = _beside(table, directory, ids)
    record["plans"].append(_relative_plan(table, plan))
    fileio.write_bytes(path, json.dumps(record).encode("utf-8"))


def _removed_snapshot_ids(plan: Plan[Any]) -> dict[str, list[int]]:
    """The snapshot ids a plan deletes, by snapshot directory (one per branch)."""
    out: dict[str, list[int]] = {}
    for phase in plan.phases:
        for action in phase.actions:
            m = SNAPSHOT_FILE.fullmatch(basename(action.path))
            if action.op == "delete" and m and basename(parent(action.path)) == "snapshot":
                out.setdefault(parent(action.path), []).append(int(m.group(1)))
    return out


def _beside(table: PaimonTable, directory: str, ids: list[int]) -> dict[str, Any]:
    """The commits next to the snapshots a run removes, as they were before it: the newest
    one below and the oldest one above (None: there was none). Snapshot files hold no
    parent; these tell a restore whether the history it would put them back into is still
    the one they were part of (issue 22)."""
    manager = SnapshotManager(table.fileio, parent(directory))
    present = [i for i in manager.ids() if i not in ids]
    below = max((i for i in present if i < min(ids)), default=None)
    above = min((i for i in present if i > max(ids)), default=None)

    def identity(sid: int | None) -> dict[str, Any] | None:
        snap = None if sid is None else manager.try_snapshot(sid)
        return None if snap is None else SnapshotIdentity.of(snap).to_json()

    return {"below": identity(below), "above": identity(above)}


def relative_to_table(table: PaimonTable, path: str) -> str:
    """``path`` as a record stores it: relative to the table root, or whole when it lies
    under a declared external root (those are declared by absolute location)."""
    if not table.paths.is_inside_table(path):
        raise SafetyRefusalError(f"refusing to quarantine {path}: outside the table's roots")
    prefix = table.paths.root.rstrip("/") + "/"
    return path[len(prefix) :] if path.startswith(prefix) else path


def _relative_plan(table: PaimonTable, plan: Plan[Any]) -> dict[str, Any]:
    data = plan.to_json()
    for phase in data["phases"]:
        for action in phase["actions"]:
            action["path"] = relative_to_table(table, action["path"])
    return data


def check_run_id(run_id: object, *, where: str) -> str:
    """A run id as paimon-cli makes them (12 hex digits): it names directories, so anything
    else (``../..``, a path) is refused before a path is built from it."""
    if not isinstance(run_id, str) or not _RUN_ID.fullmatch(run_id):
        raise SafetyRefusalError(
            f"{where}: run id {run_id!r} is not a paimon-cli run id; refusing to follow it",
            hint="a quarantine record is made by paimon-cli only; move a forged or damaged "
            "one out of .paimon-cli/quarantine by hand",
        )
    return run_id


def _is_relative(path: str) -> bool:
    return not path.startswith("/") and not protocol_of(path) and "://" not in path


def resolve_path(table: PaimonTable, stored: str, record: Mapping[str, Any], where: str) -> str:
    """Where a stored record path lies in ``table``: a relative one below its root; an
    absolute one of a format-1 record, written at another location of this table (a copy,
    a rename), is moved below this root. Refused unless the path lock lets it through."""
    if _is_relative(stored):
        parts = stored.split("/")
        path = None if any(p in ("", ".", "..") for p in parts) else join(table.paths.root, stored)
    else:
        path = normalize_path(stored)
        written_at = record.get("table")
        if record.get("format") == 1 and isinstance(written_at, str) and written_at:
            old = normalize_path(written_at).rstrip("/") + "/"
            if path.startswith(old):
                path = join(table.paths.root, path[len(old) :])
    if path is None or not table.paths.is_inside_table(path):
        raise SafetyRefusalError(
            f"{where} names {stored}, which is not inside {table.location} or its declared "
            "external paths; refusing to follow it (a record of another table?)",
            hint="nothing was moved or deleted; inspect the record",
        )
    return path


def read_record(fileio: FileIO, path: str) -> dict[str, Any] | None:
    try:
        data = json.loads(fileio.read_text(path))
    except FileNotFoundError:
        return None
    except json.JSONDecodeError as exc:
        raise CorruptMetadataError(path, f"unreadable quarantine record ({exc.msg})") from exc
    if not isinstance(data, dict) or data.get("format") not in _READABLE_FORMATS:
        raise CorruptMetadataError(path, "not a paimon-cli quarantine record")
    return data


def records(fileio: FileIO, table_root: str) -> list[dict[str, Any]]:
    """Every quarantine record of the table, oldest first."""
    out = []
    for info in fileio.list_dir(quarantine_dir(table_root)):
        if info.is_dir or not info.name.endswith(".json") or info.name.startswith("."):
            continue
        record = read_record(fileio, info.path)
        if record is not None:
            record["_path"] = info.path
            out.append(record)
    return sorted(out, key=lambda r: (int(r.get("created_ms", 0)), str(r.get("run_id"))))


@dataclass(frozen=True)
class QuarantinedRun:
    """A record read against the table it lies in: every path resolved there and locked."""

    run_id: str
    record_path: str
    quarantine: Quarantine  # the table's own roots, never the record's
    plans: tuple[Plan[Any], ...]
    writes: tuple[tuple[str, bool], ...]  # (path, existed before the run)
    record: Mapping[str, Any]


def bind_record(table: PaimonTable, record: Mapping[str, Any]) -> QuarantinedRun:
    """The record as this table's: run id checked, paths resolved against the table and
    passed through the path lock (SafetyRefusalError otherwise, before anything moves)."""
    where = f"quarantine record {record['_path']}"
    run_id = check_run_id(record.get("run_id"), where=where)
    if basename(str(record["_path"])) != f"{run_id}.json":
        raise SafetyRefusalError(
            f"{where} is for run {run_id}, not the one its name says; refusing to follow it"
        )

    def resolve(stored: Any) -> str:
        return resolve_path(table, str(stored), record, where)

    try:
        plans = tuple(
            _resolved_plan(Plan.from_json(p, source=where), resolve)
            for p in record.get("plans") or []
        )
        writes = tuple((resolve(w["path"]), bool(w.get("existed"))) for w in record["writes"])
    except (KeyError, TypeError) as exc:
        raise CorruptMetadataError(
            str(record["_path"]), f"not a quarantine record ({exc})"
        ) from exc
    return QuarantinedRun(
        run_id, str(record["_path"]), Quarantine.of(table, run_id), plans, writes, record
    )


def _resolved_plan(plan: Plan[Any], resolve: Any) -> Plan[Any]:
    return replace(
        plan,
        phases=tuple(
            replace(ph, actions=tuple(replace(a, path=resolve(a.path)) for a in ph.actions))
            for ph in plan.phases
        ),
    )


def _locked_dir(table: PaimonTable, directory: str) -> str:
    """``directory`` when the path lock lets files in it through (resolved on local disk:
    a symlink cannot lead a purge or restore outside the table)."""
    if not table.paths.is_inside_table(join(directory, "file")):
        raise SafetyRefusalError(
            f"refusing to follow {directory}: outside the table root and its declared "
            "external paths"
        )
    return directory


def walk_files(table: PaimonTable, directory: str) -> Iterator[tuple[str, int]]:
    """Every file below ``directory`` with its size (depth first), each directory passed
    through the path lock before it is listed."""
    for info in table.fileio.list_dir(_locked_dir(table, directory)):
        if info.is_dir:
            yield from walk_files(table, info.path)
        else:
            yield info.path, info.size


def remove_empty_tree(table: PaimonTable, directory: str) -> None:
    """Remove ``directory`` and its subdirectories when they hold no file (never a file)."""
    fileio = table.fileio
    for info in fileio.list_dir(_locked_dir(table, directory)):
        if info.is_dir:
            remove_empty_tree(table, info.path)
    try:
        fileio.delete_empty_dir(directory)
    except StorageError as exc:
        logger.info("could not remove %s: %s", directory, exc.message)


@dataclass(frozen=True, slots=True)
class PurgeRun:
    run_id: str
    command: str
    created_ms: int
    status: str
    record_path: str
    files: tuple[tuple[str, int], ...]  # (path, size) still in the quarantine

    @property
    def bytes(self) -> int:
        return sum(size for _, size in self.files)


def plan_purge(table: PaimonTable, *, older_than_ms: int) -> list[PurgeRun]:
    """Quarantined runs recorded before ``older_than_ms``, with every file they hold (a run
    whose journal is unfinished is still moving files: it is left alone). Each record is
    bound to this table first: its quarantine is looked for under this table's roots only."""
    from core.runtime.journal import unfinished_journals

    fileio = table.fileio
    busy = {j.quarantine_run for j in unfinished_journals(fileio, table.location)}
    out = []
    for record in records(fileio, table.paths.root):
        created = int(record.get("created_ms") or 0)
        if created >= older_than_ms or record.get("run_id") in busy:
            continue
        run = bind_record(table, record)
        q = run.quarantine
        files = tuple(
            f for root in q.roots for f in walk_files(table, join(quarantine_dir(root), q.run_id))
        )
        out.append(
            PurgeRun(
                q.run_id,
                str(record.get("command")),
                created,
                str(record.get("status")),
                run.record_path,
                files,
            )
        )
    return out


def apply_purge(table: PaimonTable, runs: list[PurgeRun], fence: LeaseFence | None = None) -> int:
    """Delete each run's files, then its directories, then its record (a rerun after an
    interruption finds the record and finishes). Returns the files deleted. ``fence``: the
    run's lease, watched before each deletion (a restore that took the table over moves
    these files back)."""
    fileio = table.fileio
    done = 0
    watch = fence.watch() if fence is not None else None
    for run in runs:
        for path, _size in run.files:
            reason = watch.stop_reason() if watch is not None else None
            if reason is not None:
                raise LeaseLostError(reason, hint=LOST_HINT)
            if not table.paths.is_inside_table(path):  # listed through the lock; twice, as apply
                raise SafetyRefusalError(f"refusing to delete {path}: outside the table")
            done += fileio.delete(path)
        for root in Quarantine.of(table, run.run_id).roots:
            remove_empty_tree(table, join(quarantine_dir(root), run.run_id))
        if watch is not None and (reason := watch.stop_reason()) is not None:
            raise LeaseLostError(reason, hint=LOST_HINT)
        fileio.delete(run.record_path)
    return done
