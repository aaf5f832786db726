"""Partition values -> local date-time, as Paimon's PartitionTimeExtractor.

``partition.timestamp-pattern`` (``$dt $hour:00:00``) is filled from the partition values
(longest key first at each ``$``), then parsed with ``partition.timestamp-formatter``, a
Java ``DateTimeFormatter`` pattern translated here (SMART resolver: first as a date-time,
then as a date at midnight), or without a formatter with Paimon's lenient
``y-M-d[ H:m:s[.fraction]]``. Text that does not parse raises ``PartitionTimeError``:
Paimon then keeps the partition and logs a warning.
"""

from __future__ import annotations

import calendar
import datetime as dt
import re
from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from core.errors import InvalidOptionError
from core.table.paths import java_local_datetime

_MONTHS = [calendar.month_abbr[i] for i in range(1, 13)]
_MONTH_NAMES = [calendar.month_name[i] for i in range(1, 13)]

# Letters java.time.format.DateTimeFormatter.ofPattern accepts; we translate the numeric
# date and time ones and refuse the rest with a clear message.
_JAVA_LETTERS = frozenset("GuyDMLdQqYwWEecFaBhKkHmsSAnNVvzOXxZp")
_SUPPORTED = frozenset("uyMLdHms S".replace(" ", ""))


class PartitionTimeError(ValueError):
    """The text does not parse with the formatter (the partition is not expired)."""


@dataclass(frozen=True, slots=True)
class _Num:
    field: str  # year | month | day | hour | minute | second | fraction
    min_width: int
    max_width: int
    reduced: bool = False  # two-digit year, base 2000


@dataclass(frozen=True, slots=True)
class _Text:
    field: str  # month
    names: tuple[str, ...]


Token = _Num | _Text | str | tuple[str, list[Any]]  # str literal; ("opt", tokens)


def _letter_token(letter: str, count: int, pattern: str) -> Token:
    if letter not in _SUPPORTED:
        raise InvalidOptionError(
            f"timestamp formatter {pattern!r}: pattern letter {letter!r} is not supported "
            "(supported: y u M L d H m s S and quoted literals)"
        )
    if letter in "yu":
        if count == 2:
            return _Num("year", 2, 2, reduced=True)
        return _Num("year", count, 19)
    if letter in "ML":
        if count == 3:
            return _Text("month", tuple(_MONTHS))
        if count == 4:
            return _Text("month", tuple(_MONTH_NAMES))
        if count > 4:
            raise InvalidOptionError(f"timestamp formatter {pattern!r}: too many {letter!r}")
        return _Num("month", count, 2)
    if letter == "S":
        return _Num("fraction", count, count)
    if count > 2:
        raise InvalidOptionError(f"timestamp formatter {pattern!r}: too many {letter!r}")
    return _Num({"d": "day", "H": "hour", "m": "minute", "s": "second"}[letter], count, 2)


def compile_formatter(pattern: str) -> list[Token]:
    """Translate a Java DateTimeFormatter pattern; InvalidOptionError if it cannot be."""
    stack: list[list[Token]] = [[]]
    i = 0
    while i < len(pattern):
        ch = pattern[i]
        if ch == "'":
            end = i + 1
            text = []
            while True:
                if end >= len(pattern):
                    raise InvalidOptionError(f"timestamp formatter {pattern!r}: unclosed quote")
                if pattern[end] == "'":
                    if end + 1 < len(pattern) and pattern[end + 1] == "'":
                        text.append("'")
                        end += 2
                        continue
                    break
                text.append(pattern[end])
                end += 1
            stack[-1].append("".join(text) if text or end > i + 1 else "'")
            i = end + 1
            continue
        if ch == "[":
            stack.append([])
            i += 1
            continue
        if ch == "]":
            if len(stack) == 1:
                raise InvalidOptionError(f"timestamp formatter {pattern!r}: unmatched ']'")
            inner = stack.pop()
            stack[-1].append(("opt", inner))
            i += 1
            continue
        if ch.isalpha():
            count = 1
            while i + count < len(pattern) and pattern[i + count] == ch:
                count += 1
            if ch not in _JAVA_LETTERS:
                raise InvalidOptionError(
                    f"timestamp formatter {pattern!r}: unknown pattern letter {ch!r}"
                )
            stack[-1].append(_letter_token(ch, count, pattern))
            i += count
            continue
        if ch in "#{}":
            raise InvalidOptionError(f"timestamp formatter {pattern!r}: reserved character {ch!r}")
        stack[-1].append(ch)
        i += 1
    if len(stack) != 1:
        raise InvalidOptionError(f"timestamp formatter {pattern!r}: unclosed '['")
    return stack[0]


