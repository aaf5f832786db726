"""Executor protocol: map a function over items, preserving order, in parallel."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Literal, Protocol, TypeVar

T = TypeVar("T")
R = TypeVar("R")

# What kind of work a map runs: storage requests (threads), quick calls on local disk (a
# local executor may run them inline) or CPU-bound decoding (it may use worker processes).
Work = Literal["io", "local", "cpu"]


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

    def imap(self, fn: Callable[[T], R], items: Iterable[T], *, work: Work = "io") -> Iterator[R]:
        """``map`` as an iterator, in item order, with only a few results ahead of the
        caller: for results too big to hold all at once (the names of every manifest of a
        table of 100 million files, a listing of every directory)."""
        ...

    def close(self) -> None: ...
