"""Writing a 32-bit RoaringBitmap in its portable serialization, as Java's RoaringBitmap does
after ``runOptimize()`` (what Paimon's ``RoaringBitmap32.serialize`` writes).

Values are split into containers by their high 16 bits. A container holds an array of its
low 16 bits up to 4,096 values, else a 65,536-bit bitmap; ``runOptimize`` then turns it into
runs when that is strictly smaller (array: 2 bytes a value; bitmap: 8,192 bytes; runs: 2 +
4 bytes a run). The layout: a cookie (12347 with the container count when any container is
runs, then a bit per container saying which; else 12346 and the count), per container its
key and cardinality − 1 (16-bit), container offsets (always without runs, with runs from 4
containers on), then the containers, all little-endian.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable

SERIAL_COOKIE = 12347
SERIAL_COOKIE_NO_RUN = 12346
NO_OFFSET_THRESHOLD = 4
MAX_ARRAY = 4096
BITMAP_BYTES = 8192


def _runs(lows: list[int]) -> list[tuple[int, int]]:
    """(start, length - 1) of each run of consecutive values (sorted, distinct)."""
    out: list[tuple[int, int]] = []
    start = prev = lows[0]
    for v in lows[1:]:
        if v != prev + 1:
            out.append((start, prev - start))
            start = v
        prev = v
    out.append((start, prev - start))
    return out


def _container(lows: list[int]) -> tuple[str, bytes]:
    """The kind ("array", "bitmap" or "run") and bytes of one optimized container."""
    runs = _runs(lows)
    run_size = 2 + 4 * len(runs)
    plain_size = 2 * len(lows) if len(lows) <= MAX_ARRAY else BITMAP_BYTES
    if plain_size > run_size:
        return "run", struct.pack(f"<H{2 * len(runs)}H", len(runs), *(x for r in runs for x in r))
    if len(lows) <= MAX_ARRAY:
        return "array", struct.pack(f"<{len(lows)}H", *lows)
    words = [0] * 1024
    for v in lows:
        words[v >> 6] |= 1 << (v & 63)
    return "bitmap", struct.pack("<1024Q", *words)


def serialize(values: Iterable[int]) -> bytes:
    """The portable serialization of the (unsigned 32-bit) ``values``, run-optimized."""
    by_key: dict[int, list[int]] = {}
    for v in sorted(set(values)):
        by_key.setdefault(v >> 16, []).append(v & 0xFFFF)
    keys = sorted(by_key)
    containers = [_container(by_key[k]) for k in keys]
    size = len(keys)
    has_run = any(kind == "run" for kind, _ in containers)
    if has_run:
        flags = bytearray((size + 7) // 8)
        for i, (kind, _) in enumerate(containers):
            if kind == "run":
                flags[i // 8] |= 1 << (i % 8)
        head = struct.pack("<I", SERIAL_COOKIE | ((size - 1) << 16)) + bytes(flags)
    else:
        head = struct.pack("<II", SERIAL_COOKIE_NO_RUN, size)
    head += b"".join(struct.pack("<HH", k, len(by_key[k]) - 1) for k in keys)
    if not has_run or size >= NO_OFFSET_THRESHOLD:
        offset = len(head) + 4 * size
        for _, data in containers:
            head += struct.pack("<I", offset)
            offset += len(data)
    return head + b"".join(data for _, data in containers)


__all__ = ["serialize"]
