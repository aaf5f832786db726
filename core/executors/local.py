"""LocalExecutor: one thread pool for the whole run (storage calls release the GIL)."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

T = TypeVar("T")
R = TypeVar("R")


def default_parallelism() -> int:
    # Paimon's file-operation.thread-num defaults to the CPU count; I/O wants a few more.
    return max(4, (os.cpu_count() or 1) * 2)


class LocalExecutor:
    name = "local"

    def __init__(self, parallelism: int | None = None) -> None:
        self.parallelism = parallelism or default_parallelism()
        self._pool: ThreadPoolExecutor | None = None

    def map(self, fn: Callable[[T], R], items: Iterable[T]) -> list[R]:
        batch = list(items)
        if self.parallelism <= 1 or len(batch) <= 1:
            return [fn(item) for item in batch]
        if self._pool is None:
            self._pool = ThreadPoolExecutor(self.parallelism, thread_name_prefix="paimon-io")
        return list(self._pool.map(fn, batch))

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True)
            self._pool = None

    def __enter__(self) -> LocalExecutor:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
