"""An Avro object container split into its blocks, without decompressing or decoding them.

Each block of a container is compressed on its own, so a block whose bytes (and writer
header) equal a block already decoded holds the same records: ``core.format.list_blocks``
decodes a manifest list's new blocks only. Anything unexpected returns None and the caller
decodes the whole file as before, which raises the usual errors.
"""

from __future__ import annotations

from dataclasses import dataclass

_MAGIC = b"Obj\x01"
_SYNC = 16


@dataclass(frozen=True, slots=True)
class Container:
    header: bytes  # magic, metadata map and sync marker: what a one-block file starts with
    sync: bytes
    meta: dict[str, bytes]  # avro.schema, avro.codec, ...
    blocks: tuple[tuple[int, bytes], ...]  # (records, encoded block data) in file order

    def one_block_file(self, index: int) -> bytes:
        """A valid Avro file holding only block ``index`` (decoded apart from the others)."""
        count, payload = self.blocks[index]
        return b"".join(
            (self.header, encode_long(count), encode_long(len(payload)), payload, self.sync)
        )

    @property
    def records(self) -> int:
        return sum(count for count, _ in self.blocks)


def encode_long(value: int) -> bytes:
    """Avro's zig-zag varint."""
    n = (value << 1) ^ (value >> 63)
    out = bytearray()
    while n & ~0x7F:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def _read_long(data: bytes, pos: int) -> tuple[int, int]:
    shift = result = 0
    while True:
        byte = data[pos]  # IndexError past the end: the caller's None
        pos += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return (result >> 1) ^ -(result & 1), pos
        shift += 7
        if shift > 63:
            raise ValueError("varint too long")


def _read_map(data: bytes, pos: int) -> tuple[dict[str, bytes], int]:
    """The header's metadata map (blocks of string -> bytes), and the position after it."""
    out: dict[str, bytes] = {}
    while True:
        count, pos = _read_long(data, pos)
        if count == 0:
            return out, pos
        if count < 0:
            _size, pos = _read_long(data, pos)
            count = -count
        for _ in range(count):
            key, pos = _read_bytes(data, pos)
            value, pos = _read_bytes(data, pos)
            out[key.decode()] = value


def _read_bytes(data: bytes, pos: int) -> tuple[bytes, int]:
    length, pos = _read_long(data, pos)
    if length < 0 or pos + length > len(data):
        raise ValueError("bad length")
    return data[pos : pos + length], pos + length


def split_container(data: bytes) -> Container | None:
    """The container's header and blocks, or None when ``data`` is not a well-formed Avro
    container (the full decode then reports what is wrong)."""
    if data[:4] != _MAGIC:
        return None
    try:
        meta, pos = _read_map(data, 4)
        sync = data[pos : pos + _SYNC]
        pos += _SYNC
        header = data[:pos]
        if len(sync) != _SYNC or pos > len(data):
            return None
        blocks = []
        end = len(data)
        while pos < end:
            count, pos = _read_long(data, pos)
            size, pos = _read_long(data, pos)
            if count < 0 or size < 0 or pos + size + _SYNC > end:
                return None
            payload = data[pos : pos + size]
            pos += size
            if data[pos : pos + _SYNC] != sync:
                return None
            pos += _SYNC
            blocks.append((count, payload))
    except (IndexError, ValueError):  # UnicodeDecodeError is a ValueError
        return None
    return Container(header, sync, meta, tuple(blocks))
