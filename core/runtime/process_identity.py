"""Which processes this one can judge: the identity a lease holder and a spill directory carry.

A pid means something only inside one PID namespace of one boot of one host. Containers
that share a host name (Docker ``--uts=host`` or ``--network=host``, Kubernetes
``hostNetwork``) and VMs cloned with one name number their processes apart: a pid that is
gone here may be a live run there. A process is therefore recorded with its host name,
the kernel's boot id (``/proc/sys/kernel/random/boot_id``), the inode of its PID namespace
(``/proc/self/ns/pid``) and its start time (``/proc/<pid>/stat``, so that a reused pid
differs). Only a process recorded under this very host, boot and namespace, all known,
can be found gone here; any other (another container or boot, a system without
``/proc``, a record of an older paimon-cli without these fields) is waited out, never
judged (the lease: until it expires; a spill directory: kept).
"""

from __future__ import annotations

import hashlib
import os
import socket
from dataclasses import dataclass

# The kernel's answer, taken at import: tests give runs pids of their own by patching
# os.getpid, and /proc must still be checked against this process's real pid.
_real_getpid = os.getpid


@dataclass(frozen=True, slots=True)
class Place:
    """Where pids are numbered: a host, one boot of it, one PID namespace."""

    host: str
    boot_id: str | None
    pid_ns: int | None

    @property
    def known(self) -> bool:
        return bool(self.host) and self.boot_id is not None and self.pid_ns is not None

    def fingerprint(self) -> str | None:
        """12 hex digits naming the boot and namespace (spill directory names), or None."""
        if not self.known:
            return None
        text = f"{self.boot_id}\0{self.pid_ns}"
        return hashlib.sha256(text.encode()).hexdigest()[:12]


def _boot_id() -> str | None:
    try:
        with open("/proc/sys/kernel/random/boot_id", encoding="ascii") as fh:
            text = fh.read().strip()
    except (OSError, UnicodeDecodeError):
        return None
    return text or None


def _pid_namespace() -> int | None:
    """This process's PID namespace, provided ``/proc`` shows that namespace: a ``/proc``
    mounted for another one (``unshare --pid`` without ``--mount-proc``) numbers processes
    differently, and its start times would belong to other processes."""
    try:
        if int(os.readlink("/proc/self")) != _real_getpid():
            return None
        return os.stat("/proc/self/ns/pid").st_ino
    except (OSError, ValueError):
        return None


def here(host: str | None = None) -> Place:
    """This process's place (``host``: the host name the caller records, by default the
    system's)."""
    return Place(host if host is not None else socket.gethostname(), _boot_id(), _pid_namespace())


def process_start(pid: int) -> tuple[int, str] | None:
    """(start time in clock ticks since boot, state letter) of a process of this place's
    ``/proc``, or None when it cannot be read."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            raw = fh.read().decode("ascii", "replace")
    except OSError:
        return None
    # comm may hold spaces and parentheses: the fields start after the last ')'
    fields = raw[raw.rfind(")") + 2 :].split()
    try:
        return int(fields[19]), fields[0]
    except (IndexError, ValueError):
        return None


def start_ticks(pid: int) -> int | None:
    found = process_start(pid)
    return found[0] if found is not None else None


def is_gone(place: Place, pid: int, start: int | None = None, *, host: str | None = None) -> bool:
    """Whether process ``pid``, recorded at ``place`` (started at ``start`` clock ticks,
    when known), has ended: provable only when ``place`` is this process's own, known
    place (``host``: the host name this process records); a zombie has ended, and so has
    a pid whose process started at another time."""
    if pid <= 0 or not hasattr(os, "kill") or not place.known or place != here(host):
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        pass  # alive, another user's
    except OSError:
        return False  # cannot tell: never judged
    found = process_start(pid)
    if found is None:
        return False
    ticks, state = found
    return state in ("Z", "X") or (start is not None and ticks != start)


__all__ = ["Place", "here", "is_gone", "process_start", "start_ticks"]
