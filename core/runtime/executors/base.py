"""Executor: map a function over items, preserving order, in parallel."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Iterator
from typing import Literal, TypeVar

T = TypeVar("T")
R = TypeVar("R")

# What kind of work a map runs: storage requests (threads), quick calls on local disk (a
# local executor may run them inline) or CPU-bound decoding (it may use worker processes).
Work = Literal["io", "local", "cpu"]


class Executor(ABC):
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
        *,
        work: Work = "io",
    ) -> list[R]:
        """``fn`` over ``items``, results in item order. ``work`` says what kind of work it
        is: for ``local`` a local executor may run the calls inline, for ``cpu`` in worker
        processes. The first error raised by ``fn`` reaches the caller unchanged, after
        ``on_result`` saw the results before it."""
        out: list[R] = []
        for result in self._results(fn, list(items), work):
            if on_result is not None:
                on_result(result)
            out.append(result)
        return out

    @abstractmethod
    def _results(self, fn: Callable[[T], R], batch: list[T], work: Work) -> Iterable[R]:
        """``fn`` over ``batch``, in item order."""

    @abstractmethod
    def imap(self, fn: Callable[[T], R], items: Iterable[T], *, work: Work = "io") -> Iterator[R]:
        """``map`` as an iterator, in item order, with only a few results ahead of the
        caller: for results too big to hold all at once (the names of every manifest of a
        table of 100 million files, a listing of every directory)."""

    @abstractmethod
    def close(self) -> None: ...
