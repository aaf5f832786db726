"""File indexes of the data files a compaction writes, byte for byte as Paimon writes them.

A table with ``file-index.<type>.columns`` gets, for every new data file (not changelog
files), one index container over the file's rows (``DataFileIndexWriter``): embedded in the
manifest entry (``_EMBEDDED_FILE_INDEX``) when it is at most
``file-index.in-manifest-threshold`` (500 bytes), else written beside the data file as
``<data file>.index`` and listed in ``_EXTRA_FILES``. Readers skip files by it, so a wrong
index loses rows; only what is reproduced exactly is written, everything else is refused
before anything is read.

* Container (``FileIndexFormat``, version 1): magic, version, head length, then per column
  (in Java ``HashMap`` order) its name and per index type the body offset and length
  (``DataOutput.writeUTF`` strings, big-endian ints), a redundant length 0, then the bodies.
* ``bloom-filter`` (``BloomFilterFileIndex``, options ``items`` (1,000,000) and ``fpp``
  (0.1)): the number of hash functions (big-endian int), then the bit set of
  ``BloomFilter64`` fed with ``FastHash``: xxHash64 of the bytes of strings and binaries,
  Thomas Wang's 64-bit hash of integral values (float and double by their bits, dates as
  days, times as milliseconds, timestamps as milliseconds up to precision 3, else
  microseconds). Nulls are not added.
* ``bitmap`` (``BitmapFileIndex``): ``core.compaction.bitmap_index``.

BSI and range-bitmap indexes and map-key (``col[key]``) columns are refused
(docs/DECISIONS.md D12.4).
"""

from __future__ import annotations

import math
import struct
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from core.compaction import bitmap_index
from core.compaction.java_hash import JavaHashMap, double_bits, float_bits
from core.format.model import DataField
from core.format.options import parse_memory_size
from core.format.types import BINARY_STRINGS, CHARACTER_STRINGS, DATETIMES, FLOATS, INTEGERS

MAGIC = 1493475289347502
VERSION = 1
PREFIX = "file-index."
COLUMNS_SUFFIX = ".columns"
INDEX_SUFFIX = ".index"  # DataFilePathFactory.INDEX_PATH_SUFFIX
BLOOM_FILTER = "bloom-filter"
BITMAP = "bitmap"
SUPPORTED = (BLOOM_FILTER, BITMAP)
DEFAULT_ITEMS = 1_000_000
DEFAULT_FPP = 0.1
_M64 = (1 << 64) - 1

# Paimon types FastHash hashes (others throw in Paimon's writer).
_BLOOM_TYPES = CHARACTER_STRINGS | BINARY_STRINGS | INTEGERS | FLOATS | DATETIMES


# -- hashing -------------------------------------------------------------------------------------
_P1 = 0x9E3779B185EBCA87
_P2 = 0xC2B2AE3D27D4EB4F
_P3 = 0x165667B19E3779F9
_P4 = 0x85EBCA77C2B2AE63
_P5 = 0x27D4EB2F165667C5


def _rotl(x: int, r: int) -> int:
    return ((x << r) | (x >> (64 - r))) & _M64


def _round(acc: int, lane: int) -> int:
    acc = (acc + lane * _P2) & _M64
    return (_rotl(acc, 31) * _P1) & _M64


def _merge_round(acc: int, val: int) -> int:
    acc ^= _round(0, val)
    return (acc * _P1 + _P4) & _M64


