"""A real ``paimon`` process stopped at a known point while it holds its table's lease
(``tests/support/held_run.py``), for tests of concurrent and killed runs; the ``held``
fixture (tests/conftest.py) kills whatever a test left running."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from core.io.fileio import FileIO
from core.runtime.lease import read_lease

HELD_RUN = Path(__file__).resolve().parent / "held_run.py"


class Held:
    """A ``paimon`` process stopped while it holds its table's lease."""

    def __init__(self, where: str, root: Path, *args: object, wrap: Sequence[str] = ()) -> None:
        """``wrap``: a command the run goes through (``unshare ...``: another PID namespace)."""
        self.root = root
        self.wrapped = bool(wrap)
        self.proc = subprocess.Popen(
            [*wrap, sys.executable, str(HELD_RUN), where, *map(str, args)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )

    def wait_for(self, ready: object) -> None:
        """Until ``ready()`` holds (a file the process leaves), or it ended early."""
        deadline = time.monotonic() + 120
        while not ready():  # type: ignore[operator]
            assert self.proc.poll() is None, self.proc.communicate()
            assert time.monotonic() < deadline, "the held run never got there"
            time.sleep(0.02)

    def holds_lease(self) -> bool:
        lease = read_lease(FileIO(), str(self.root))
        if lease is None or lease.state != "held":
            return False
        return self.wrapped or lease.pid == self.proc.pid  # wrapped: its pid is another's

    def wait_for_line(self, text: str) -> None:
        """Until the run says ``text`` on stderr (where a ``chunk`` stop announces itself)."""
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            if text in line:
                return
        raise AssertionError(f"the held run ended before it said {text!r}")

    def go_on(self, line: str = "") -> tuple[int, str, str]:
        """Let it go on (``line``: what it reads, e.g. how long a ``chunk`` stop lasted)."""
        out, err = self.proc.communicate(f"{line}\n", timeout=300)
        return self.proc.returncode, out, err

    def kill(self) -> None:
        self.proc.send_signal(signal.SIGKILL)
        self.proc.communicate(timeout=60)
