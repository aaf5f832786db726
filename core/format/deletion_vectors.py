"""Deletion vectors as Paimon stores them (format: deletion vectors and index manifests).

A deletion vector index file (index type ``DELETION_VECTORS``) starts with a version byte
and holds one serialized vector per data file; the index manifest entry's ranges name the
data file with its offset and length. At that offset: the vector's length (int, big
endian), a magic number, the bitmap, and a CRC32.

* ``BitmapDeletionVector`` (magic 1581511376, big endian): a 32-bit RoaringBitmap in its
  portable serialization (little endian);
* ``Bitmap64DeletionVector`` (magic 1681511377, little endian): a count (long) of 32-bit
  bitmaps, each preceded by its high 32 bits (int), little endian.

Positions are row numbers inside the data file; a set bit means the row is deleted.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from core.errors import CorruptMetadataError
from core.format.model import IndexManifestEntry

INDEX_TYPE = "DELETION_VECTORS"
BITMAP32_MAGIC = 1581511376
BITMAP64_MAGIC = 1681511377
_SERIAL_COOKIE_NO_RUN = 12346
_SERIAL_COOKIE = 12347
_NO_OFFSET_THRESHOLD = 4
_MAX_ARRAY = 4096


@dataclass(frozen=True, slots=True)
class DeletionFile:
    """Where one data file's vector lives: index file path, offset and length."""

    path: str
    offset: int
    length: int
    cardinality: int | None = None  # None in index manifests written before Paimon 1.0


