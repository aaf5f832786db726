"""A Paimon table of any size, presented on the fly: the ``synth://`` fsspec filesystem.

Benchmarks at 10 or 100 million files need no disk: every name, size and modification
time is a function of the table's parameters and of the file's place, and manifests,
manifest lists and snapshots are generated when read, in Paimon's own Avro layout (the
schemas of ``core/write/manifest_writer.py``), so every reader (paimon-cli, pypaimon,
Apache Paimon) reads them as any table. ``materialize`` writes the same table to a
directory, byte for byte and with the same modification times, to check that the
synthetic table answers exactly like a real one.

The table (``Spec``): an append table ``(id BIGINT, p INT, v STRING)`` partitioned by
``p`` with ``bucket = B`` (``bucket-key = id``), P partitions, so G = P x B bucket
directories ``p=x/bucket-y``.

* Snapshot 1 is a bulk load: ``base_files`` data files in every bucket, in manifests of at
  most ``manifest_entries`` entries (its delta list names them all).
* Snapshot i >= 2 appends ``files_per_commit`` files round-robin over the buckets, except
  every ``compact_every``-th, a COMPACT of one bucket (the q-th compaction takes bucket
  q mod G): it deletes ``compact_files`` of that bucket's bulk-load files (the next ones
  not compacted yet) and adds one file. One manifest per snapshot.
* Base list of snapshot i = base + delta manifests of snapshot i - 1 (no manifest
  merging, as pypaimon commits); snapshots are Paimon 0.9's JSON (no list sizes).
* ``orphans`` unreferenced data files over the bucket directories (orphan o in bucket
  o mod G) and ``manifest_orphans`` in ``manifest/``; ``tags``: ``tag-t<i>`` of snapshot i.

Times are whole seconds: snapshot i is committed at ``end_s - (snapshots - i)``, its files
written a second before; orphans are one to seventeen days older than snapshot 1.

Deletions and writes made through the filesystem (a real run of a command) are kept in the
process: deleted files in bitmaps (one bit per data file: 100 million files cost 12 MB),
written files (hints, run records, leases) in memory.

Register with ``register()`` (the benchmarks' launcher does), or install this directory
(``pip install -e bench/synth``): its entry point makes ``synth://`` known to fsspec in
every process of the environment, Spark's Python workers included. Parameters come as
filesystem options, e.g. ``paimon delete-orphan-files synth://t --fs-option base_files=1000``.
"""

from __future__ import annotations

import functools
import io
import json
import os
import sys
import threading
import time
from collections import OrderedDict
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, fields
from typing import Any

import fastavro
from fastavro.write import Writer
from fsspec import AbstractFileSystem

from core.format import binary_row
from core.format.types import parse_type
from core.write.manifest_writer import MANIFEST_ENTRY_SCHEMA, MANIFEST_FILE_META_SCHEMA

PROTOCOL = "synth"
ROWS_PER_FILE = 100
BLOCK_BYTES = 64 * 1024  # Avro block payload before a new block starts
_INT = parse_type("INT")
_EMPTY_ROW = binary_row.encode([], [])
DAY_S = 86_400

# Families of generated names; the uuid of a name encodes its family and place, so a
# name alone says which file it is.
_DATA, _ORPHAN, _MANIFEST, _LIST, _MANIFEST_ORPHAN, _LIST_ORPHAN = 1, 2, 3, 4, 5, 6


