"""Java ``hashCode``/``equals`` of the values Paimon's aggregators keep in hash collections,
and the iteration order of ``java.util.HashMap``/``HashSet`` built from them.

Distinct ``collect``, ``merge_map`` and keyed ``nested_update`` put values into a HashSet or
HashMap and write them out in its iteration order. That order is deterministic: bucket
``spread(hashCode) & (capacity - 1)`` in ascending order, entries of one bucket in insertion
order (resizes split buckets keeping relative order), capacity a power of two that grows when
size exceeds 3/4 of it or a bucket of a table smaller than 64 reaches 9 entries. A bucket
that would become a red-black tree (9 entries, capacity >= 64) orders new entries differently;
that case is refused (``HashOrderError``) rather than guessed.

Hash codes are those of Paimon's internal objects: ``Integer``/``Long``/... boxes,
``BinaryString`` (Murmur3 of the UTF-8 bytes, seed 42), ``Decimal`` (``BigDecimal``),
``Timestamp``, ``BinaryRow`` (Murmur3 of its bytes by words), ``ByteArrayKey``.
"""

from __future__ import annotations

import datetime as dt
import struct
from collections.abc import Iterator
from decimal import Decimal
from typing import Any

from core.errors import MergeFunctionError
from core.format.types import DataType

_MASK = 0xFFFFFFFF
_EPOCH = dt.datetime(1970, 1, 1)
_EPOCH_UTC = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)
_EPOCH_DATE = dt.date(1970, 1, 1)
_INTS = frozenset({"TINYINT", "SMALLINT", "INT"})
_STRINGS = frozenset({"CHAR", "VARCHAR", "STRING"})
BINARIES = frozenset({"BINARY", "VARBINARY", "BYTES"})
# Element/key types whose Java hashCode paimon-cli reproduces.
HASHABLE = frozenset(
    {*_INTS, "BIGINT", "BOOLEAN", "FLOAT", "DOUBLE", "DATE", "TIME", "DECIMAL"}
    | _STRINGS
    | {"TIMESTAMP", "TIMESTAMP_LTZ"}
)
CONSTRUCTED = frozenset({"ARRAY", "MULTISET", "MAP", "ROW", "VECTOR"})


class HashOrderError(MergeFunctionError):
    """A Java HashMap bucket would turn into a tree: its iteration order is not reproduced."""


def _i32(x: int) -> int:
    x &= _MASK
    return x - (1 << 32) if x & 0x80000000 else x


def _rotl(x: int, n: int) -> int:
    x &= _MASK
    return ((x << n) | (x >> (32 - n))) & _MASK


def _mix_k1(k1: int) -> int:
    k1 = (k1 * 0xCC9E2D51) & _MASK
    k1 = _rotl(k1, 15)
    return (k1 * 0x1B873593) & _MASK


def _mix_h1(h1: int, k1: int) -> int:
    h1 = _rotl(h1 ^ k1, 13)
    return (h1 * 5 + 0xE6546B64) & _MASK


def _fmix(h: int) -> int:
    h ^= h >> 16
    h = (h * 0x85EBCA6B) & _MASK
    h ^= h >> 13
    h = (h * 0xC2B2AE35) & _MASK
    h ^= h >> 16
    return h


def murmur_hash(data: bytes, seed: int = 42) -> int:
    """``MurmurHashUtils.hashBytes`` (little-endian words, tail bytes signed), as a Java int."""
    n = len(data)
    aligned = n - n % 4
    h1 = seed
    for (word,) in struct.iter_unpack("<i", data[:aligned]):
        h1 = _mix_h1(h1, _mix_k1(word))
    for b in data[aligned:]:
        h1 = _mix_h1(h1, _mix_k1(b - 256 if b >= 128 else b))
    return _i32(_fmix(h1 ^ n))


def _long_hash(v: int) -> int:
    u = v & 0xFFFFFFFFFFFFFFFF
    return _i32(u ^ (u >> 32))


def float_bits(v: float) -> int:
    """``Float.floatToIntBits`` (one NaN), as a signed int."""
    if v != v:
        return 0x7FC00000
    return int(struct.unpack("<i", struct.pack("<f", v))[0])


def double_bits(v: float) -> int:
    """``Double.doubleToLongBits`` (one NaN), as a signed long."""
    if v != v:
        return 0x7FF8000000000000
    return int(struct.unpack("<q", struct.pack("<d", v))[0])


def _big_integer_hash(value: int) -> int:
    """``BigInteger.hashCode``: 32-bit magnitude words, most significant first."""
    mag = abs(value)
    words: list[int] = []
    while mag:
        words.append(mag & _MASK)
        mag >>= 32
    h = 0
    for w in reversed(words):
        h = (31 * h + w) & _MASK
    return _i32(h * (1 if value >= 0 else -1))


def _epoch_millis_nanos(value: Any) -> tuple[int, int]:
    delta = value - (_EPOCH_UTC if value.tzinfo is not None else _EPOCH)
    micros = (delta.days * 86400 + delta.seconds) * 1_000_000 + delta.microseconds
    millis, sub = divmod(micros, 1000)
    return millis, sub * 1000


