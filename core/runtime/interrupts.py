"""SIGINT and SIGTERM while a command changes a table: stop at a safe point, never undo.

A stopped run must leave what a killed one leaves (pointers first, D2: at worst orphans,
its journal finished by the next run), and never less: once a commit is published it
stands. So, while the lifecycle applies a plan, both signals raise :class:`Interrupted`
(a ``KeyboardInterrupt``), except inside :func:`critical` sections (publishing a commit and
recording it), where they are held and raised when the section ends.

Signals reach only the main thread; elsewhere (a library calling us from a worker thread)
the handlers are left alone and :func:`critical` is a plain section.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType

SIGNALS = (signal.SIGINT, signal.SIGTERM)


class Interrupted(KeyboardInterrupt):
    """A run stopped by SIGINT or SIGTERM (also raised for a held signal)."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


class _State(threading.local):
    depth = 0  # nesting of critical sections
    held: int | None = None  # a signal that arrived inside one


_state = _State()


def _handler(signum: int, _frame: FrameType | None) -> None:
    if _state.depth:
        _state.held = signum
        return
    raise Interrupted(signum)


def _main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()


@contextmanager
def stoppable() -> Iterator[None]:
    """SIGINT and SIGTERM raise :class:`Interrupted` inside this block (restored after)."""
    if not _main_thread():
        yield
        return
    previous = {s: signal.getsignal(s) for s in SIGNALS}
    for s in SIGNALS:
        signal.signal(s, _handler)
    try:
        yield
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)


@contextmanager
def terminable() -> Iterator[None]:
    """SIGTERM raises :class:`Interrupted` as SIGINT raises ``KeyboardInterrupt``, for a whole
    command: outside :func:`stoppable` blocks too it unwinds (leases released, the run
    recorded) instead of killing the process where it stands."""
    if not _main_thread():
        yield
        return

    def terminated(signum: int, _frame: FrameType | None) -> None:
        raise Interrupted(signum)

    previous = signal.signal(signal.SIGTERM, terminated)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


@contextmanager
def critical() -> Iterator[None]:
    """Hold SIGINT and SIGTERM while the block runs; raise a held one when it ends (after
    the block, never inside it: a published commit is recorded before the run stops)."""
    _state.depth += 1
    try:
        yield
    finally:
        _state.depth -= 1
    if _state.depth == 0 and _state.held is not None:
        signum, _state.held = _state.held, None
        raise Interrupted(signum)
