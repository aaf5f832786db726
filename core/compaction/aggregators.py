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

from core.compaction import java_hash
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
from core.errors import MergeFunctionError
from core.format import binary_row
from core.format.model import DataField
from core.format.types import DataType

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
    "rbm32": "a roaring bitmap (Paimon's serialized union keeps container kinds paimon-cli "
    "cannot reproduce byte for byte)",
    "rbm64": "a roaring bitmap (Paimon's serialized union keeps container kinds paimon-cli "
    "cannot reproduce byte for byte)",
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


class Collect(FieldAggregator):
    """FieldCollectAgg: arrays concatenated; with ``distinct`` through a Java HashSet (its
    iteration order), or for rows and binaries a list that skips equal elements. Retraction
    removes one equal accumulator element per retracted element."""

    name = "collect"

    def __init__(self, field: DataField, distinct: bool) -> None:
        super().__init__(field)
        self.distinct = distinct
        self.element = field.type.children[0]
        self.equaliser = distinct and (
            self.element.root in java_hash.CONSTRUCTED or self.element.root in java_hash.BINARIES
        )

    def agg_reversed(self, acc: Any, value: Any) -> Any:
        return self.agg(acc, value)  # Paimon: the accumulator is already distinct

    def agg(self, acc: Any, value: Any) -> Any:
        if acc is None and value is None:
            return None
        if (acc is None or value is None) and not self.distinct:
            return value if acc is None else acc
        if self.equaliser:
            out = list(acc or ())
            keys = [java_hash.equality_key(e, self.element) for e in out]
            for e in value or ():
                k = java_hash.equality_key(e, self.element)
                if k not in keys:
                    keys.append(k)
                    out.append(e)
            return out
        if not self.distinct:
            return [*acc, *value]
        seen = java_hash.JavaHashMap()
        for e in (*(acc or ()), *(value or ())):
            seen.put(self._hash(e), self._key(e), e, replace=False)
        return list(seen.payloads())

    def _hash(self, e: Any) -> int:
        return java_hash.java_hash(e, self.element)

    def _key(self, e: Any) -> Any:
        return java_hash.equality_key(e, self.element)

    def _equal_key(self, e: Any) -> Any:
        """What Paimon's retraction compares: the equaliser's value equality when distinct;
        otherwise ``Object.equals``, which is identity for a ``byte[]`` (only nulls match)
        and not reproduced for nested values read from a file."""
        if self.equaliser or e is None:
            return self._key(e)
        if self.element.root in java_hash.BINARIES:
            return object()
        if self.element.root in java_hash.CONSTRUCTED:
            raise MergeFunctionError(
                f"fields.{self.field.name}: retracting from collect of {self.element.root} "
                "elements without distinct compares Java objects by identity in Paimon; "
                f"paimon-cli does not reproduce that (set 'fields.{self.field.name}.distinct' "
                "or 'ignore-retract')"
            )
        return self._key(e)

    def retract(self, acc: Any, value: Any) -> Any:
        if acc is None:
            return None
        if not value:
            return acc
        pending = [self._equal_key(e) for e in value]
        out = []
        for e in acc:
            k = self._equal_key(e)
            if k in pending:
                pending.remove(k)
            else:
                out.append(e)
        return out


class MergeMap(FieldAggregator):
    """FieldMergeMapAgg: later entries win, in a Java HashMap (its iteration order);
    retraction drops the retracted keys."""

    name = "merge_map"

    def __init__(self, field: DataField) -> None:
        super().__init__(field)
        self.key_type, self.value_type = field.type.children

    def _put_all(self, into: java_hash.JavaHashMap, entries: Any) -> None:
        for k, v in entries:
            into.put(
                java_hash.java_hash(k, self.key_type),
                java_hash.equality_key(k, self.key_type),
                (k, v),
            )

    def agg(self, acc: Any, value: Any) -> Any:
        if acc is None or value is None:
            return value if acc is None else acc
        merged = java_hash.JavaHashMap()
        self._put_all(merged, acc)
        self._put_all(merged, value)
        return list(merged.payloads())

    def retract(self, acc: Any, value: Any) -> Any:
        if acc is None:
            return None
        if not value:
            return acc
        gone = {java_hash.equality_key(k, self.key_type) for k, _ in value}
        kept = java_hash.JavaHashMap()
        self._put_all(
            kept, [(k, v) for k, v in acc if java_hash.equality_key(k, self.key_type) not in gone]
        )
        return list(kept.payloads())