def java_hash(value: Any, t: DataType) -> int:
    """``hashCode()`` of ``value`` (a pyarrow Python value of type ``t``) as Paimon holds it."""
    if value is None:
        return 0
    root = t.root
    if root in _INTS:
        return int(value)
    if root == "BIGINT":
        return _long_hash(value)
    if root == "BOOLEAN":
        return 1231 if value else 1237
    if root == "FLOAT":
        return float_bits(value)
    if root == "DOUBLE":
        return _long_hash(double_bits(value))
    if root == "DATE":
        return int((value - _EPOCH_DATE).days)
    if root == "TIME":
        ms = ((value.hour * 60 + value.minute) * 60 + value.second) * 1000
        return int(ms + value.microsecond // 1000)
    if root in _STRINGS:
        return murmur_hash(value.encode("utf-8"))
    if root == "DECIMAL":
        scale = t.scale or 0
        unscaled = int(Decimal(value).scaleb(scale))
        return _i32(31 * _big_integer_hash(unscaled) + scale)
    if root in ("TIMESTAMP", "TIMESTAMP_LTZ"):
        millis, nanos = _epoch_millis_nanos(value)
        ret = _i32(millis) ^ _i32(millis >> 32)
        return _i32(31 * ret + nanos)
    if root in BINARIES:  # ByteArrayKey: Arrays.hashCode(byte[])
        h = 1
        for b in bytes(value):
            h = (31 * h + (b - 256 if b >= 128 else b)) & _MASK
        return _i32(h)
    raise ValueError(f"no Java hash for {t}")


def equality_key(value: Any, t: DataType) -> Any:
    """A Python value equal exactly when Java's ``equals`` (or Paimon's generated equaliser)
    says so: floats compare by bits (NaN equals NaN, 0.0 differs from -0.0), rows, arrays
    and maps field by field."""
    if value is None:
        return None
    root = t.root
    if root == "FLOAT":
        return ("f", float_bits(value))
    if root == "DOUBLE":
        return ("d", double_bits(value))
    if root == "ROW":
        return tuple(
            equality_key(value.get(n), c) for n, c in zip(t.field_names, t.children, strict=True)
        )
    if root in ("ARRAY", "MULTISET", "VECTOR"):
        return tuple(equality_key(v, t.children[0]) for v in value)
    if root == "MAP":
        k, v = t.children
        return tuple((equality_key(a, k), equality_key(b, v)) for a, b in value)
    if root in BINARIES:
        return bytes(value)
    return value


class JavaHashMap:
    """The bucket layout of a ``java.util.HashMap`` (or the one behind a ``HashSet``),
    enough to reproduce its iteration order. Entries are ``[hash, key, payload]``."""

    def __init__(self, initial_capacity: int | None = None) -> None:
        self._table: list[list[list[Any]]] | None = None
        self._threshold = 0 if initial_capacity is None else _table_size_for(initial_capacity)
        self.size = 0

    def _index(self, h: int) -> int:
        assert self._table is not None
        u = h & _MASK
        return (u ^ (u >> 16)) & (len(self._table) - 1)

    def _resize(self) -> None:
        old = self._table
        cap = len(old) * 2 if old is not None else (self._threshold or 16)
        self._threshold = int(cap * 0.75)
        self._table = [[] for _ in range(cap)]
        for bucket in old or ():
            for entry in bucket:
                self._table[self._index(entry[0])].append(entry)

    def _find(self, h: int, key: Any) -> list[Any] | None:
        if self._table is None:
            return None
        for entry in self._table[self._index(h)]:
            if entry[0] == h and entry[1] == key:
                return entry
        return None

    def get(self, h: int, key: Any) -> Any:
        entry = self._find(h, key)
        return None if entry is None else entry[2]

    def __contains__(self, hk: tuple[int, Any]) -> bool:
        return self._find(*hk) is not None

    def put(self, h: int, key: Any, payload: Any, *, replace: bool = True) -> None:
        """``put`` (``replace``) or ``HashSet.add`` (an existing element stays as it is)."""
        if self._table is None:
            self._resize()
        assert self._table is not None
        entry = self._find(h, key)
        if entry is not None:
            if replace:
                entry[2] = payload
            return
        bucket = self._table[self._index(h)]
        bucket.append([h, key, payload])
        if len(bucket) > 8:  # treeifyBin: a small table grows instead
            self._treeify(len(bucket))
        self.size += 1
        if self.size > self._threshold:
            self._resize()

    def compute_if_absent(self, h: int, key: Any, make: Any) -> Any:
        """``computeIfAbsent``: unlike ``put`` it grows the table before looking (when the
        size already exceeds the threshold) and links a new entry at the head of its bucket."""
        if self._table is None or self.size > self._threshold:
            self._resize()
        assert self._table is not None
        entry = self._find(h, key)
        if entry is not None:
            return entry[2]
        bucket = self._table[self._index(h)]
        payload = make()
        bucket.insert(0, [h, key, payload])
        if len(bucket) > 8:
            self._treeify(len(bucket))
        self.size += 1
        return payload

    def _treeify(self, length: int) -> None:
        assert self._table is not None
        if len(self._table) < 64:
            self._resize()
            return
        raise HashOrderError(
            f"{length} values share one Java HashMap bucket: Paimon orders them through a "
            "tree, which paimon-cli does not reproduce"
        )

    def remove(self, h: int, key: Any) -> None:
        if self._table is None:
            return
        bucket = self._table[self._index(h)]
        for i, entry in enumerate(bucket):
            if entry[0] == h and entry[1] == key:
                del bucket[i]
                self.size -= 1
                return

    def payloads(self) -> Iterator[Any]:
        """Payloads in Java's iteration order."""
        for bucket in self._table or ():
            for entry in bucket:
                yield entry[2]


def _table_size_for(cap: int) -> int:
    n = 1
    while n < cap:
        n <<= 1
    return n


__all__ = [
    "HASHABLE",
    "HashOrderError",
    "JavaHashMap",
    "double_bits",
    "equality_key",
    "float_bits",
    "java_hash",
    "murmur_hash",
]
