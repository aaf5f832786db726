"""Paimon's field aggregators (``fields.<f>.aggregate-function``), on Python values.

This module is the factory (``FieldAggregatorFactory``): which function a field's options
name, whether Paimon allows it on the field's type, and the aggregator. The functions live
in ``scalar_aggregators`` and ``collection_aggregators`` (their contract in
``field_aggregator``). Functions whose result paimon-cli cannot reproduce byte for byte
(sketches, bitmaps) are refused before anything is written (``refusal``)."""

from __future__ import annotations

from collections.abc import Mapping

from core.compaction import java_hash
from core.compaction.collection_aggregators import (
    Collect,
    MergeMap,
    MergeMapWithKeyTime,
    NestedPartialUpdate,
    NestedUpdate,
)
from core.compaction.field_aggregator import FieldAggregator, IgnoreRetract
from core.compaction.java_semantics import INT_BITS
from core.compaction.scalar_aggregators import (
    BoolAnd,
    BoolOr,
    FirstNonNullValue,
    FirstValue,
    LastNonNullValue,
    LastValue,
    Listagg,
    Max,
    Min,
    PrimaryKey,
    Product,
    Sum,
)
from core.errors import MergeFunctionError
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
