"""Time input and output (DECISIONS D4).

One grammar for every option that takes a time or a duration: a duration needs a unit
(``90m``, ``1h 30min``, ``7 d``: as an instant it means that long before now), epoch
seconds are ``@1700000000`` or a bare 10-digit number, epoch milliseconds a bare 13-digit
number, ISO-8601 with an offset is that instant, and a date-time without an offset
(Paimon's ``'YYYY-MM-DD HH:MM:SS'``) is read in the table zone with the rules that zone had
on that date. Every time and duration the tool prints reads back.
"""

from __future__ import annotations

import datetime as dt
import functools
import os
import re
import time
from pathlib import Path
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from core.errors import InvalidOptionError

_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)
_NAIVE_EPOCH = dt.datetime(1970, 1, 1)
_MS = dt.timedelta(milliseconds=1)
_SECOND = dt.timedelta(seconds=1)

# -- zones ----------------------------------------------------------------------------------

_LOCALTIME = "/etc/localtime"
_FIXED = re.compile(r"^(?:UTC|GMT|UT)?([+-])(\d{1,2})(?::?(\d{2}))?$", re.IGNORECASE)


def resolve_zone(name: str | None) -> dt.tzinfo:
    """The zone local date-times are read in: ``name`` (--timezone, a table option) as
    Java's ``ZoneId.of`` takes it (a tz database name, ``Z``, ``+05:30``, ``UTC+8``), or
    this machine's (:func:`system_zone`) when it is not given."""
    if not name or not name.strip():
        return system_zone()
    text = name.strip()
    if text.upper() in ("Z", "UTC", "GMT", "UT"):
        return dt.timezone.utc
    fixed = _FIXED.match(text)
    if fixed and int(fixed.group(2)) <= 18 and int(fixed.group(3) or 0) < 60:
        sign = -1 if fixed.group(1) == "-" else 1
        offset = dt.timedelta(hours=int(fixed.group(2)), minutes=int(fixed.group(3) or 0))
        return dt.timezone(sign * offset)
    try:
        return ZoneInfo(text)
    except (ZoneInfoNotFoundError, ValueError, OSError):
        raise InvalidOptionError(
            f"unknown time zone {name!r} (examples: Europe/Berlin, UTC, +05:30)"
        ) from None


def system_zone() -> dt.tzinfo:
    """This machine's zone with all its rules (daylight saving included), found as Java's
    ``ZoneId.systemDefault()`` finds it, so that we read a local time as the Paimon JVM
    beside us would: ``TZ`` when set and not empty, else ``/etc/localtime`` (the zone its
    link names, else the rules the file holds), else UTC. Never a fixed offset taken from
    today: a date in the other half of the year has another one."""
    zone = _system_zone(os.environ.get("TZ") or None, _LOCALTIME)
    if isinstance(zone, _LibcZone):
        time.tzset()  # the C library reads TZ only when told to: make it read this one
    return zone


@functools.lru_cache(maxsize=16)
def _system_zone(tz: str | None, localtime: str) -> dt.tzinfo:
    if tz is not None:
        return _zone_of_tz(tz)
    path = Path(localtime)
    key = _zoneinfo_key(path)
    if key is not None:
        try:
            return ZoneInfo(key)
        except (ZoneInfoNotFoundError, ValueError, OSError):
            pass
    try:
        with path.open("rb") as f:
            return ZoneInfo.from_file(f, key=key or "localtime")
    except (OSError, ValueError):
        return dt.timezone.utc  # no /etc/localtime: the C library and Java both use UTC


def _zoneinfo_key(path: Path) -> str | None:
    """The tz database name a link such as /etc/localtime -> ../usr/share/zoneinfo/X/Y
    names (``X/Y``), or None."""
    try:
        target = str(path.resolve()) if path.is_symlink() else str(path)
    except OSError:
        return None
    marker = "/zoneinfo/"
    if marker not in target:
        return None
    key = target.rsplit(marker, 1)[1]
    for prefix in ("posix/", "right/"):
        key = key.removeprefix(prefix)
    return key or None


