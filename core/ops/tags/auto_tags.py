"""Automatic tag creation, as Paimon's commit-time maintenance would have done it.

``tag.automatic-creation``:
- ``process-time`` / ``watermark`` (TagAutoCreation): progress is restored from the newest
  automatic tag; each later snapshot, in id order, whose time (commit time in
  ``sink.process-time-zone``, or watermark in ``sink.watermark-time-zone``) minus
  ``tag.creation-delay`` reaches the end of the next period gets the tag of the period
  that closed (``tag.automatic-completion``: the next period in turn instead).
- ``batch`` (TagBatchCreation): the latest snapshot gets ``tag.batch.customized-name`` or
  ``batch-write-<yyyy-MM-dd>``; an existing tag of that name elsewhere is deleted first.
New tags carry ``tag.default-time-retained``. Trimming to ``tag.num-retained-max`` is tag
expiry's job (``expire-tags`` applies it to the same automatic tags).
"""

from __future__ import annotations

import datetime as dt
import logging
from dataclasses import dataclass
from typing import ClassVar

from core.errors import InvalidOptionError
from core.format.model import Snapshot, Tag
from core.ops.details.tags import AutoTag, AutoTagsDetails
from core.ops.tags.tags import TagError, filter_for_resume, plan_delete_tags, tag_content
from core.retention.tag_period import TagPeriodHandler, period_handler
from core.runtime.operation import Env, Operation
from core.runtime.plans import FileAction, Phase, Plan, Requirements
from core.runtime.timeparse import local_datetime, resolve_zone
from core.table.table import PaimonTable
from core.write.commit import create_if_absent

logger = logging.getLogger(__name__)

COMMAND = "auto-tags"
MODES = ("none", "process-time", "watermark", "batch")
_NO_WATERMARK = -(2**63)  # Long.MIN_VALUE: Flink's "no watermark yet"


def creation_mode(table: PaimonTable) -> str:
    mode = (table.options.get("tag.automatic-creation") or "none").strip().lower()
    mode = mode.replace("_", "-")
    if mode not in MODES:
        raise InvalidOptionError(
            f"tag.automatic-creation {mode!r} is not one of {', '.join(MODES)}"
        )
    return mode


@dataclass(frozen=True, slots=True)
class _Settings:
    mode: str
    handler: TagPeriodHandler | None
    delay: dt.timedelta
    zone: dt.tzinfo
    retained_ms: int | None
    completion: bool


def _settings(table: PaimonTable, mode: str) -> _Settings:
    opts = table.options
    delay_ms = opts.get_duration_ms("tag.creation-delay") or 0
    handler = None if mode == "batch" else period_handler(opts)
    if handler is not None:
        handler.validate_delay(delay_ms)
    zone_name = (
        opts.get("sink.watermark-time-zone") or "UTC"
        if mode == "watermark"
        else opts.get("sink.process-time-zone")
    )
    return _Settings(
        mode,
        handler,
        dt.timedelta(milliseconds=delay_ms),
        resolve_zone(zone_name),
        opts.get_duration_ms("tag.default-time-retained"),
        opts.get_bool("tag.automatic-completion"),
    )


def _snapshot_time(snap: Snapshot, s: _Settings) -> dt.datetime | None:
    if s.mode == "watermark":
        if snap.watermark is None or snap.watermark == _NO_WATERMARK:
            return None
        return local_datetime(snap.watermark, s.zone)
    return local_datetime(snap.time_millis, s.zone)


def _period_tags(table: PaimonTable, s: _Settings, tags: list[Tag]) -> list[tuple[Snapshot, str]]:
    """TagAutoCreation.run() over every snapshot not yet covered: (snapshot, tag name)."""
    handler = s.handler
    assert handler is not None
    autos = [t for t in tags if handler.is_auto_tag(t.name)]
    snapshots = table.snapshots
    next_tag: dt.datetime | None = None
    if autos:
        newest = max(autos, key=lambda t: handler.tag_to_time(t.name))
        next_id = newest.snapshot.id + 1
        next_tag = handler.next_tag_time(handler.tag_to_time(newest.name))
    else:
        next_id = snapshots.earliest_id() or 1
    out: list[tuple[Snapshot, str]] = []
    while True:
        snap = snapshots.try_snapshot(next_id)
        if snap is None:
            earliest = snapshots.earliest_id()
            if earliest is not None and earliest > next_id:
                next_id = earliest  # expired meanwhile: continue from the earliest
                continue
            return out
        time = _snapshot_time(snap, s)
        if time is not None and (
            next_tag is None or time - s.delay >= handler.next_tag_time(next_tag)
        ):
            this_tag = handler.normalize_to_previous_tag(time)
            if s.completion and next_tag is not None:
                this_tag = next_tag
            out.append((snap, handler.time_to_tag(this_tag)))
            next_tag = handler.next_tag_time(this_tag)
        next_id += 1


def _batch_tag(table: PaimonTable, s: _Settings) -> list[tuple[Snapshot, str]]:
    latest = table.snapshots.latest()
    if latest is None:
        return []
    name = table.options.get("tag.batch.customized-name") or (
        "batch-write-" + local_datetime(latest.time_millis, s.zone).strftime("%Y-%m-%d")
    )
    return [(latest, name)]


