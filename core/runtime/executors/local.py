"""LocalExecutor: one thread pool for the whole run (storage calls release the GIL), and
worker processes, on demand, for CPU-bound decoding (threads would share one GIL)."""

from __future__ import annotations

import contextvars
import logging
import os
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Executor as PoolExecutor
from concurrent.futures import Future, ProcessPoolExecutor, ThreadPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import ParamSpec, TypeVar

from core.runtime.executors.base import Executor, Work

T = TypeVar("T")
R = TypeVar("R")
P = ParamSpec("P")

logger = logging.getLogger(__name__)


def default_parallelism() -> int:
    # Paimon's file-operation.thread-num defaults to the CPU count; I/O wants a few more.
    return max(4, (os.cpu_count() or 1) * 2)


def usable_cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def _windowed(pool: PoolExecutor, fn: Callable[[T], R], batch: list[T], window: int) -> Iterator[R]:
    """Results of ``fn`` over ``batch`` in order, ``window`` tasks in flight at most; tasks
    not started are cancelled when the caller stops early."""
    pending: deque[Future[R]] = deque()
    upcoming = iter(batch)
    try:
        for item in upcoming:
            pending.append(pool.submit(fn, item))
            if len(pending) >= window:
                break
        while pending:
            result = pending.popleft().result()
            for item in upcoming:
                pending.append(pool.submit(fn, item))
                break
            yield result
    finally:
        for future in pending:
            future.cancel()


class _ContextThreads(ThreadPoolExecutor):
    """Threads that run each task in a copy of its submitter's context, so a worker's log
    lines carry the table and step it works for (``core/runtime/log_context.py``)."""

    def submit(self, fn: Callable[P, R], /, *args: P.args, **kwargs: P.kwargs) -> Future[R]:
        context = contextvars.copy_context()
        return super().submit(lambda: context.run(fn, *args, **kwargs))


class LocalExecutor(Executor):
    name = "local"

    def __init__(self, parallelism: int | None = None, *, processes: int | None = None) -> None:
        self.parallelism = parallelism or default_parallelism()
        self.explicit = parallelism is not None  # asked for (--parallelism), not defaulted
        # Never more processes than threads: --parallelism 1 means one worker, not N.
        self.processes = min(self.parallelism, processes or usable_cpus())
        self._pool: ThreadPoolExecutor | None = None
        self._processes: ProcessPoolExecutor | None = None
        self._processes_unusable = False

    def _results(
        self, fn: Callable[[T], R], batch: list[T], work: Work, *, ahead: int | None = None
    ) -> Iterator[R]:
        """Storage requests (``io``) go to the thread pool. Quick calls on local disk
        (``local``: list, stat, unlink, microseconds each) run inline, because threads
        mostly fight over the GIL there (listing 200,000 files took twice as long on 4
        threads as on one); threads only when a parallelism was asked for explicitly, e.g.
        for a slow local mount such as NFS. CPU-bound pure work (``cpu``: decoding many
        manifests) goes to worker processes when more than one CPU is usable, else (or where
        processes cannot start) threads; ``fn`` and items must then be picklable.
        ``ahead``: how many tasks per worker may run ahead of the caller (None: all)."""
        if (work == "local" and not self.explicit) or self.parallelism <= 1 or len(batch) <= 1:
            yield from map(fn, batch)
            return
        pool: PoolExecutor | None = self._process_pool() if work == "cpu" else None
        workers = self.processes if pool is not None else self.parallelism
        if pool is None:
            pool = self._thread_pool()
        done = 0
        try:
            for result in _windowed(pool, fn, batch, ahead * workers if ahead else len(batch)):
                done += 1
                yield result
        except BrokenProcessPool as exc:
            # A worker died (killed, out of memory): the work is pure, redo it in threads.
            logger.warning("worker processes failed (%s); continuing with threads", exc)
            self._close_processes()
            self._processes_unusable = True
            window = ahead * self.parallelism if ahead else len(batch)
            yield from _windowed(self._thread_pool(), fn, batch[done:], window)

    def imap(self, fn: Callable[[T], R], items: Iterable[T], *, work: Work = "io") -> Iterator[R]:
        """``map`` as an iterator: at most two tasks per worker are ahead of the caller, so
        their results never pile up in memory."""
        yield from self._results(fn, list(items), work, ahead=2)

    def _thread_pool(self) -> ThreadPoolExecutor:
        if self._pool is None:
            self._pool = _ContextThreads(self.parallelism, thread_name_prefix="paimon-io")
        return self._pool

    def _process_pool(self) -> ProcessPoolExecutor | None:
        if self.processes <= 1 or self._processes_unusable:
            return None
        if self._processes is None:
            import multiprocessing

            try:
                # spawn: safe with the threads this run already has (fork is not)
                self._processes = ProcessPoolExecutor(
                    self.processes, mp_context=multiprocessing.get_context("spawn")
                )
            except (OSError, ImportError, NotImplementedError, ValueError) as exc:
                logger.info("no worker processes (%s); decoding in threads", exc)
                self._processes_unusable = True
                return None
        return self._processes

    def _close_processes(self) -> None:
        if self._processes is not None:
            self._processes.shutdown(wait=True, cancel_futures=True)
            self._processes = None

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True)
            self._pool = None
        self._close_processes()

    def __enter__(self) -> LocalExecutor:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
