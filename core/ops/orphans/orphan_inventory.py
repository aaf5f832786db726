"""delete-orphan-files --inventory: the object listing read from a storage inventory instead
of LIST requests (issue 27).

Sources: an S3 Inventory report (its ``manifest.json``, with CSV, ORC or Parquet files), or
a plain list of files: Parquet or CSV with a ``path`` column (``size``, ``last_modified``
optional; CSV with a header row), or any other file with one path a line. Paths of plain
lists are absolute, or relative to the table root.

The same rules as a listing decide (``orphan_listing``): a file is a candidate only at a
place Paimon writes it, with a Paimon-shaped name, unused by name, and older than the
cut-off by the inventory's last-modified. The inventory must have been taken after the
cut-off: an older one would judge ages against a table state from before the window the
cut-off protects. It says nothing of what was written after it was taken, so every
candidate is checked with a HEAD right before it is deleted (exists, the same size, still
older than the cut-off): a file written after the inventory is never deleted.
"""

from __future__ import annotations

import csv
import datetime as dt
import gzip
import io
import json
import os
import pickle
import uuid
import zlib
from collections.abc import Iterator, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field, replace
from functools import partial
from itertools import chain, islice
from typing import IO, Any, cast
from urllib.parse import unquote_plus

from core.errors import CorruptMetadataError, InvalidOptionError, SafetyRefusalError
from core.io.fileio import FileInfo, FileIO, join, protocol_of
from core.ops.details.orphans import InventorySummary
from core.ops.orphans.orphan_listing import (
    CLOCK_TOLERANCE_MS,
    CandidateRow,
    NameShapes,
    OrphanScan,
    OrphanSearch,
    candidate_batch,
    candidate_dirs,
    name_shapes,
)
from core.ops.orphans.orphan_sets import (
    Candidate,
    Orphan,
    candidate_orphan,
    decide,
    stat_candidate,
    verdict,
)
from core.runtime.executors.base import Executor
from core.runtime.plans import Phase
from core.runtime.progress import Progress
from core.runtime.spill import read_records, write_records
from core.runtime.timeparse import format_duration, format_utc, iso_utc
from core.table.table import PaimonTable

# S3 Inventory field names (CSV's fileSchema) as ORC and Parquet name their columns.
_S3_FIELDS = {
    "Bucket": "bucket",
    "Key": "key",
    "Size": "size",
    "LastModifiedDate": "last_modified_date",
    "IsLatest": "is_latest",
    "IsDeleteMarker": "is_delete_marker",
}


@dataclass(frozen=True, slots=True)
class InventoryPart:
    """One file of an inventory, read by one task."""

    url: str
    fmt: str  # s3-csv | s3-orc | s3-parquet | parquet | csv | lines
    fields: tuple[str, ...] = ()  # s3-csv: the columns, in order
    scheme: str = ""  # s3 reports: the protocol of the objects' paths (the table's)
    base: str = ""  # plain lists: the table root relative paths are under


@dataclass(frozen=True, slots=True)
class Inventory:
    source: str
    fmt: str
    taken_ms: int  # when the inventory was taken (S3: creationTimestamp; else the file's time)
    parts: tuple[InventoryPart, ...]

    def summary(self) -> InventorySummary:
        """What the plan's details say of it."""
        return InventorySummary(
            self.source, self.fmt, self.taken_ms, iso_utc(self.taken_ms), len(self.parts)
        )


def read_inventory(fileio: FileIO, source: str, table: PaimonTable) -> Inventory:
    """The inventory at ``source``: an S3 Inventory ``manifest.json``, or a plain list."""
    info = fileio.info(source)
    if info is None or info.is_dir:
        raise InvalidOptionError(f"no inventory at {source}", param="inventory")
    if source.rstrip("/").endswith(".json"):
        return _s3_manifest(fileio, source, table)
    name = source.rpartition("/")[2].lower()
    fmt = "parquet" if name.endswith(".parquet") else "csv" if ".csv" in name else "lines"
    assert info.mtime_ms is not None
    part = InventoryPart(source, fmt, base=table.location)
    return Inventory(source, fmt, info.mtime_ms, (part,))


