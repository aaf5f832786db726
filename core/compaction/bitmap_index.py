"""The ``bitmap`` file index of one column (``BitmapFileIndex``), byte for byte.

Per distinct value the rows holding it, as a RoaringBitmap (``core.format.roaring``), and
one for nulls. The values live in a Java ``HashMap`` keyed by the boxed value, filled in row
order: its iteration order (from the values' Java hash codes) is the order of the bitmap
bodies and, in version 1, of the meta. A value (or null) on a single row is stored as
``-1 - row`` instead of a bitmap. Version 2 (the default) writes the meta as blocks of the
values in sorted order, each up to ``index-block-size`` (16 kb), with each bitmap's length.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from typing import Any

from core.compaction.java_hash import JavaHashMap, double_bits, float_bits, murmur_hash
from core.format import roaring
from core.format.model import DataField
from core.format.options import parse_memory_size
from core.format.types import CHARACTER_STRINGS, DATETIMES, FLOATS, INTEGERS

VERSION_1 = 1
VERSION_2 = 2
BITMAP_TYPES = CHARACTER_STRINGS | {"BOOLEAN"} | INTEGERS | FLOATS | DATETIMES


class _Kind:
    """How values of one Paimon type are boxed in Java: hash code, equality, order, bytes."""

    def __init__(self, field: DataField) -> None:
        root = field.type.root
        self.root = root
        self.kind = {
            "CHAR": "string",
            "VARCHAR": "string",
            "STRING": "string",
            "BOOLEAN": "boolean",
            "TINYINT": "byte",
            "SMALLINT": "short",
            "FLOAT": "float",
            "DOUBLE": "double",
            "BIGINT": "long",
            "TIMESTAMP": "long",
            "TIMESTAMP_LTZ": "long",
        }.get(root, "int")

    def hash(self, v: Any) -> int:
        """``hashCode`` of the boxed value."""
        k = self.kind
        if k == "string":
            return murmur_hash(v)  # BinaryString: MurmurHash of its UTF-8 bytes
        if k == "boolean":
            return 1231 if v else 1237
        if k == "long" or k == "double":
            u = (double_bits(v) if k == "double" else v) & 0xFFFFFFFFFFFFFFFF
            return _i32(u ^ (u >> 32))
        if k == "float":
            return float_bits(v)
        return int(v)

    def key(self, v: Any) -> Any:
        """What ``equals`` compares (floats by their bits, as Float.equals does)."""
        if self.kind == "float":
            return float_bits(v)
        if self.kind == "double":
            return double_bits(v)
        return v

    def order(self, v: Any) -> Any:
        """``compareTo`` order: bytes unsigned, numbers (NaN last, -0.0 before 0.0)."""
        if self.kind in ("float", "double"):
            bits = float_bits(v) if self.kind == "float" else double_bits(v)
            return (v != v, v, bits)
        return v

    def size(self, v: Any) -> int:
        k = self.kind
        if k == "string":
            return 4 + len(v)
        return {"boolean": 1, "byte": 1, "short": 2, "int": 4, "float": 4}.get(k, 8)

    def write(self, v: Any) -> bytes:
        k = self.kind
        if k == "string":
            return struct.pack(">i", len(v)) + bytes(v)
        if k == "boolean":
            return b"\x01" if v else b"\x00"
        fmt = {
            "byte": ">b",
            "short": ">h",
            "int": ">i",
            "long": ">q",
            "float": ">f",
            "double": ">d",
        }
        return struct.pack(fmt[k], v)


_NULL = object()  # the key of the null bitmap among the lengths


def _i32(x: int) -> int:
    x &= 0xFFFFFFFF
    return x - (1 << 32) if x >> 31 else x


def column_values(column: Any, field: DataField) -> list[Any]:
    """The values Paimon's bitmap writer sees: UTF-8 bytes of strings, days of dates,
    milliseconds of times, timestamps as milliseconds up to precision 3, else microseconds."""
    import pyarrow as pa
    import pyarrow.compute as pc

    root = field.type.root
    if root in ("TIMESTAMP", "TIMESTAMP_LTZ"):
        per_second = {"s": 1, "ms": 1_000, "us": 1_000_000, "ns": 1_000_000_000}
        unit = per_second[column.type.unit]
        wanted = 1_000 if (field.type.precision or 6) <= 3 else 1_000_000
        return [
            None if v is None else v * wanted // unit for v in column.cast(pa.int64()).to_pylist()
        ]
    if root == "TIME":
        column = pc.cast(column, pa.time32("ms"), safe=False).cast(pa.int32())
    elif root == "DATE":
        column = pc.cast(column, pa.date32()).cast(pa.int32())
    values: list[Any] = column.to_pylist()
    if root in ("CHAR", "VARCHAR", "STRING"):
        return [None if v is None else v.encode("utf-8") for v in values]
    return values


def serialized(values: Sequence[Any], field: DataField, options: dict[str, str]) -> bytes:
    """``BitmapFileIndex.Writer.serializedBytes`` of one column's values (row order)."""
    kind = _Kind(field)
    version = int(options.get("version", VERSION_2))
    rows = JavaHashMap()
    nulls: list[int] = []
    for row, v in enumerate(values):
        if v is None:
            nulls.append(row)
        else:
            slot = rows.compute_if_absent(kind.hash(v), kind.key(v), lambda v=v: (v, []))
            slot[1].append(row)
    null_bytes = roaring.serialize(nulls)
    offsets: list[tuple[Any, int]] = []  # bitmapOffsets, in HashMap order
    bodies: list[bytes] = []
    offset = 0 if len(nulls) <= 1 else len(null_bytes)
    for value, value_rows in rows.payloads():
        if len(value_rows) == 1:
            offsets.append((value, -1 - value_rows[0]))
        else:
            body = roaring.serialize(value_rows)
            bodies.append(body)
            offsets.append((value, offset))
            offset += len(body)
    null_offset = -1 - nulls[0] if len(nulls) == 1 else 0
    out = bytearray(struct.pack(">b", version))
    out += struct.pack(">ii?", len(values), len(offsets), bool(nulls))
    if version == VERSION_1:
        if nulls:
            out += struct.pack(">i", null_offset)
        for value, at in offsets:
            out += kind.write(value) + struct.pack(">i", at)
    elif version == VERSION_2:
        if nulls:
            out += struct.pack(">ii", null_offset, len(null_bytes))
        block_size = parse_memory_size(options.get("index-block-size", "16kb"))
        out += _v2_blocks(kind, offsets, null_offset, offset, block_size)
    else:
        raise ValueError(f"invalid bitmap index version: {version}")
    if len(nulls) > 1:
        out += null_bytes
    for body in bodies:
        out += body
    return bytes(out)


