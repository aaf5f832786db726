"""Journals of destructive runs under ``<table>/.paimon-cli/journal/`` (DECISIONS D2).

A journal is the whole plan, written before the first change and removed after the last.
Any later run finds unfinished journals and finishes them after re-checking the table.
Paimon's own tools never list ``.paimon-cli``.
"""

from __future__ import annotations

import json
import logging
import uuid
from dataclasses import dataclass
from typing import Any

from core.errors import CorruptMetadataError
from core.io.fileio import FileIO, join
from core.runtime.plans import Plan

logger = logging.getLogger(__name__)

JOURNAL_DIR = (".paimon-cli", "journal")


def journal_dir(table_root: str) -> str:
    return join(table_root, *JOURNAL_DIR)


@dataclass(frozen=True, slots=True)
class Journal:
    path: str
    plan: Plan[Any]
    quarantine_run: str | None = None  # deletes are moves into this run's quarantine


def write_journal(
    fileio: FileIO, table_root: str, plan: Plan[Any], *, quarantine_run: str | None = None
) -> str:
    name = f"{plan.command}-{plan.created_ms}-{uuid.uuid4().hex[:12]}.json"
    path = join(journal_dir(table_root), name)
    data = plan.to_json()
    if quarantine_run is not None:
        data["quarantine_run"] = quarantine_run
    fileio.write_bytes(path, json.dumps(data).encode("utf-8"))
    return path


def remove_journal(fileio: FileIO, path: str) -> None:
    fileio.delete(path)


TEMP_MIN_AGE_MS = 3_600_000  # a journal being written right now is never this old


def remove_stale_temps(fileio: FileIO, table_root: str, now_ms: int) -> list[str]:
    """Remove ``.<journal>.<id>.tmp`` files left by a run killed while writing its journal
    (the journal itself never appeared, so nothing was changed). Young ones may belong to a
    run writing its journal right now and stay."""
    removed = []
    for info in fileio.list_dir(journal_dir(table_root)):
        if info.is_dir or not (info.name.startswith(".") and info.name.endswith(".tmp")):
            continue
        if info.mtime_ms is not None and info.mtime_ms < now_ms - TEMP_MIN_AGE_MS:
            fileio.delete(info.path)
            removed.append(info.path)
    if removed and fileio.delete_empty_dir(journal_dir(table_root)):
        fileio.delete_empty_dir(join(table_root, JOURNAL_DIR[0]))
    return removed


def unfinished_journals(fileio: FileIO, table_root: str) -> list[Journal]:
    """Journals left by interrupted runs, oldest first; an unreadable one is an error."""
    out = []
    for info in sorted(fileio.list_dir(journal_dir(table_root)), key=lambda i: i.name):
        if info.is_dir or not info.name.endswith(".json") or info.name.startswith("."):
            continue
        try:
            text = fileio.read_text(info.path)
        except FileNotFoundError:
            continue  # finished by a concurrent run meanwhile
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise CorruptMetadataError(
                info.path,
                f"unreadable journal ({exc.msg})",
                hint="inspect it; remove it by hand only if you know the run it belongs to",
            ) from exc
        if not isinstance(data, dict):
            raise CorruptMetadataError(info.path, "journal is not a JSON object")
        quarantine_run = data.get("quarantine_run")
        out.append(
            Journal(
                info.path,
                Plan.from_json(data, source=info.path),
                str(quarantine_run) if quarantine_run else None,
            )
        )
    return out