def _s3_manifest(fileio: FileIO, source: str, table: PaimonTable) -> Inventory:
    try:
        doc = json.loads(fileio.read_bytes(source))
        fmt = str(doc["fileFormat"]).lower()
        taken_ms = int(doc["creationTimestamp"])
        bucket = str(doc["destinationBucket"]).rpartition(":")[2]
        keys = [str(f["key"]) for f in doc["files"]]
    except (ValueError, KeyError, TypeError) as exc:
        raise CorruptMetadataError(source, f"not an S3 Inventory manifest.json ({exc})") from exc
    if fmt not in ("csv", "orc", "parquet"):
        raise CorruptMetadataError(source, f"unknown inventory fileFormat {doc['fileFormat']!r}")
    fields: tuple[str, ...] = ()
    if fmt == "csv":
        names = [f.strip() for f in str(doc.get("fileSchema", "")).split(",")]
        fields = tuple(_S3_FIELDS.get(n, n) for n in names)
        if "key" not in fields or "bucket" not in fields:
            raise CorruptMetadataError(source, "the inventory's fileSchema has no Bucket and Key")
    where = protocol_of(source) or "s3"
    scheme = protocol_of(table.location) or "s3"
    parts = tuple(
        InventoryPart(f"{where}://{bucket}/{key}", f"s3-{fmt}", fields, scheme) for key in keys
    )
    return Inventory(source, f"s3-{fmt}", taken_ms, parts)


def check_inventory_age(inventory: Inventory, older_than_ms: int, now_ms: int) -> None:
    """Refuse an inventory taken before the cut-off, or after now (a clock is wrong)."""
    if inventory.taken_ms < older_than_ms:
        raise SafetyRefusalError(
            f"the inventory {inventory.source} was taken at {format_utc(inventory.taken_ms)}, "
            f"before the cut-off ({format_utc(older_than_ms)}): it is "
            f"{format_duration(older_than_ms - inventory.taken_ms)} older than the margin "
            "--older-than keeps, so nothing it says may decide a deletion",
            hint="use a newer inventory, or an earlier --older-than",
        )
    if inventory.taken_ms > now_ms + CLOCK_TOLERANCE_MS:
        raise SafetyRefusalError(
            f"the inventory {inventory.source} was taken at {format_utc(inventory.taken_ms)}, "
            f"after now ({format_utc(now_ms)}): the clocks disagree, so no age can be trusted",
            hint="fix the clock that is wrong (NTP) and run again",
        )


# -- what an inventory row is -----------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Positions:
    """Where Paimon writes the files orphan cleaning considers, by path alone: the flat
    directories, and ``<data root>/<k=v>/.../bucket-N/`` with one ``k=v`` per partition
    key (the directories a listing descends, ``orphan_listing.candidate_dirs``)."""

    flat: dict[str, str]  # directory -> kind
    data_roots: tuple[tuple[str, str], ...]  # (root, kind)
    depth: int
    shapes: NameShapes
    manifest_dir: str

    @classmethod
    def of(cls, table: PaimonTable, views: list[PaimonTable], external: bool) -> Positions:
        dirs = candidate_dirs(table, views, external)
        return cls(
            {d.path: d.kind for d in dirs if d.depth < 0},
            tuple((d.path, d.kind) for d in dirs if d.depth >= 0),
            len(table.schema.partition_keys),
            name_shapes(table),
            join(table.location, "manifest"),
        )

    def kind_of(self, path: str) -> str | None:
        """The directory kind when ``path`` is a candidate's place and name, else None."""
        directory, _, name = path.rpartition("/")
        kind = self.flat.get(directory)
        if kind is None:
            for root, root_kind in self.data_roots:
                if directory.startswith(root + "/"):
                    levels = directory[len(root) + 1 :].split("/")
                    if (
                        len(levels) == self.depth + 1
                        and levels[-1].startswith("bucket-")
                        and all("=" in level for level in levels[:-1])
                    ):
                        kind = root_kind
                        break
        if kind is None or not self.shapes.candidate(kind, name):
            return None
        return kind


CHUNK = 10_000  # candidates of one inventory file held in memory at a time


@dataclass(slots=True)
class PartResult:
    objects: int = 0  # rows of the inventory file
    candidates: list[Candidate] = field(default_factory=list)  # the first chunk (all if few)
    spilled: str | None = None  # the rest, in a record file here (``spill.write_records``)
    watched: list[str] = field(default_factory=list)

    def all_candidates(self) -> Iterator[Candidate]:
        """Every candidate, the spilled ones read back (their file goes once read)."""
        yield from self.candidates
        if self.spilled is not None:
            yield from cast(Iterator[Candidate], read_records(self.spilled, 5))
            os.unlink(self.spilled)


