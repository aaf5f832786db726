"""Worked examples of Paimon 2.x's expiry range rule (DECISIONS D1), table-driven."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from core.errors import InvalidOptionError
from core.format.model import Consumer, Snapshot, Tag
from core.format.options import INT_MAX, TableOptions
from core.io.fileio import FileIO
from core.retention.expire_range import compute_range, expire_config
from core.retention.protection import find_skipping_tags
from core.table.snapshot_manager import SnapshotManager

MIN = 60_000
T0 = 1_700_000_000_000


def snapshot_dir(
    tmp_path: Path, ids: list[int], *, earliest_hint: int | None = None
) -> SnapshotManager:
    d = tmp_path / "snapshot"
    d.mkdir()
    for i in ids:
        (d / f"snapshot-{i}").write_text(
            json.dumps(
                {
                    "version": 3,
                    "id": i,
                    "schemaId": 0,
                    "baseManifestList": f"b{i}",
                    "deltaManifestList": f"d{i}",
                    "commitUser": "u",
                    "commitIdentifier": i,
                    "commitKind": "APPEND",
                    "timeMillis": T0 + i * MIN,
                }
            )
        )
    if earliest_hint is not None:
        (d / "EARLIEST").write_text(str(earliest_hint))
    return SnapshotManager(FileIO(), str(tmp_path))


def config(rmin: int, rmax: int = INT_MAX, minutes: int = 60, limit: int = 50):
    return expire_config(
        TableOptions({}),
        retain_min=rmin,
        retain_max=rmax,
        time_retained_ms=minutes * MIN,
        expire_limit=limit,
    )


def test_example_a_count_bound(tmp_path: Path) -> None:
    r = compute_range(snapshot_dir(tmp_path, list(range(1, 31))), config(10), [], T0 + 100 * MIN)
    assert (r.earliest, r.end, r.stop) == (1, 21, "retain-min")


def test_example_b_time_bound_uses_the_successor(tmp_path: Path) -> None:
    r = compute_range(snapshot_dir(tmp_path, list(range(1, 31))), config(10), [], T0 + 75 * MIN)
    assert r.end == 14 and r.stop == "time"  # 1..13 expired; 14's successor is not old enough


@pytest.mark.parametrize(("earliest", "end"), [(1, 4), (4, 7), (7, 8), (8, 8)])
def test_example_c_retain_max_with_limit_over_runs(tmp_path: Path, earliest: int, end: int) -> None:
    # All 12 snapshots committed in the last minute: shift "now" to just after snapshot 12.
    mgr = snapshot_dir(tmp_path, list(range(earliest, 13)))
    r = compute_range(mgr, config(2, 5, limit=3), [], T0 + 12 * MIN + 30_000)
    assert (r.earliest, r.end) == (earliest, end)


def test_example_d_consumers(tmp_path: Path) -> None:
    mgr = snapshot_dir(tmp_path, list(range(1, 11)))
    consumers = [Consumer("a", 4, None), Consumer("b", 7, None)]
    now = T0 + 200 * MIN
    r = compute_range(mgr, config(1), consumers, now)
    assert (r.end, r.stop, r.blocking_consumer) == (4, "consumer", "a")
    stale = compute_range(mgr, config(1), [Consumer("old", 1, None)], now)
    assert stale.end == 1  # a consumer at the earliest snapshot blocks everything
    only_changelog = expire_config(
        TableOptions({"consumer.changelog-only": "true"}), retain_min=1, time_retained_ms=60 * MIN
    )
    assert compute_range(mgr, only_changelog, consumers, now).end == 10


def test_example_e_gap_in_ids(tmp_path: Path) -> None:
    mgr = snapshot_dir(tmp_path, [3, 4, 6, 7, 8], earliest_hint=3)
    r = compute_range(mgr, config(2), [], T0 + 500 * MIN)
    assert (r.earliest, r.end) == (3, 7)


def test_limit_caps_the_id_span(tmp_path: Path) -> None:
    r = compute_range(snapshot_dir(tmp_path, list(range(1, 101))), config(1), [], T0 + 10**4 * MIN)
    assert (r.end, r.stop) == (51, "limit")


def test_stale_latest_hint_is_not_trusted(tmp_path: Path) -> None:
    mgr = snapshot_dir(tmp_path, list(range(1, 6)))
    (tmp_path / "snapshot" / "LATEST").write_text("40")
    assert mgr.latest_id() == 5


def test_impossible_retention_is_refused() -> None:
    with pytest.raises(InvalidOptionError, match="at least 1"):
        expire_config(TableOptions({}), retain_min=0)
    with pytest.raises(InvalidOptionError, match="must not be less"):
        expire_config(TableOptions({}), retain_max=5)


def _tag(name: str, sid: int) -> Tag:
    snap = Snapshot.from_json(
        {
            "id": sid,
            "schemaId": 0,
            "baseManifestList": "b",
            "deltaManifestList": "d",
            "commitKind": "APPEND",
            "timeMillis": 0,
        },
        "t",
    )
    return Tag(name, snap, None, None)


def test_skipping_tags_run_from_the_newest_at_or_below_begin_to_the_last_below_end() -> None:
    tags = [_tag("T3", 3), _tag("T6", 6)]
    assert [t.name for t in find_skipping_tags(tags, 1, 8)] == ["T3", "T6"]
    assert [t.name for t in find_skipping_tags(tags, 4, 8)] == ["T3", "T6"]
    assert [t.name for t in find_skipping_tags(tags, 6, 7)] == ["T6"]
    assert find_skipping_tags(tags, 1, 3) == []


@pytest.mark.parametrize(
    ("ids", "rmax", "now", "detail"),
    [
        # Every snapshot is newer than the cut-off: nothing is said about a successor.
        (
            [1, 2],
            INT_MAX,
            T0 + 30 * MIN,
            "no snapshot is older than the retention time, so the time rule expires none",
        ),
        # 1 is old enough, but Paimon keeps it until its successor is too.
        (
            [1, 2, 3],
            INT_MAX,
            T0 + 61 * MIN + 30_000,
            "snapshot 1 is older than the retention time but is kept until snapshot 2 is too "
            "(a snapshot expires once its successor is older, as in Paimon)",
        ),
        # retain-max expires below the newest 3 whatever the time says (issue 37.14).
        (
            [1, 2, 3, 4, 5],
            3,
            T0 + 30 * MIN,
            "no snapshot from 3 on is older than the retention time, so the time rule expires "
            "none; snapshots 1..2 expire by retain-max although 2 of them are newer than the "
            "retention time: retain-max 3 keeps at most the newest 3 (Paimon's rule)",
        ),
    ],
)
def test_the_time_stop_says_which_rule_kept_what(
    tmp_path: Path, ids: list[int], rmax: int, now: int, detail: str
) -> None:
    r = compute_range(snapshot_dir(tmp_path, ids), config(1, rmax), [], now)
    assert r.stop == "time"
    assert r.stop_detail == detail