def read_roaring32(buf: bytes, pos: int = 0) -> tuple[list[int], int]:
    """The values of a portable RoaringBitmap at ``buf[pos:]`` and the position after it."""
    (cookie,) = struct.unpack_from("<I", buf, pos)
    pos += 4
    if cookie & 0xFFFF == _SERIAL_COOKIE:
        size = (cookie >> 16) + 1
        run_flags = buf[pos : pos + (size + 7) // 8]
        pos += (size + 7) // 8
    elif cookie == _SERIAL_COOKIE_NO_RUN:
        (size,) = struct.unpack_from("<I", buf, pos)
        pos += 4
        run_flags = b""
    else:
        raise ValueError(f"not a portable RoaringBitmap (cookie {cookie})")
    header = struct.unpack_from(f"<{2 * size}H", buf, pos)
    pos += 4 * size
    if not run_flags or size >= _NO_OFFSET_THRESHOLD:
        pos += 4 * size  # container offsets: containers follow in order anyway
    out: list[int] = []
    for i in range(size):
        high = header[2 * i] << 16
        card = header[2 * i + 1] + 1
        is_run = bool(run_flags) and bool(run_flags[i // 8] & (1 << (i % 8)))
        if is_run:
            (runs,) = struct.unpack_from("<H", buf, pos)
            pos += 2
            pairs = struct.unpack_from(f"<{2 * runs}H", buf, pos)
            pos += 4 * runs
            for r in range(runs):
                start = high | pairs[2 * r]
                out.extend(range(start, start + pairs[2 * r + 1] + 1))
        elif card > _MAX_ARRAY:
            words = struct.unpack_from("<1024Q", buf, pos)
            pos += 8192
            for w, word in enumerate(words):
                base = high | (w << 6)
                while word:
                    low = word & -word
                    out.append(base + low.bit_length() - 1)
                    word ^= low
        else:
            out.extend(high | v for v in struct.unpack_from(f"<{card}H", buf, pos))
            pos += 2 * card
    return out, pos


def read_roaring64(buf: bytes) -> list[int]:
    """``OptimizedRoaringBitmap64.deserialize``: (count, then per bitmap its high int)."""
    (count,) = struct.unpack_from("<q", buf, 0)
    pos = 8
    out: list[int] = []
    for _ in range(count):
        (high,) = struct.unpack_from("<i", buf, pos)
        values, pos = read_roaring32(buf, pos + 4)
        base = (high & 0xFFFFFFFF) << 32
        out.extend(base | v for v in values)
    return out


def read_vector(data: bytes, offset: int, where: str) -> list[int]:
    """The deleted row positions of the vector serialized at ``offset`` of an index file."""
    try:
        length, magic_be = struct.unpack_from(">iI", data, offset)
        body = data[offset + 8 : offset + 4 + length]
        if magic_be == BITMAP32_MAGIC:
            return read_roaring32(body)[0]
        if struct.unpack("<I", struct.pack(">I", magic_be))[0] == BITMAP64_MAGIC:
            return read_roaring64(body)
        raise ValueError(f"unknown deletion vector magic number {magic_be}")
    except (struct.error, ValueError) as exc:
        raise CorruptMetadataError(where, f"unreadable deletion vector: {exc}") from None


def deletion_files(
    entries: Iterable[IndexManifestEntry], index_path: Any
) -> dict[tuple[bytes, int, str], DeletionFile]:
    """Data file (partition, bucket, name) -> its vector, from an index manifest."""
    out: dict[tuple[bytes, int, str], DeletionFile] = {}
    for e in entries:
        if e.index_type != INDEX_TYPE:
            continue
        path = index_path(e)
        for r in e.dv_ranges:
            out[(e.partition, e.bucket, r.data_file)] = DeletionFile(
                path, r.offset, r.length, r.cardinality
            )
    return out


def keep_mask(row_count: int, deleted: Iterable[int]) -> Any:
    """A boolean Arrow array: True for rows the vector keeps."""
    import pyarrow as pa
    import pyarrow.compute as pc

    mask = bytearray(b"\x01") * row_count
    for p in deleted:
        if p < row_count:
            mask[p] = 0
    flags = pa.Array.from_buffers(pa.uint8(), row_count, [None, pa.py_buffer(bytes(mask))])
    return pc.not_equal(flags, 0)


def bucket_index_files(
    entries: Iterable[IndexManifestEntry], buckets: Mapping[tuple[bytes, int], Any]
) -> set[tuple[bytes, int, str, str]]:
    """(partition, bucket, index type, file name) of the vector files of these buckets."""
    return {
        (e.partition, e.bucket, e.index_type, e.file_name)
        for e in entries
        if e.index_type == INDEX_TYPE and (e.partition, e.bucket) in buckets
    }


# -- writing (append-table compaction keeps the vectors of files it did not rewrite) ------------
INDEX_VERSION = 1  # DeletionVectorsIndexFile.VERSION_ID_V1


@dataclass(frozen=True, slots=True)
class KeptVector:
    """A vector copied unchanged into a new index file: its serialized bytes and the range
    length Paimon records for them (bitmap: magic + bitmap; 64-bit: the whole span)."""

    data_file: str
    payload: bytes
    length: int
    cardinality: int


def serialized_vector(data: bytes, offset: int, where: str, data_file: str) -> KeptVector:
    """The bytes of the vector at ``offset`` exactly as serialized (length, magic, bitmap,
    CRC): copying them is what re-serializing the deserialized vector writes."""
    try:
        length, magic_be = struct.unpack_from(">iI", data, offset)
    except struct.error as exc:
        raise CorruptMetadataError(where, f"unreadable deletion vector: {exc}") from None
    span = 4 + length + 4
    if offset + span > len(data) or length < 4:
        raise CorruptMetadataError(where, "deletion vector runs past the end of its index file")
    bitmap64 = magic_be != BITMAP32_MAGIC
    cardinality = len(read_vector(data, offset, where))
    payload = data[offset : offset + span]
    return KeptVector(data_file, payload, span if bitmap64 else length, cardinality)


@dataclass(frozen=True, slots=True)
class IndexFileContent:
    """One deletion vector index file to write: its bytes and (data file, offset, length,
    cardinality) per vector, in file order."""

    payload: bytes
    ranges: tuple[tuple[str, int, int, int], ...]


def roll_index_files(
    vectors: Iterable[KeptVector], target_size: int | None
) -> list[IndexFileContent]:
    """DeletionVectorIndexFileWriter.writeWithRolling: a file closes once it is past the
    target size (``deletion-vector.index-file.target-size``); None: one file
    (writeSingleFile)."""
    out: list[IndexFileContent] = []
    buf = bytearray([INDEX_VERSION])
    ranges: list[tuple[str, int, int, int]] = []
    for v in vectors:
        ranges.append((v.data_file, len(buf), v.length, v.cardinality))
        buf += v.payload
        if target_size is not None and len(buf) > target_size:
            out.append(IndexFileContent(bytes(buf), tuple(ranges)))
            buf, ranges = bytearray([INDEX_VERSION]), []
    if ranges:
        out.append(IndexFileContent(bytes(buf), tuple(ranges)))
    return out


__all__ = [
    "INDEX_TYPE",
    "INDEX_VERSION",
    "DeletionFile",
    "IndexFileContent",
    "KeptVector",
    "bucket_index_files",
    "deletion_files",
    "keep_mask",
    "read_roaring32",
    "read_roaring64",
    "read_vector",
    "roll_index_files",
    "serialized_vector",
]
