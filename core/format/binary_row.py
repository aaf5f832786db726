"""Paimon BinaryRow: the serialised row used for partitions, keys and stats.

``[4-byte big-endian arity][null bits W][n x 8-byte slots][var region]``; little-endian
inside the row. Decoding yields Python values; ``encode`` is byte-identical with Java.
"""

from __future__ import annotations

import datetime as dt
import struct
from collections.abc import Sequence
from decimal import Decimal
from typing import Any

from core.errors import CorruptMetadataError
from core.format.types import BINARY_STRINGS, CHARACTER_STRINGS, DataType

_EPOCH = dt.datetime(1970, 1, 1)
_EPOCH_DATE = dt.date(1970, 1, 1)
# Numbers stored as themselves in their 8-byte slot: the struct format of each
_NUMBERS = {
    "TINYINT": "<b",
    "SMALLINT": "<h",
    "INT": "<i",
    "BIGINT": "<q",
    "FLOAT": "<f",
    "DOUBLE": "<d",
}


def null_width(arity: int) -> int:
    return ((arity + 63 + 8) // 64) * 8


def arity_of(data: bytes) -> int:
    if len(data) < 4:
        raise ValueError("binary row shorter than its arity prefix")
    return int(struct.unpack_from(">i", data, 0)[0])


def decode(data: bytes, types: Sequence[DataType]) -> tuple[Any, ...]:
    """Decode a serialised BinaryRow with the given field types."""
    try:
        return _decode(data, types)
    except (struct.error, ValueError, IndexError, UnicodeDecodeError) as exc:
        raise CorruptMetadataError("binary row", f"cannot decode {data.hex()}: {exc}") from exc


def _decode(data: bytes, types: Sequence[DataType]) -> tuple[Any, ...]:
    arity = arity_of(data)
    if arity != len(types):
        raise ValueError(f"arity {arity} but {len(types)} field types")
    row = memoryview(data)[4:]
    width = null_width(arity)
    out: list[Any] = []
    for i, t in enumerate(types):
        bit = i + 8
        if row[bit >> 3] & (1 << (bit & 7)):
            out.append(None)
            continue
        out.append(_read_field(row, width + 8 * i, t))
    return tuple(out)


def _read_var(row: memoryview, slot: int) -> bytes:
    s = struct.unpack_from("<Q", row, slot)[0]
    if s & (1 << 63):
        length = (s >> 56) & 0x7F
        return bytes(row[slot : slot + length])
    offset, length = s >> 32, s & 0xFFFFFFFF
    if offset + length > len(row):
        raise ValueError("variable-length field points past the row")
    return bytes(row[offset : offset + length])


def _read_field(row: memoryview, slot: int, t: DataType) -> Any:
    root = t.root
    if root == "BOOLEAN":
        return row[slot] != 0
    if root in _NUMBERS:
        return struct.unpack_from(_NUMBERS[root], row, slot)[0]
    if root == "DATE":
        return _EPOCH_DATE + dt.timedelta(days=struct.unpack_from("<i", row, slot)[0])
    if root == "TIME":
        ms = struct.unpack_from("<i", row, slot)[0]
        return (dt.datetime.min + dt.timedelta(milliseconds=ms)).time()
    if root in CHARACTER_STRINGS:
        return _read_var(row, slot).decode("utf-8")
    if root in BINARY_STRINGS:
        return _read_var(row, slot)
    if root == "DECIMAL":
        scale = t.scale or 0
        if (t.precision or 10) <= 18:
            unscaled = struct.unpack_from("<q", row, slot)[0]
        else:
            unscaled = int.from_bytes(_read_var(row, slot), "big", signed=True)
        return Decimal(unscaled).scaleb(-scale)
    if root in ("TIMESTAMP", "TIMESTAMP_LTZ"):
        if (t.precision or 6) <= 3:
            millis, nanos = struct.unpack_from("<q", row, slot)[0], 0
        else:
            s = struct.unpack_from("<Q", row, slot)[0]
            offset, nanos = s >> 32, s & 0xFFFFFFFF
            millis = struct.unpack_from("<q", row, offset)[0]
        return _EPOCH + dt.timedelta(milliseconds=millis, microseconds=nanos // 1000)
    raise ValueError(f"type {t} cannot appear in a binary row here")


def encode(values: Sequence[Any], types: Sequence[DataType]) -> bytes:
    """Serialise values exactly as Java's BinaryRowWriter does (zeroed padding)."""
    n = len(types)
    width = null_width(n)
    fixed = bytearray(width + 8 * n)
    var = bytearray()
    for i, (value, t) in enumerate(zip(values, types, strict=True)):
        slot = width + 8 * i
        if value is None:
            bit = i + 8
            fixed[bit >> 3] |= 1 << (bit & 7)
            continue
        root = t.root
        if root in CHARACTER_STRINGS or root in BINARY_STRINGS:
            raw = value.encode("utf-8") if isinstance(value, str) else bytes(value)
            if len(raw) <= 7:
                fixed[slot : slot + len(raw)] = raw
                fixed[slot + 7] = 0x80 | len(raw)
            else:
                offset = len(fixed) + len(var)
                struct.pack_into("<Q", fixed, slot, (offset << 32) | len(raw))
                var += raw + b"\0" * (-len(raw) % 8)
        elif root == "BOOLEAN":
            fixed[slot] = 1 if value else 0
        elif root in _NUMBERS:
            struct.pack_into(_NUMBERS[root], fixed, slot, value)
        elif root == "DATE":
            struct.pack_into("<i", fixed, slot, (value - _EPOCH_DATE).days)
        elif root == "TIME":
            ms = ((value.hour * 60 + value.minute) * 60 + value.second) * 1000
            struct.pack_into("<i", fixed, slot, ms + value.microsecond // 1000)
        elif root == "DECIMAL":
            unscaled = int(Decimal(value).scaleb(t.scale or 0))
            if (t.precision or 10) <= 18:
                struct.pack_into("<q", fixed, slot, unscaled)
            else:
                raw = unscaled.to_bytes((unscaled.bit_length() + 8) // 8 or 1, "big", signed=True)
                offset = len(fixed) + len(var)
                struct.pack_into("<Q", fixed, slot, (offset << 32) | len(raw))
                var += raw + b"\0" * (16 - len(raw))
        elif root in ("TIMESTAMP", "TIMESTAMP_LTZ"):
            delta = value - _EPOCH
            micros = (delta.days * 86400 + delta.seconds) * 1_000_000 + delta.microseconds
            millis, sub_micros = divmod(micros, 1000)
            if (t.precision or 6) <= 3:
                struct.pack_into("<q", fixed, slot, millis)
            else:
                offset = len(fixed) + len(var)
                struct.pack_into("<Q", fixed, slot, (offset << 32) | (sub_micros * 1000))
                var += struct.pack("<q", millis)
        else:
            raise ValueError(f"cannot encode type {t}")
    return struct.pack(">i", n) + bytes(fixed) + bytes(var)