def _zone_of_tz(tz: str) -> dt.tzinfo:
    name = tz.removeprefix(":")
    if name.startswith("/"):
        key = _zoneinfo_key(Path(name))
        try:
            with open(name, "rb") as f:
                return ZoneInfo.from_file(f, key=key or name)
        except (OSError, ValueError):
            return dt.timezone.utc
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError, OSError):
        # A POSIX rule string no tz database names ('CET-1CEST,M3.5.0,M10.5.0/3'): the
        # C library reads those, so ask it.
        return _LibcZone(tz)


class _LibcZone(dt.tzinfo):
    """The C library's local time (``TZ`` as it reads it), with PEP 495 folds: in a gap
    ``fold=0`` takes the offset before it, in an overlap the earlier instant (Java's
    ``atZone`` reads those the same way)."""

    def __init__(self, name: str) -> None:
        self._name = name

    @staticmethod
    def _offset_at(seconds: int) -> int:
        try:
            return time.localtime(seconds).tm_gmtoff
        except (OverflowError, OSError, ValueError):
            return time.localtime(0).tm_gmtoff

    def utcoffset(self, value: dt.datetime | None) -> dt.timedelta | None:
        if value is None:
            return None
        wall = (value.replace(tzinfo=None) - _NAIVE_EPOCH) // _SECOND
        # the offsets in force two days either side (transitions are further apart)
        near = {self._offset_at(wall + days * 86_400) for days in (-2, 0, 2)}
        valid = sorted((o for o in near if self._offset_at(wall - o) == o), reverse=True)
        if valid:
            offset = valid[-1] if value.fold and len(valid) > 1 else valid[0]
        else:  # a gap: before it (fold 0) or after it (fold 1)
            offset = self._offset_at(wall - (min(near) if value.fold else max(near)))
        return dt.timedelta(seconds=offset)

    def dst(self, value: dt.datetime | None) -> dt.timedelta | None:
        return None

    def tzname(self, value: dt.datetime | None) -> str:
        return self._name

    def fromutc(self, value: dt.datetime) -> dt.datetime:
        seconds = (value.replace(tzinfo=None) - _NAIVE_EPOCH) // _SECOND
        offset = dt.timedelta(seconds=self._offset_at(seconds))
        local = (value + offset).replace(fold=0)
        return local if local.utcoffset() == offset else local.replace(fold=1)

    def __repr__(self) -> str:
        return f"_LibcZone({self._name!r})"


# -- local date-times -----------------------------------------------------------------------


def local_wall_clock_ms(value: dt.datetime, zone: dt.tzinfo) -> int:
    """Epoch ms of a wall clock (naive) in ``zone``, with the offset the zone had at that
    date, as Java's ``LocalDateTime.atZone`` reads it: a time in a spring-forward gap is
    moved on by the gap's length, one in a fall-back overlap takes the earlier offset."""
    aware = value.replace(tzinfo=zone, fold=0)
    return (aware - _EPOCH) // _MS


def local_datetime(ms: int, zone: dt.tzinfo) -> dt.datetime:
    """The wall clock (naive) in ``zone`` of epoch ms: the inverse of the above."""
    return (_EPOCH + ms * _MS).astimezone(zone).replace(tzinfo=None, fold=0)


# -- input ----------------------------------------------------------------------------------

# Instants a date-time can represent (years 1..9999), so every value can be shown.
_MIN_MS = -62_135_596_800_000
_MAX_MS = 253_402_300_799_999

