"""Time input and output (DECISIONS D4): the machine's zone with its rules, and local times
read with the offset of their own date (gaps and overlaps as Java's ``atZone``)."""

from __future__ import annotations

import datetime as dt
import shutil
from collections.abc import Callable
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.errors import InvalidOptionError
from core.runtime.timeparse import (
    _system_zone,
    format_instant,
    iso_utc,
    local_datetime,
    local_wall_clock_ms,
    parse_instant,
    resolve_zone,
    system_zone,
)

UTC = dt.timezone.utc
NOW = 1_780_000_000_000  # 2026-05-28T20:26:40Z: a fixed "now", never today's
# Zones with daylight saving in both hemispheres, one with none and one off the hour.
ZONES = (
    "Australia/Sydney",
    "Europe/Berlin",
    "America/New_York",
    "America/Santiago",
    "UTC",
    "Asia/Kolkata",
)
SetZone = Callable[[str | None], None]


def _ms(text: str) -> int:
    """An ISO-8601 instant with offset, in epoch ms (the expected values below)."""
    return int(dt.datetime.fromisoformat(text).timestamp() * 1000)


def _java_at_zone(wall: dt.datetime, zone: ZoneInfo) -> int:
    """Java's ``LocalDateTime.atZone(zone).toInstant()``, from the offsets the zone uses
    around ``wall`` (an oracle that shares nothing with the code under test): the one offset
    that gives back ``wall``; in an overlap the earlier offset (the larger); in a gap the
    wall clock moved on by the gap, i.e. read with the offset before the gap."""
    as_utc = wall.replace(tzinfo=UTC)
    offsets = {
        (as_utc + dt.timedelta(hours=h)).astimezone(zone).utcoffset() for h in range(-50, 51)
    }
    fits = [
        o
        for o in offsets
        if o is not None and (as_utc - o).astimezone(zone).replace(tzinfo=None) == wall
    ]
    if fits:
        return int((as_utc - max(fits)).timestamp() * 1000)
    # A gap: the offset before it is the smaller one (clocks go forward).
    return int((as_utc - min(o for o in offsets if o is not None)).timestamp() * 1000)


# -- the machine's zone ---------------------------------------------------------------------


def test_tz_names_a_zone_with_its_rules(local_zone: SetZone) -> None:
    """The defect of issue 33: Sydney's June is +10:00 whatever today's offset is."""
    local_zone("Australia/Sydney")
    zone = system_zone()
    assert isinstance(zone, ZoneInfo) and zone.key == "Australia/Sydney"
    june = parse_instant("2026-06-07 09:40:00", now_ms=NOW, zone=zone)
    january = parse_instant("2026-01-07 09:40:00", now_ms=NOW, zone=zone)
    assert june == _ms("2026-06-07T09:40:00+10:00")
    assert january == _ms("2026-01-07T09:40:00+11:00")
    assert format_instant(june, zone) == "2026-06-07 09:40:00+10:00"
    assert format_instant(january, zone) == "2026-01-07 09:40:00+11:00"
    assert resolve_zone(None) is zone and resolve_zone("") is zone


@pytest.mark.parametrize(
    "tz", [":Europe/Berlin", "/usr/share/zoneinfo/Europe/Berlin", "CET-1CEST,M3.5.0,M10.5.0/3"]
)
def test_every_form_of_tz_reads_berlin_rules(local_zone: SetZone, tz: str) -> None:
    """A name with a colon, a file, and a POSIX rule string (read by the C library)."""
    if tz.startswith("/") and not Path(tz).exists():
        pytest.skip("no system tz database")
    local_zone(tz)
    zone = system_zone()
    berlin = ZoneInfo("Europe/Berlin")
    for day in range(0, 730, 7):  # two years, weekly, at 00:30 and 12:30 UTC
        for hour in (0, 12):
            ms = _ms("2025-01-01T00:30:00+00:00") + (day * 24 + hour) * 3_600_000
            assert format_instant(ms, zone) == format_instant(ms, berlin)
            wall = local_datetime(ms, berlin)
            assert local_wall_clock_ms(wall, zone) == local_wall_clock_ms(wall, berlin)
    # the gap and the overlap of 2026, as Java reads them
    for text in ("2026-03-29 02:30:00", "2026-10-25 02:30:00"):
        assert parse_instant(text, now_ms=NOW, zone=zone) == parse_instant(
            text, now_ms=NOW, zone=berlin
        )


