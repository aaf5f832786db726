"""Java's reading of a local date-time, as an oracle for tests: shares no code with core."""

from __future__ import annotations

import datetime as dt
from zoneinfo import ZoneInfo

_UTC = dt.timezone.utc


def java_at_zone(wall: dt.datetime, zone: ZoneInfo) -> int:
    """Epoch ms of ``LocalDateTime.atZone(zone).toInstant()``, from the offsets the zone
    uses around ``wall``: the one offset that gives back ``wall``; in an overlap the earlier
    offset (the larger); in a gap the wall clock moved on by the gap, i.e. read with the
    offset before the gap (the smaller: clocks go forward)."""
    as_utc = wall.replace(tzinfo=_UTC)
    offsets = {
        o
        for h in range(-50, 51)
        if (o := (as_utc + dt.timedelta(hours=h)).astimezone(zone).utcoffset()) is not None
    }
    fits = [o for o in offsets if (as_utc - o).astimezone(zone).replace(tzinfo=None) == wall]
    offset = max(fits) if fits else min(offsets)
    return (as_utc - offset - dt.datetime(1970, 1, 1, tzinfo=_UTC)) // dt.timedelta(milliseconds=1)


def shown(ms: int, zone: ZoneInfo) -> str:
    """How an instant is printed: its wall clock in ``zone``, with that date's offset."""
    instant = dt.datetime(1970, 1, 1, tzinfo=_UTC) + dt.timedelta(milliseconds=ms)
    return instant.astimezone(zone).isoformat(sep=" ", timespec="seconds")
