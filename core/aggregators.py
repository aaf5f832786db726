"""Paimon's field aggregators (``fields.<f>.aggregate-function``), on Python values.

Each class follows its ``Field*Agg`` counterpart in Paimon: ``agg`` folds the next record's
value into the accumulator, ``agg_reversed`` folds an older one (partial-update sequence
groups), ``retract`` undoes a ``-U``/``-D`` record or raises as Paimon does. Functions whose
result paimon-cli cannot reproduce byte for byte (sketches, bitmaps) are refused before
anything is written (``refusal``)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from decimal import Decimal
from typing import Any

from core.errors import MergeFunctionError
from core.java_semantics import (
    INT_BITS,
    JavaArithmeticError,
    decimal_add,
    decimal_mul,
    decimal_result,
    decimal_sub,
    exact_int,
    from_big_decimal,
    is_blank,
    java_divide_int,
    to_float32,
)
from core.model import DataField
from core.types import DataType

NUMERIC = frozenset({*INT_BITS, "FLOAT", "DOUBLE", "DECIMAL"})
ORDERED = NUMERIC | {
    "CHAR",
    "VARCHAR",
    "STRING",
    "BOOLEAN",
    "DATE",
    "TIME",
    "TIMESTAMP",
    "TIMESTAMP_LTZ",
}
REFUSED = {
    "theta_sketch": "a theta sketch (its binary union cannot be reproduced exactly)",
    "hll_sketch": "an HLL sketch (its binary union cannot be reproduced exactly)",
    "rbm32": "a serialized roaring bitmap",
    "rbm64": "a serialized roaring bitmap",
    "merge_map_with_keytime": "merge_map_with_keytime",
    "nested_partial_update": "nested_partial_update",
    "collect": "collect",
    "merge_map": "merge_map",
    "nested_update": "nested_update",
}


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


def _nonnull(acc: Any, value: Any) -> Any | None:
    """The shared first step of most aggregators: a null side yields the other side."""
    return acc if value is None else value


class Sum(FieldAggregator):
    name = "sum"

    def _op(self, a: Any, b: Any, sign: int) -> Any:
        root = self.type.root
        if root == "DECIMAL":
            assert self.type.precision is not None and self.type.scale is not None
            raw = decimal_add(a, b) if sign > 0 else decimal_sub(a, b)
            return decimal_result(raw, self.type.precision, self.type.scale, compact_path=True)
        if root in INT_BITS:
            return exact_int(a + sign * b, root, f"{a} {'+' if sign > 0 else '-'} {b}")
        if root == "FLOAT":
            return to_float32(a + sign * b)
        return a + sign * b

    def agg(self, acc: Any, value: Any) -> Any:
        if acc is None or value is None:
            return _nonnull(acc, value)
        return self._op(acc, value, 1)

    def retract(self, acc: Any, value: Any) -> Any:
        if acc is None or value is None:
            return acc if acc is not None else self._negate(value)
        return self._op(acc, value, -1)

    def _negate(self, value: Any) -> Any:
        if value is None:
            return None
        root = self.type.root
        if root == "DECIMAL":
            assert self.type.precision is not None and self.type.scale is not None
            return from_big_decimal(-value, self.type.precision, self.type.scale)
        if root in INT_BITS:
            return exact_int(-value, root, f"-{value}")
        return -value


class Product(FieldAggregator):
    name = "product"

    def agg(self, acc: Any, value: Any) -> Any:
        if acc is None or value is None:
            return _nonnull(acc, value)
        root = self.type.root
        if root == "DECIMAL":
            assert self.type.precision is not None and self.type.scale is not None
            return from_big_decimal(decimal_mul(acc, value), self.type.precision, self.type.scale)
        if root in INT_BITS:
            return exact_int(acc * value, root, f"{acc} * {value}")
        if root == "FLOAT":
            return to_float32(acc * value)
        return acc * value

    def retract(self, acc: Any, value: Any) -> Any:
        if acc is None or value is None:
            return acc
        root = self.type.root
        if root == "DECIMAL":
            assert self.type.precision is not None and self.type.scale is not None
            if value == 0:
                raise JavaArithmeticError("Division by zero")
            quotient = Decimal(acc) / Decimal(value)
            return from_big_decimal(quotient, self.type.precision, self.type.scale)
        if root in INT_BITS:
            return exact_int(java_divide_int(acc, value), root, f"{acc} / {value}")
        if root == "FLOAT":
            return to_float32(acc / value) if value else _java_float_div(acc, value)
        return acc / value if value else _java_float_div(acc, value)


def _java_float_div(a: float, b: float) -> float:
    """Java's ``a / 0.0``: NaN for 0 or NaN, otherwise an infinity with the signs' product."""
    if a == 0 or a != a:
        return math.nan
    return math.copysign(math.inf, a) * math.copysign(1.0, b)


class Max(FieldAggregator):
    name = "max"

    def agg(self, acc: Any, value: Any) -> Any:
        if acc is None or value is None:
            return _nonnull(acc, value)
        return value if acc < value else acc


class Min(FieldAggregator):
    name = "min"

    def agg(self, acc: Any, value: Any) -> Any:
        if acc is None or value is None:
            return _nonnull(acc, value)
        return value if acc > value else acc


class LastValue(FieldAggregator):
    name = "last_value"

    def agg(self, acc: Any, value: Any) -> Any:
        return value

    def retract(self, acc: Any, value: Any) -> Any:
        return None


class LastNonNullValue(FieldAggregator):
    name = "last_non_null_value"

    def agg(self, acc: Any, value: Any) -> Any:
        return acc if value is None else value

    def retract(self, acc: Any, value: Any) -> Any:
        return None if value is not None else acc


class PrimaryKey(FieldAggregator):
    name = "primary_key"

    def agg(self, acc: Any, value: Any) -> Any:
        return value

    def retract(self, acc: Any, value: Any) -> Any:
        return value


class FirstValue(FieldAggregator):
    name = "first_value"

    def __init__(self, field: DataField) -> None:
        super().__init__(field)
        self.initialized = False

    def agg(self, acc: Any, value: Any) -> Any:
        if not self.initialized:
            self.initialized = True
            return value
        return acc

    def reset(self) -> None:
        self.initialized = False


class FirstNonNullValue(FirstValue):
    name = "first_non_null_value"

    def agg(self, acc: Any, value: Any) -> Any:
        if not self.initialized and value is not None:
            self.initialized = True
            return value
        return acc


class BoolAnd(FieldAggregator):
    name = "bool_and"

    def agg(self, acc: Any, value: Any) -> Any:
        if acc is None or value is None:
            return _nonnull(acc, value)
        return bool(acc and value)


class BoolOr(FieldAggregator):
    name = "bool_or"

    def agg(self, acc: Any, value: Any) -> Any:
        if acc is None or value is None:
            return _nonnull(acc, value)
        return bool(acc or value)


class Listagg(FieldAggregator):
    name = "listagg"

    def __init__(self, field: DataField, delimiter: str, distinct: bool) -> None:
        super().__init__(field)
        self.delimiter = delimiter
        self.distinct = distinct

    def agg(self, acc: Any, value: Any) -> Any:
        if is_blank(value):
            return acc
        if is_blank(acc):
            return value
        if not self.distinct:
            return f"{acc}{self.delimiter}{value}"
        seen = set(acc.split(self.delimiter))
        parts = [acc]
        for token in value.split(self.delimiter):
            if is_blank(token) or token in seen:
                continue
            seen.add(token)
            parts.append(token)
        return self.delimiter.join(parts)


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


_SIMPLE: dict[str, type[FieldAggregator]] = {
    "sum": Sum,
    "product": Product,
    "max": Max,
    "min": Min,
    "last_value": LastValue,
    "last_non_null_value": LastNonNullValue,
    "primary_key": PrimaryKey,
    "first_value": FirstValue,
    "first_non_null_value": FirstNonNullValue,
    "first_not_null_value": FirstNonNullValue,  # the legacy name
    "bool_and": BoolAnd,
    "bool_or": BoolOr,
}
_TYPES: dict[str, frozenset[str]] = {
    "sum": NUMERIC,
    "product": NUMERIC,
    "max": ORDERED,
    "min": ORDERED,
    "bool_and": frozenset({"BOOLEAN"}),
    "bool_or": frozenset({"BOOLEAN"}),
    "listagg": frozenset({"VARCHAR", "STRING"}),
}


def _flag(options: Mapping[str, str], key: str) -> bool:
    return (options.get(key) or "false").strip().lower() == "true"


def refusal(name: str, field: DataField, options: Mapping[str, str]) -> str | None:
    """Why ``name`` on ``field`` cannot be compacted by paimon-cli (None: it can)."""
    key = f"fields.{field.name}.aggregate-function={name}"
    if name in REFUSED:
        return f"{key} ({REFUSED[name]} is not merged by paimon-cli)"
    if name not in _SIMPLE and name != "listagg":
        return f"{key} (not an aggregate function Paimon knows)"
    allowed = _TYPES.get(name)
    if allowed is not None and field.type.root not in allowed:
        return f"{key} (Paimon does not allow it on {field.type})"
    if name == "listagg" and field.type.root == "VARCHAR" and field.type.precision != 2147483647:
        return f"{key} (Paimon requires STRING for listagg)"
    if _flag(options, "aggregation.remove-record-on-delete") and _flag(
        options, f"fields.{field.name}.ignore-retract"
    ):
        return (
            f"aggregation.remove-record-on-delete with fields.{field.name}.ignore-retract "
            "(conflicting, Paimon refuses them together)"
        )
    return None


def create(name: str, field: DataField, options: Mapping[str, str]) -> FieldAggregator:
    """``FieldAggregatorFactory.create``: the aggregator, wrapped for ignore-retract."""
    problem = refusal(name, field, options)
    if problem is not None:
        raise MergeFunctionError(problem)
    agg: FieldAggregator
    if name == "listagg":
        delimiter = options.get(f"fields.{field.name}.list-agg-delimiter")
        agg = Listagg(
            field,
            "," if delimiter is None else delimiter,
            _flag(options, f"fields.{field.name}.distinct"),
        )
    else:
        agg = _SIMPLE[name](field)
    if _flag(options, f"fields.{field.name}.ignore-retract"):
        return IgnoreRetract(agg)
    return agg


__all__ = ["FieldAggregator", "MergeFunctionError", "create", "refusal"]