def _v2_blocks(
    kind: _Kind, offsets: list[tuple[Any, int]], null_offset: int, final: int, limit: int
) -> bytes:
    """BitmapFileIndexMetaV2: each bitmap's length, then the values sorted into blocks."""
    lengths: dict[Any, int] = {}
    last: Any = _NULL  # the null bitmap comes first
    last_offset = null_offset
    for value, at in offsets:
        if at >= 0:
            if last_offset >= 0:
                lengths[last] = at - last_offset
            last, last_offset = kind.key(value), at
    lengths[last] = final - last_offset
    entries = sorted(offsets, key=lambda e: kind.order(e[0]))
    blocks: list[tuple[int, int, list[tuple[Any, int, int]]]] = []  # (offset, size, entries)
    for value, at in entries:
        entry = (value, at, lengths.get(kind.key(value), -1))
        size = 8 + kind.size(value)
        if not blocks or blocks[-1][1] + size > limit:
            start = blocks[-1][0] + blocks[-1][1] if blocks else 0
            blocks.append((start, 4, []))
        off, used, items = blocks[-1]
        blocks[-1] = (off, used + size, [*items, entry])
    out = bytearray(struct.pack(">i", len(blocks)))
    for off, _used, items in blocks:
        out += kind.write(items[0][0]) + struct.pack(">i", off)
    out += struct.pack(">i", sum(used for _, used, _ in blocks))
    for _off, _used, items in blocks:
        out += struct.pack(">i", len(items))
        for value, at, length in items:
            out += kind.write(value) + struct.pack(">ii", at, length)
    return bytes(out)


__all__ = ["BITMAP_TYPES", "column_values", "serialized"]
