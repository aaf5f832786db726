"""Time input (DECISIONS D4): durations, epoch millis, ISO-8601, Paimon's local timestamps."""

from __future__ import annotations

import datetime as dt
import re
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from core.errors import InvalidOptionError
from core.format.options import parse_duration_ms

_PAIMON_TS = re.compile(
    r"^(\d{4})-(\d{1,2})-(\d{1,2})(?:[ T](\d{1,2}):(\d{1,2})(?::(\d{1,2})(?:\.(\d{1,9}))?)?)?$"
)


def resolve_zone(name: str | None) -> dt.tzinfo:
    """The zone Paimon-style local timestamps are read in: --timezone or the machine's."""
    if not name:
        local = dt.datetime.now().astimezone().tzinfo
        assert local is not None
        return local
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise InvalidOptionError(f"unknown time zone {name!r} (example: Europe/Berlin)") from None


def local_wall_clock_ms(value: dt.datetime, zone: dt.tzinfo) -> int:
    """Epoch ms of a naive local date-time interpreted in ``zone`` (Java's atZone)."""
    return int(value.replace(tzinfo=zone).timestamp() * 1000)


def local_datetime(ms: int, zone: dt.tzinfo) -> dt.datetime:
    """The naive local date-time in ``zone`` of epoch ms (the inverse of the above)."""
    return dt.datetime.fromtimestamp(ms / 1000, tz=zone).replace(tzinfo=None)


# Instants a date-time can represent (years 1..9999), so every value can be shown.
_MIN_MS = -62_135_596_800_000
_MAX_MS = 253_402_300_799_999


def parse_instant(text: str, *, now_ms: int, zone: dt.tzinfo) -> int:
    """Parse a point in time to epoch ms; durations mean ``now - duration``."""
    value = _parse_instant(text, now_ms=now_ms, zone=zone)
    if not _MIN_MS <= value <= _MAX_MS:
        raise InvalidOptionError(f"time {text.strip()!r} is out of range (years 1 to 9999)")
    return value


def _parse_instant(text: str, *, now_ms: int, zone: dt.tzinfo) -> int:
    raw = text.strip()
    if not raw:
        raise InvalidOptionError("empty time value")
    if raw.isdigit() and len(raw) >= 11:
        return int(raw)  # epoch millis (a 10-digit number would be ambiguous seconds)
    m = _PAIMON_TS.match(raw)
    if m:
        y, mo, d, h, mi, s, frac = m.groups()
        micros = int((frac or "0").ljust(9, "0")[:6])
        try:
            local = dt.datetime(
                int(y), int(mo), int(d), int(h or 0), int(mi or 0), int(s or 0), micros
            )
        except ValueError as exc:
            raise InvalidOptionError(f"invalid date-time {raw!r}: {exc}") from None
        return local_wall_clock_ms(local, zone)
    try:
        parsed = dt.datetime.fromisoformat(raw.replace("Z", "+00:00"))
    except ValueError:
        parsed = None
    if parsed is not None:
        if parsed.tzinfo is None:
            return local_wall_clock_ms(parsed, zone)
        return int(parsed.timestamp() * 1000)
    try:
        return now_ms - parse_duration_ms(raw)
    except InvalidOptionError:
        raise InvalidOptionError(
            f"cannot read time {raw!r}: use a duration (90m, 7 d), epoch millis, ISO-8601 "
            "with offset, or 'YYYY-MM-DD HH:MM:SS'"
        ) from None


def format_instant(ms: int, zone: dt.tzinfo | None = None) -> str:
    """Local time with its offset, e.g. ``2026-11-21 22:10:00+01:00``."""
    value = dt.datetime.fromtimestamp(ms / 1000, tz=dt.timezone.utc)
    return value.astimezone(zone).isoformat(sep=" ", timespec="seconds")


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


def format_wall_clock(value: dt.datetime, zone: dt.tzinfo) -> str:
    """A wall clock Paimon stores without a zone (tag and file creation), read in ``zone``
    and shown as every instant is: ``2026-11-21 22:10:00+01:00``."""
    return format_instant(local_wall_clock_ms(value.replace(tzinfo=None), zone), zone)


def iso_utc(ms: int) -> str:
    value = dt.datetime.fromtimestamp(ms / 1000, tz=dt.timezone.utc)
    return value.isoformat(timespec="milliseconds").replace("+00:00", "Z")
