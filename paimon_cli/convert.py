"""Engine values -> JSON-ready dicts (snake_case, ints for ids/sizes, epoch ms + UTC ISO)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable
from dataclasses import asdict, is_dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from core.format.model import Consumer, Snapshot, Tag
    from core.runtime.plans import Plan


def instant(ms: int | None) -> dict[str, Any] | None:
    from core.runtime.timeparse import iso_utc

    return None if ms is None else {"epoch_ms": ms, "utc": iso_utc(ms)}


def plan_doc(
    dry_run: bool, plan: Plan[Any], report: dict[str, Any] | None, **extra: Any
) -> dict[str, Any]:
    """The JSON body of a planning command: the plan (streamed), what was done, then extras."""
    return {"dry_run": dry_run, "plan": plan.to_json(lazy=True), "report": report, **extra}


def commit_json(
    snapshot: Snapshot, attempts: int, notes: Iterable[str], **counts: Any
) -> dict[str, Any]:
    """The report of a command that made one commit; ``counts`` go between attempts and time."""
    return {
        "status": "ok",
        "snapshot_id": snapshot.id,
        "attempts": attempts,
        **counts,
        "time": instant(snapshot.time_millis),
        "notes": list(notes),
    }


def snapshot_json(s: Snapshot) -> dict[str, Any]:
    return {
        "id": s.id,
        "schema_id": s.schema_id,
        "commit_kind": s.commit_kind,
        "commit_user": s.commit_user,
        "commit_identifier": s.commit_identifier,
        "time": instant(s.time_millis),
        "total_record_count": s.total_record_count,
        "delta_record_count": s.delta_record_count,
        "changelog_record_count": s.changelog_record_count,
        "watermark": s.watermark,
        "base_manifest_list": s.base_manifest_list,
        "delta_manifest_list": s.delta_manifest_list,
        "changelog_manifest_list": s.changelog_manifest_list,
        "index_manifest": s.index_manifest,
        "statistics": s.statistics,
    }


def wall_clock(value: dt.datetime | None, zone: dt.tzinfo) -> dict[str, Any] | None:
    """A wall clock Paimon stores without a zone, read in the table zone, as every time in
    JSON is (``{epoch_ms, utc}``)."""
    from core.runtime.timeparse import local_wall_clock_ms

    return None if value is None else instant(local_wall_clock_ms(value, zone))


def tag_json(t: Tag, zone: dt.tzinfo) -> dict[str, Any]:
    """A tag; ``created`` and ``expires`` are the ``*_local`` wall clocks read in the table
    zone (added beside them, which stay as they were)."""
    return {
        "name": t.name,
        "snapshot_id": t.snapshot.id,
        "snapshot_time": instant(t.snapshot.time_millis),
        "create_time_local": t.create_time.isoformat(sep=" ") if t.create_time else None,
        "time_retained_ms": t.time_retained_ms,
        "expire_at_local": t.expire_at.isoformat(sep=" ") if t.expire_at else None,
        "record_count": t.snapshot.total_record_count,
        "created": wall_clock(t.create_time, zone),
        "expires": wall_clock(t.expire_at, zone),
    }


def consumer_json(c: Consumer) -> dict[str, Any]:
    return {"id": c.id, "next_snapshot": c.next_snapshot, "modified": instant(c.mtime_ms)}


def plain(value: Any) -> Any:
    """Dataclass rows -> dicts (tuples become lists)."""
    if is_dataclass(value) and not isinstance(value, type):
        return {k: plain(v) for k, v in asdict(value).items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    return value