def part_candidates(
    fileio: FileIO,
    positions: Positions,
    watch: AbstractSet[str],
    older_than_ms: int,
    future_ms: int,
    part: InventoryPart,
    out: PartResult,
) -> Iterator[Candidate]:
    """The candidates of one inventory file as it is read: old (or future) files at
    candidates' places; rows without a time are kept for a HEAD. Its rows and the watched
    names seen are counted into ``out``."""
    for path, size, mtime in _rows(fileio, part):
        out.objects += 1
        name = path.rpartition("/")[2]
        if watch and name in watch and path.rpartition("/")[0] == positions.manifest_dir:
            out.watched.append(name)
        if mtime is not None and older_than_ms <= mtime <= future_ms:
            continue
        kind = positions.kind_of(path)
        if kind is None:
            continue
        known = mtime is not None and size is not None
        yield (name, path, str(size) if known else "", str(mtime) if known else "", kind)


def read_part(
    fileio: FileIO,
    positions: Positions,
    watch: AbstractSet[str],
    older_than_ms: int,
    future_ms: int,
    spill_dir: str,
    chunk: int,
    part: InventoryPart,
) -> PartResult:
    """``part_candidates`` of one inventory file, run in a worker process: the first
    ``chunk`` come back in memory, the rest in a file under ``spill_dir`` (an inventory
    file may list millions of objects; the caller's memory stays bounded)."""
    out = PartResult()
    found = part_candidates(fileio, positions, watch, older_than_ms, future_ms, part, out)
    out.candidates = list(islice(found, chunk))
    more = next(found, None)
    if more is not None:
        path = os.path.join(spill_dir, f"inventory-{uuid.uuid4().hex}")
        write_records(path, chain([more], found), 5)
        out.spilled = path
    return out


Row = tuple[str, int | None, int | None]  # path, size, last modified (epoch ms)


def _rows(fileio: FileIO, part: InventoryPart) -> Iterator[Row]:
    data = fileio.read_bytes(part.url)
    try:
        yield from _decoded_rows(data, part)
    # Decoding bytes in memory: an OSError here is a bad gzip or ORC stream, not storage.
    except (ValueError, OSError, EOFError, csv.Error, zlib.error) as exc:
        raise CorruptMetadataError(
            part.url,
            f"not a readable {part.fmt} inventory file ({type(exc).__name__}: {exc})",
            hint="take a new inventory, or run without --inventory (a listing)",
        ) from exc


def _decoded_rows(data: bytes, part: InventoryPart) -> Iterator[Row]:
    if part.fmt in ("s3-parquet", "s3-orc", "parquet"):
        if data[:2] == b"\x1f\x8b":
            data = gzip.decompress(data)
        batches = _batches(data, part.fmt)
        yield from (_list_columns if part.fmt == "parquet" else _s3_columns)(batches, part)
        return
    # Text is decompressed and decoded as it is read: never held whole a second time.
    raw: IO[bytes] | gzip.GzipFile = io.BytesIO(data)
    if data[:2] == b"\x1f\x8b":
        raw = gzip.GzipFile(fileobj=raw)
    if part.fmt == "s3-csv":
        yield from _s3_csv(io.TextIOWrapper(raw, "utf-8", newline=""), part)
    elif part.fmt == "csv":
        yield from _list_csv(io.TextIOWrapper(raw, "utf-8", newline=""), part)
    else:
        for line in io.TextIOWrapper(raw, "utf-8", "surrogateescape"):
            if line.strip():
                yield _absolute(part, line.strip()), None, None


def _s3_csv(text: IO[str], part: InventoryPart) -> Iterator[Row]:
    index = {f: i for i, f in enumerate(part.fields)}
    for row in csv.reader(text):
        if not row:
            continue
        record = {f: row[i] for f, i in index.items() if i < len(row)}
        if record.get("is_latest", "true").lower() == "false":
            continue
        if record.get("is_delete_marker", "false").lower() == "true":
            continue
        key = unquote_plus(record["key"])  # keys of CSV reports are URL-encoded
        yield (
            _s3_path(part, record["bucket"], key),
            int(record["size"]) if record.get("size") else None,
            _time_ms(record.get("last_modified_date") or None),
        )


def _batches(data: bytes, fmt: str) -> Iterator[Any]:
    """Record batches of a Parquet or ORC file (pyarrow is imported only here)."""
    import pyarrow as pa

    if fmt.endswith("orc"):
        from pyarrow import orc

        table = orc.ORCFile(pa.BufferReader(data)).read()
        yield from table.to_batches()
        return
    import pyarrow.parquet as pq

    yield from pq.ParquetFile(pa.BufferReader(data)).iter_batches(batch_size=65_536)