def _regex(tokens: Sequence[Token], groups: list[_Num | _Text]) -> str:
    out = []
    for tok in tokens:
        if isinstance(tok, str):
            out.append(re.escape(tok))
        elif isinstance(tok, tuple):
            out.append(f"(?:{_regex(tok[1], groups)})?")
        elif isinstance(tok, _Text):
            groups.append(tok)
            out.append("(" + "|".join(re.escape(n) for n in tok.names) + ")")
        else:
            groups.append(tok)
            out.append(f"([0-9]{{{tok.min_width},{tok.max_width}}})")
    return "".join(out)


@dataclass(frozen=True)
class Formatter:
    """A compiled formatter: full-text match, SMART resolution (day clamped to the month)."""

    pattern: str
    regex: re.Pattern[str]
    groups: tuple[_Num | _Text, ...]

    @classmethod
    def of(cls, pattern: str) -> Formatter:
        groups: list[_Num | _Text] = []
        regex = re.compile(_regex(compile_formatter(pattern), groups), re.IGNORECASE)
        return cls(pattern, regex, tuple(groups))

    def parse(self, text: str) -> dt.datetime:
        m = self.regex.fullmatch(text)
        if m is None:
            raise PartitionTimeError(f"{text!r} does not match {self.pattern!r}")
        fields: dict[str, int] = {}
        for tok, raw in zip(self.groups, m.groups(), strict=True):
            if raw is None:
                continue
            if isinstance(tok, _Text):
                value = [n.lower() for n in tok.names].index(raw.lower()) + 1
            elif tok.field == "fraction":
                value = int(raw.ljust(9, "0")[:9])
            elif tok.reduced:
                value = 2000 + int(raw)
            else:
                value = int(raw)
            if tok.field in fields and fields[tok.field] != value:
                raise PartitionTimeError(f"{text!r}: conflicting {tok.field} values")
            fields[tok.field] = value
        return _resolve_smart(fields, text)


