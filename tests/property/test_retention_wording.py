"""Expiry's stopping reason says what truly stopped it (issue 37.14), drawn.

Retention settings (retain-min, retain-max, time-retained, the per-run limit) and a history of
snapshots with non-decreasing commit times are drawn; an independent reading of Paimon's rule
(at least retain-min kept, at most retain-max; between them a snapshot expires once its
successor is older than the retention time) says which snapshots expire and why, and the
wording of ``compute_range`` must say the same: which rule stopped it, that nothing was older
than the retention time when nothing was, and that retain-max expired snapshots newer than
the retention time when it did.
"""

from __future__ import annotations

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

    def __init__(self, earliest: int, times: list[int]) -> None:
        self.snaps = {earliest + i: _Snap(earliest + i, t) for i, t in enumerate(times)}

    def earliest_id(self) -> int | None:
        return min(self.snaps, default=None)

    def latest_id(self) -> int | None:
        return max(self.snaps, default=None)

    def ids(self) -> list[int]:
        return sorted(self.snaps)

    def try_snapshot(self, sid: int) -> _Snap | None:
        return self.snaps.get(sid)


@st.composite
def cases(draw: Any) -> tuple[_History, int, int, int, int]:
    n = draw(st.integers(1, 12))
    earliest = draw(st.integers(1, 5))
    ages = sorted(draw(st.lists(st.integers(0, 120), min_size=n, max_size=n)), reverse=True)
    times = [NOW - age * MIN for age in ages]  # oldest first, ties allowed
    rmin = draw(st.integers(1, n + 1))
    rmax = draw(st.one_of(st.just(INT_MAX), st.integers(rmin, n + 2)))
    minutes = draw(st.integers(0, 130))
    limit = draw(st.integers(1, 20))
    return _History(earliest, times), rmin, rmax, minutes, limit


@settings(max_examples=300, deadline=None)
@given(cases())
def test_the_stopping_reason_is_the_true_one(case: tuple[_History, int, int, int, int]) -> None:
    history, rmin, rmax, minutes, limit = case
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
            assert all(time_of[s] >= older_than for s in range(floor, latest + 1))
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

    # retain-max: said whenever it expires a snapshot newer than the retention time.
    forced = [s for s in range(earliest, min(floor, end)) if time_of[s] >= older_than]
    if forced:
        assert "expire by retain-max although" in detail
        assert f"{len(forced)} of them" in detail
    else:
        assert "expire by retain-max although" not in detail
    assert "'" not in detail.replace("Paimon's", "")  # no Python reprs
