"""Manifest lists read block by block, each distinct record decoded once per run.

pypaimon never merges manifests: snapshot N's base list is snapshot N-1's base list plus its
delta, rewritten whole. fastavro cuts blocks at the same records every time and the codec is
deterministic, so every complete block of the previous base list comes back byte for byte
(measured: 14 of 15 blocks at 2,000 commits), and the last block, decompressed, starts with
the previous last block. So a block is looked up by its bytes (under the file's writer
header), and a new block whose decompressed bytes extend a block decoded just before only
has its new records decoded. A walk over N snapshots then decodes each distinct record once
instead of N^2/2 rows, and callers that remember block keys skip whole blocks too
(``ListBlock.key``: a 128-bit BLAKE2 digest of the block, so keys stay small). Equal bytes
under an equal writer schema are equal records, and a block's records are only reused when
they consumed its bytes exactly.
"""

from __future__ import annotations

import hashlib
import io
import json
import threading
from collections import OrderedDict, deque
from collections.abc import Hashable
from dataclasses import dataclass
from typing import Any

from core.errors import CorruptMetadataError
from core.format.avro_blocks import Container, encode_long, split_container
from core.format.manifest import decode_manifest_list_names, manifest_refs
from core.format.model import Expected, ManifestRef

_RECENT = 4  # decompressed blocks kept to extend: the previous list's last block is enough


@dataclass(frozen=True, slots=True)
class ListBlock:
    key: Hashable  # equal keys: the same manifests, in the same order
    refs: tuple[ManifestRef, ...]


@dataclass(frozen=True, slots=True)
class _Writer:
    """One writer header: its parsed schema and codec, and the blocks decoded under it."""

    id: int
    schema: Any
    codec: str
    recent: deque[tuple[bytes, tuple[ManifestRef, ...]]]  # (decompressed, refs)


class ListBlocks:
    """The decoded blocks of the manifest lists one run reads, bounded (a walk in snapshot
    order needs the previous list's blocks; the least recently used go first)."""

    def __init__(self, max_blocks: int = 1024) -> None:
        self.max_blocks = max_blocks
        self._blocks: OrderedDict[Hashable, tuple[ManifestRef, ...]] = OrderedDict()
        self._writers: dict[bytes, _Writer | None] = {}
        self._lock = threading.Lock()  # expiry reads lists on threads on object stores
        # The blocks of the last lists read, by position: (writer id, ((bytes, block), ...)).
        self._recent: deque[tuple[int, tuple[tuple[bytes, ListBlock], ...]]] = deque(maxlen=_RECENT)

    def __reduce__(self) -> tuple[type[ListBlocks], tuple[int]]:
        # A table sent to a worker process takes an empty cache along (it is only a cache).
        return ListBlocks, (self.max_blocks,)

    def read(self, data: bytes, path: str, expect: Expected) -> list[ListBlock]:
        """The list's blocks in order; the same checks as ``decode_manifest_list_names``."""
        container = split_container(data)
        writer = self._writer(container) if container is not None else None
        if container is None or writer is None:  # not Avro, or odd: decode it whole
            refs = tuple(decode_manifest_list_names(data, path, expect=expect))
            return [ListBlock(object(), refs)]
        problem = expect.mismatch(len(data))
        if problem is not None:
            raise CorruptMetadataError(path, problem)
        out = []
        with self._lock:
            recent = list(self._recent)
        for index, (_count, payload) in enumerate(container.blocks):
            # The block at the same place in a list read just before: compared, not hashed
            # (hashing every block of every base list is snapshots^2 bytes).
            same = next(
                (
                    block
                    for wid, blocks in recent
                    if wid == writer.id and index < len(blocks) and blocks[index][0] == payload
                    for block in (blocks[index][1],)
                ),
                None,
            )
            if same is None:
                key = (writer.id, hashlib.blake2b(payload, digest_size=16).digest())
                cached = self._get(key)
                if cached is None:
                    cached = self._decode(container, index, writer, path)
                    self._put(key, cached)
                same = ListBlock(key, cached)
            out.append(same)
        with self._lock:
            self._recent.append(
                (writer.id, tuple(zip((p for _c, p in container.blocks), out, strict=True)))
            )
        problem = expect.mismatch(len(data), container.records)
        if problem is not None:
            raise CorruptMetadataError(path, problem)
        return out

    def _decode(
        self, container: Container, index: int, writer: _Writer, path: str
    ) -> tuple[ManifestRef, ...]:
        count, payload = container.blocks[index]
        raw = _decompress(writer.codec, payload)
        rows = None
        if raw is not None:
            with self._lock:
                recent = list(writer.recent)
            base: tuple[bytes, tuple[ManifestRef, ...]] = (b"", ())
            for prev_raw, prev_refs in recent:
                if len(base[0]) < len(prev_raw) < len(raw) and raw.startswith(prev_raw):
                    base = (prev_raw, prev_refs)
            rows = _records(writer.schema, raw, len(base[0]), count - len(base[1]))
            if rows is not None:
                refs = base[1] + tuple(manifest_refs(rows, path))
                with self._lock:
                    writer.recent.append((raw, refs))
                return refs
        # Anything unusual: fastavro reads the block as a file of its own, with its errors.
        one = container.one_block_file(index)
        return tuple(decode_manifest_list_names(one, path, expect=Expected(entries=count)))

    def _writer(self, container: Container) -> _Writer | None:
        header = container.header[: -len(container.sync)]
        with self._lock:
            if header in self._writers:
                return self._writers[header]
        writer = None
        try:
            import fastavro

            schema = fastavro.parse_schema(json.loads(container.meta["avro.schema"]))
            codec = container.meta.get("avro.codec", b"null").decode()
            writer = _Writer(len(self._writers), schema, codec, deque(maxlen=_RECENT))
        except (KeyError, ValueError, TypeError, fastavro.schema.SchemaParseException):
            writer = None
        with self._lock:
            return self._writers.setdefault(header, writer)

    def _get(self, key: Hashable) -> tuple[ManifestRef, ...] | None:
        with self._lock:
            refs = self._blocks.get(key)
            if refs is not None:
                self._blocks.move_to_end(key)
            return refs

    def _put(self, key: Hashable, refs: tuple[ManifestRef, ...]) -> None:
        with self._lock:
            self._blocks[key] = refs
            while len(self._blocks) > self.max_blocks:
                self._blocks.popitem(last=False)


def _decompress(codec: str, payload: bytes) -> bytes | None:
    """The block's encoded records, or None (the whole-block path then reports why)."""
    import fastavro.read

    read_block = fastavro.read.BLOCK_READERS.get(codec)
    if read_block is None:
        return None
    try:
        out = read_block(io.BytesIO(encode_long(len(payload)) + payload)).read()
    except Exception:  # noqa: BLE001 - any failure: the whole-block path raises the real error
        return None
    return out if isinstance(out, bytes) else None


def _records(schema: Any, raw: bytes, start: int, count: int) -> list[dict[str, Any]] | None:
    """``count`` records from ``raw[start:]``, which they must consume exactly; else None."""
    import fastavro

    if count < 0:
        return None
    stream = io.BytesIO(raw)
    stream.seek(start)
    try:
        rows = [fastavro.schemaless_reader(stream, schema) for _ in range(count)]
    except Exception:  # noqa: BLE001 - any failure: the whole-block path raises the real error
        return None
    if stream.tell() != len(raw) or not all(isinstance(r, dict) for r in rows):
        return None
    return rows  # type: ignore[return-value]