_LOCAL_TS = re.compile(
    r"^(\d{4})-(\d{1,2})-(\d{1,2})(?:[ T](\d{1,2}):(\d{1,2})(?::(\d{1,2})(?:\.(\d{1,9}))?)?)?$"
)
_EPOCH_SECONDS = re.compile(r"^@(\d{1,12})(?:\.(\d{1,3}))?$")
_DURATION = re.compile(r"^(-\s*)?((?:\d+\s*[^\W\d_]+\s*)+)$")
_TERM = re.compile(r"(\d+)\s*([^\W\d_]+)")
_DURATION_UNITS: dict[str, int] = {
    name: size
    for names, size in (
        (("d", "day", "days"), 86_400_000),
        (("h", "hour", "hours"), 3_600_000),
        (("min", "m", "minute", "minutes"), 60_000),
        (("s", "sec", "secs", "second", "seconds"), 1000),
        (("ms", "milli", "millis", "millisecond", "milliseconds"), 1),
    )
    for name in names
}
FORMS = (
    "a duration with a unit meaning that long ago (90m, 1h 30min, 7 d), "
    "epoch seconds (@1700000000, or 10 digits as `date +%s` prints), "
    "epoch milliseconds (13 digits), ISO-8601 with an offset (2026-06-07T09:40:00+10:00), "
    "or a local 'YYYY-MM-DD HH:MM:SS' in the table zone"
)


def parse_duration(text: str) -> int:
    """A duration in milliseconds: terms of a number and a unit (``90m``, ``1 h 30 min``,
    ``7 d``, ``500 ms``), as :func:`format_duration` prints them, a leading ``-`` included.
    A bare number is refused: seconds or milliseconds would be a guess."""
    raw = text.strip()
    m = _DURATION.match(raw)
    if m is None:
        if re.fullmatch(r"-?\d+", raw):
            n = raw.lstrip("-")
            raise InvalidOptionError(
                f"{raw!r} has no unit: write {n} s, {n} min or {n} ms (units: d, h, min, s, ms)"
            )
        raise InvalidOptionError(f"invalid duration {raw!r} (examples: 90m, 1h 30min, 7 d)")
    total = 0
    for count, unit in _TERM.findall(m.group(2)):
        size = _DURATION_UNITS.get(unit.lower())
        if size is None:
            raise InvalidOptionError(
                f"unknown unit {unit!r} in duration {raw!r} (units: d, h, min, s, ms)"
            )
        total += int(count) * size
    if total > _MAX_MS:
        raise InvalidOptionError(f"duration {raw!r} is out of range (at most 9999 years)")
    return -total if m.group(1) else total


def parse_instant(text: str, *, now_ms: int, zone: dt.tzinfo) -> int:
    """A point in time (the grammar of the module docstring) in epoch ms; a duration
    means ``now - duration``."""
    value = _parse_instant(text, now_ms=now_ms, zone=zone)
    if not _MIN_MS <= value <= _MAX_MS:
        raise InvalidOptionError(f"time {text.strip()!r} is out of range (years 1 to 9999)")
    return value


def _parse_instant(text: str, *, now_ms: int, zone: dt.tzinfo) -> int:
    raw = text.strip()
    if not raw:
        raise InvalidOptionError(f"empty time value: use {FORMS}")
    seconds = _EPOCH_SECONDS.match(raw)
    if seconds:
        return int(seconds.group(1)) * 1000 + int((seconds.group(2) or "0").ljust(3, "0"))
    if raw.isdigit():
        return _epoch_number(raw)
    local = _LOCAL_TS.match(raw)
    if local:
        return local_wall_clock_ms(_wall_clock(raw, local), zone)
    if raw[:4].isdigit() and raw[4:5] == "-":
        try:
            parsed = dt.datetime.fromisoformat(raw.replace("Z", "+00:00").replace("z", "+00:00"))
        except ValueError as exc:
            raise InvalidOptionError(f"invalid date-time {raw!r}: {exc}") from None
        if parsed.tzinfo is None:
            return local_wall_clock_ms(parsed, zone)
        return (parsed - _EPOCH) // _MS
    try:
        return now_ms - parse_duration(raw)
    except InvalidOptionError as exc:
        if re.fullmatch(r"-?\d+", raw):
            raise  # its own message says what to write
        why = f" ({exc.message})" if _DURATION.match(raw) else ""  # an unknown unit
        raise InvalidOptionError(f"cannot read time {raw!r}{why}: use {FORMS}") from None


