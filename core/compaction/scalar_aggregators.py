"""Paimon's aggregate functions on single values: ``sum``, ``product``, ``max``, ``min``,
``last_value``, ``last_non_null_value``, ``primary_key``, ``first_value``,
``first_non_null_value``, ``bool_and``, ``bool_or`` and ``listagg``, each following its
``Field*Agg`` counterpart (Java arithmetic: overflow, decimal precision, float division)."""

from __future__ import annotations

import math
from decimal import Decimal
from typing import Any

from core.compaction.field_aggregator import FieldAggregator
from core.compaction.java_semantics import (
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
from core.format.model import DataField


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


__all__ = [
    "BoolAnd",
    "BoolOr",
    "FirstNonNullValue",
    "FirstValue",
    "LastNonNullValue",
    "LastValue",
    "Listagg",
    "Max",
    "Min",
    "PrimaryKey",
    "Product",
    "Sum",
]
