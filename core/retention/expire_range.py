"""Which snapshots expire now: Paimon's range formula (semantics 2.2), with the reason it stops.

Shared by ``expire-snapshots`` and the retention view of ``inspect``.
"""

from __future__ import annotations

from dataclasses import dataclass

from core.errors import InvalidOptionError
from core.format.model import Consumer, Snapshot
from core.format.options import INT_MAX, ExpireConfig, TableOptions
from core.table.snapshot_manager import SnapshotManager


@dataclass(frozen=True, slots=True)
class ExpireRange:
    """Snapshots ``[earliest, end)`` expire; ``stop`` says what kept ``end`` and later."""

    earliest: int | None
    latest: int | None
    end: int | None
    min_id: int | None
    max_exclusive: int | None
    stop: str  # retain-min | time | consumer | limit | empty
    stop_detail: str
    blocking_consumer: str | None = None

    @property
    def count_span(self) -> int:
        if self.earliest is None or self.end is None:
            return 0
        return max(self.end - self.earliest, 0)


def expire_config(
    options: TableOptions,
    *,
    retain_min: int | None = None,
    retain_max: int | None = None,
    time_retained_ms: int | None = None,
    expire_limit: int | None = None,
) -> ExpireConfig:
    """Flags over (dynamic) table options over Paimon defaults; validated (D3: min >= 1)."""
    rmin = retain_min if retain_min is not None else options.get_int("snapshot.num-retained.min")
    rmax = retain_max if retain_max is not None else options.get_int("snapshot.num-retained.max")
    limit = expire_limit if expire_limit is not None else options.get_int("snapshot.expire.limit")
    time_ms = (
        time_retained_ms
        if time_retained_ms is not None
        else options.get_duration_ms("snapshot.time-retained")
    )
    assert rmin is not None and rmax is not None and limit is not None and time_ms is not None
    if rmin < 1:
        raise InvalidOptionError(
            f"retain-min must be at least 1, got {rmin}",
            hint="Paimon loses changelogs of kept snapshots with retain-min 0 (refused, D3)",
        )
    if rmax < rmin:
        raise InvalidOptionError(
            f"retain-max ({rmax}) must not be less than retain-min ({rmin})",
            hint=f"lower retain-min to at most {rmax} or raise retain-max; Paimon refuses this "
            "combination as well",
        )
    if limit < 1:
        raise InvalidOptionError(f"max-deletes must be at least 1, got {limit}")

    def changelog(key: str, fallback: int) -> int:
        value = options.get_int(key)
        return fallback if value is None else value

    cl_time = options.get_duration_ms("changelog.time-retained")
    snap_time_opt = options.get_duration_ms("snapshot.time-retained") or 0
    snap_min_opt = options.get_int("snapshot.num-retained.min") or 0
    snap_max_opt = options.get_int("snapshot.num-retained.max") or INT_MAX
    decoupled = (
        changelog("changelog.num-retained.max", snap_max_opt) > snap_max_opt
        or changelog("changelog.num-retained.min", snap_min_opt) > snap_min_opt
        or (cl_time if cl_time is not None else snap_time_opt) > snap_time_opt
    )
    return ExpireConfig(
        retain_min=rmin,
        retain_max=rmax,
        time_retained_ms=time_ms,
        expire_limit=limit,
        clean_empty_directories=options.get_bool("snapshot.clean-empty-directories"),
        changelog_decoupled=decoupled,
        changelog_producer=options.get("changelog-producer") or "none",
        consumer_changelog_only=options.get_bool("consumer.changelog-only"),
        consumer_expiration_ms=options.get_duration_ms("consumer.expiration-time"),
    )


def active_consumers(
    consumers: list[Consumer], config: ExpireConfig, now_ms: int
) -> tuple[list[Consumer], list[Consumer]]:
    """Split consumers into (protecting, stale): stale ones are idle past
    ``consumer.expiration-time`` and, as in Paimon's commit maintenance, no longer block."""
    if config.consumer_expiration_ms is None:
        return list(consumers), []
    cutoff = now_ms - config.consumer_expiration_ms
    stale = [c for c in consumers if c.mtime_ms is not None and c.mtime_ms < cutoff]
    return [c for c in consumers if c not in stale], stale


def _time_stop(snap: Snapshot | None, sid: int, older_than: int) -> str:
    """Why the time rule keeps ``sid``: it is itself newer than the cut-off, or it is older
    but its successor is not (Paimon 2.x expires a snapshot once the next one is older)."""
    if snap is None or older_than <= snap.time_millis:
        return f"snapshot {sid} is newer than the retention time: it and the ones after it stay"
    return (
        f"snapshot {sid} is older than the retention time but is kept until snapshot "
        f"{sid + 1} is too (a snapshot expires once its successor is older, as in Paimon)"
    )


def compute_range(
    snapshots: SnapshotManager,
    config: ExpireConfig,
    consumers: list[Consumer],
    now_ms: int,
) -> ExpireRange:
    """Paimon ExpireSnapshotsImpl.expire() range, exactly (2.x successor time rule)."""
    older_than = now_ms - config.time_retained_ms
    latest = snapshots.latest_id()
    earliest = snapshots.earliest_id()
    if latest is None or earliest is None:
        return ExpireRange(
            earliest, latest, None, None, None, "empty", "the table has no snapshots"
        )
    min_id = max(latest - config.retain_max + 1, earliest)
    max_exclusive = latest - config.retain_min + 1
    present = latest - earliest + 1
    detail = (
        f"the newest {config.retain_min} snapshots are kept"
        if present > config.retain_min
        else f"retain-min {config.retain_min} keeps all {present} snapshots"
    )
    stop, blocker = "retain-min", None
    if consumers and not config.consumer_changelog_only:
        slowest = min(consumers, key=lambda c: (c.next_snapshot, c.id))
        if slowest.next_snapshot < max_exclusive:
            max_exclusive = slowest.next_snapshot
            stop = "consumer"
            detail = f"consumer {slowest.id!r} still needs snapshot {slowest.next_snapshot}"
            blocker = slowest.id
    if earliest + config.expire_limit < max_exclusive:
        max_exclusive = earliest + config.expire_limit
        stop = "limit"
        detail = f"at most {config.expire_limit} snapshot ids per run (snapshot.expire.limit)"
    for sid in range(min_id, max_exclusive):
        successor = snapshots.try_snapshot(sid + 1)
        if successor is None:
            continue  # a gap: Paimon ignores the missing successor
        if older_than <= successor.time_millis:
            detail = _time_stop(snapshots.try_snapshot(sid), sid, older_than)
            if min_id > earliest:  # retain-max expired those whatever their time
                detail += (
                    f"; snapshots below {min_id} expire whatever their time: retain-max "
                    f"{config.retain_max} keeps at most the newest {config.retain_max} "
                    "(Paimon's rule)"
                )
            return ExpireRange(earliest, latest, sid, min_id, max_exclusive, "time", detail, None)
    return ExpireRange(
        earliest, latest, max_exclusive, min_id, max_exclusive, stop, detail, blocker
    )
