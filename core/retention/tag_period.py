"""TagPeriodHandler: names and periods of automatic tags (semantics 5.7).

``tag.creation-period`` daily | hourly | two-hours, or ``tag.creation-period-duration``
(which wins), names formatted by ``tag.period-formatter``. A tag is automatic iff its name
parses strictly with the handler's formatter (daily: only the text before the first space).
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass

from core.errors import InvalidOptionError
from core.format.options import TableOptions
from core.runtime.timeparse import format_duration

PERIODS = ("daily", "hourly", "two-hours")
FORMATTERS = ("with_dashes", "without_dashes", "without_dashes_and_spaces")

_DAY = dt.timedelta(days=1)
_HOUR = dt.timedelta(hours=1)


@dataclass(frozen=True, slots=True)
class _Pattern:
    """A fixed-width Java DateTimeFormatter (STRICT) as a regex and a strftime format."""

    regex: re.Pattern[str]
    strftime: str


def _pattern(strftime: str) -> _Pattern:
    widths = {"%Y": r"(\d{4})", "%m": r"(\d{2})", "%d": r"(\d{2})", "%H": r"(\d{2})"}
    widths["%M"] = r"(\d{2})"
    text = re.escape(strftime)
    for code, group in widths.items():
        text = text.replace(re.escape(code), group)
    return _Pattern(re.compile(text), strftime)


_DAY_DASHES = _pattern("%Y-%m-%d")
_DAY_PLAIN = _pattern("%Y%m%d")
_HOUR_DASHES = _pattern("%Y-%m-%d %H")
_HOUR_PLAIN = _pattern("%Y%m%d %H")
_HOUR_COMPACT = _pattern("%Y%m%d%H")
_MINUTE = _pattern("%Y%m%d%H%M")


@dataclass(frozen=True, slots=True)
class TagPeriodHandler:
    period: dt.timedelta
    pattern: _Pattern
    daily: bool  # daily names: only the text before the first space is parsed
    description: str

    def validate_delay(self, delay_ms: int) -> None:
        """Paimon refuses a creation delay of one period or more."""
        if dt.timedelta(milliseconds=delay_ms) >= self.period:
            raise InvalidOptionError(
                f"tag.creation-delay ({format_duration(delay_ms)}) must be shorter than the "
                f"tag period ({self.description})"
            )

    def tag_to_time(self, name: str) -> dt.datetime:
        """The period start a tag name stands for; ValueError when it is not an auto tag."""
        text = name.split(" ")[0] if self.daily else name
        m = self.pattern.regex.fullmatch(text)
        if m is None:
            raise ValueError(f"{name!r} is not an automatic tag name")
        parts = [int(g) for g in m.groups()] + [0, 0]
        # STRICT resolution: an impossible date such as 2024-02-30 is not a tag time.
        return dt.datetime(parts[0], parts[1], parts[2], parts[3], parts[4])

    def is_auto_tag(self, name: str) -> bool:
        try:
            self.tag_to_time(name)
        except ValueError:
            return False
        return True

    def time_to_tag(self, time: dt.datetime) -> str:
        return time.strftime(self.pattern.strftime)

    def next_tag_time(self, time: dt.datetime) -> dt.datetime:
        return time + self.period

    def normalize_to_previous_tag(self, time: dt.datetime) -> dt.datetime:
        """The start of the period before the one ``time`` falls in; periods are aligned on
        the epoch of the local wall clock (Paimon reads the local time as if it were UTC)."""
        epoch = dt.datetime(1970, 1, 1)
        ms = dt.timedelta(milliseconds=1)
        period_ms = self.period // ms
        floored = ((time - epoch) // ms) // period_ms * period_ms
        return epoch + floored * ms - self.period


def period_handler(options: TableOptions) -> TagPeriodHandler:
    """TagPeriodHandler.create: the period duration wins over the named period."""
    duration = options.get_duration_ms("tag.creation-period-duration")
    if duration is not None:
        if duration <= 0:
            raise InvalidOptionError("tag.creation-period-duration must be positive")
        return TagPeriodHandler(
            dt.timedelta(milliseconds=duration), _MINUTE, False, format_duration(duration)
        )
    period = (options.get("tag.creation-period") or "daily").strip().lower().replace("_", "-")
    style = (options.get("tag.period-formatter") or "with_dashes").strip().lower()
    if period not in PERIODS:
        raise InvalidOptionError(
            f"tag.creation-period {period!r} is not one of {', '.join(PERIODS)}"
        )
    if style not in FORMATTERS:
        raise InvalidOptionError(
            f"tag.period-formatter {style!r} is not one of {', '.join(FORMATTERS)}"
        )
    if period == "daily":
        return TagPeriodHandler(
            _DAY, _DAY_DASHES if style == "with_dashes" else _DAY_PLAIN, True, "daily"
        )
    if period == "two-hours":  # Paimon always names two-hour tags with dashes
        return TagPeriodHandler(2 * _HOUR, _HOUR_DASHES, False, "two-hours")
    pattern = {
        "with_dashes": _HOUR_DASHES,
        "without_dashes": _HOUR_PLAIN,
        "without_dashes_and_spaces": _HOUR_COMPACT,
    }[style]
    return TagPeriodHandler(_HOUR, pattern, False, "hourly")