class NestedUpdate(FieldAggregator):
    """FieldNestedUpdateAgg on ``ARRAY<ROW>``: without ``nested-key`` rows are appended (up
    to ``count-limit``); with it rows replace the row of the same key (``nested-sequence-field``
    decides between two of one key) in a Java ``HashMap<BinaryRow, ...>`` whose iteration
    order is the result's order. Null rows are dropped."""

    name = "nested_update"

    def __init__(
        self,
        field: DataField,
        key: list[str],
        null_strategy: str,
        sequence: list[str],
        count_limit: int,
    ) -> None:
        super().__init__(field)
        self.row_type = field.type.children[0]
        names = list(self.row_type.field_names)
        self.key = [names.index(n) for n in key]
        self.key_types = [self.row_type.children[i] for i in self.key]
        self.sequence = [names.index(n) for n in sequence]
        self.null_strategy = null_strategy
        self.count_limit = count_limit

    def _field(self, row: dict[str, Any], i: int) -> Any:
        return row.get(self.row_type.field_names[i])

    def _key_of(self, row: dict[str, Any]) -> tuple[int, bytes] | None:
        """The nested key as Paimon's projected BinaryRow (hash, bytes); None: skip the row."""
        values = [self._field(row, i) for i in self.key]
        if any(v is None for v in values):
            if self.null_strategy == "ignore":
                return None
            if self.null_strategy == "error":
                raise MergeFunctionError(
                    "Nested key contains null values. Primary key fields must not be null."
                )
        raw = binary_row.encode(values, self.key_types)[4:]  # without the arity prefix
        return java_hash.murmur_hash(raw), raw

    def _newer_or_same(self, new: dict[str, Any], old: dict[str, Any]) -> bool:
        for i in self.sequence:
            a, b = self._field(new, i), self._field(old, i)
            if a == b:
                continue
            if a is None or b is None:
                return b is None  # nulls first
            return bool(a > b)
        return True

    def _add_keyed(self, rows: Any, into: java_hash.JavaHashMap, limit_new: bool) -> None:
        for row in rows:
            if row is None:
                continue
            key = self._key_of(row)
            if key is None:
                continue
            existing = into.get(*key)
            if existing is not None:
                if not self.sequence or self._newer_or_same(row, existing):
                    into.put(*key, row)
            elif not limit_new or into.size < self.count_limit:
                into.put(*key, row)

    def agg(self, acc: Any, value: Any) -> Any:
        if value is None:
            return acc
        if not self.key:
            if acc is None:
                return [r for r in value if r is not None][: max(self.count_limit, 0)]
            if len(acc) >= self.count_limit:
                return acc
            remain = self.count_limit - len(acc)
            return [r for r in acc if r is not None] + [r for r in value if r is not None][:remain]
        rows = java_hash.JavaHashMap()
        if acc is not None:
            self._add_keyed(acc, rows, False)
        self._add_keyed(value, rows, True)
        return list(rows.payloads())

    def retract(self, acc: Any, value: Any) -> Any:
        if acc is None or value is None:
            return acc
        if not self.key:
            rows = [r for r in acc if r is not None]
            for r in value:
                if r is None:
                    continue
                gone = java_hash.equality_key(r, self.row_type)
                rows = [x for x in rows if java_hash.equality_key(x, self.row_type) != gone]
            return rows
        kept = java_hash.JavaHashMap()
        for row in acc:
            key = None if row is None else self._key_of(row)
            if key is not None:
                kept.put(*key, row)
        for row in value:
            key = None if row is None else self._key_of(row)
            if key is not None:
                kept.remove(*key)
        return list(kept.payloads())


class NestedPartialUpdate(NestedUpdate):
    """FieldNestedPartialUpdateAgg on ``ARRAY<ROW>``: the rows of one ``nested-key`` merged
    field by field (non-null values of later rows win), in a Java HashMap filled through
    ``computeIfAbsent``. No retraction."""

    name = "nested_partial_update"

    def __init__(self, field: DataField, key: list[str], null_strategy: str) -> None:
        super().__init__(field, key, null_strategy, [], 2147483647)

    def agg(self, acc: Any, value: Any) -> Any:
        if value is None:
            return acc
        names = self.row_type.field_names
        merged = java_hash.JavaHashMap()
        for row in (*(acc or ()), *value):
            if row is None:
                continue
            key = self._key_of(row)
            if key is None:
                continue
            target = merged.compute_if_absent(*key, lambda: dict.fromkeys(names))
            for n in names:
                if row.get(n) is not None:
                    target[n] = row[n]
        return list(merged.payloads())

    def retract(self, acc: Any, value: Any) -> Any:
        return FieldAggregator.retract(self, acc, value)


