"""Sequences whose items are made on access: plan parts too big to hold at once (a million
delete actions, orphans spilled to local disk) read as ordinary sequences."""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Iterator, Sequence
from typing import TypeVar, overload

T = TypeVar("T")


class MadeOnAccess(Sequence[T]):
    """Item ``i`` is ``_item(i)``, made when read; a slice is a list of the items made."""

    __slots__ = ()

    @abstractmethod
    def _item(self, index: int) -> T:
        """Item ``index``, 0 <= index < len(self)."""

    def _slice(self, index: slice) -> Sequence[T]:
        return [self._item(i) for i in range(*index.indices(len(self)))]

    @overload
    def __getitem__(self, index: int) -> T: ...
    @overload
    def __getitem__(self, index: slice) -> Sequence[T]: ...
    def __getitem__(self, index: int | slice) -> T | Sequence[T]:
        if isinstance(index, slice):
            return self._slice(index)
        if index < 0:
            index += len(self)
        if not 0 <= index < len(self):
            raise IndexError(index)
        return self._item(index)

    def __iter__(self) -> Iterator[T]:
        return map(self._item, range(len(self)))