def _epoch_number(raw: str) -> int:
    """A bare number: epoch seconds with 10 digits (2001-09-09 to 2286), epoch millis with
    13 (the same years); any other length could be either, or a duration without its unit."""
    if len(raw) == 10:
        return int(raw) * 1000
    if len(raw) == 13:
        return int(raw)
    seconds = f"@{int(raw)} for epoch seconds, or " if len(raw) <= 12 else ""
    raise InvalidOptionError(
        f"{raw!r} is ambiguous: a bare number is epoch seconds (10 digits, as `date +%s` "
        f"prints) or epoch milliseconds (13 digits); write {seconds}a duration with a unit "
        f"({raw} s, {raw} min) for that long ago"
    )


def _wall_clock(raw: str, m: re.Match[str]) -> dt.datetime:
    y, mo, d, h, mi, s, frac = m.groups()
    micros = int((frac or "0").ljust(9, "0")[:6])
    try:
        return dt.datetime(int(y), int(mo), int(d), int(h or 0), int(mi or 0), int(s or 0), micros)
    except ValueError as exc:
        raise InvalidOptionError(f"invalid date-time {raw!r}: {exc}") from None


# -- output ---------------------------------------------------------------------------------


def format_instant(ms: int, zone: dt.tzinfo | None = None, *, millis: bool = False) -> str:
    """The one human time format (DECISIONS D19): local time with the offset of that date,
    e.g. ``2026-11-21 22:10:00+01:00`` (``zone`` None: this machine's); ``millis`` adds the
    milliseconds (``22:10:00.092+01:00``) where two instants may differ by less than a
    second. ``parse_instant`` reads either back."""
    value = (_EPOCH + ms * _MS).astimezone(zone if zone is not None else system_zone())
    return value.isoformat(sep=" ", timespec="milliseconds" if millis else "seconds")


def format_utc(ms: int, *, millis: bool = False) -> str:
    """An instant in a message of core, which knows no table zone: the human format in UTC,
    ``2026-11-21 21:10:00+00:00`` (never ISO's ``T...Z``, which is JSON's)."""
    return format_instant(ms, dt.timezone.utc, millis=millis)


_UNITS = (("d", 86_400_000), ("h", 3_600_000), ("min", 60_000), ("s", 1000), ("ms", 1))


def format_duration(ms: int) -> str:
    """``1 h``, ``1 h 30 min``, ``23 d 1 h 22 min``: largest units first, zeros left out."""
    if ms == 0:
        return "0 s"
    parts: list[str] = []
    rest = abs(ms)
    for unit, size in _UNITS:
        count, rest = divmod(rest, size)
        if count:
            parts.append(f"{count} {unit}")
    return ("-" if ms < 0 else "") + " ".join(parts)


def format_elapsed(ms: int) -> str:
    """How long something took or waited: ``38 ms`` under a second, whole seconds and up
    beyond (``2 s``, ``1 min 5 s``): milliseconds matter only while they are all there is."""
    return format_duration(ms if ms < 1000 else ms - ms % 1000)


def format_wall_clock(value: dt.datetime, zone: dt.tzinfo) -> str:
    """A wall clock Paimon stores without a zone (tag and file creation), read in ``zone``
    and shown as every instant is: ``2026-11-21 22:10:00+01:00``."""
    return format_instant(local_wall_clock_ms(value.replace(tzinfo=None), zone), zone)


def iso_utc(ms: int) -> str:
    value = _EPOCH + ms * _MS
    return value.isoformat(timespec="milliseconds").replace("+00:00", "Z")
