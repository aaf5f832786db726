"""Interrupting a command in-process at a chosen storage operation, deterministically.

``HookedFileIO`` counts the mutating storage operations of one run (writes, creates,
deletes, moves) and, at the N-th, before or right after it reaches storage, fires one
``Fault``:

* ``kill``: SIGKILL. ``Crash`` (a ``BaseException``) is raised and the process counts as dead:
  every later storage operation raises ``Crash`` too, so no cleanup code reaches storage.
* ``sigint``: Ctrl-C (``timeout -s INT``, a scheduler stopping a job). ``KeyboardInterrupt``
  is raised there once; cleanup code runs and storage keeps working, as in a real process.
* ``storage-error``: the store refuses that operation (``StorageError``; nothing applied).
* ``writer-commit``: another writer commits right then (a callback, e.g. a pypaimon append);
  the command goes on. The race is hit at that exact operation, not by timing.

It also reports every file a run creates (``on_created``), so a test knows which snapshots
a command committed and what was latest when it did. Each run gets a process id of its own
that no process has (``os.getpid`` answers it meanwhile): after a kill, the table lease
sees its holder gone and the next run takes it over, as after a real SIGKILL.

``denied(directory)`` makes the operating system answer EACCES for everything inside a
directory (and for listing it), as a directory chmod 000 to the service user, or an NFS
mount refusing it, would: the patch sits below ``core.io.fileio``, so how ``FileIO`` turns such
an error into an answer is what is tested.
"""

from __future__ import annotations

import builtins
import contextlib
import errno
import functools
import importlib
import io
import itertools
import os
import pkgutil
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import Any

from core.errors import StorageError
from core.io.fileio import FileIO
from support.invariants import Crash


class Interrupt(str, Enum):
    KILL = "kill"
    SIGINT = "sigint"
    STORAGE_ERROR = "storage-error"
    WRITER_COMMIT = "writer-commit"


@dataclass(frozen=True)
class Fault:
    kind: Interrupt
    at: int  # the N-th mutating storage operation of the run (1-based)
    after: bool  # fire right after the operation reached storage, not before

    def __str__(self) -> str:
        return f"{self.kind.value} {'after' if self.after else 'before'} op {self.at}"


# Above Linux's largest pid (pid_max is at most 2^22): os.kill answers "no such process".
_NO_SUCH_PID = 2**22 + 1


class Hook:
    """One run's fault and observers, shared by every FileIO the run creates: the N-th
    mutating operation is counted across all of them."""

    _pids = itertools.count(_NO_SUCH_PID)

    def __init__(
        self,
        fault: Fault | None,
        *,
        on_commit: Callable[[], None] = lambda: None,
        on_created: Callable[[str], None] = lambda _path: None,
        pid: int | None = None,
    ) -> None:
        # The run's process id: one no process has, as the run's own process would be gone
        # once it ended (or was killed); the table lease takes over from a dead holder.
        # ``pid``: a live one instead (a run that is paused, not gone).
        self.pid = pid if pid is not None else next(self._pids)
        self.fault = fault
        self.on_commit = on_commit
        self.on_created = on_created
        self.ops: list[tuple[str, str]] = []  # (operation, path) of each mutating one, in order
        self.fired = False
        self.dead = False
        self._lock = threading.Lock()

    def _fire(self, path: str) -> None:
        assert self.fault is not None
        self.fired = True
        kind = self.fault.kind
        if kind is Interrupt.KILL:
            self.dead = True
            raise Crash(path)
        if kind is Interrupt.SIGINT:
            raise KeyboardInterrupt(path)
        if kind is Interrupt.STORAGE_ERROR:
            raise StorageError(f"injected failure on {path}")
        self.on_commit()

    def mutate(self, kind: str, path: str, op: Callable[[], Any]) -> Any:
        with self._lock:
            if self.dead:
                raise Crash(path)
            self.ops.append((kind, path))
            n = len(self.ops)
        fault = self.fault
        hit = fault is not None and n == fault.at
        if hit and fault is not None and not fault.after:
            self._fire(path)
        result = op()
        if hit and fault is not None and fault.after:
            self._fire(path)
        return result

    def file_io(self, storage_options: Any = None, **kwargs: Any) -> HookedFileIO:
        """Stands in for ``core.io.fileio.FileIO(...)`` (see ``hooked``)."""
        return HookedFileIO(self, storage_options, **kwargs)


