"""Executor protocol: map a function over items, preserving order, in parallel."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Protocol, TypeVar

T = TypeVar("T")
R = TypeVar("R")


class Executor(Protocol):
    name: str
    parallelism: int

    def map(self, fn: Callable[[T], R], items: Iterable[T]) -> list[R]: ...

    def close(self) -> None: ...
