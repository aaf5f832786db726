"""Local disk for sets too big for memory: planning stays bounded at any table size.

A table of 100 million files has more used names, listed files and orphans than a machine
holds as Python objects (each costs ~100 bytes). What is only ever read in order, or
looked up one hash partition at a time, goes to a private directory on local disk
(``$PAIMON_CLI_SPILL_DIR``, else the system's temporary directory):

* ``RecordFile``: records of a fixed number of string fields, appended in blocks of
  ``BLOCK`` records and read back block by block (a ``Spilled`` sequence reads any index);
* ``Partitions``: records spread over record files by the hash of their first field, so
  one partition of used names and the candidates with the same hashes fit in memory;
* ``SortedRuns``: an external sort by the first field (sorted runs, merged on read).

Fields are text; a record is its fields joined by NUL, a block its records joined the same
way. No file name can hold a NUL (POSIX forbids it, object stores cannot list it), so a
name that has one (only corrupt metadata could) can never match a listed file: callers
drop it rather than spill it. The directory goes when its last user is collected, and at
exit at the latest; one that a killed run left behind is removed by a later run
(``remove_abandoned``).
"""

from __future__ import annotations

import heapq
import os
import re
import shutil
import socket
import stat
import struct
import tempfile
import time
import weakref
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Iterator
from typing import Any, TypeVar

from core.runtime import process_identity as identity
from core.runtime.lazy import MadeOnAccess

T = TypeVar("T")

SPILL_DIR_ENV = "PAIMON_CLI_SPILL_DIR"
BLOCK = 1000  # records per block
RUN = 500_000  # records per sorted run of ``SortedRuns`` (~100 MB of orphans)
SEP = "\0"
_HEADER = struct.Struct("<II")  # payload bytes, records

Record = tuple[str, ...]


PREFIX = "paimon-cli-spill-"
ABANDONED_AFTER_S = 3600  # untouched this long, and its process gone: left by a killed run


def _host() -> str:
    return re.sub(r"[^A-Za-z0-9-]", "_", socket.gethostname()) or "host"


def _place() -> str:
    """This process's boot and PID namespace (process_identity), or ``unknown``."""
    return identity.here().fingerprint() or "unknown"


class Spill:
    """A private directory for one planning pass's spilled files, named after this host,
    boot, PID namespace and process, so that a later run can tell an abandoned one
    (``remove_abandoned``)."""

    def __init__(self, parent: str | None = None) -> None:
        where = parent or os.environ.get(SPILL_DIR_ENV) or None
        remove_abandoned(where or tempfile.gettempdir())
        prefix = f"{PREFIX}{_host()}.{_place()}.{os.getpid()}."
        self.path = tempfile.mkdtemp(prefix=prefix, dir=where)
        self._count = 0
        self._finalizer = weakref.finalize(self, shutil.rmtree, self.path, True)

    def new_file(self, stem: str) -> str:
        self._count += 1
        return os.path.join(self.path, f"{stem}-{self._count}")

    def close(self) -> None:
        """Remove the directory now (files of it still open stay readable on POSIX)."""
        self._finalizer()


def remove_abandoned(parent: str) -> list[str]:
    """Remove the spill directories killed runs left in ``parent`` (SIGKILL or the OOM
    killer run no finalizer, and a run of 100 million files spills gigabytes: the next run
    must not meet a full disk). Only this user's, made on this host, boot and PID
    namespace by a process that is gone, untouched for ``ABANDONED_AFTER_S``: a directory
    of another container sharing the host name and this directory (its pid means nothing
    here), or named by an older paimon-cli without its place, is never judged abandoned.
    Returns the paths removed."""
    host, removed = _host(), list[str]()
    place = identity.here()
    mark = place.fingerprint()
    if mark is None:
        return removed  # no /proc to judge by: nothing is known to be abandoned
    try:
        entries = list(os.scandir(parent))
    except OSError:
        return removed  # mkdtemp says what is wrong with the directory
    for entry in entries:
        m = re.fullmatch(
            rf"{PREFIX}(?P<host>[A-Za-z0-9_-]+)\.(?P<place>[0-9a-f]{{12}})\.(?P<pid>\d+)\..+",
            entry.name,
        )
        if m is None or m["host"] != host or m["place"] != mark:
            continue
        if not identity.is_gone(place, int(m["pid"])):
            continue
        try:
            st = entry.stat(follow_symlinks=False)
        except OSError:
            continue
        if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.getuid():
            continue
        if time.time() - st.st_mtime < ABANDONED_AFTER_S:
            continue
        shutil.rmtree(entry.path, ignore_errors=True)
        removed.append(entry.path)
    return removed


