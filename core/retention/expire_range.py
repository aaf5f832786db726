"""Which snapshots expire now: Paimon's range formula (semantics 2.2), with the reason it stops.

Shared by ``expire-snapshots`` and the retention view of ``inspect``.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

from core.errors import InvalidOptionError
from core.format.model import Consumer
from core.format.options import INT_MAX, ExpireConfig, TableOptions
from core.runtime.wording import plural
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


def _time_stop(
    snapshots: SnapshotManager, sid: int, min_id: int, earliest: int, older_than: int
) -> str:
    """Why the time rule keeps ``sid`` and the ones after it: nothing from ``min_id`` on is
    older than the cut-off, ``sid`` is the first newer one, or ``sid`` is older but its
    successor is not (Paimon 2.x expires a snapshot once the next one is older)."""
    snap = snapshots.try_snapshot(sid)
    if snap is not None and snap.time_millis < older_than:
        return (
            f"snapshot {sid} is older than the retention time but is kept until snapshot "
            f"{sid + 1} is too (a snapshot expires once its successor is older, as in Paimon)"
        )
    if sid == min_id:
        scope = "no snapshot" if min_id == earliest else f"no snapshot from {min_id} on"
        return f"{scope} is older than the retention time, so the time rule expires none"
    return (
        f"snapshot {sid} is the first newer than the retention time: it and the ones after it stay"
    )


def _between_note(config: ExpireConfig, kept: int) -> str:
    """The time rule expired snapshots down to fewer than retain-max: say that this is the
    rule, not a shortfall (between retain-min and retain-max, time decides)."""
    if config.retain_max >= INT_MAX or kept >= config.retain_max:
        return ""
    return (
        f"; {plural(kept, 'snapshot')} kept, fewer than retain-max {config.retain_max}: "
        "between retain-min and retain-max, snapshots older than the retention time expire "
        "(Paimon's rule)"
    )


def _newer_below(snapshots: SnapshotManager, earliest: int, end: int, older_than: int) -> int:
    """How many snapshots of ``[earliest, end)`` are not older than ``older_than``. Commit
    times rise with ids (Paimon's time lookups rely on it too, DECISIONS D4), so a binary
    search over the listed ids reads about log2(n) snapshot files instead of one per
    expiring snapshot, which on a deep table in an object store would be thousands of
    requests for one sentence. Where that does not hold as far as it can see (a file gone
    since the listing, or times it read falling as ids rise: writers' clocks apart), it
    counts them all."""
    present = [sid for sid in snapshots.ids() if earliest <= sid < end]

    def count_all() -> int:
        return sum(
            1
            for sid in present
            if (s := snapshots.try_snapshot(sid)) is not None and s.time_millis >= older_than
        )

    seen: list[tuple[int, int]] = []  # (index in present, commit time) of each read
    lo, hi = 0, len(present)  # the first not older than the cut-off is present[lo]
    while lo < hi:
        mid = (lo + hi) // 2
        snap = snapshots.try_snapshot(present[mid])
        if snap is None:
            return count_all()
        seen.append((mid, snap.time_millis))
        if snap.time_millis >= older_than:
            hi = mid
        else:
            lo = mid + 1
    times = [t for _i, t in sorted(seen)]
    if any(a > b for a, b in itertools.pairwise(times)):
        return count_all()
    return len(present) - lo


def _max_note(
    snapshots: SnapshotManager,
    config: ExpireConfig,
    earliest: int,
    min_id: int,
    older_than: int,
    *,
    only_forced: bool = False,
) -> str:
    """Snapshots below ``min_id`` expire by retain-max whatever their time; say how many of
    them the time rule alone would have kept."""
    if min_id <= earliest:
        return ""
    newer = _newer_below(snapshots, earliest, min_id, older_than)
    if only_forced and not newer:
        return ""  # the time rule expires them too: nothing to add
    span = (
        f"snapshot {earliest}" if min_id - 1 == earliest else f"snapshots {earliest}..{min_id - 1}"
    )
    why = f"retain-max {config.retain_max} keeps at most the newest {config.retain_max}"
    if newer:
        return (
            f"; {span} expire by retain-max although {newer} of them "
            f"{'is' if newer == 1 else 'are'} newer than the retention time: {why} "
            "(Paimon's rule)"
        )
    return f"; {span} expire whatever their time: {why} (Paimon's rule)"


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
        f"retain-min {config.retain_min} keeps the newest {plural(config.retain_min, 'snapshot')}"
        if present > config.retain_min
        else f"retain-min {config.retain_min} keeps all {plural(present, 'snapshot')}"
    )
    stop, blocker = "retain-min", None
    if consumers and not config.consumer_changelog_only:
        slowest = min(consumers, key=lambda c: (c.next_snapshot, c.id))
        if slowest.next_snapshot < max_exclusive:
            max_exclusive = slowest.next_snapshot
            stop = "consumer"
            detail = f"consumer {slowest.id} still needs snapshot {slowest.next_snapshot}"
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
            detail = _time_stop(snapshots, sid, min_id, earliest, older_than)
            if sid > min_id:
                detail += _between_note(config, latest - sid + 1)
            detail += _max_note(snapshots, config, earliest, min_id, older_than)
            return ExpireRange(earliest, latest, sid, min_id, max_exclusive, "time", detail, None)
    detail += _max_note(
        snapshots, config, earliest, min(min_id, max_exclusive), older_than, only_forced=True
    )
    return ExpireRange(
        earliest, latest, max_exclusive, min_id, max_exclusive, stop, detail, blocker
    )
