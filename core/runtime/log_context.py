"""Where a log line comes from: the table and step a run is at (``maintain`` names both),
so that a line read in a cron mail says what it is about. Set by the operation that knows
(``core/ops/maintain``) and read by the shell's log handler; the local executor's worker
threads run each task in its submitter's context, so a storage retry on a worker is
labelled as the step that asked for it."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

_WHERE: ContextVar[str | None] = ContextVar("paimon_log_where", default=None)


def where() -> str | None:
    """The label of what this thread is doing (``db.orders expire-snapshots``), or None."""
    return _WHERE.get()


@contextmanager
def at(label: str) -> Iterator[None]:
    """Label the log lines (and progress) of the block with ``label``."""
    token = _WHERE.set(label)
    try:
        yield
    finally:
        _WHERE.reset(token)
