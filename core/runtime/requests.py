"""Checking what a command was asked for, once, where its request is built.

Every operation takes a typed request (a frozen dataclass) that validates itself when it
is made: an impossible value raises :class:`~core.errors.InvalidOptionError` whose
``param`` is the request field at fault, which is also the name of the command-line
option that set it (the shell reports a usage error on that option, exit 2). Values the
table's own options supply are checked where they are resolved, since they only exist
then.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Literal, TypeVar

from core.errors import InvalidOptionError
from core.runtime.timeparse import format_instant, parse_duration, parse_instant

T = TypeVar("T")


@contextmanager
def about(param: str) -> Iterator[None]:
    """An InvalidOptionError raised inside is about ``param`` (unless it names another)."""
    try:
        yield
    except InvalidOptionError as exc:
        if exc.param is None:
            exc.param = param
        raise


def parsed(param: str, parse: Callable[[], T]) -> T:
    """``parse()``, its InvalidOptionError attributed to ``param``."""
    with about(param):
        return parse()


def refuse(param: str | None, message: str) -> InvalidOptionError:
    return InvalidOptionError(message, param=param)


def at_least(param: str, value: int | None, minimum: int = 1, why: str = "") -> None:
    """``value`` (when given) is at least ``minimum``."""
    if value is not None and value < minimum:
        raise refuse(param, f"must be at least {minimum}, got {value}{why}")


def ordered(low: str, low_value: int | None, high: str, high_value: int | None) -> None:
    """Two bounds given together must not cross (``--retain-min`` over ``--retain-max``)."""
    if low_value is not None and high_value is not None and low_value > high_value:
        raise refuse(
            None,
            f"--{_flag(low)} ({low_value}) is greater than --{_flag(high)} ({high_value})",
        )


def one_of(param: str, value: str | None, choices: tuple[str, ...], what: str) -> None:
    if value is not None and value not in choices:
        raise refuse(param, f"unknown {what} {value!r} (use {' or '.join(choices)})")


def instant(param: str, text: str | None, *, now_ms: int, zone: dt.tzinfo) -> int | None:
    """A point in time given as text (DECISIONS D4), in epoch milliseconds; None stays."""
    if text is None:
        return None
    return parsed(param, lambda: parse_instant(text, now_ms=now_ms, zone=zone))


def cutoff(param: str, text: str | None, *, now_ms: int, zone: dt.tzinfo) -> int | None:
    """A cut-off (``--older-than``): an instant that is not in the future, where it would
    make everything written until then look old enough (a usage error, not a plan that
    deletes more than anyone asked)."""
    value = instant(param, text, now_ms=now_ms, zone=zone)
    if value is not None and value > now_ms:
        raise refuse(
            param,
            f"{text!r} is in the future ({format_instant(value, zone)}; now is "
            f"{format_instant(now_ms, zone)}): give a cut-off now or earlier, e.g. '7 d' "
            "for seven days ago",
        )
    return value


def duration(param: str, text: str | None, *, positive: bool = False) -> int | None:
    """A duration given as text (``7 d``, ``90m``, ``1h 30min``: a unit is required), in
    milliseconds; None stays."""
    if text is None:
        return None
    ms = parsed(param, lambda: parse_duration(text))
    if ms < 0:
        raise refuse(param, f"{text.strip()!r} is negative: a duration is a length of time")
    if positive and ms <= 0:
        raise refuse(param, "must be positive")
    return ms


def _flag(param: str) -> str:
    return param.replace("_", "-")


def snapshot_choice(param: str, text: str | None) -> int | Literal["latest"] | None:
    """A snapshot given as its id or as ``latest``; None stays."""
    if text is None or text.strip().lower() == "latest":
        return None if text is None else "latest"
    try:
        value = int(text)
    except ValueError:
        raise refuse(param, f"{text!r} is not a snapshot id or 'latest'") from None
    at_least(param, value)
    return value