def xxh64(data: bytes, seed: int = 0) -> int:
    """XXH64 of ``data`` (what ``LongHashFunction.xx()`` returns), as a Java long."""
    n = len(data)
    p = 0
    if n >= 32:
        v1 = (seed + _P1 + _P2) & _M64
        v2 = (seed + _P2) & _M64
        v3 = seed & _M64
        v4 = (seed - _P1) & _M64
        while p <= n - 32:
            a, b, c, d = struct.unpack_from("<4Q", data, p)
            v1, v2, v3, v4 = _round(v1, a), _round(v2, b), _round(v3, c), _round(v4, d)
            p += 32
        h = (_rotl(v1, 1) + _rotl(v2, 7) + _rotl(v3, 12) + _rotl(v4, 18)) & _M64
        for v in (v1, v2, v3, v4):
            h = _merge_round(h, v)
    else:
        h = (seed + _P5) & _M64
    h = (h + n) & _M64
    while p + 8 <= n:
        (lane,) = struct.unpack_from("<Q", data, p)
        h ^= _round(0, lane)
        h = (_rotl(h, 27) * _P1 + _P4) & _M64
        p += 8
    if p + 4 <= n:
        (lane,) = struct.unpack_from("<I", data, p)
        h ^= (lane * _P1) & _M64
        h = (_rotl(h, 23) * _P2 + _P3) & _M64
        p += 4
    while p < n:
        h ^= (data[p] * _P5) & _M64
        h = (_rotl(h, 11) * _P1) & _M64
        p += 1
    h ^= h >> 33
    h = (h * _P2) & _M64
    h ^= h >> 29
    h = (h * _P3) & _M64
    h ^= h >> 32
    return _signed64(h)


def _signed64(x: int) -> int:
    x &= _M64
    return x - (1 << 64) if x >> 63 else x


def long_hash(key: int) -> int:
    """``FastHash.getLongHash``: Thomas Wang's 64-bit integer hash, Java long arithmetic."""
    key = _signed64(~key + (key << 21))
    key = _signed64(key ^ (key >> 24))
    key = _signed64(key + (key << 3) + (key << 8))
    key = _signed64(key ^ (key >> 14))
    key = _signed64(key + (key << 2) + (key << 4))
    key = _signed64(key ^ (key >> 28))
    return _signed64(key + (key << 31))


def column_hashes(column: Any, field: DataField) -> list[int]:
    """``FastHash`` of every non-null value of an Arrow column of ``field``'s type."""
    import pyarrow as pa
    import pyarrow.compute as pc

    root = field.type.root
    if root in ("TIMESTAMP", "TIMESTAMP_LTZ"):
        return _timestamp_hashes(column, field)
    if root == "TIME":
        column = pc.cast(column, pa.time32("ms"), safe=False).cast(pa.int32())
    elif root == "DATE":
        column = pc.cast(column, pa.date32()).cast(pa.int32())
    values = [v for v in column.to_pylist() if v is not None]
    if root in ("CHAR", "VARCHAR", "STRING"):
        return [xxh64(v.encode("utf-8")) for v in values]
    if root in ("BINARY", "VARBINARY", "BYTES"):
        return [xxh64(bytes(v)) for v in values]
    if root == "FLOAT":
        return [long_hash(float_bits(v)) for v in values]
    if root == "DOUBLE":
        return [long_hash(double_bits(v)) for v in values]
    return [long_hash(int(v)) for v in values]


