"""Time input and output (DECISIONS D4): the machine's zone with its rules, local times read
with the offset of their own date (gaps and overlaps as Java's ``atZone``), and one grammar
for instants and durations that reads back everything the tool prints."""

from __future__ import annotations

import datetime as dt
import os
import shutil
from collections.abc import Callable
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.java_time import java_at_zone

from core.errors import InvalidOptionError
from core.runtime.requests import cutoff, duration
from core.runtime.timeparse import (
    _system_zone,
    format_duration,
    format_instant,
    iso_utc,
    local_datetime,
    local_wall_clock_ms,
    parse_duration,
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


def test_a_posix_rule_string_is_read_again_after_another(local_zone: SetZone) -> None:
    """The C library's reading follows TZ even when it changed without tzset."""
    winter = _ms("2026-01-15T12:00:00+00:00")
    local_zone("CET-1CEST,M3.5.0,M10.5.0/3")
    assert format_instant(winter, system_zone()).endswith("+01:00")
    local_zone("EST+5EDT,M3.2.0/2,M11.1.0/2")
    assert format_instant(winter, system_zone()).endswith("-05:00")
    os.environ["TZ"] = "CET-1CEST,M3.5.0,M10.5.0/3"  # no tzset: the fixture restores it
    assert format_instant(winter, system_zone()).endswith("+01:00")


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
    assert ms == java_at_zone(wall, tz)
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
    assert parse_instant(f"@{ms // 1000}", now_ms=NOW, zone=tz) == ms - ms % 1000
    assert parse_instant(str(ms // 1000), now_ms=NOW, zone=tz) == ms - ms % 1000
    # the wall clock of an instant reads back to it, except the later half of an overlap
    wall = local_datetime(ms, tz)
    back = local_wall_clock_ms(wall, tz)
    assert back == ms or (back < ms and local_datetime(back, tz) == wall)


# -- one grammar ----------------------------------------------------------------------------


@settings(max_examples=300, deadline=None)
@given(ms=st.integers(-(10**12), 10**12))
def test_every_duration_printed_reads_back(ms: int) -> None:
    assert parse_duration(format_duration(ms)) == ms
    assert parse_instant(format_duration(ms), now_ms=NOW, zone=UTC) == NOW - ms


@pytest.mark.parametrize(
    ("text", "ms"),
    [
        ("90m", 90 * 60_000),
        ("90 min", 90 * 60_000),
        ("1h 30min", 90 * 60_000),
        ("1 h 30 min", 90 * 60_000),
        ("1h30m", 90 * 60_000),
        ("7 d", 7 * 86_400_000),
        ("7d", 7 * 86_400_000),
        ("2 days 3 hours", 2 * 86_400_000 + 3 * 3_600_000),
        ("23 d 1 h 22 min 5 s 7 ms", ((23 * 24 + 1) * 60 + 22) * 60_000 + 5_007),
        ("500 ms", 500),
        ("0 s", 0),
        ("1 H", 3_600_000),
    ],
)
def test_durations_need_a_unit_and_may_have_several(text: str, ms: int) -> None:
    assert parse_duration(text) == ms
    assert parse_instant(text, now_ms=NOW, zone=UTC) == NOW - ms


@pytest.mark.parametrize(
    ("text", "ms"),
    [
        ("1700000000", 1_700_000_000_000),  # `date +%s`: epoch seconds
        ("@1700000000", 1_700_000_000_000),
        ("@86400", 86_400_000),
        ("@1700000000.25", 1_700_000_000_250),
        ("1700000000123", 1_700_000_000_123),  # epoch milliseconds
        ("2026-06-07T09:40:00+10:00", _ms("2026-06-07T09:40:00+10:00")),
        ("2026-06-07 09:40:00+10:00", _ms("2026-06-07T09:40:00+10:00")),
        ("2026-06-06T23:40:00.123Z", _ms("2026-06-06T23:40:00.123+00:00")),
        ("2026-06-07 09:40:00", _ms("2026-06-07T09:40:00+00:00")),
        ("2026-06-07T09:40", _ms("2026-06-07T09:40:00+00:00")),
        ("2026-06-07", _ms("2026-06-07T00:00:00+00:00")),
    ],
)
def test_instants(text: str, ms: int) -> None:
    assert parse_instant(text, now_ms=NOW, zone=UTC) == ms


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("86400", "ambiguous"),  # 86 seconds or a day? neither: refused
        ("50", "ambiguous"),
        ("17000000000", "ambiguous"),  # 11 digits
        ("99999999999999999999", "ambiguous"),
        ("1.5h", "cannot read time"),
        ("5 weeks", "unknown unit 'weeks'"),
        ("yesterday", "cannot read time"),
        ("", "empty"),
        ("2026-02-30 10:00:00", "invalid date-time"),
        ("2026-06-07T09:40:00+25:00", "invalid date-time"),
        ("@99999999999999", "cannot read time"),
    ],
)
def test_what_cannot_be_read_unambiguously_is_refused(text: str, message: str) -> None:
    with pytest.raises(InvalidOptionError, match=message) as caught:
        parse_instant(text, now_ms=NOW, zone=UTC)
    assert "Traceback" not in caught.value.message


def test_a_bare_number_is_no_duration() -> None:
    for text in ("50", "0", "86400"):
        with pytest.raises(InvalidOptionError, match="has no unit"):
            parse_duration(text)
        with pytest.raises(InvalidOptionError, match="has no unit") as caught:
            duration("max_duration", text)
        assert caught.value.param == "max_duration"
    with pytest.raises(InvalidOptionError, match="negative"):
        duration("wait_lease", "-1 h")
    assert duration("max_duration", "1h 30min") == 90 * 60_000


def test_a_cut_off_in_the_future_is_refused() -> None:
    with pytest.raises(InvalidOptionError, match="in the future") as caught:
        cutoff("older_than", "2099-01-01 00:00:00", now_ms=NOW, zone=UTC)
    assert caught.value.param == "older_than"
    with pytest.raises(InvalidOptionError, match="in the future"):
        cutoff("older_than", "-1 h", now_ms=NOW, zone=UTC)
    assert cutoff("older_than", "0 s", now_ms=NOW, zone=UTC) == NOW
    assert cutoff("older_than", str(NOW), now_ms=NOW, zone=UTC) == NOW
    assert cutoff("older_than", None, now_ms=NOW, zone=UTC) is None