def _resolve_smart(f: dict[str, int], text: str) -> dt.datetime:
    if not {"year", "month", "day"} <= f.keys():
        raise PartitionTimeError(f"{text!r} has no complete date")
    year, month, day = f["year"], f["month"], f["day"]
    if not (1 <= month <= 12 and 1 <= day <= 31 and dt.MINYEAR <= year <= dt.MAXYEAR):
        raise PartitionTimeError(f"{text!r} is not a valid date")
    day = min(day, calendar.monthrange(year, month)[1])  # SMART: Feb 30 -> Feb 28/29
    if "hour" not in f:  # LocalDateTime.parse fails; Paimon retries as a date at midnight
        return dt.datetime(year, month, day)
    hour, minute, second = f["hour"], f.get("minute", 0), f.get("second", 0)
    if not (0 <= hour <= 23 and 0 <= minute <= 59 and 0 <= second <= 59):
        raise PartitionTimeError(f"{text!r} is not a valid time")
    return dt.datetime(year, month, day, hour, minute, second, f.get("fraction", 0) // 1000)


_DEFAULT = re.compile(
    r"(\d{1,10})-(\d{1,2})-(\d{1,2})(?: (\d{1,2}):(\d{1,2}):(\d{1,2})(?:\.(\d{1,9}))?)?"
)


def parse_default(text: str) -> dt.datetime:
    """Paimon's default ``y-M-d[ H:m:s[.fraction]]`` with the LENIENT resolver (overflow rolls)."""
    m = _DEFAULT.fullmatch(text)
    if m is None:
        raise PartitionTimeError(f"{text!r} is not y-M-d[ H:m:s]")
    y, mo, d, h, mi, s, frac = m.groups()
    months = int(y) * 12 + int(mo) - 1
    try:
        base = dt.datetime(months // 12, months % 12 + 1, 1)
        return base + dt.timedelta(
            days=int(d) - 1,
            hours=int(h or 0),
            minutes=int(mi or 0),
            seconds=int(s or 0),
            microseconds=int((frac or "0").ljust(9, "0")[:9]) // 1000,
        )
    except (ValueError, OverflowError) as exc:
        raise PartitionTimeError(f"{text!r}: {exc}") from None


def fill_pattern(pattern: str, keys: Sequence[str], values: Sequence[str | None]) -> str:
    """Replace ``$key`` by its value, longest key first at each ``$`` (Paimon's rule)."""
    order = sorted(range(len(keys)), key=lambda i: -len(keys[i]))
    out: list[str] = []
    i = 0
    while i < len(pattern):
        ch = pattern[i]
        if ch == "$" and i + 1 < len(pattern):
            for idx in order:
                key = keys[idx]
                if pattern.startswith(key, i + 1):
                    value = values[idx]
                    if value is None:
                        raise PartitionTimeError(f"partition value {key} is null")
                    out.append(value)
                    i += 1 + len(key)
                    break
            else:
                out.append(ch)
                i += 1
            continue
        out.append(ch)
        i += 1
    return "".join(out)


def referenced_keys(pattern: str, keys: Sequence[str]) -> list[str]:
    """Keys a pattern names, and raises InvalidOptionError for a ``$name`` that is not a key."""
    names = re.findall(r"\$([A-Za-z_][A-Za-z0-9_]*)", pattern)
    found = []
    for name in names:
        match = next((k for k in sorted(keys, key=len, reverse=True) if name.startswith(k)), None)
        if match is None:
            raise InvalidOptionError(
                f"timestamp pattern {pattern!r} names ${name}, which is not a partition key "
                f"(partition keys: {', '.join(keys)})"
            )
        found.append(match)
    return found


def java_internal_text(value: Any, root: str) -> str | None:
    """``toString()`` of Paimon's internal representation of a partition value."""
    if value is None:
        return None
    if root == "BOOLEAN":
        return "true" if value else "false"
    if root == "DATE":
        return str((value - dt.date(1970, 1, 1)).days)
    if root in ("TIMESTAMP", "TIMESTAMP_LTZ"):
        return java_local_datetime(value)
    if root == "DECIMAL":
        return format(Decimal(value), "f")
    return str(value)


@dataclass(frozen=True)
class TimeExtractor:
    pattern: str | None
    formatter: Formatter | None

    @classmethod
    def of(cls, pattern: str | None, formatter: str | None, keys: Sequence[str]) -> TimeExtractor:
        if pattern is not None:
            referenced_keys(pattern, keys)
        return cls(pattern, Formatter.of(formatter) if formatter else None)

    def text(self, keys: Sequence[str], values: Sequence[str | None]) -> str:
        if self.pattern is None:
            if values[0] is None:
                raise PartitionTimeError(f"partition value {keys[0]} is null")
            return values[0]
        return fill_pattern(self.pattern, keys, values)

    def extract(self, keys: Sequence[str], values: Sequence[str | None]) -> dt.datetime:
        text = self.text(keys, values)
        return self.formatter.parse(text) if self.formatter else parse_default(text)