def _encode(records: Iterable[Record], arity: int) -> tuple[bytes, int]:
    fields = [f for r in records for f in r]
    return SEP.join(fields).encode("utf-8", "surrogateescape"), len(fields) // arity


def _decode(payload: bytes, count: int, arity: int) -> list[Record]:
    if not count:
        return []
    fields = payload.decode("utf-8", "surrogateescape").split(SEP)
    if arity == 1:
        return [(f,) for f in fields]
    return list(zip(*(fields[i::arity] for i in range(arity)), strict=True))


class _Buffered(ABC):
    """Records appended to a buffer in memory that goes out (``_flush``) once it holds
    ``_limit`` of them."""

    _buffer: list[Record]
    _limit: int

    def append(self, record: Record) -> None:
        self._buffer.append(record)
        if len(self._buffer) >= self._limit:
            self._flush()

    def extend(self, records: Iterable[Record]) -> None:
        for record in records:
            self.append(record)

    @abstractmethod
    def _flush(self) -> None: ...


class RecordFile(_Buffered):
    """Records of ``arity`` text fields: appended, then read back in order or by block."""

    def __init__(self, spill: Spill, stem: str, arity: int) -> None:
        self.spill = spill  # kept alive as long as its files are
        self.path = spill.new_file(stem)
        self.arity = arity
        self.block_records = self._limit = BLOCK  # every block but the last holds this many
        self._out = open(self.path, "wb")  # noqa: SIM115 - closed by finish()
        self._buffer: list[Record] = []
        self.blocks: list[tuple[int, int]] = []  # (offset, records) of every block
        self._offset = 0
        self.count = 0

    def _flush(self) -> None:
        if not self._buffer:
            return
        count, size = _write_block(self._out, self._buffer, self.arity)
        self.blocks.append((self._offset, count))
        self._offset += size
        self.count += count
        self._buffer = []

    def finish(self) -> RecordFile:
        """No more records: what was appended becomes readable."""
        if not self._out.closed:
            self._flush()
            self._out.close()
        return self

    def block(self, index: int) -> list[Record]:
        offset, _count = self.blocks[index]
        with open(self.path, "rb") as fh:
            fh.seek(offset)
            size, count = _HEADER.unpack(fh.read(_HEADER.size))
            return _decode(fh.read(size), count, self.arity)

    def __iter__(self) -> Iterator[Record]:
        return read_records(self.path, self.arity)

    def strings(self) -> Iterator[str]:
        """The only field of every record of a one-field file, without building tuples."""
        assert self.arity == 1
        with open(self.path, "rb") as fh:
            while header := fh.read(_HEADER.size):
                size, count = _HEADER.unpack(header)
                payload = fh.read(size)
                if count:
                    yield from payload.decode("utf-8", "surrogateescape").split(SEP)

    def __len__(self) -> int:
        return self.count


def write_records(path: str, records: Iterable[Record], arity: int) -> int:
    """``records`` to a new file at ``path``, in ``RecordFile``'s blocks: for a worker process
    whose records its caller reads (``read_records``). Returns how many were written."""
    written = 0
    with open(path, "xb") as out:
        block: list[Record] = []
        for record in records:
            block.append(record)
            if len(block) == BLOCK:
                written += _write_block(out, block, arity)[0]
                block = []
        if block:
            written += _write_block(out, block, arity)[0]
    return written


