"""Rich progress on stderr for people; one INFO log line per phase otherwise."""

from __future__ import annotations

import logging
import sys
import time
from typing import TYPE_CHECKING

from core.progress import NullProgress, Progress
from paimon_cli.output import Output

if TYPE_CHECKING:
    from rich.progress import TaskID

logger = logging.getLogger("paimon_cli.progress")


class LogProgress:
    """Non-terminal progress: a log line when each phase ends (visible with -v)."""

    def __init__(self) -> None:
        self._phase: str | None = None
        self._count = 0
        self._start = 0.0

    def start(self, phase: str, total: int | None = None) -> None:
        self._phase, self._count, self._start = phase, 0, time.monotonic()

    def advance(self, amount: int = 1) -> None:
        self._count += amount

    def finish(self) -> None:
        if self._phase is not None:
            logger.info(
                "%s: %d done in %.2fs", self._phase, self._count, time.monotonic() - self._start
            )
        self._phase = None


class RichProgress:
    """Transient bars on a terminal's stderr."""

    def __init__(self) -> None:
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeElapsedColumn
        from rich.progress import Progress as Bars

        self._bars = Bars(
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=Console(file=sys.stderr),
            transient=True,
        )
        self._task: TaskID | None = None

    def start(self, phase: str, total: int | None = None) -> None:
        if self._task is None:
            self._bars.start()
        else:
            self._bars.remove_task(self._task)
        self._task = self._bars.add_task(phase, total=total)

    def advance(self, amount: int = 1) -> None:
        if self._task is not None:
            self._bars.advance(self._task, amount)

    def finish(self) -> None:
        if self._task is not None:
            self._bars.remove_task(self._task)
            self._task = None
            self._bars.stop()


def progress_for(out: Output) -> Progress:
    if out.human and sys.stderr.isatty():
        return RichProgress()
    if logger.isEnabledFor(logging.INFO):
        return LogProgress()
    return NullProgress()
