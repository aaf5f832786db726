"""Run ``paimon`` in this process, stopping while it holds its table's lease until a line
arrives on stdin: tests drive real concurrent processes with it, and know where it stands
from the files it leaves (the lease, then its journal), never from sleeps.

    python tests/support/held_run.py lease|phase|move:N paimon-args...

``lease``: stop right after taking the lease (before anything else). ``phase``: stop at the
first safe point before a phase runs (its journal is written, nothing deleted yet).
``move:N``: stop right before the Nth file move (N - 1 files moved: a restore cut mid-way).
``chunk``: stop as the first chunk of a phase starts (before its lease check and its first
deletion): a run frozen there (SIGSTOP, a suspended VM). The line it reads is how many
seconds its clocks counted meanwhile (the lease's wall and local clocks move that far; 0:
a VM whose clocks stood still).
"""

from __future__ import annotations

import sys
from typing import Any


def _stop_after_lease() -> None:
    import core.ops.lifecycle as lifecycle

    real = lifecycle.acquire

    def acquire(*args: Any, **kwargs: Any) -> Any:
        lease = real(*args, **kwargs)
        sys.stdin.readline()
        return lease

    lifecycle.acquire = acquire  # type: ignore[assignment]


def _stop_before_first_phase() -> None:
    from core.runtime.runs import Run

    real = Run.check_lease
    stopped: list[bool] = []

    def check_lease(self: Run) -> None:
        if not stopped:
            stopped.append(True)
            sys.stdin.readline()
        real(self)

    Run.check_lease = check_lease  # type: ignore[method-assign]


def _stop_before_move(n: int) -> None:
    from core.io.fileio import FileIO

    real = FileIO.move
    count: list[int] = []

    def move(self: FileIO, src: str, dst: str, *, replace: bool = False) -> bool:
        count.append(1)
        if len(count) == n:
            sys.stdin.readline()
        return real(self, src, dst, replace=replace)

    FileIO.move = move  # type: ignore[method-assign]


def _stop_before_first_chunk() -> None:
    import core.runtime.lease as lease

    real = lease.LeaseFence.watch
    stopped: list[bool] = []

    def watch(self: lease.LeaseFence) -> lease.FenceWatch:
        if not stopped:
            stopped.append(True)
            print("held: stopped at a chunk", file=sys.stderr, flush=True)
            paused_s = float(sys.stdin.readline() or 0)
            wall, local = lease._wall_ms, lease._local_s
            lease._wall_ms = lambda: wall() + int(paused_s * 1000)  # type: ignore[assignment]
            lease._local_s = lambda: local() + paused_s  # type: ignore[assignment]
        return real(self)

    lease.LeaseFence.watch = watch  # type: ignore[method-assign]


def main() -> None:
    where, args = sys.argv[1], sys.argv[2:]
    if where.startswith("move:"):
        _stop_before_move(int(where.removeprefix("move:")))
    else:
        stops = {
            "lease": _stop_after_lease,
            "phase": _stop_before_first_phase,
            "chunk": _stop_before_first_chunk,
        }
        stops[where]()
    from paimon_cli.main import main as paimon

    sys.argv = ["paimon", *args]
    paimon()


if __name__ == "__main__":
    main()
