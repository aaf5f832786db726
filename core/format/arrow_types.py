"""Paimon types as the Arrow types pypaimon and Paimon's Arrow bridge use for them (the
logical type; ``core.format.physical`` says how each is written per file format)."""

from __future__ import annotations

from typing import Any

from core.errors import InvalidOptionError
from core.format.types import DataType


def arrow_type(t: DataType) -> Any:
    """The pyarrow type pypaimon and Paimon's Arrow bridge use for a Paimon type."""
    import pyarrow as pa

    root = t.root
    simple = {
        "BOOLEAN": pa.bool_(),
        "TINYINT": pa.int8(),
        "SMALLINT": pa.int16(),
        "INT": pa.int32(),
        "BIGINT": pa.int64(),
        "FLOAT": pa.float32(),
        "DOUBLE": pa.float64(),
        "CHAR": pa.string(),
        "VARCHAR": pa.string(),
        "STRING": pa.string(),
        "BINARY": pa.binary(),
        "VARBINARY": pa.binary(),
        "BYTES": pa.binary(),
        "DATE": pa.date32(),
        "TIME": pa.time32("ms"),
    }
    if root in simple:
        return simple[root]
    if root == "DECIMAL":
        return pa.decimal128(t.precision or 10, t.scale or 0)
    if root in ("TIMESTAMP", "TIMESTAMP_LTZ"):
        p = 6 if t.precision is None else t.precision
        unit = "s" if p == 0 else "ms" if p <= 3 else "us" if p <= 6 else "ns"
        return pa.timestamp(unit, tz="UTC" if root == "TIMESTAMP_LTZ" else None)
    if root == "ARRAY":
        (element,) = t.children
        return pa.list_(pa.field("item", arrow_type(element), nullable=element.nullable))
    if root == "MAP":
        key, value = t.children
        return pa.map_(
            pa.field("key", arrow_type(key), nullable=False),
            pa.field("value", arrow_type(value), nullable=value.nullable),
        )
    if root == "MULTISET":  # a map of element to count, as Paimon's writers store it
        (element,) = t.children
        return pa.map_(
            pa.field("key", arrow_type(element), nullable=False),
            pa.field("value", pa.int32(), nullable=False),
        )
    if root == "ROW":
        return pa.struct(
            [
                pa.field(name, arrow_type(child), nullable=child.nullable)
                for name, child in zip(t.field_names, t.children, strict=True)
            ]
        )
    raise InvalidOptionError(f"paimon-cli cannot rewrite columns of type {t}")
