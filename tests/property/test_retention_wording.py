"""Expiry's stopping reason says what truly stopped it (issue 37.14), drawn.

Retention settings (retain-min, retain-max, time-retained, the per-run limit) and a history of
snapshots are drawn: commit times non-decreasing with ids, or in any order (writers whose
clocks are apart), and snapshot files gone below retain-max's floor (the ids listed have
gaps); an independent reading of Paimon's rule
(at least retain-min kept, at most retain-max; between them a snapshot expires once its
successor is older than the retention time) says which snapshots expire and why, and the
wording of ``compute_range`` must say the same: which rule stopped it, that nothing was older
than the retention time when nothing was, and that retain-max expired snapshots newer than
the retention time when it did, with the true count wherever times rise with ids (the count
reads about log2(n) snapshots, D4).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, cast

from hypothesis import given, settings
from hypothesis import strategies as st

from core.format.options import INT_MAX, TableOptions
from core.retention.expire_range import compute_range, expire_config
from core.table.snapshot_manager import SnapshotManager

NOW = 1_800_000_000_000
MIN = 60_000


@dataclass(frozen=True)
class _Snap:
    id: int
    time_millis: int


class _History:
    """The three questions compute_range asks a SnapshotManager."""

    def __init__(self, earliest: int, times: list[int], gone: frozenset[int] = frozenset()) -> None:
        self.snaps = {
            earliest + i: _Snap(earliest + i, t)
            for i, t in enumerate(times)
            if earliest + i not in gone
        }

    def earliest_id(self) -> int | None:
        return min(self.snaps, default=None)

    def latest_id(self) -> int | None:
        return max(self.snaps, default=None)

    def ids(self) -> list[int]:
        return sorted(self.snaps)

    def try_snapshot(self, sid: int) -> _Snap | None:
        return self.snaps.get(sid)


@dataclass(frozen=True)
class _Case:
    history: _History
    rmin: int
    rmax: int
    minutes: int
    limit: int
    rising: bool  # commit times never fall as ids rise


@st.composite
def cases(draw: Any) -> _Case:
    n = draw(st.integers(1, 12))
    earliest = draw(st.integers(1, 5))
    ages = draw(st.lists(st.integers(0, 120), min_size=n, max_size=n))
    rising = draw(st.booleans())
    if rising:
        ages = sorted(ages, reverse=True)
    times = [NOW - age * MIN for age in ages]  # oldest first when rising, ties allowed
    rmin = draw(st.integers(1, n + 1))
    rmax = draw(st.one_of(st.just(INT_MAX), st.integers(rmin, n + 2)))
    latest = earliest + n - 1
    floor = max(latest - rmax + 1, earliest)
    # Files gone below the floor (never the earliest: it is what the listing starts at);
    # from the floor on, the time rule reads each successor and a gap is its own case.
    gone = draw(st.frozensets(st.integers(earliest + 1, max(earliest + 1, floor - 1))))
    gone = frozenset(g for g in gone if g < floor)
    minutes = draw(st.integers(0, 130))
    limit = draw(st.integers(1, 20))
    return _Case(_History(earliest, times, gone), rmin, rmax, minutes, limit, rising)


@settings(max_examples=300, deadline=None)
@given(cases())
def test_the_stopping_reason_is_the_true_one(case: _Case) -> None:
    history, rmin, rmax, minutes, limit = (
        case.history,
        case.rmin,
        case.rmax,
        case.minutes,
        case.limit,
    )
    config = expire_config(
        TableOptions({}),
        retain_min=rmin,
        retain_max=rmax,
        time_retained_ms=minutes * MIN,
        expire_limit=limit,
    )
    r = compute_range(cast(SnapshotManager, history), config, [], NOW)
    older_than = NOW - minutes * MIN
    earliest, latest = history.earliest_id(), history.latest_id()
    assert earliest is not None and latest is not None
    time_of = {s: v.time_millis for s, v in history.snaps.items()}

    # The independent reading of the rule.
    floor = max(latest - rmax + 1, earliest)  # below it: retain-max expires
    ceiling = min(latest - rmin + 1, earliest + limit)  # from it on: kept by min or limit
    end = floor if floor < ceiling else ceiling
    if floor < ceiling:
        end = ceiling
        for sid in range(floor, ceiling):
            if time_of[sid + 1] >= older_than:
                end = sid
                break
    assert r.end == end
    detail = r.stop_detail

    if r.stop == "time":
        assert floor <= end < ceiling
        if time_of[end] < older_than:
            assert f"snapshot {end} is older than the retention time" in detail
            assert f"until snapshot {end + 1} is too" in detail
        elif end == floor:
            # Nothing from the floor on is older: the wording must not blame one snapshot.
            # Where times fall as ids rise, the rule read the floor and its successor only:
            # the sentence rests on D4 as Paimon's time lookups do.
            after = range(floor, latest + 1) if case.rising else range(floor, floor + 2)
            assert all(time_of[s] >= older_than for s in after if s in time_of)
            scope = "no snapshot" if floor == earliest else f"no snapshot from {floor} on"
            assert detail.startswith(f"{scope} is older than the retention time")
        else:
            assert f"snapshot {end} is the first newer than the retention time" in detail
            assert time_of[end - 1] < older_than
        kept = latest - end + 1
        between = end > floor and rmax < INT_MAX and kept < rmax
        assert (f"fewer than retain-max {rmax}" in detail) == between
    else:
        assert r.stop in ("retain-min", "limit")
        assert "retention time, so" not in detail
        if r.stop == "retain-min":
            assert detail.startswith(f"retain-min {rmin} keeps")
        else:
            assert detail.startswith(f"at most {limit} snapshot")

    # retain-max: said whenever it expires a snapshot newer than the retention time, with
    # their number; where times fall as ids rise, a number from 1 to the span at most.
    below = range(earliest, min(floor, end))
    forced = [s for s in below if s in time_of and time_of[s] >= older_than]
    said = re.search(r"expire by retain-max although (\d+) of them", detail)
    if case.rising:
        assert (said is not None) == bool(forced), detail
        assert said is None or int(said.group(1)) == len(forced), (detail, forced)
    elif said is not None:
        assert 1 <= int(said.group(1)) <= sum(1 for s in below if s in time_of), detail
    assert "'" not in detail.replace("Paimon's", "")  # no Python reprs