def _column(batch: Any, name: str) -> list[Any] | None:
    index = batch.schema.get_field_index(name)
    return None if index < 0 else batch.column(index).to_pylist()


def _s3_columns(batches: Iterator[Any], part: InventoryPart) -> Iterator[Row]:
    for batch in batches:
        buckets, keys = _column(batch, "bucket"), _column(batch, "key")
        if buckets is None or keys is None:
            raise CorruptMetadataError(part.url, "an S3 inventory file without bucket and key")
        n = len(keys)
        sizes = _column(batch, "size") or [None] * n
        times = _column(batch, "last_modified_date") or [None] * n
        latest = _column(batch, "is_latest") or [True] * n
        markers = _column(batch, "is_delete_marker") or [False] * n
        for i in range(n):
            if latest[i] is False or markers[i] is True:
                continue
            yield _s3_path(part, buckets[i], keys[i]), sizes[i], _time_ms(times[i])


def _list_columns(batches: Iterator[Any], part: InventoryPart) -> Iterator[Row]:
    for batch in batches:
        paths = _column(batch, "path")
        if paths is None:
            raise CorruptMetadataError(part.url, "a file list without a 'path' column")
        sizes = _column(batch, "size") or [None] * len(paths)
        times = _column(batch, "last_modified") or [None] * len(paths)
        for path, size, mtime in zip(paths, sizes, times, strict=True):
            yield _absolute(part, path), size, _time_ms(mtime)


def _list_csv(text: IO[str], part: InventoryPart) -> Iterator[Row]:
    reader = csv.DictReader(text)
    if reader.fieldnames is None or "path" not in reader.fieldnames:
        raise CorruptMetadataError(part.url, "a CSV file list needs a header row with 'path'")
    for row in reader:
        size = row.get("size") or None
        yield (
            _absolute(part, row["path"]),
            int(size) if size else None,
            _time_ms(row.get("last_modified") or None),
        )


def _s3_path(part: InventoryPart, bucket: str, key: str) -> str:
    return f"{part.scheme}://{bucket}/{key}"


def _absolute(part: InventoryPart, path: str) -> str:
    return path if "://" in path or path.startswith("/") else join(part.base, path)


def _time_ms(value: Any) -> int | None:
    """Epoch ms of an inventory time: a timestamp, ISO-8601 text, or epoch ms."""
    if value is None:
        return None
    if isinstance(value, dt.datetime):
        when = value if value.tzinfo else value.replace(tzinfo=dt.timezone.utc)
        return int(when.timestamp() * 1000)
    if isinstance(value, int):
        return value
    text = str(value).strip()
    if text.isdigit():
        return int(text)
    when = dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
    return int((when if when.tzinfo else when.replace(tzinfo=dt.timezone.utc)).timestamp() * 1000)


# -- the scan ---------------------------------------------------------------------------------


def scan_inventory(
    search: OrphanSearch, inventory: Inventory, executor: Executor, progress: Progress
) -> OrphanScan:
    """``scan_for_orphans`` with the inventory as the listing (no empty directories: an
    inventory lists objects only). Rows without a time are HEADed once found unused."""
    table, used = search.table, search.used
    older_than_ms, future_ms = search.older_than_ms, search.future_ms
    positions = Positions.of(table, search.views, search.external_exclusive)
    watch = frozenset(search.watch)
    spill_dir = search.spill.get().path  # where worker processes put big files' candidates
    read = partial(
        read_part, table.fileio, positions, watch, older_than_ms, future_ms, spill_dir, CHUNK
    )
    found = OrphanScan.begin(search)
    unknown: list[Candidate] = []

    def head_unknown() -> None:
        """Rows without a time that no root uses: HEADed in parallel, a chunk at a time."""
        infos = executor.map(table.fileio.info, [c[1] for c in unknown])
        for candidate, info in zip(unknown, infos, strict=True):
            orphan = candidate_orphan(candidate, info)
            if orphan is not None:
                decide(orphan, older_than_ms, future_ms, found.sink, found.future)
        unknown.clear()

    progress.start("reading the inventory", len(inventory.parts))
    for part in executor.imap(read, inventory.parts, work="cpu"):
        progress.advance()
        found.watched.update(part.watched)
        for candidate in part.all_candidates():
            if found.candidates is not None:
                found.candidates.add(candidate)
                continue
            assert used.names is not None
            if candidate[0] in used.names:
                continue
            orphan = candidate_orphan(candidate)
            if orphan is not None:
                decide(orphan, older_than_ms, future_ms, found.sink, found.future)
                continue
            unknown.append(candidate)  # a row without a time
            if len(unknown) == CHUNK:
                head_unknown()
    progress.finish()
    head_unknown()
    return found.finish(search, progress, "matching the inventory with used names")


