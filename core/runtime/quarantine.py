"""Quarantine: move instead of delete, so a run can be undone (``paimon restore``).

A file ``<root>/<rel>`` deleted by run ``R`` goes to ``<root>/.paimon-cli/quarantine/R/<rel>``,
where ``<root>`` is the table root or, for a file under a declared external path, that
external root (a move never leaves its own file system or bucket). The run's plan, and the
old content of every file it overwrites (hints), are kept in the record
``<table>/.paimon-cli/quarantine/R.json``, written before the first move. Paimon never lists
``.paimon-cli``; orphan cleaning never looks into it.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from core.errors import CorruptMetadataError, SafetyRefusalError, StorageError
from core.io.fileio import FileIO, join
from core.runtime.plans import Plan

if TYPE_CHECKING:
    from core.table.table import PaimonTable

logger = logging.getLogger(__name__)

QUARANTINE_DIR = (".paimon-cli", "quarantine")
RECORD_FORMAT = 1


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


def write_record(fileio: FileIO, table: PaimonTable, quarantine: Quarantine, plan: Plan) -> None:
    """Before the first move: the plan, and a copy of every file it will overwrite.

    A second plan of the same run (rare: a re-plan) is appended to the same record."""
    path = record_path(table.paths.root, quarantine.run_id)
    record = read_record(fileio, path)
    if record is None:
        record = {
            "format": RECORD_FORMAT,
            "run_id": quarantine.run_id,
            "command": plan.command,
            "table": table.location,
            "branch": plan.branch,
            "created_ms": int(time.time() * 1000),
            "roots": list(quarantine.roots),
            "status": "quarantined",
            "plans": [],
            "writes": [],
        }
    known = {w["path"] for w in record["writes"]}
    for phase in plan.phases:
        for action in phase.actions:
            if action.op != "write" or action.path in known:
                continue
            try:
                old: bytes | None = fileio.read_bytes(action.path)
            except FileNotFoundError:
                old = None
            if old is not None:
                fileio.write_bytes(quarantine.target(action.path), old)
            record["writes"].append({"path": action.path, "existed": old is not None})
            known.add(action.path)
    record["plans"].append(plan.to_json())
    fileio.write_bytes(path, json.dumps(record).encode("utf-8"))


def read_record(fileio: FileIO, path: str) -> dict[str, Any] | None:
    try:
        data = json.loads(fileio.read_text(path))
    except FileNotFoundError:
        return None
    except json.JSONDecodeError as exc:
        raise CorruptMetadataError(path, f"unreadable quarantine record ({exc.msg})") from exc
    if not isinstance(data, dict) or data.get("format") != RECORD_FORMAT:
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


def record_quarantine(record: Mapping[str, Any]) -> Quarantine:
    return Quarantine(str(record["run_id"]), tuple(str(r) for r in record["roots"]))


def walk_files(fileio: FileIO, directory: str) -> Iterator[tuple[str, int]]:
    """Every file below ``directory`` with its size (depth first)."""
    for info in fileio.list_dir(directory):
        if info.is_dir:
            yield from walk_files(fileio, info.path)
        else:
            yield info.path, info.size


def remove_empty_tree(fileio: FileIO, directory: str) -> None:
    """Remove ``directory`` and its subdirectories when they hold no file (never a file)."""
    for info in fileio.list_dir(directory):
        if info.is_dir:
            remove_empty_tree(fileio, info.path)
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


def plan_purge(fileio: FileIO, table_root: str, *, older_than_ms: int) -> list[PurgeRun]:
    """Quarantined runs recorded before ``older_than_ms``, with every file they hold (a run
    whose journal is unfinished is still moving files: it is left alone)."""
    from core.runtime.journal import unfinished_journals

    busy = {j.quarantine_run for j in unfinished_journals(fileio, table_root)}
    out = []
    for record in records(fileio, table_root):
        created = int(record.get("created_ms") or 0)
        if created >= older_than_ms or record.get("run_id") in busy:
            continue
        q = record_quarantine(record)
        files = tuple(
            f for root in q.roots for f in walk_files(fileio, join(quarantine_dir(root), q.run_id))
        )
        out.append(
            PurgeRun(
                q.run_id,
                str(record.get("command")),
                created,
                str(record.get("status")),
                str(record["_path"]),
                files,
            )
        )
    return out


def apply_purge(fileio: FileIO, runs: list[PurgeRun]) -> int:
    """Delete each run's files, then its directories, then its record (a rerun after an
    interruption finds the record and finishes). Returns the files deleted."""
    done = 0
    for run in runs:
        for path, _size in run.files:
            done += fileio.delete(path)
        record = read_record(fileio, run.record_path)
        if record is not None:
            for root in record_quarantine(record).roots:
                remove_empty_tree(fileio, join(quarantine_dir(root), run.run_id))
        fileio.delete(run.record_path)
    return done