@dataclass(frozen=True, slots=True)
class AutoTagPlan:
    """Tags to write, and (batch mode) a tag to delete first because it must move."""

    plan: Plan[AutoTagsDetails]
    delete_first: tuple[str, ...]


def plan_auto_tags(table: PaimonTable, *, now_ms: int, zone: dt.tzinfo) -> AutoTagPlan:
    """The tags commit-time maintenance would have created by now; ``zone`` is the JVM's
    (``tagCreateTime`` is its local wall clock)."""
    mode = creation_mode(table)
    s = _settings(table, mode) if mode != "none" else None
    tags = table.tags.tags()
    existing = {t.name: t for t in tags}
    wanted: list[tuple[Snapshot, str]] = []
    if s is not None:
        wanted = _batch_tag(table, s) if mode == "batch" else _period_tags(table, s, tags)
    now_local = local_datetime(now_ms, zone)
    actions: list[FileAction] = []
    rows: list[AutoTag] = []
    notes: list[str] = []
    delete_first: list[str] = []
    handler = s.handler if s is not None else None
    auto_by_snapshot = {
        t.snapshot.id: t.name for t in tags if handler is not None and handler.is_auto_tag(t.name)
    }
    planned: set[str] = set()
    for snap, name in wanted:
        old = existing.get(name)
        if name in planned or (old is not None and (mode != "batch" or old.snapshot.id == snap.id)):
            continue  # exists already: Paimon creates with ignore-if-exists
        if mode != "batch" and snap.id in auto_by_snapshot:
            notes.append(
                f"snapshot {snap.id} already has automatic tag {auto_by_snapshot[snap.id]!r}; "
                f"{name!r} not created (Paimon allows one automatic tag per snapshot)"
            )
            continue
        if old is not None:
            delete_first.append(name)
        planned.add(name)
        assert s is not None
        content = tag_content(snap, create_time=now_local, time_retained_ms=s.retained_ms)
        reason = f"{mode} tag for snapshot {snap.id}"
        actions.append(FileAction("write", table.tags.path(name), "tag", None, reason, content))
        moved_from = old.snapshot.id if old is not None else None
        rows.append(AutoTag(name, snap.id, snap.time_millis, moved_from))
    details = AutoTagsDetails(
        mode=mode,
        period=s.handler.description if s is not None and s.handler is not None else None,
        delay_ms=s.delay // dt.timedelta(milliseconds=1) if s is not None else None,
        time_retained_ms=s.retained_ms if s is not None else None,
        create_time_local=now_local.isoformat(sep=" ") if s is not None and s.retained_ms else None,
        create_time_ms=now_ms if s is not None and s.retained_ms else None,
        tags=tuple(rows),
        notes=tuple(notes),
    )
    requirements = Requirements(
        latest_snapshot=table.snapshots.latest_id(),
        expire_end=None,
        tags={f"{table.branch}/{r.tag}": r.snapshot_id for r in rows},
        branches=tuple(table.branches.branches()),
        consumers_min_next=None,
    )
    plan = Plan(
        COMMAND,
        table.location,
        table.branch,
        now_ms,
        (Phase("tags", tuple(actions), sequential=True),),
        requirements,
        details,
    )
    return AutoTagPlan(plan, tuple(delete_first))


def apply_auto_tags(table: PaimonTable, plan: Plan[AutoTagsDetails]) -> list[str]:
    """Write each planned tag if still absent and its snapshot still exists; returns the
    names written (a tag someone else created meanwhile is left as it is)."""
    written: list[str] = []
    rows = {r.tag: r for r in plan.details.tags}
    for action in plan.phases[0].actions:
        name = action.path.rsplit("/tag-", 1)[1]
        sid = rows[name].snapshot_id
        if table.snapshots.try_snapshot(sid) is None:
            raise TagError(f"snapshot {sid} expired while planning tag {name!r}; not written")
        if create_if_absent(table.fileio, action.path, (action.content or "").encode("utf-8")):
            written.append(name)
        else:
            logger.info("tag %s was created by someone else meanwhile; kept", name)
    return written


@dataclass(frozen=True)
class AutoTags(Operation[AutoTagPlan, list[str]]):
    """Automatic tag creation as commit-time maintenance would have done it; in batch mode
    a tag that must move is deleted first (Paimon's TagDeletion, journaled)."""

    command: ClassVar[str] = COMMAND

    zone: dt.tzinfo  # the JVM's zone: tagCreateTime is its local wall clock

    def plan(self, table: PaimonTable, env: Env) -> AutoTagPlan:
        return plan_auto_tags(table, now_ms=env.now_ms, zone=self.zone)

    def apply(self, table: PaimonTable, plan: AutoTagPlan, env: Env) -> list[str]:
        if plan.delete_first:
            doomed = plan_delete_tags(
                table,
                list(plan.delete_first),
                executor=env.executor,
                now_ms=env.now_ms,
                force=True,
            )
            env.apply_phases(table, filter_for_resume(table, doomed), journal=True)
            if env.report.failed:
                return []
        return apply_auto_tags(table, plan.plan)
