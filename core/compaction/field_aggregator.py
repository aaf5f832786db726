"""The field aggregator contract (``FieldAggregator`` in Paimon) and the ignore-retract
wrapper every aggregate function can be put in.

``agg`` folds the next record's value into the accumulator, ``agg_reversed`` folds an older
one (partial-update sequence groups), ``retract`` undoes a ``-U``/``-D`` record or raises
as Paimon does."""

from __future__ import annotations

from typing import Any

from core.errors import MergeFunctionError
from core.format.model import DataField
from core.format.types import DataType


class FieldAggregator:
    name = ""

    def __init__(self, field: DataField) -> None:
        self.field = field
        self.type: DataType = field.type

    def agg(self, acc: Any, value: Any) -> Any:
        raise NotImplementedError

    def agg_reversed(self, acc: Any, value: Any) -> Any:
        return self.agg(value, acc)

    def retract(self, acc: Any, value: Any) -> Any:
        raise MergeFunctionError(
            f"Aggregate function '{self.name}' does not support retraction, If you allow this "
            "function to ignore retraction messages, you can configure "
            f"'fields.{self.field.name}.ignore-retract'='true'."
        )

    def reset(self) -> None:
        return None


class IgnoreRetract(FieldAggregator):
    """``fields.<f>.ignore-retract``: retractions leave the accumulator as it is."""

    def __init__(self, inner: FieldAggregator) -> None:
        super().__init__(inner.field)
        self.inner = inner
        self.name = inner.name

    def agg(self, acc: Any, value: Any) -> Any:
        return self.inner.agg(acc, value)

    def agg_reversed(self, acc: Any, value: Any) -> Any:
        return self.inner.agg_reversed(acc, value)

    def retract(self, acc: Any, value: Any) -> Any:
        return acc

    def reset(self) -> None:
        self.inner.reset()


__all__ = ["FieldAggregator", "IgnoreRetract"]