class MergeMapWithKeyTime(MergeMap):
    """FieldMergeMapWithKeyTimeAgg: ``MAP<K, ROW>``; an input entry replaces the entry of its
    key when its ``ts-field`` (a string, compared as Java strings) is later, a null value
    removes the key, a null time is skipped. No retraction."""

    name = "merge_map_with_keytime"

    def __init__(self, field: DataField, ts_field: str) -> None:
        super().__init__(field)
        self.ts_field = ts_field

    def agg(self, acc: Any, value: Any) -> Any:
        if acc is None:
            return value
        if value is None:
            return acc
        merged = java_hash.JavaHashMap()
        self._put_all(merged, acc)
        kt = self.key_type
        for k, row in value:
            h, key = java_hash.java_hash(k, kt), java_hash.equality_key(k, kt)
            if row is None:
                merged.remove(h, key)
                continue
            ts = row.get(self.ts_field)
            if ts is None:
                continue
            existing = merged.get(h, key)
            old = None if existing is None or existing[1] is None else existing[1]
            if (
                old is None
                or old.get(self.ts_field) is None
                or _utf16(ts) > _utf16(old[self.ts_field])
            ):
                merged.put(h, key, (k if existing is None else existing[0], row))
        return list(merged.payloads())

    def retract(self, acc: Any, value: Any) -> Any:
        return FieldAggregator.retract(self, acc, value)


def _utf16(text: str) -> bytes:
    """Java's ``String.compareTo`` order: UTF-16 code units."""
    return text.encode("utf-16-be")


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
_COMPLEX = frozenset(
    {
        "listagg",
        "collect",
        "merge_map",
        "nested_update",
        "nested_partial_update",
        "merge_map_with_keytime",
    }
)
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


def _hashable(t: DataType) -> bool:
    if t.root in ("TIMESTAMP", "TIMESTAMP_LTZ") and (t.precision or 6) > 6:
        return False
    return t.root in java_hash.HASHABLE


def _list(options: Mapping[str, str], key: str) -> list[str]:
    text = options.get(key)
    return [] if text is None else [p.strip() for p in text.split(",")]


NESTED_KEY_NULL_STRATEGIES = ("merge", "ignore", "error")


def _nested_refusal(key: str, field: DataField, options: Mapping[str, str]) -> str | None:
    t = field.type
    if t.root != "ARRAY" or t.children[0].root != "ROW":
        return f"{key} (Paimon: a nested table column must be ARRAY<ROW>, not {t})"
    row = t.children[0]
    prefix = f"fields.{field.name}."
    nested_key = _list(options, prefix + "nested-key")
    sequence = _list(options, prefix + "nested-sequence-field")
    if prefix + "nested-key-null-strategy" in options and not nested_key:
        return f"{key} (Paimon: nested-key-null-strategy requires fields.{field.name}.nested-key)"
    if sequence and not nested_key:
        return f"{key} (Paimon: nested-sequence-field requires fields.{field.name}.nested-key)"
    strategy = (options.get(prefix + "nested-key-null-strategy") or "merge").strip().lower()
    if strategy not in NESTED_KEY_NULL_STRATEGIES:
        return f"{key} (unknown nested-key-null-strategy '{strategy}')"
    limit = options.get(prefix + "count-limit")
    if limit is not None and not limit.strip().lstrip("-").isdigit():
        return f"{key} (count-limit '{limit}' is not an integer)"
    for name in (*nested_key, *sequence):
        if name not in row.field_names:
            return f"{key} (nested field {name} not found in {t})"
    for name in nested_key:
        sub = row.children[row.field_names.index(name)]
        if sub.root in java_hash.CONSTRUCTED or sub.root not in _KEY_ROOTS:
            return f"{key} (nested-key {name} of type {sub} is not hashed by paimon-cli)"
    for name in sequence:
        sub = row.children[row.field_names.index(name)]
        if sub.root not in ORDERED:
            return (
                f"{key} (nested-sequence-field {name} of type {sub} is not ordered by paimon-cli)"
            )
    return None