def candidate_batches(
    payload: bytes, older_than_ms: int, future_ms: int, batches: Iterator[Any]
) -> Iterator[Any]:
    """Spark executors: the candidate rows of inventory files (``read_part``), shaped as
    ``orphan_files_spark`` shapes a listing's. A row without a time (a plain list of paths)
    becomes an ``unknown`` row, HEADed by ``unknown_batches`` only once the used names have
    left it, as the local scan does (a HEAD per used file was the cost of a plain list).
    ``payload``: the pickled (``part_candidates`` bound to all but its last two arguments,
    parts)."""
    read, parts = pickle.loads(payload)
    for batch in batches:
        for index in batch.column("part").to_pylist():
            rows: list[CandidateRow] = []
            for candidate in read(parts[index], PartResult()):
                orphan = candidate_orphan(candidate)
                if orphan is None:
                    name, path, _size, _mtime, kind = candidate
                    rows.append(("unknown", name, path, 0, 0, kind))
                else:
                    row_type = verdict(orphan, older_than_ms, future_ms)
                    if row_type is not None:
                        rows.append(_row(row_type, orphan))
                if len(rows) == CHUNK:  # a batch per chunk: never a whole file's rows
                    yield candidate_batch(rows)
                    rows = []
            if rows:
                yield candidate_batch(rows)


def unknown_batches(
    fileio_bytes: bytes, older_than_ms: int, future_ms: int, batches: Iterator[Any]
) -> Iterator[Any]:
    """Spark executors: ``unknown`` rows that no root uses, HEADed and decided (old: a
    ``file`` row, modified after now: ``future``; young, gone, a link: dropped)."""
    fileio = pickle.loads(fileio_bytes)
    for batch in batches:
        rows: list[CandidateRow] = []
        for r in batch.to_pylist():
            candidate = (r["name"], r["path"], "", "", r["kind"])
            orphan = stat_candidate(fileio, candidate)
            row_type = None if orphan is None else verdict(orphan, older_than_ms, future_ms)
            if orphan is not None and row_type is not None:
                rows.append(_row(row_type, orphan))
        yield candidate_batch(rows)


def _row(row_type: str, orphan: Orphan) -> CandidateRow:
    return (row_type, orphan.name, orphan.path, orphan.size, orphan.mtime_ms, orphan.kind)


# -- right before deleting --------------------------------------------------------------------


def still_orphan(info: FileInfo | None, size: int | None, older_than_ms: int) -> bool:
    """The HEAD right before a deletion: the file is there, as big as planned, and still
    older than the cut-off (a file written after the inventory is younger, and stays)."""
    return (
        info is not None
        and not info.is_dir
        and not info.is_symlink
        and info.mtime_ms is not None
        and info.mtime_ms < older_than_ms
        and (size is None or info.size == size)
    )


class InventoryRecheck:
    """Before each batch of an inventory plan: one HEAD per file, in parallel; a file gone,
    changed or younger than the cut-off is kept (``changed`` lists them)."""

    def __init__(self, table: PaimonTable, older_than_ms: int, executor: Executor) -> None:
        self.fileio = table.fileio
        self.older_than_ms = older_than_ms
        self.executor = executor
        self.changed: list[str] = []

    def __call__(self, phase: Phase) -> Phase:
        deletes = [a for a in phase.actions if a.op == "delete"]
        if not deletes:
            return phase
        infos = self.executor.map(self.fileio.info, [a.path for a in deletes])
        kept = {
            id(a)
            for a, info in zip(deletes, infos, strict=True)
            if still_orphan(info, a.size, self.older_than_ms)
        }
        self.changed += [a.path for a in deletes if id(a) not in kept]
        actions = tuple(a for a in phase.actions if a.op != "delete" or id(a) in kept)
        return replace(phase, actions=actions)


__all__: Sequence[str] = (
    "Inventory",
    "InventoryPart",
    "InventoryRecheck",
    "candidate_batches",
    "Positions",
    "check_inventory_age",
    "read_inventory",
    "part_candidates",
    "read_part",
    "scan_inventory",
    "still_orphan",
)
