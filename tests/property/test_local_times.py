"""Local times on both sides of daylight-saving changes, and commit times with ties, drawn.

The machine's zone (``TZ``, no ``--timezone``) is drawn from zones with daylight saving in
both hemispheres, one without and one off the hour; a pypaimon-written table's six snapshots
get commit times drawn around one of that zone's changes of 2024-2025, with ties (several
snapshots in one millisecond); a local date-time is drawn around the change too (in its
gap, its overlap, or exactly a commit's wall clock). Then, on that table:

* ``rollback --to-timestamp`` picks the highest id committed at or before the instant Java's
  ``LocalDateTime.atZone`` reads (``support.java_time``, which shares no code with core),
  and shows it with that date's offset;
* ``create-tag --from-timestamp`` picks the lowest id committed at or after it;
* ``expire-snapshots --older-than`` cuts off at that instant.

Dry runs only: the table is drawn again (its commit times) for every example.
"""

from __future__ import annotations

import datetime as dt
import functools
import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support import pypaimon_writer as pw
from support.fixtures import Run
from support.invariants import set_snapshot_times
from support.java_time import java_at_zone, shown

ZONES = (
    "Australia/Sydney",
    "Europe/Berlin",
    "America/New_York",
    "America/Santiago",
    "UTC",
    "Asia/Kolkata",
)
UTC = dt.timezone.utc
EPOCH = dt.datetime(1970, 1, 1, tzinfo=UTC)
HOUR = 3_600_000
# Where zones without a change are drawn around: 2025-03-30T01:00Z (Europe's change).
NO_CHANGE = 1_743_296_400_000


@functools.cache
def changes(zone: str) -> tuple[int, ...]:
    """The instants (ms) of 2024-2025 at which ``zone`` changed its offset."""
    tz = ZoneInfo(zone)
    out: list[int] = []
    t = dt.datetime(2024, 1, 1, tzinfo=UTC)
    previous = t.astimezone(tz).utcoffset()
    while t.year < 2026:
        step = t + dt.timedelta(minutes=30)
        offset = step.astimezone(tz).utcoffset()
        if offset != previous:
            out.append((step - EPOCH) // dt.timedelta(milliseconds=1))
            previous = offset
        t = step
    return tuple(out)


@st.composite
def scenarios_around_a_change(draw: st.DrawFn) -> tuple[str, list[int], str]:
    """(zone, six commit times ascending with ties, a local date-time text)."""
    zone = draw(st.sampled_from(ZONES), label="zone")
    anchor = draw(st.sampled_from(changes(zone) or (NO_CHANGE,)), label="change")
    start = anchor + draw(st.integers(-3 * HOUR, HOUR), label="start")
    steps = draw(
        st.lists(
            st.sampled_from([0, 0, 1, 999, 60_000, 30 * 60_000, HOUR]), min_size=5, max_size=5
        ),
        label="steps",
    )
    times = [start]
    for step in steps:
        times.append(times[-1] + step)
    tz = ZoneInfo(zone)
    if draw(st.booleans(), label="exactly a commit"):
        at = draw(st.sampled_from(times), label="commit")
        wall = (EPOCH + dt.timedelta(milliseconds=at)).astimezone(tz).replace(tzinfo=None)
        text = wall.isoformat(sep=" ", timespec="milliseconds")
    else:  # any minute within three hours of the change's wall clock: gaps and overlaps too
        near = (EPOCH + dt.timedelta(milliseconds=anchor)).astimezone(tz).replace(tzinfo=None)
        wall = near + dt.timedelta(minutes=draw(st.integers(-180, 180), label="minutes"))
        text = wall.isoformat(sep=" ")
    return zone, times, text


def _set_times(root: Path, times: list[int]) -> None:
    by_id = dict(enumerate(times, start=1))
    set_snapshot_times(root, by_id)
    for tag in (root / "tag").glob("tag-*"):  # a tag holds its snapshot's copy
        data = json.loads(tag.read_text(encoding="utf-8"))
        data["timeMillis"] = by_id[int(data["id"])]
        tag.write_text(json.dumps(data), encoding="utf-8")


@pytest.fixture
def table(scenarios: dict[str, pw.Scenario], tmp_path: Path) -> Path:
    s = scenarios["append_partitioned"]
    root = tmp_path / "wh" / s.root.parent.name / s.root.name
    shutil.copytree(s.root, root, symlinks=True)
    assert sorted(int(p.name.split("-")[1]) for p in (root / "snapshot").glob("snapshot-*")) == [
        1,
        2,
        3,
        4,
        5,
        6,
    ]
    return root


@settings(
    max_examples=25,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(drawn=scenarios_around_a_change())
def test_local_times_and_ties_read_as_java_and_paimon(
    run: Run,
    table: Path,
    local_zone: Callable[[str | None], None],
    drawn: tuple[str, list[int], str],
) -> None:
    zone, times, text = drawn
    local_zone(zone)
    _set_times(table, times)
    tz = ZoneInfo(zone)
    wall = dt.datetime.fromisoformat(text)
    at = java_at_zone(wall, tz)
    by_id = dict(enumerate(times, start=1))
    note = f"TZ={zone} {text!r} = {at} over {by_id}"

    at_or_before = [sid for sid, t in by_id.items() if t <= at]
    rollback = run("rollback", table, "--to-timestamp", text, "--dry-run", "--force", "--json")
    if at_or_before:
        assert rollback.exit_code == 0, (note, rollback.stderr)
        d = json.loads(rollback.stdout)["plan"]["details"]
        assert (d["target_timestamp_ms"], d["target_snapshot"]) == (at, max(at_or_before)), note
        human = run("rollback", table, "--to-timestamp", text, "--dry-run", "--force")
        assert f"at or before {shown(at, tz)}" in human.stdout, (note, human.stdout)
    else:
        assert rollback.exit_code == 1, (note, rollback.stdout)
        assert json.loads(rollback.stderr)["error"]["kind"] == "rollback_error", note

    at_or_after = [sid for sid, t in by_id.items() if t >= at]
    tag = run("create-tag", table, "drawn", "--from-timestamp", text, "--dry-run", "--json")
    if at_or_after:
        assert tag.exit_code == 0, (note, tag.stderr)
        assert json.loads(tag.stdout)["plan"]["details"]["snapshot_id"] == min(at_or_after), note
    else:
        assert tag.exit_code == 1, (note, tag.stdout)

    expire = run(
        "expire-snapshots", table, "--older-than", text, "--retain-min", "1", "--dry-run", "--json"
    )
    assert expire.exit_code == 0, (note, expire.stderr)
    doc: dict[str, Any] = json.loads(expire.stdout)
    assert doc["plan"]["details"]["config"]["older_than_ms"] == at, note
