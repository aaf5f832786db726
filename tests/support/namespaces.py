"""A second PID namespace for tests of runs this process cannot see (issue 33): a
container sharing this host name numbers its processes apart, so a pid of its run means
nothing here. ``unshare --pid --fork --mount-proc`` (util-linux; root here) makes one."""

from __future__ import annotations

import shutil
import subprocess
from functools import cache

UNSHARE = ("unshare", "--pid", "--fork", "--mount-proc")
# Inside the new namespace, burn pids first: the run's pid there (about 300) must be one
# no process has here, as when a container's run looks gone to its neighbour.
BURN = 'i=0; while [ $i -lt 300 ]; do /bin/true; i=$((i+1)); done; "$0" "$@"'
#: prefix an argv with this to run it in a PID namespace of its own
IN_ANOTHER_PID_NAMESPACE = (*UNSHARE, "sh", "-c", BURN)


@cache
def unshare_problem() -> str | None:
    """Why a second PID namespace cannot be made here (the reason to skip), or None."""
    if shutil.which("unshare") is None:
        return "needs util-linux unshare for a second PID namespace"
    probe = subprocess.run(
        [*UNSHARE, "true"], capture_output=True, text=True, timeout=60, check=False
    )
    if probe.returncode != 0:
        return f"unshare --pid is not permitted here: {probe.stderr.strip()}"
    return None