def _write_block(out: Any, block: list[Record], arity: int) -> tuple[int, int]:
    """One block of records: (records, bytes) written."""
    payload, count = _encode(block, arity)
    out.write(_HEADER.pack(len(payload), count))
    out.write(payload)
    return count, _HEADER.size + len(payload)


def read_records(path: str, arity: int) -> Iterator[Record]:
    """The records of a file of blocks (``RecordFile``, ``write_records``), in order."""
    with open(path, "rb") as fh:
        while header := fh.read(_HEADER.size):
            size, count = _HEADER.unpack(header)
            yield from _decode(fh.read(size), count, arity)


class Spilled(MadeOnAccess[T]):
    """A finished ``RecordFile`` as a sequence of ``convert(record)``; index access reads the
    one block that holds it (the last block read is kept)."""

    def __init__(self, records: RecordFile, convert: Callable[[Record], T]) -> None:
        self.records = records.finish()
        self.convert = convert
        self._cached: tuple[int, list[Record]] = (-1, [])

    def __len__(self) -> int:
        return self.records.count

    def _block(self, index: int) -> list[Record]:
        if self._cached[0] != index:
            self._cached = (index, self.records.block(index))
        return self._cached[1]

    def _item(self, index: int) -> T:
        per = self.records.block_records
        return self.convert(self._block(index // per)[index % per])

    def __iter__(self) -> Iterator[T]:
        return map(self.convert, self.records)

    def batches(self) -> int:
        """Blocks of ``BLOCK`` records (the last may hold fewer)."""
        return len(self.records.blocks)

    def batch(self, index: int) -> list[T]:
        return [self.convert(r) for r in self._block(index)]


class Partitions:
    """Records spread over ``count`` record files by the hash of their first field.

    Python's string hash is the same for a string everywhere in one process (and only
    there): what is partitioned together must be partitioned by one process."""

    def __init__(self, spill: Spill, stem: str, count: int, arity: int) -> None:
        self.count = count
        self.files = [RecordFile(spill, f"{stem}-{i}", arity) for i in range(count)]

    def part_of(self, key: str) -> int:
        return hash(key) % self.count

    def append(self, record: Record) -> None:
        self.files[hash(record[0]) % self.count].append(record)

    def finish(self) -> list[RecordFile]:
        return [f.finish() for f in self.files]


class SortedRuns(_Buffered):
    """An external sort by the first field: records buffer in memory, each ``run`` of them
    goes to disk sorted, and ``finish`` merges the runs into one sorted record file."""

    def __init__(self, spill: Spill, stem: str, arity: int, run: int | None = None) -> None:
        self.spill = spill
        self.stem = stem
        self.arity = arity
        self._limit = run or RUN  # records per sorted run
        self._buffer: list[Record] = []
        self._runs: list[RecordFile] = []

    @property
    def spilled(self) -> bool:
        return bool(self._runs)

    def in_memory(self) -> list[Record]:
        """The records, sorted, when no run went to disk."""
        assert not self._runs, "runs were spilled: use finish()"
        self._buffer.sort()
        return self._buffer

    def _flush(self) -> None:
        self._buffer.sort()
        out = RecordFile(self.spill, f"{self.stem}-run", self.arity)
        out.extend(self._buffer)
        self._runs.append(out.finish())
        self._buffer = []

    def finish(self) -> RecordFile:
        """Every record in one sorted file (the runs are removed)."""
        if self._buffer or not self._runs:
            self._flush()
        merged = RecordFile(self.spill, self.stem, self.arity)
        merged.extend(heapq.merge(*self._runs))
        for run in self._runs:
            os.unlink(run.path)
        self._runs = []
        return merged.finish()


__all__ = [
    "BLOCK",
    "RUN",
    "SPILL_DIR_ENV",
    "Partitions",
    "RecordFile",
    "SortedRuns",
    "Spill",
    "Spilled",
]