def _default_end_s() -> int:
    """Two days before today's midnight (UTC): every file is days old, and every process of
    one run (a benchmark and the CLI it starts) agrees within the day."""
    return (int(time.time()) // DAY_S - 2) * DAY_S


@dataclass(frozen=True)
class Spec:
    """The table's parameters (module docstring); every filesystem option is one field."""

    root: str = "t"
    snapshots: int = 10
    partitions: int = 2
    buckets: int = 2
    base_files: int = 10
    files_per_commit: int = 4
    compact_every: int = 0
    compact_files: int = 0
    manifest_entries: int = 100_000
    orphans: int = 0
    manifest_orphans: int = 0
    tags: tuple[int, ...] = ()
    seed: int = 1
    end_s: int = 0  # 0: _default_end_s()
    codec: str = "zstandard"

    @classmethod
    def from_options(cls, options: Mapping[str, Any]) -> Spec:
        known = {f.name: f for f in fields(cls)}
        values: dict[str, Any] = {}
        for key, raw in options.items():
            if key not in known:
                continue
            if key in ("root", "codec"):
                values[key] = str(raw)
            elif key == "tags":
                text = ",".join(str(t) for t in raw) if isinstance(raw, (list, tuple)) else raw
                values[key] = tuple(int(t) for t in str(text).split(",") if t.strip())
            else:
                values[key] = int(raw)
        spec = cls(**values)
        if spec.end_s == 0:
            spec = cls(**{**values, "end_s": _default_end_s()})
        spec.validate()
        return spec

    def options(self) -> dict[str, str]:
        """The filesystem options that give this table (``--fs-option`` pairs)."""
        out = {}
        for f in fields(self):
            value = getattr(self, f.name)
            out[f.name] = ",".join(map(str, value)) if f.name == "tags" else str(value)
        return out

    @property
    def groups(self) -> int:
        return self.partitions * self.buckets

    def validate(self) -> None:
        if min(self.snapshots, self.partitions, self.buckets, self.manifest_entries) < 1:
            raise ValueError("snapshots, partitions, buckets and manifest_entries must be >= 1")
        if min(self.base_files, self.files_per_commit, self.orphans, self.manifest_orphans) < 0:
            raise ValueError("file counts must be >= 0")
        compactions = self.snapshots // self.compact_every if self.compact_every else 0
        rounds = -(-compactions // self.groups)
        if compactions and rounds * self.compact_files > self.base_files:
            raise ValueError(
                f"{compactions} compactions of {self.compact_files} files need "
                f"{rounds * self.compact_files} bulk-load files per bucket, not {self.base_files}"
            )
        if any(not 1 <= t <= self.snapshots for t in self.tags):
            raise ValueError(f"tags must name snapshots 1..{self.snapshots}")
        if self.codec not in ("null", "deflate", "zstandard", "snappy"):
            raise ValueError(f"unsupported codec {self.codec!r}")


# -- Avro, encoded by hand (fastavro encodes ~10 us a record; this ~1 us) -------------------
@functools.lru_cache(maxsize=1 << 16)
def _long(n: int) -> bytes:
    """Avro long/int: zigzag varint."""
    z = (n << 1) ^ (n >> 63)
    out = bytearray()
    while z & ~0x7F:
        out.append((z & 0x7F) | 0x80)
        z >>= 7
    out.append(z)
    return bytes(out)


def _bytes(b: bytes) -> bytes:
    return _long(len(b)) + b


_NULL = b"\x00"  # union branch 0 (null)
_SOME = b"\x02"  # union branch 1
_EMPTY_ARRAY = b"\x00"
_EMPTY_STATS = _bytes(_EMPTY_ROW) + _bytes(_EMPTY_ROW) + _SOME + _EMPTY_ARRAY


@functools.lru_cache(maxsize=4096)
def _partition(p: int) -> bytes:
    return binary_row.encode([p], [_INT])


@functools.lru_cache(maxsize=4096)
def entry_parts(
    kind: int, p: int, bucket: int, total_buckets: int, created_ms: int, source: int
) -> tuple[bytes, bytes, bytes]:
    """The constant parts of a ManifestEntry row of MANIFEST_ENTRY_SCHEMA (an append file:
    empty keys and stats, level 0): before the file name, between its size and its
    sequence numbers, after them."""
    head = _long(2) + _long(kind) + _bytes(_partition(p)) + _long(bucket) + _long(total_buckets)
    mid = _long(ROWS_PER_FILE) + _bytes(_EMPTY_ROW) + _bytes(_EMPTY_ROW) + _EMPTY_STATS * 2
    tail = b"".join(
        (
            _long(0),  # _SCHEMA_ID
            _long(0),  # _LEVEL
            _EMPTY_ARRAY,  # _EXTRA_FILES
            _SOME + _long(created_ms),
            _SOME + _long(0),  # _DELETE_ROW_COUNT
            _NULL,  # _EMBEDDED_FILE_INDEX
            _SOME + _long(source),
            _SOME + _EMPTY_ARRAY,  # _VALUE_STATS_COLS: no value stats
            _NULL * 4,  # _EXTERNAL_PATH, _FIRST_ROW_ID, _WRITE_COLS, _WRITE_COLS_SEQUENCES
        )
    )
    return head, mid, tail


def encode_entry(
    kind: int,
    p: int,
    bucket: int,
    total_buckets: int,
    name: str,
    size: int,
    seq: int,
    created_ms: int,
    source: int,
) -> bytes:
    """One ManifestEntry row (``entry_parts`` around the varying fields)."""
    head, mid, tail = entry_parts(kind, p, bucket, total_buckets, created_ms, source)
    encoded = name.encode()
    last = seq + ROWS_PER_FILE - 1
    return b"".join(
        (head, _long(len(encoded)), encoded, _long(size), mid, _long(seq), _long(last), tail)
    )


def encode_meta(
    name: str,
    size: int,
    added: int,
    deleted: int,
    p_min: int,
    p_max: int,
    bucket_min: int,
    bucket_max: int,
) -> bytes:
    """One ManifestFileMeta row of MANIFEST_FILE_META_SCHEMA."""
    null_counts = _SOME + _long(1) + _SOME + _long(0) + _EMPTY_ARRAY
    return b"".join(
        (
            _long(2),
            _bytes(name.encode()),
            _long(size),
            _long(added),
            _long(deleted),
            _bytes(_partition(p_min)),
            _bytes(_partition(p_max)),
            null_counts,
            _long(0),  # _SCHEMA_ID
            _SOME + _long(bucket_min),
            _SOME + _long(bucket_max),
            _SOME + _long(0),  # _MIN_LEVEL
            _SOME + _long(0),  # _MAX_LEVEL
            _NULL,  # _MIN_ROW_ID
            _NULL,  # _MAX_ROW_ID
        )
    )


class _Block:
    """The two attributes fastavro's ``Writer.write_block`` reads."""

    def __init__(self, count: int, data: bytes) -> None:
        self.num_records = count
        self.bytes_ = io.BytesIO(data)


def avro_file(schema: Mapping[str, Any], codec: str, sync: bytes, rows: Iterator[bytes]) -> bytes:
    """An Avro container of already encoded ``rows``, compressed block by block by fastavro."""
    buf = io.BytesIO()
    writer = Writer(buf, fastavro.parse_schema(dict(schema)), codec=codec, sync_marker=sync)
    block: list[bytes] = []
    size = 0
    for row in rows:
        block.append(row)
        size += len(row)
        if size >= BLOCK_BYTES:
            writer.write_block(_Block(len(block), b"".join(block)))
            block, size = [], 0
    if block:
        writer.write_block(_Block(len(block), b"".join(block)))
    writer.flush()
    return buf.getvalue()


# -- the table --------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class DataFile:
    """A data file's place: family (_DATA or _ORPHAN), snapshot (0 for orphans), group
    (partition * buckets + bucket) and its number within that writer."""

    family: int
    snapshot: int
    group: int
    n: int


@dataclass(frozen=True, slots=True)
class Commit:
    """What snapshot i did."""

    kind: str  # APPEND | COMPACT
    group: int = -1  # COMPACT: the bucket
    first: int = 0  # COMPACT: its first bulk-load file
    count: int = 0  # COMPACT: files it replaces


class SynthTable:
    """Names, sizes, times and contents of every file of the table of ``spec``."""

    def __init__(self, spec: Spec) -> None:
        self.spec = spec
        s = spec
        self.bulk_manifests = max(1, -(-(s.groups * s.base_files) // s.manifest_entries))
        self.commits: list[Commit] = [Commit("APPEND"), Commit("APPEND")]  # index = id
        live = [0, s.groups * s.base_files]
        compactions = 0
        for i in range(2, s.snapshots + 1):
            if s.compact_every and i % s.compact_every == 0:
                g = compactions % s.groups
                first = (compactions // s.groups) * s.compact_files
                self.commits.append(Commit("COMPACT", g, first, s.compact_files))
                live.append(live[-1] - s.compact_files + 1)
                compactions += 1
            else:
                self.commits.append(Commit("APPEND"))
                live.append(live[-1] + s.files_per_commit)
        self.live = live
        self.user = self.uuid(0, 0, 0)
        self.sync = self.uuid(0, 1, 1).replace("-", "")[:16].encode()

    # names
    def uuid(self, family: int, a: int, b: int) -> str:
        return f"{self.spec.seed:08x}-{family:04x}-{a >> 16 & 0xFFFF:04x}-{a & 0xFFFF:04x}-{b:012x}"

    def data_name(self, f: DataFile) -> str:
        return f"data-{self.uuid(f.family, f.snapshot, f.group)}-{f.n}.parquet"

    def parse_data_name(self, name: str) -> DataFile | None:
        if not (name.startswith("data-") and name.endswith(".parquet") and len(name) > 50):
            return None
        u, rest = name[5:41], name[41:-8]
        parts = u.split("-")
        if len(parts) != 5 or parts[0] != f"{self.spec.seed:08x}" or not rest.startswith("-"):
            return None
        try:
            family = int(parts[1], 16)
            snapshot = int(parts[2], 16) << 16 | int(parts[3], 16)
            group, n = int(parts[4], 16), int(rest[1:])
        except ValueError:
            return None
        f = DataFile(family, snapshot, group, n)
        return f if self.data_name(f) == name and self.data_exists(f) else None

    def manifest_names(self, i: int) -> list[str]:
        count = self.bulk_manifests if i == 1 else 1
        return [f"manifest-{self.uuid(_MANIFEST, i, 0)}-{k}" for k in range(count)]

    def list_name(self, i: int, delta: bool) -> str:
        return f"manifest-list-{self.uuid(_LIST, i, 0)}-{int(delta)}"

    def orphan_metadata_name(self, k: int) -> str:
        if k % 2:
            return f"manifest-list-{self.uuid(_LIST_ORPHAN, 0, 0)}-{k}"
        return f"manifest-{self.uuid(_MANIFEST_ORPHAN, 0, 0)}-{k}"

    # data files
    def appended(self, i: int, g: int) -> int:
        """Files snapshot i appended to group g (round-robin from file i * K)."""
        s = self.spec
        if i < 2 or self.commits[i].kind != "APPEND":
            return 0
        j0 = (g - i * s.files_per_commit) % s.groups
        return max(0, -(-(s.files_per_commit - j0) // s.groups))

    def data_exists(self, f: DataFile) -> bool:
        s = self.spec
        if not 0 <= f.group < s.groups or f.n < 0:
            return False
        if f.family == _ORPHAN:
            return f.snapshot == 0 and f.n * s.groups + f.group < s.orphans
        if f.family != _DATA or not 1 <= f.snapshot <= s.snapshots:
            return False
        if f.snapshot == 1:
            return f.n < s.base_files
        c = self.commits[f.snapshot]
        if c.kind == "COMPACT":
            return f.group == c.group and f.n == 0
        return f.n < self.appended(f.snapshot, f.group)

    def files_of(self, g: int) -> Iterator[DataFile]:
        """Every data file of group g: bulk load, appends and compactions, then orphans."""
        s = self.spec
        for n in range(s.base_files):
            yield DataFile(_DATA, 1, g, n)
        for i in range(2, s.snapshots + 1):
            c = self.commits[i]
            if c.kind == "COMPACT":
                if c.group == g:
                    yield DataFile(_DATA, i, g, 0)
                continue
            for n in range(self.appended(i, g)):
                yield DataFile(_DATA, i, g, n)
        for n in range(-(-(s.orphans - g) // s.groups) if s.orphans > g else 0):
            yield DataFile(_ORPHAN, 0, g, n)

    def size(self, f: DataFile) -> int:
        if f.family == _ORPHAN:
            return 100 + (f.n * 13 + f.group * 7) % 900
        if f.snapshot > 1 and self.commits[f.snapshot].kind == "COMPACT":
            return 1000 * self.commits[f.snapshot].count + 17
        return 1000 + (f.snapshot * 31 + f.group * 17 + f.n * 7) % 1024

    def time_s(self, i: int) -> int:
        """Commit time of snapshot i."""
        return self.spec.end_s - (self.spec.snapshots - i)

    def mtime(self, f: DataFile) -> int:
        if f.family == _ORPHAN:
            o = f.n * self.spec.groups + f.group
            return self.time_s(1) - DAY_S - (o * 7919 % 1000) * 1382
        return self.time_s(f.snapshot) - 1

    def dir_of(self, g: int) -> str:
        return f"p={g // self.spec.buckets}/bucket-{g % self.spec.buckets}"

    # metadata
    def snapshot_json(self, i: int) -> bytes:
        total = self.live[i] * ROWS_PER_FILE
        doc = {
            "version": 3,
            "id": i,
            "schemaId": 0,
            "baseManifestList": self.list_name(i, False),
            "deltaManifestList": self.list_name(i, True),
            "changelogManifestList": None,
            "commitUser": self.user,
            "commitIdentifier": i,
            "commitKind": self.commits[i].kind,
            "timeMillis": self.time_s(i) * 1000,
            "logOffsets": {},
            "totalRecordCount": total,
            "deltaRecordCount": total - self.live[i - 1] * ROWS_PER_FILE,
            "changelogRecordCount": 0,
        }
        return json.dumps(doc, indent=2).encode()

    def schema_json(self) -> bytes:
        s = self.spec
        doc = {
            "version": 3,
            "id": 0,
            "fields": [
                {"id": 0, "name": "id", "type": "BIGINT"},
                {"id": 1, "name": "p", "type": "INT"},
                {"id": 2, "name": "v", "type": "STRING"},
            ],
            "highestFieldId": 2,
            "partitionKeys": ["p"],
            "primaryKeys": [],
            "options": {"bucket": str(s.buckets), "bucket-key": "id", "file.format": "parquet"},
            "timeMillis": (self.time_s(1) - 60) * 1000,
        }
        return json.dumps(doc, indent=2).encode()

    def entries(self, i: int, k: int) -> Iterator[tuple[int, DataFile]]:
        """(kind, file) of the k-th manifest of snapshot i."""
        s = self.spec
        if i == 1:
            start = k * s.manifest_entries
            stop = min(start + s.manifest_entries, s.groups * s.base_files)
            for b in range(start, stop):
                yield 0, DataFile(_DATA, 1, b // s.base_files, b % s.base_files)
            return
        c = self.commits[i]
        if c.kind == "COMPACT":
            for n in range(c.first, c.first + c.count):
                yield 1, DataFile(_DATA, 1, c.group, n)
            yield 0, DataFile(_DATA, i, c.group, 0)
            return
        for j in range(s.files_per_commit):
            g = (i * s.files_per_commit + j) % s.groups
            yield (
                0,
                DataFile(_DATA, i, g, (j - (g - i * s.files_per_commit) % s.groups) // s.groups),
            )

    def _bulk_rows(self, k: int) -> Iterator[bytes]:
        """The k-th bulk-load manifest, as ``manifest_rows`` makes it but with the constant
        parts encoded once per group (millions of rows at 100 million files)."""
        s = self.spec
        start = k * s.manifest_entries
        stop = min(start + s.manifest_entries, s.groups * s.base_files)
        created = (self.time_s(1) - 1) * 1000
        while start < stop:
            g, first = divmod(start, s.base_files)
            end = min(stop, (g + 1) * s.base_files)
            prefix = f"data-{self.uuid(_DATA, 1, g)}-".encode()
            head, mid, tail = entry_parts(0, g // s.buckets, g % s.buckets, s.buckets, created, 0)
            base_size = 1000 + 31 + g * 17
            for n in range(first, end - g * s.base_files):
                digits = str(n).encode()
                seq = 1_000_000 + n * ROWS_PER_FILE
                yield b"".join(
                    (
                        head,
                        _long(len(prefix) + len(digits) + 8),
                        prefix,
                        digits,
                        b".parquet",
                        _long(1000 + (base_size - 1000 + n * 7) % 1024),
                        mid,
                        _long(seq),
                        _long(seq + ROWS_PER_FILE - 1),
                        tail,
                    )
                )
            start = end

    def manifest_rows(self, i: int, k: int) -> Iterator[bytes]:
        if i == 1:
            yield from self._bulk_rows(k)
            return
        s = self.spec
        for kind, f in self.entries(i, k):
            yield encode_entry(
                kind,
                f.group // s.buckets,
                f.group % s.buckets,
                s.buckets,
                self.data_name(f),
                self.size(f),
                f.snapshot * 1_000_000 + f.n * ROWS_PER_FILE,
                self.mtime(f) * 1000,
                0 if f.snapshot == 1 or self.commits[f.snapshot].kind == "APPEND" else 1,
            )

    def manifest_bytes(self, i: int, k: int) -> bytes:
        return avro_file(
            MANIFEST_ENTRY_SCHEMA, self.spec.codec, self.sync, self.manifest_rows(i, k)
        )

    def manifest_summary(self, i: int, k: int) -> tuple[int, int, int, int, int, int]:
        """(added, deleted, p_min, p_max, bucket_min, bucket_max) of a manifest."""
        added = deleted = 0
        ps: set[int] = set()
        bs: set[int] = set()
        s = self.spec
        if i == 1:  # bulk manifests cover a contiguous range of groups
            start = k * s.manifest_entries
            stop = min(start + s.manifest_entries, s.groups * s.base_files)
            groups = range(start // s.base_files, (stop - 1) // s.base_files + 1)
            ps = {g // s.buckets for g in groups}
            bs = (
                {g % s.buckets for g in groups}
                if len(groups) < s.buckets
                else set(range(s.buckets))
            )
            return stop - start, 0, min(ps), max(ps), min(bs), max(bs)
        for kind, f in self.entries(i, k):
            if kind:
                deleted += 1
            else:
                added += 1
            ps.add(f.group // s.buckets)
            bs.add(f.group % s.buckets)
        return added, deleted, min(ps), max(ps), min(bs), max(bs)


_SHARED: dict[Spec, _Shared] = {}
_SHARED_LOCK = threading.Lock()


class _Shared:
    """The state of one synthetic table in this process (see SyntheticFileSystem)."""

    def __init__(self, spec: Spec) -> None:
        s = spec
        self.table = SynthTable(spec)
        self._lock = threading.RLock()
        self._written: dict[str, tuple[bytes, int]] = {}  # path -> (content, mtime s)
        self._deleted_meta: set[str] = set()  # relative paths of deleted metadata files
        self._removed_dirs: set[str] = set()
        self._deleted_base = bytearray(-(-(s.groups * s.base_files) // 8))
        self._deleted_added = bytearray(-(-((s.snapshots + 1) * s.files_per_commit) // 8) + 1)
        self._deleted_compacted = bytearray(s.snapshots // 8 + 1)
        self._deleted_orphans = bytearray(s.orphans // 8 + 1)
        self._sizes: dict[str, int] = {}  # manifest and list name -> size
        self._metas: dict[str, bytes] = {}  # manifest name -> its encoded list row
        self._cache: OrderedDict[str, bytes] = OrderedDict()
        self._cache_size = [0]
        self._manifests: dict[str, tuple[int, int]] = {}
        for i in range(1, s.snapshots + 1):
            for k, name in enumerate(self.table.manifest_names(i)):
                self._manifests[name] = (i, k)
        self._lists = {
            self.table.list_name(i, delta): (i, delta)
            for i in range(1, s.snapshots + 1)
            for delta in (False, True)
        }
        self._meta_orphans = {self.table.orphan_metadata_name(k) for k in range(s.manifest_orphans)}


def forget() -> None:
    """Drop what was written and deleted through every synthetic table of this process."""
    with _SHARED_LOCK:
        _SHARED.clear()
    SyntheticFileSystem.clear_instance_cache()


class SyntheticFileSystem(AbstractFileSystem):  # type: ignore[misc]
    """fsspec filesystem of one ``SynthTable`` (root ``spec.root``) plus what was written
    or deleted through it in this process."""

    protocol = PROTOCOL
    root_marker = ""
    cachable = True

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self.spec = Spec.from_options(options)
        # fsspec caches one instance per thread: what was written or deleted is the
        # process's, shared by every instance of the same table.
        with _SHARED_LOCK:
            shared = _SHARED.get(self.spec)
            if shared is None:
                shared = _SHARED[self.spec] = _Shared(self.spec)
        self.__dict__.update(vars(shared))

    # -- paths ---------------------------------------------------------------------------
    @classmethod
    def _strip_protocol(cls, path: str) -> str:
        path = str(path)
        if path.startswith(f"{PROTOCOL}://"):
            path = path[len(PROTOCOL) + 3 :]
        return path.rstrip("/")

    def _relative(self, path: str) -> str | None:
        root = self.spec.root
        if path == root:
            return ""
        if path.startswith(root + "/"):
            return path[len(root) + 1 :]
        return None

    # -- the generated tree --------------------------------------------------------------
    def _bit(self, f: DataFile) -> tuple[bytearray, int]:
        s = self.spec
        if f.family == _ORPHAN:
            return self._deleted_orphans, f.n * s.groups + f.group
        if f.snapshot == 1:
            return self._deleted_base, f.group * s.base_files + f.n
        if self.table.commits[f.snapshot].kind == "COMPACT":
            return self._deleted_compacted, f.snapshot
        j = (f.group - f.snapshot * s.files_per_commit) % s.groups + f.n * s.groups
        return self._deleted_added, f.snapshot * s.files_per_commit + j

    def _data_deleted(self, f: DataFile) -> bool:
        bits, i = self._bit(f)
        return bool(bits[i >> 3] >> (i & 7) & 1)

    def _group_of_dir(self, rel: str) -> int | None:
        parts = rel.split("/")
        if len(parts) != 2 or not parts[0].startswith("p=") or not parts[1].startswith("bucket-"):
            return None
        try:
            p, b = int(parts[0][2:]), int(parts[1][7:])
        except ValueError:
            return None
        if not (0 <= p < self.spec.partitions and 0 <= b < self.spec.buckets):
            return None
        if parts[0] != f"p={p}" or parts[1] != f"bucket-{b}" or rel in self._removed_dirs:
            return None
        return p * self.spec.buckets + b

    def _generated_files(self, rel: str) -> Iterator[tuple[str, int, int]] | None:
        """(name, size, mtime s) of the generated files directly in ``rel``; None when
        ``rel`` is no generated directory."""
        t, s = self.table, self.spec
        g = self._group_of_dir(rel)
        if g is not None:
            return (
                (t.data_name(f), t.size(f), t.mtime(f))
                for f in t.files_of(g)
                if not self._data_deleted(f)
            )
        if rel == "schema":
            return iter([("schema-0", len(t.schema_json()), t.time_s(1) - 60)])
        if rel == "snapshot":
            return self._snapshot_dir()
        if rel == "manifest":
            return self._manifest_dir()
        if rel == "tag" and s.tags:
            return (
                (f"tag-t{i}", len(t.snapshot_json(i)), t.time_s(i))
                for i in s.tags
                if f"tag/tag-t{i}" not in self._deleted_meta
            )
        return None

    def _snapshot_dir(self) -> Iterator[tuple[str, int, int]]:
        t, s = self.table, self.spec
        for i in range(1, s.snapshots + 1):
            if f"snapshot/snapshot-{i}" not in self._deleted_meta:
                yield f"snapshot-{i}", len(t.snapshot_json(i)), t.time_s(i)
        for hint, value in (("EARLIEST", 1), ("LATEST", s.snapshots)):
            if f"snapshot/{hint}" not in self._deleted_meta:
                yield hint, len(str(value)), t.time_s(s.snapshots)

    def _manifest_dir(self) -> Iterator[tuple[str, int, int]]:
        t = self.table
        for name, (i, _k) in self._manifests.items():
            if f"manifest/{name}" not in self._deleted_meta:
                yield name, self._manifest_size(name), t.time_s(i) - 1
        for name, (i, _delta) in self._lists.items():
            if f"manifest/{name}" not in self._deleted_meta:
                yield name, self._list_size(name), t.time_s(i) - 1
        for k in range(self.spec.manifest_orphans):
            name = t.orphan_metadata_name(k)
            if f"manifest/{name}" not in self._deleted_meta:
                yield name, 200 + k % 300, self._mtime_of("manifest", name)

    def _subdirs(self, rel: str) -> list[str]:
        s = self.spec
        if rel == "":
            names = ["manifest", "schema", "snapshot"] + (["tag"] if s.tags else [])
            names += [f"p={p}" for p in range(s.partitions) if f"p={p}" not in self._removed_dirs]
            return names
        if rel.startswith("p=") and "/" not in rel and rel not in self._removed_dirs:
            try:
                p = int(rel[2:])
            except ValueError:
                return []
            if rel == f"p={p}" and 0 <= p < s.partitions:
                return [
                    f"bucket-{b}"
                    for b in range(s.buckets)
                    if f"{rel}/bucket-{b}" not in self._removed_dirs
                ]
        return []

    def _generated_content(self, rel: str) -> bytes | None:
        t, s = self.table, self.spec
        if rel in self._deleted_meta:
            return None
        directory, _, name = rel.rpartition("/")
        if directory == "schema" and name == "schema-0":
            return t.schema_json()
        if directory == "snapshot":
            if name == "EARLIEST":
                return b"1"
            if name == "LATEST":
                return str(s.snapshots).encode()
            if name.startswith("snapshot-") and name[9:].isdigit():
                i = int(name[9:])
                return (
                    t.snapshot_json(i)
                    if 1 <= i <= s.snapshots and name == f"snapshot-{i}"
                    else None
                )
            return None
        if directory == "tag" and name.startswith("tag-t") and name[5:].isdigit():
            i = int(name[5:])
            return t.snapshot_json(i) if i in s.tags and name == f"tag-t{i}" else None
        if directory == "manifest":
            if name in self._manifests:
                return self._manifest_bytes(name)
            if name in self._lists:
                return self._list_bytes(name)
            if name in self._meta_orphans:
                k = int(name.rpartition("-")[2])
                return b"\x00" * (200 + k % 300)
            return None
        g = self._group_of_dir(directory)
        if g is not None:
            f = t.parse_data_name(name)
            if f is not None and f.group == g and not self._data_deleted(f):
                return b"\x00" * t.size(f)
        return None

    def _generated_info(self, rel: str) -> tuple[int, int] | None:
        """(size, mtime s) of a generated file, without generating data file contents."""
        t = self.table
        if rel in self._deleted_meta:
            return None
        directory, _, name = rel.rpartition("/")
        g = self._group_of_dir(directory)
        if g is not None:
            f = t.parse_data_name(name)
            if f is None or f.group != g or self._data_deleted(f):
                return None
            return t.size(f), t.mtime(f)
        if directory == "manifest" and name in self._manifests:
            return self._manifest_size(name), t.time_s(self._manifests[name][0]) - 1
        if directory == "manifest" and name in self._lists:
            return self._list_size(name), t.time_s(self._lists[name][0]) - 1
        content = self._generated_content(rel)
        if content is None:
            return None
        return len(content), self._mtime_of(directory, name)

    def _mtime_of(self, directory: str, name: str) -> int:
        """Modification time of a generated metadata file other than manifests and lists."""
        t, s = self.table, self.spec
        if directory == "schema":
            return t.time_s(1) - 60
        if directory == "snapshot" and name.startswith("snapshot-"):
            return t.time_s(int(name[9:]))
        if directory == "tag":
            return t.time_s(int(name[5:]))
        if directory == "manifest":  # an orphan
            k = int(name.rpartition("-")[2])
            return t.time_s(1) - DAY_S - (k * 7919 % 1000) * 1382
        return t.time_s(s.snapshots)  # hints

    # -- manifests -------------------------------------------------------------------------
    def _cached(self, key: str, make: Any) -> bytes:
        with self._lock:
            data = self._cache.get(key)
            if data is not None:
                self._cache.move_to_end(key)
                return data
        data = make()
        with self._lock:
            self._cache[key] = data
            self._cache_size[0] += len(data)
            while self._cache_size[0] > 256 << 20 and len(self._cache) > 1:
                _, old = self._cache.popitem(last=False)
                self._cache_size[0] -= len(old)
        return data

    def _manifest_bytes(self, name: str) -> bytes:
        i, k = self._manifests[name]
        data = self._cached(name, lambda: self.table.manifest_bytes(i, k))
        with self._lock:
            self._sizes[name] = len(data)
        return data

    def _manifest_size(self, name: str) -> int:
        size = self._sizes.get(name)
        return size if size is not None else len(self._manifest_bytes(name))

    def _list_size(self, name: str) -> int:
        size = self._sizes.get(name)
        return size if size is not None else len(self._list_bytes(name))

    def _meta_row(self, name: str) -> bytes:
        row = self._metas.get(name)
        if row is None:
            i, k = self._manifests[name]
            added, deleted, p0, p1, b0, b1 = self.table.manifest_summary(i, k)
            row = encode_meta(name, self._manifest_size(name), added, deleted, p0, p1, b0, b1)
            with self._lock:
                self._metas[name] = row
        return row

    def _list_bytes(self, name: str) -> bytes:
        i, delta = self._lists[name]
        t = self.table
        if delta:
            names = t.manifest_names(i)
        else:
            names = [n for j in range(1, i) for n in t.manifest_names(j)]
        data = self._cached(
            name,
            lambda: avro_file(
                MANIFEST_FILE_META_SCHEMA,
                self.spec.codec,
                t.sync,
                (self._meta_row(n) for n in names),
            ),
        )
        with self._lock:
            self._sizes[name] = len(data)
        return data

    # -- fsspec API ----------------------------------------------------------------------
    def _entries(self, path: str) -> list[dict[str, Any]] | None:
        """Entries directly under ``path``; None when it is no directory."""
        rel = self._relative(path)
        entries: dict[str, dict[str, Any]] = {}
        if rel is not None:
            with self._lock:
                generated = self._generated_files(rel)
                subdirs = self._subdirs(rel)
                if generated is not None:
                    for name, size, mtime in list(generated):
                        entries[name] = _file(f"{path}/{name}", size, mtime)
                for name in subdirs:
                    entries[name] = _dir(f"{path}/{name}", self.spec.end_s)
        elif self.spec.root.startswith(path + "/") or path == "":
            below = self.spec.root[len(path) + 1 :] if path else self.spec.root
            head = below.split("/", 1)[0]
            entries[head] = _dir(f"{path}/{head}" if path else head, self.spec.end_s)
        self._add_written(path, entries)
        if not entries and rel is not None and rel != "" and not self._is_generated_dir(rel):
            return None
        return [entries[k] for k in sorted(entries)]

    def _add_written(self, path: str, entries: dict[str, dict[str, Any]]) -> None:
        """What was written under ``path`` in this process, into its ``entries``."""
        with self._lock:
            for written, (data, mtime) in self._written.items():
                if not written.startswith(path + "/"):
                    continue
                rest = written[len(path) + 1 :]
                head = rest.split("/", 1)[0]
                if "/" in rest:
                    entries.setdefault(head, _dir(f"{path}/{head}", mtime))
                else:
                    entries[head] = _file(written, len(data), mtime)

    def ls_pages(self, path: str, size: int) -> Iterator[list[dict[str, Any]]]:
        """``ls(detail=True)``, at most ``size`` entries at a time, in no set order: a
        bucket directory of the 100M-file table holds 500,000 files, and paimon-cli's
        FileIO streams a listing page by page when a filesystem offers this."""
        path = self._strip_protocol(path)
        rel = self._relative(path)
        with self._lock:
            generated = self._generated_files(rel) if rel is not None else None
        if generated is None:
            entries = self.ls(path)  # FileNotFoundError when nothing is there
            for start in range(0, len(entries), size):
                yield entries[start : start + size]
            return
        others: dict[str, dict[str, Any]] = {
            name: _dir(f"{path}/{name}", self.spec.end_s) for name in self._subdirs(rel or "")
        }
        self._add_written(path, others)
        page: list[dict[str, Any]] = []
        for name, file_size, mtime in generated:
            if name in others:
                continue  # written over in this process
            page.append(_file(f"{path}/{name}", file_size, mtime))
            if len(page) == size:
                yield page
                page = []
        yield page + [others[k] for k in sorted(others)]

    def _is_generated_dir(self, rel: str) -> bool:
        if rel in self._removed_dirs:
            return False
        return (
            rel in ("schema", "snapshot", "manifest")
            or (rel == "tag" and bool(self.spec.tags))
            or self._group_of_dir(rel) is not None
            or bool(self._subdirs(rel))
        )

    def ls(self, path: str, detail: bool = True, **kwargs: Any) -> list[Any]:
        path = self._strip_protocol(path)
        entries = self._entries(path)
        if entries is None:
            raise FileNotFoundError(path)
        return entries if detail else [e["name"] for e in entries]

    def info(self, path: str, **kwargs: Any) -> dict[str, Any]:
        path = self._strip_protocol(path)
        with self._lock:
            written = self._written.get(path)
        if written is not None:
            return _file(path, len(written[0]), written[1])
        rel = self._relative(path)
        if rel is not None:
            with self._lock:
                found = self._generated_info(rel) if rel else None
            if found is not None:
                return _file(path, found[0], found[1])
            if rel == "" or self._is_generated_dir(rel):
                return _dir(path, self.spec.end_s)
        elif self.spec.root.startswith(path + "/"):
            return _dir(path, self.spec.end_s)
        with self._lock:
            if any(w.startswith(path + "/") for w in self._written):
                return _dir(path, int(time.time()))
        raise FileNotFoundError(path)

    def cat_file(self, path: str, start: Any = None, end: Any = None, **kwargs: Any) -> bytes:
        path = self._strip_protocol(path)
        with self._lock:
            written = self._written.get(path)
        if written is not None:
            data = written[0]
        else:
            rel = self._relative(path)
            content = self._generated_content(rel) if rel else None
            if content is None:
                raise FileNotFoundError(path)
            data = content
        return data[start:end] if start is not None or end is not None else data

    def pipe_file(self, path: str, value: bytes, **kwargs: Any) -> None:
        path = self._strip_protocol(path)
        with self._lock:
            self._written[path] = (bytes(value), int(time.time()))
            rel = self._relative(path)
            if rel:
                self._deleted_meta.discard(rel)
                parent_dir = rel.rpartition("/")[0]
                while parent_dir:
                    self._removed_dirs.discard(parent_dir)
                    parent_dir = parent_dir.rpartition("/")[0]

    def _open(self, path: str, mode: str = "rb", **kwargs: Any) -> Any:
        path = self._strip_protocol(path)
        if "r" in mode:
            return io.BytesIO(self.cat_file(path))
        if "x" in mode and self.exists(path):
            raise FileExistsError(path)
        return _WriteOnClose(self, path)

    def rm_file(self, path: str) -> None:
        path = self._strip_protocol(path)
        with self._lock:
            found = self._written.pop(path, None) is not None
            rel = self._relative(path)
            if rel:
                directory, _, name = rel.rpartition("/")
                g = self._group_of_dir(directory)
                if g is not None:
                    f = self.table.parse_data_name(name)
                    if f is not None and f.group == g and not self._data_deleted(f):
                        bits, i = self._bit(f)
                        bits[i >> 3] |= 1 << (i & 7)
                        found = True
                elif self._generated_content(rel) is not None:
                    self._deleted_meta.add(rel)
                    found = True
        if not found:
            raise FileNotFoundError(path)

    def _rm(self, path: str) -> None:
        self.rm_file(path)

    def rmdir(self, path: str) -> None:
        path = self._strip_protocol(path)
        if self._entries(path):
            raise OSError(f"directory not empty: {path}")
        rel = self._relative(path)
        if rel:
            with self._lock:
                self._removed_dirs.add(rel)

    def mkdir(self, path: str, create_parents: bool = True, **kwargs: Any) -> None:
        pass

    def makedirs(self, path: str, exist_ok: bool = False) -> None:
        pass

    def cp_file(self, path1: str, path2: str, **kwargs: Any) -> None:
        self.pipe_file(path2, self.cat_file(path1))


class _WriteOnClose(io.BytesIO):
    def __init__(self, fs: SyntheticFileSystem, path: str) -> None:
        super().__init__()
        self.fs = fs
        self.path = path

    def close(self) -> None:
        if not self.closed:
            self.fs.pipe_file(self.path, self.getvalue())
        super().close()


def _file(name: str, size: int, mtime: int) -> dict[str, Any]:
    return {"name": name, "size": size, "type": "file", "mtime": mtime}


def _dir(name: str, mtime: int) -> dict[str, Any]:
    return {"name": name, "size": 0, "type": "directory", "mtime": mtime}


def register() -> None:
    """Make ``synth://`` known to fsspec in this process."""
    from fsspec.registry import register_implementation

    register_implementation(PROTOCOL, SyntheticFileSystem, clobber=True)


def materialize(spec: Spec, dest: str) -> str:
    """Write the table of ``spec`` under directory ``dest`` (the table root), every file
    with the synthetic one's bytes and modification time; returns ``dest``."""
    fs = SyntheticFileSystem(**spec.options(), skip_instance_cache=True)
    fs.__dict__.update(vars(_Shared(spec)))  # the table as generated, whatever this process did
    stack = [spec.root]
    dirs: list[tuple[str, int]] = []
    while stack:
        path = stack.pop()
        rel = fs._relative(path) or ""
        target = os.path.join(dest, rel) if rel else dest
        os.makedirs(target, exist_ok=True)
        dirs.append((target, spec.end_s))
        for entry in fs.ls(path):
            name = entry["name"].rpartition("/")[2]
            if entry["type"] == "directory":
                stack.append(entry["name"])
                continue
            out = os.path.join(target, name)
            with open(out, "wb") as fh:
                fh.write(fs.cat_file(entry["name"]))
            os.utime(out, (entry["mtime"], entry["mtime"]))
    for target, mtime in reversed(dirs):
        os.utime(target, (mtime, mtime))
    return dest


__all__ = [
    "PROTOCOL",
    "Spec",
    "SynthTable",
    "SyntheticFileSystem",
    "forget",
    "materialize",
    "register",
]


def main(argv: list[str]) -> int:
    """``paimon ARGS...``: the CLI with synth:// registered (the benchmarks' launcher);
    ``materialize DEST [KEY=VALUE...]``: write that table under DEST."""
    if argv[:1] == ["paimon"]:
        register()
        from paimon_cli.main import main as paimon

        sys.argv = ["paimon", *argv[1:]]
        paimon()
        return 0
    if argv[:1] == ["materialize"] and len(argv) >= 2:
        options = dict(a.split("=", 1) for a in argv[2:])
        print(materialize(Spec.from_options(options), argv[1]))
        return 0
    print(main.__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
