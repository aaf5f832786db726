"""A real ``paimon`` process stopped at a known point while it holds its table's lease
(``tests/support/held_run.py``), for tests of concurrent and killed runs; the ``held``
fixture (tests/conftest.py) kills whatever a test left running."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

from core.io.fileio import FileIO
from core.runtime.lease import read_lease

HELD_RUN = Path(__file__).resolve().parent / "held_run.py"


class Held:
    """A ``paimon`` process stopped while it holds its table's lease."""

    def __init__(self, where: str, root: Path, *args: object) -> None:
        self.root = root
        self.proc = subprocess.Popen(
            [sys.executable, str(HELD_RUN), where, *map(str, args)],
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
        return lease is not None and lease.state == "held" and lease.pid == self.proc.pid

    def go_on(self) -> tuple[int, str, str]:
        out, err = self.proc.communicate("\n", timeout=300)
        return self.proc.returncode, out, err

    def kill(self) -> None:
        self.proc.send_signal(signal.SIGKILL)
        self.proc.communicate(timeout=60)
