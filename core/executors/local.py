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

    def map(
        self,
        fn: Callable[[T], R],
        items: Iterable[T],
        on_result: Callable[[R], None] | None = None,
    ) -> list[R]:
        batch = list(items)
        results: Iterable[R]
        if self.parallelism <= 1 or len(batch) <= 1:
            results = (fn(item) for item in batch)
        else:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(self.parallelism, thread_name_prefix="paimon-io")
            results = self._pool.map(fn, batch)
        out = []
        for result in results:
            if on_result is not None:
                on_result(result)
            out.append(result)
        return out

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True)
            self._pool = None

    def __enter__(self) -> LocalExecutor:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
