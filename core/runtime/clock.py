"""The run's notion of "now", injectable so retention decisions are reproducible.

Every retention rule (``--older-than``, ``*.time-retained``, tag expiry, partition expiry,
run-history pruning) and every commit time reads :func:`now_ms`. ``PAIMON_CLI_NOW`` pins it
to an instant (epoch milliseconds, or ISO-8601 with an offset): tests pin it to a fixture's
own commit times, so a checked-in table never ages into other answers, and an operator can
ask what a run would have done at another time. What measures real elapsed time between
processes (the table lease, stale spill and journal temp files) reads the wall clock
itself: a pinned "now" must not make a live holder look expired or a dead one fresh.
"""

from __future__ import annotations

import datetime as dt
import os
import time
from typing import Protocol

from core.errors import InvalidOptionError

NOW_ENV = "PAIMON_CLI_NOW"


class Clock(Protocol):
    def now_ms(self) -> int: ...


def now_ms() -> int:
    """The run's now: ``PAIMON_CLI_NOW`` when set, else the wall clock."""
    pinned = os.environ.get(NOW_ENV, "").strip()
    if not pinned:
        return int(time.time() * 1000)
    return parse_pinned_now(pinned)


def parse_pinned_now(text: str) -> int:
    """``PAIMON_CLI_NOW``: epoch milliseconds or ISO-8601 with an offset (never a local
    time: a pinned instant must mean the same in every zone)."""
    if text.lstrip("-").isdigit():
        return int(text)
    try:
        parsed = dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        parsed = None
    if parsed is None or parsed.tzinfo is None:
        raise InvalidOptionError(
            f"{NOW_ENV}={text!r} is not an instant: give epoch milliseconds or ISO-8601 "
            "with an offset (2026-06-07T09:40:00+10:00), or unset it",
            param=None,
        )
    return int(parsed.timestamp() * 1000)


class SystemClock:
    def now_ms(self) -> int:
        return now_ms()


class FixedClock:
    def __init__(self, now_ms: int) -> None:
        self._now = now_ms

    def now_ms(self) -> int:
        return self._now