def _timestamp_hashes(column: Any, field: DataField) -> list[int]:
    """Milliseconds up to precision 3, else microseconds (``Timestamp.toMicros``), both
    floored as Paimon's Timestamp (millisecond + non-negative nano of millisecond) has it."""
    import pyarrow as pa

    per_second = {"s": 1, "ms": 1_000, "us": 1_000_000, "ns": 1_000_000_000}[column.type.unit]
    wanted = 1_000 if (field.type.precision or 6) <= 3 else 1_000_000
    raw = column.cast(pa.int64()).to_pylist()
    return [long_hash(v * wanted // per_second) for v in raw if v is not None]


# -- bloom filter --------------------------------------------------------------------------------
class BloomFilter64:
    """``BloomFilter64``: the bit count and hash count from the expected items and fpp."""

    def __init__(self, items: int, fpp: float) -> None:
        nb = int(-items * math.log(fpp) / (math.log(2) * math.log(2)))
        self.num_bits = nb + (8 - nb % 8)
        self.num_hashes = max(1, math.floor(self.num_bits / items * math.log(2) + 0.5))
        self.bits = bytearray(self.num_bits // 8)

    def add_hash(self, hash64: int) -> None:
        h1 = _i32(hash64)
        h2 = _i32(hash64 >> 32)
        for i in range(1, self.num_hashes + 1):
            combined = _i32(h1 + i * h2)
            if combined < 0:
                combined = ~combined
            pos = combined % self.num_bits
            self.bits[pos >> 3] |= 1 << (pos & 7)

    def serialized(self) -> bytes:
        return struct.pack(">i", self.num_hashes) + bytes(self.bits)


def _i32(x: int) -> int:
    x &= 0xFFFFFFFF
    return x - (1 << 32) if x >> 31 else x


# -- options and the container -------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class IndexColumn:
    """One index of one column: its type and options (``file-index.<type>.<column>.*``)."""

    column: str
    index_type: str
    options: tuple[tuple[str, str], ...] = ()

    def option(self, key: str) -> str | None:
        return dict(self.options).get(key)


@dataclass(frozen=True, slots=True)
class FileIndexSpec:
    """The file indexes of a table's data files (small and picklable)."""

    indexes: tuple[IndexColumn, ...]
    fields: tuple[DataField, ...]
    in_manifest_threshold: int

    @classmethod
    def of(cls, options: Mapping[str, str], fields: Sequence[DataField]) -> FileIndexSpec | None:
        """``FileIndexOptions`` of the table's options; None when it declares no index."""
        declared: dict[tuple[str, str], dict[str, str]] = {}
        for key, value in options.items():
            if key.startswith(PREFIX) and key.endswith(COLUMNS_SUFFIX):
                index_type = key[len(PREFIX) : -len(COLUMNS_SUFFIX)]
                for name in value.split(","):
                    declared.setdefault((name.strip(), index_type), {})
        if not declared:
            return None
        for key, value in options.items():
            parts = key[len(PREFIX) :].split(".") if key.startswith(PREFIX) else []
            if len(parts) == 3 and not key.endswith(COLUMNS_SUFFIX):
                index_type, column, option = parts
                if (column, index_type) in declared:
                    declared[(column, index_type)][option] = value
        threshold = options.get("file-index.in-manifest-threshold")
        return cls(
            tuple(
                IndexColumn(c, t, tuple(sorted(o.items())))
                for (c, t), o in declared.items()  # declaration order: it decides Java's order
            ),
            tuple(fields),
            parse_memory_size(threshold) if threshold else 500,
        )

    def refusals(self) -> list[str]:
        """The indexes paimon-cli cannot write as Paimon does (each names its option)."""
        by_name = {f.name: f for f in self.fields}
        out = []
        for ix in self.indexes:
            key = f"{PREFIX}{ix.index_type}{COLUMNS_SUFFIX}"
            field = by_name.get(ix.column)
            if ix.index_type not in SUPPORTED:
                out.append(f"{key} (the {ix.index_type} index is not written by paimon-cli)")
            elif field is None:
                out.append(f"{key} names {ix.column!r}, not a column (map keys are not indexed)")
            elif ix.index_type == BLOOM_FILTER and field.type.root not in _BLOOM_TYPES:
                out.append(f"{key} on {ix.column} of type {field.type} (Paimon cannot hash it)")
            elif ix.index_type == BITMAP and field.type.root not in bitmap_index.BITMAP_TYPES:
                out.append(f"{key} on {ix.column} of type {field.type} (Paimon cannot index it)")
        return out

    def container(self, data: Any) -> bytes:
        """The index container of one data file's rows (``data``: an Arrow table)."""
        by_name = {f.name: f for f in self.fields}
        bodies: dict[tuple[str, str], bytes] = {}
        for ix in self.indexes:
            field = by_name[ix.column]
            if ix.index_type == BITMAP:
                values = bitmap_index.column_values(data.column(ix.column), field)
                bodies[(ix.column, BITMAP)] = bitmap_index.serialized(
                    values, field, dict(ix.options)
                )
                continue
            items = int(ix.option("items") or DEFAULT_ITEMS)
            fpp = float(ix.option("fpp") or DEFAULT_FPP)
            bloom = BloomFilter64(items, fpp)
            for h in column_hashes(data.column(ix.column), field):
                bloom.add_hash(h)
            bodies[(ix.column, ix.index_type)] = bloom.serialized()
        return _container(bodies)


def _string_hash(text: str) -> int:
    """``String.hashCode`` (UTF-16 code units)."""
    h = 0
    units = text.encode("utf-16-be")
    for i in range(0, len(units), 2):
        h = (31 * h + int.from_bytes(units[i : i + 2], "big")) & 0xFFFFFFFF
    return _i32(h)


def _java_order(names: Sequence[str], hashes: Sequence[int], *, at_head: bool) -> list[str]:
    """Iteration order of a Java ``HashMap`` filled with ``names`` (of ``hashes``) in that
    order, by ``computeIfAbsent`` (``at_head``: a new entry is linked first in its bin) or
    ``put`` (last)."""
    m = JavaHashMap()
    for name, h in zip(names, hashes, strict=True):
        if at_head:
            m.compute_if_absent(h, name, lambda name=name: name)
        else:
            m.put(h, name, name)
    return list(m.payloads())


def _column_order(columns: Sequence[str]) -> list[str]:
    """The order DataFileIndexWriter serializes columns in: FileIndexOptions keeps them in a
    ``HashMap<Column, ...>`` (hash ``Objects.hash(name, null)``, by computeIfAbsent), the
    writer puts them into a ``HashMap<String, ...>`` in that order, and the container map is
    filled from that one by computeIfAbsent."""
    by_column = _java_order(
        columns, [_i32(31 * (31 + _string_hash(c))) for c in columns], at_head=True
    )
    by_name = _java_order(by_column, [_string_hash(c) for c in by_column], at_head=False)
    return _java_order(by_name, [_string_hash(c) for c in by_name], at_head=True)


def _write_utf(text: str) -> bytes:
    """``DataOutput.writeUTF``: modified UTF-8 with an unsigned 16-bit length."""
    out = bytearray()
    for ch in text:
        c = ord(ch)
        if 0 < c <= 0x7F:
            out.append(c)
        elif c <= 0x7FF:
            out += bytes((0xC0 | (c >> 6), 0x80 | (c & 0x3F)))
        elif c <= 0xFFFF:
            out += bytes((0xE0 | (c >> 12), 0x80 | ((c >> 6) & 0x3F), 0x80 | (c & 0x3F)))
        else:  # a supplementary character: its two surrogates, three bytes each
            c -= 0x10000
            for s in (0xD800 | (c >> 10), 0xDC00 | (c & 0x3FF)):
                out += bytes((0xE0 | (s >> 12), 0x80 | ((s >> 6) & 0x3F), 0x80 | (s & 0x3F)))
    return struct.pack(">H", len(out)) + bytes(out)


def _container(bodies: Mapping[tuple[str, str], bytes]) -> bytes:
    """``FileIndexFormat.Writer.writeColumnIndexes`` over column -> index type -> bytes,
    both levels in Java HashMap order (DataFileIndexWriter keeps them in HashMaps)."""
    columns = _column_order(list(dict.fromkeys(c for c, _ in bodies)))
    layout: list[tuple[str, list[tuple[str, bytes]]]] = []
    for column in columns:
        names = [t for c, t in bodies if c == column]
        types = _java_order(names, [_string_hash(t) for t in names], at_head=False)
        layout.append((column, [(t, bodies[(column, t)]) for t in types]))
    text = b"".join(_write_utf(c) + b"".join(_write_utf(t) for t, _ in ts) for c, ts in layout)
    entries = sum(len(ts) for _, ts in layout)
    head_length = 8 + 4 + 4 + 4 + entries * 8 + len(layout) * 4 + 4 + len(text)
    head = bytearray(struct.pack(">qii", MAGIC, VERSION, head_length))
    head += struct.pack(">i", len(layout))
    body = bytearray()
    for column, ts in layout:
        head += _write_utf(column) + struct.pack(">i", len(ts))
        for index_type, data in ts:
            head += _write_utf(index_type) + struct.pack(">ii", head_length + len(body), len(data))
            body += data
    head += struct.pack(">i", 0)  # redundant length
    return bytes(head + body)


__all__ = [
    "INDEX_SUFFIX",
    "BloomFilter64",
    "FileIndexSpec",
    "IndexColumn",
    "column_hashes",
    "long_hash",
    "xxh64",
]