def test_localtime_link_file_and_absence(tmp_path: Path) -> None:
    """Without TZ: the zone /etc/localtime links to, else the rules the file holds, else
    UTC (as the C library and Java)."""
    source = Path("/usr/share/zoneinfo/America/Santiago")
    if not source.exists():
        pytest.skip("no system tz database")
    link = tmp_path / "localtime"
    link.symlink_to(source)
    linked = _system_zone(None, str(link))
    assert isinstance(linked, ZoneInfo) and linked.key == "America/Santiago"
    copied = tmp_path / "copied"
    shutil.copyfile(source, copied)
    from_file = _system_zone(None, str(copied))
    for ms in (_ms("2026-01-15T12:00:00+00:00"), _ms("2026-07-15T12:00:00+00:00")):
        assert format_instant(ms, from_file) == format_instant(ms, ZoneInfo("America/Santiago"))
    assert _system_zone(None, str(tmp_path / "absent")) is UTC


def test_empty_tz_is_unset_as_java_reads_it(local_zone: SetZone) -> None:
    local_zone("")
    assert system_zone() is _system_zone(None, "/etc/localtime")


@pytest.mark.parametrize(
    ("name", "offset"),
    [("Z", 0), ("UTC", 0), ("+05:30", 330), ("UTC+8", 480), ("GMT-03:00", -180), ("-0930", -570)],
)
def test_timezone_option_takes_java_zone_ids(name: str, offset: int) -> None:
    zone = resolve_zone(name)
    assert zone.utcoffset(dt.datetime(2026, 6, 1)) == dt.timedelta(minutes=offset)


def test_unknown_zone_is_refused() -> None:
    with pytest.raises(InvalidOptionError, match="unknown time zone 'Mars/Olympus'"):
        resolve_zone("Mars/Olympus")


# -- gaps and overlaps: Java's rules --------------------------------------------------------


@pytest.mark.parametrize(
    ("zone", "wall", "instant"),
    [
        # spring forward: the wall clock moves on by the gap
        ("Europe/Berlin", "2026-03-29 02:30:00", "2026-03-29T03:30:00+02:00"),
        ("America/New_York", "2026-03-08 02:30:00", "2026-03-08T03:30:00-04:00"),
        ("Australia/Sydney", "2026-10-04 02:30:00", "2026-10-04T03:30:00+11:00"),
        ("America/Santiago", "2026-09-06 00:30:00", "2026-09-06T01:30:00-03:00"),
        # fall back: the earlier offset
        ("Europe/Berlin", "2026-10-25 02:30:00", "2026-10-25T02:30:00+02:00"),
        ("America/New_York", "2026-11-01 01:30:00", "2026-11-01T01:30:00-04:00"),
        ("Australia/Sydney", "2026-04-05 02:30:00", "2026-04-05T02:30:00+11:00"),
        ("America/Santiago", "2026-04-04 23:30:00", "2026-04-04T23:30:00-03:00"),
    ],
)
def test_gap_and_overlap_read_as_java(zone: str, wall: str, instant: str) -> None:
    assert parse_instant(wall, now_ms=NOW, zone=ZoneInfo(zone)) == _ms(instant)


@settings(max_examples=300, deadline=None)
@given(
    zone=st.sampled_from(ZONES),
    day=st.integers(0, 3 * 366),
    minute=st.integers(0, 24 * 60 - 1),
)
def test_every_local_time_reads_as_java_and_prints_back(zone: str, day: int, minute: int) -> None:
    """Any wall clock of 2024-2026 (every DST change of the six zones among them) reads as
    Java's atZone reads it, and what is printed for that instant reads back to it."""
    tz = ZoneInfo(zone)
    wall = dt.datetime(2024, 1, 1) + dt.timedelta(days=day, minutes=minute)
    ms = parse_instant(wall.isoformat(sep=" "), now_ms=NOW, zone=tz)
    assert ms == _java_at_zone(wall, tz)
    assert local_wall_clock_ms(wall, tz) == ms
    shown = format_instant(ms, tz)
    assert parse_instant(shown, now_ms=NOW, zone=UTC) == ms


@settings(max_examples=300, deadline=None)
@given(zone=st.sampled_from(ZONES), ms=st.integers(1_000_000_000_000, 9_999_999_999_999))
def test_every_instant_printed_reads_back(zone: str, ms: int) -> None:
    """Human (to the second, with the offset of its date), JSON (UTC, ms) and epoch forms."""
    tz = ZoneInfo(zone)
    assert parse_instant(format_instant(ms, tz), now_ms=NOW, zone=tz) == ms - ms % 1000
    assert parse_instant(iso_utc(ms), now_ms=NOW, zone=tz) == ms
    assert parse_instant(str(ms), now_ms=NOW, zone=tz) == ms
    # the wall clock of an instant reads back to it, except the later half of an overlap
    wall = local_datetime(ms, tz)
    back = local_wall_clock_ms(wall, tz)
    assert back == ms or (back < ms and local_datetime(back, tz) == wall)