_KEY_ROOTS = java_hash.HASHABLE | java_hash.BINARIES


def _ts_field(field: DataField, options: Mapping[str, str]) -> str:
    """``fields.<f>.ts-field`` of merge_map_with_keytime; by default the row's last field."""
    row = field.type.children[1]
    name = options.get(f"fields.{field.name}.ts-field")
    return row.field_names[-1] if name is None else name


def _keytime_refusal(key: str, field: DataField, options: Mapping[str, str]) -> str | None:
    t = field.type
    if t.root != "MAP":
        return f"{key} (Paimon: merge_map_with_keytime needs a MAP column, not {t})"
    k, row = t.children
    if row.root != "ROW" or len(row.children) < 2:
        return f"{key} (Paimon: the MAP value must be a ROW of at least 2 fields, not {row})"
    if not (_hashable(k) or k.root in java_hash.BINARIES):
        return f"{key} (map keys of type {k} are not hashed by paimon-cli)"
    ts = _ts_field(field, options)
    if ts not in row.field_names:
        return f"{key} (Paimon: timestamp field '{ts}' not found in {row})"
    ts_type = row.children[row.field_names.index(ts)]
    if ts_type.root not in ("CHAR", "VARCHAR", "STRING"):
        return f"{key} (ts-field {ts} of type {ts_type}: Paimon compares it as a string)"
    return None


def refusal(name: str, field: DataField, options: Mapping[str, str]) -> str | None:
    """Why ``name`` on ``field`` cannot be compacted by paimon-cli (None: it can)."""
    key = f"fields.{field.name}.aggregate-function={name}"
    if name in REFUSED:
        return f"{key} ({REFUSED[name]} is not merged by paimon-cli)"
    if name not in _SIMPLE and name not in _COMPLEX:
        return f"{key} (not an aggregate function Paimon knows)"
    allowed = _TYPES.get(name)
    if allowed is not None and field.type.root not in allowed:
        return f"{key} (Paimon does not allow it on {field.type})"
    if name == "listagg" and field.type.root == "VARCHAR" and field.type.precision != 2147483647:
        return f"{key} (Paimon requires STRING for listagg)"
    if name == "collect" and field.type.root != "ARRAY":
        return f"{key} (Paimon: collect needs an ARRAY column, not {field.type})"
    if name == "collect" and _flag(options, f"fields.{field.name}.distinct"):
        element = field.type.children[0]
        if not (
            _hashable(element)
            or element.root in java_hash.BINARIES
            or element.root in java_hash.CONSTRUCTED
        ):
            return f"{key} (distinct {element} elements are not hashed by paimon-cli)"
    if name == "merge_map":
        if field.type.root != "MAP":
            return f"{key} (Paimon: merge_map needs a MAP column, not {field.type})"
        k = field.type.children[0]
        if not (_hashable(k) or k.root in java_hash.BINARIES):
            return f"{key} (map keys of type {k} are not hashed by paimon-cli)"
    if name in ("nested_update", "nested_partial_update"):
        problem = _nested_refusal(key, field, options)
        if problem is not None:
            return problem
    if name == "nested_partial_update" and not _list(options, f"fields.{field.name}.nested-key"):
        return f"{key} (Paimon requires fields.{field.name}.nested-key)"
    if name == "merge_map_with_keytime":
        problem = _keytime_refusal(key, field, options)
        if problem is not None:
            return problem
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
    prefix = f"fields.{field.name}."
    if name == "collect":
        agg = Collect(field, _flag(options, prefix + "distinct"))
    elif name == "merge_map":
        agg = MergeMap(field)
    elif name == "nested_update":
        limit = options.get(prefix + "count-limit")
        agg = NestedUpdate(
            field,
            _list(options, prefix + "nested-key"),
            (options.get(prefix + "nested-key-null-strategy") or "merge").strip().lower(),
            _list(options, prefix + "nested-sequence-field"),
            2147483647 if limit is None else int(limit.strip()),
        )
    elif name == "nested_partial_update":
        agg = NestedPartialUpdate(
            field,
            _list(options, prefix + "nested-key"),
            (options.get(prefix + "nested-key-null-strategy") or "merge").strip().lower(),
        )
    elif name == "merge_map_with_keytime":
        agg = MergeMapWithKeyTime(field, _ts_field(field, options))
    elif name == "listagg":
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