class HookedFileIO(FileIO):
    """A FileIO whose mutating operations go through a ``Hook``."""

    def __init__(self, hook: Hook, storage_options: Any = None, **kwargs: Any) -> None:
        super().__init__(storage_options, **kwargs)
        self.hook = hook

    def _created(self, path: str, created: bool) -> bool:
        if created:
            self.hook.on_created(path)
        return created

    def write_bytes(self, path: str, data: bytes) -> None:
        def op() -> None:
            FileIO.write_bytes(self, path, data)
            self.hook.on_created(path)

        self.hook.mutate("write", path, op)

    def write_if_absent(self, path: str, data: bytes) -> bool:
        return bool(
            self.hook.mutate(
                "create",
                path,
                lambda: self._created(path, FileIO.write_if_absent(self, path, data)),
            )
        )

    def delete(self, path: str) -> bool:
        return bool(self.hook.mutate("delete", path, lambda: FileIO.delete(self, path)))

    def delete_empty_dir(self, path: str) -> bool:
        return bool(self.hook.mutate("rmdir", path, lambda: FileIO.delete_empty_dir(self, path)))

    def move(self, src: str, dst: str, *, replace: bool = False) -> bool:
        return bool(
            self.hook.mutate(
                "move",
                src,
                lambda: self._created(dst, FileIO.move(self, src, dst, replace=replace)),
            )
        )

    def delete_many(self, paths: list[str]) -> dict[str, StorageError]:
        if not paths:
            return {}
        failed: dict[str, StorageError] = self.hook.mutate(
            "delete", paths[0], lambda: FileIO.delete_many(self, paths)
        )
        return failed


@functools.cache
def import_everything() -> None:
    """Every module of ``core`` and ``paimon_cli``, imported before the first swap: a module
    first imported while ``FileIO`` is swapped would bind the stand-in for good (``from
    core.io.fileio import FileIO`` at its top, a ``class X(FileIO)``)."""
    import core
    import paimon_cli

    for package in (core, paimon_cli):
        for info in pkgutil.walk_packages(package.__path__, f"{package.__name__}."):
            if not info.name.endswith(".__main__"):
                importlib.import_module(info.name)


@contextlib.contextmanager
def hooked(hook: Hook) -> Iterator[None]:
    """Every ``core.io.fileio.FileIO`` a command creates meanwhile goes through ``hook``."""
    from core.io import fileio as fileio_module

    import_everything()
    original, getpid = fileio_module.FileIO, os.getpid
    fileio_module.FileIO = hook.file_io  # type: ignore[misc,assignment]
    os.getpid = lambda: hook.pid  # each run is a process of its own (the table lease)
    try:
        yield
    finally:
        fileio_module.FileIO = original  # type: ignore[misc]
        os.getpid = getpid


# -- EACCES on one directory ------------------------------------------------------------------
_ONE_PATH = ("stat", "lstat", "open", "unlink", "remove", "rmdir", "mkdir", "utime", "chmod")
_TWO_PATHS = ("link", "rename", "replace")
_LISTING = ("scandir", "listdir")


def _denied_error(path: object) -> PermissionError:
    return PermissionError(errno.EACCES, os.strerror(errno.EACCES), str(path))


@contextlib.contextmanager
def denied(directory: Path) -> Iterator[None]:
    """Meanwhile every operating-system call on a path inside ``directory``, and listing it,
    fails with EACCES (a directory without permissions for this user; root ignores chmod,
    so it is faked here). The directory itself still stats, as its parent is readable."""
    top = os.path.abspath(directory)
    prefix = top.rstrip("/") + "/"

    def inside(path: object) -> bool:
        if isinstance(path, int):
            return False  # a file descriptor: opened before, or through a directory fd
        try:
            text = os.fsdecode(path)  # type: ignore[arg-type]
        except TypeError:
            return False
        return os.path.abspath(text).startswith(prefix)

    def listing_of(path: object) -> bool:
        if isinstance(path, int):
            return False
        try:
            text = os.fsdecode(path) if path is not None else "."  # type: ignore[arg-type]
        except TypeError:
            return False
        return inside(text) or os.path.abspath(text) == top

    patches: dict[tuple[object, str], Any] = {}

    def wrap_one(module: object, name: str, check: Callable[[object], bool]) -> None:
        real = getattr(module, name)

        def guarded(*args: Any, **kwargs: Any) -> Any:
            target = args[0] if args else kwargs.get("path", kwargs.get("file"))
            if check(target):
                raise _denied_error(target)
            return real(*args, **kwargs)

        patches[(module, name)] = real
        setattr(module, name, guarded)

    def wrap_two(name: str) -> None:
        real = getattr(os, name)

        def guarded(src: Any, dst: Any, *args: Any, **kwargs: Any) -> Any:
            for target in (src, dst):
                if inside(target):
                    raise _denied_error(target)
            return real(src, dst, *args, **kwargs)

        patches[(os, name)] = real
        setattr(os, name, guarded)

    for name in _ONE_PATH:
        wrap_one(os, name, inside)
    for name in _LISTING:
        wrap_one(os, name, listing_of)
    for name in _TWO_PATHS:
        wrap_two(name)
    wrap_one(builtins, "open", inside)
    wrap_one(io, "open", inside)
    try:
        yield
    finally:
        for (module, name), real in patches.items():
            setattr(module, name, real)
