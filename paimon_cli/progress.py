"""Rich progress on stderr for people; one INFO log line per phase otherwise."""

from __future__ import annotations

import logging
import sys
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from core.runtime.progress import NullProgress, Progress
from paimon_cli.logs import labelled, say_preface
from paimon_cli.output import Output, human_elapsed

if TYPE_CHECKING:
    from rich.progress import TaskID

logger = logging.getLogger("paimon_cli.progress")


class LogProgress:
    """Non-terminal progress: a line when each phase ends (INFO, visible with -v) and, in
    human mode, a line on stderr every ``interval`` seconds of a long phase (cron logs)."""

    def __init__(
        self,
        *,
        periodic: bool = False,
        interval: float = 10.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.periodic = periodic
        self.interval = interval
        self.clock = clock
        self._phase: str | None = None
        self._total: int | None = None
        self._count = 0
        self._start = 0.0
        self._last = 0.0
        self._printed = False

    def start(self, phase: str, total: int | None = None) -> None:
        self._phase, self._total, self._count = phase, total, 0
        self._start = self._last = self.clock()
        self._printed = False

    def _line(self, final: bool) -> str:
        done = f"{self._count}/{self._total}" if self._total else f"{self._count}"
        state = "done" if final else "in progress"
        took = human_elapsed(max(round(self.clock() - self._start), 0))
        line = f"{self._phase}: {done} {state}, {took}"
        return f"progress: {labelled(line)}"

    def advance(self, amount: int = 1) -> None:
        self._count += amount
        if self.periodic and self.clock() - self._last >= self.interval:
            self._last = self.clock()
            self._printed = True
            say_preface()
            sys.stderr.write(self._line(final=False) + "\n")
            sys.stderr.flush()

    def finish(self) -> None:
        if self._phase is not None:
            if self._printed:
                say_preface()
                sys.stderr.write(self._line(final=True) + "\n")
            logger.info(
                "%s: %d done in %.2fs", self._phase, self._count, self.clock() - self._start
            )
        self._phase = None


class RichProgress:
    """Transient bars on a terminal's stderr."""

    def __init__(self) -> None:
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeElapsedColumn
        from rich.progress import Progress as Bars

        self._bars = Bars(
            # A phase may name a table, tag or partition: shown as is, never as markup.
            TextColumn("{task.description}", markup=False),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=Console(file=sys.stderr, markup=False, emoji=False),
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
    if out.human or logger.isEnabledFor(logging.INFO):
        return LogProgress(periodic=out.human)
    return NullProgress()
