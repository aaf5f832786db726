"""Executor protocol: map a function over items, preserving order, in parallel."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Protocol, TypeVar

T = TypeVar("T")
R = TypeVar("R")


class Executor(Protocol):
    """``fn`` must be picklable and pure (a module-level function or a partial of one):
    a distributed executor runs it elsewhere. ``on_result`` runs on the caller's side,
    once per finished item (progress)."""

    name: str
    parallelism: int

    def map(
        self,
        fn: Callable[[T], R],
        items: Iterable[T],
        on_result: Callable[[R], None] | None = None,
    ) -> list[R]: ...

    def map_local(
        self,
        fn: Callable[[T], R],
        items: Iterable[T],
        on_result: Callable[[R], None] | None = None,
    ) -> list[R]:
        """``map`` for quick calls on local disk: a local executor may run them inline."""
        ...

    def map_cpu(
        self,
        fn: Callable[[T], R],
        items: Iterable[T],
        on_result: Callable[[R], None] | None = None,
    ) -> list[R]:
        """``map`` for CPU-bound work: a local executor may use worker processes."""
        ...

    def close(self) -> None: ...
