"""Readers for manifest lists, manifests and index manifests (Avro, ORC or Parquet).

The only place where metadata rows are decoded. Format is sniffed from magic bytes
(``Obj\\x01`` Avro, ``ORC`` ORC, ``PAR1`` Parquet) since tables written by Paimon <= 2.0
may use ``manifest.format = orc|parquet``.

Every decode takes what the referencing file records (:class:`Expected`: the size a
snapshot, tag or changelog records for a manifest list; the size and the added + deleted
counts a manifest list records for a manifest) and compares it with the bytes read and the
rows decoded: an Avro file cut at a block boundary decodes without error, and reading it as
"fewer entries" would make live files look unused (issue 28). A mismatch is corrupt
metadata, exactly like a missing file.
"""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any, TypeVar

from core.errors import CorruptMetadataError
from core.format.codecs import require_avro_codec
from core.format.model import (
    DataFileMeta,
    DeletionVectorRange,
    Expected,
    ExpireFileEntry,
    FileKind,
    IndexManifestEntry,
    ManifestEntry,
    ManifestFileMeta,
    ManifestRef,
)

logger = logging.getLogger(__name__)

T = TypeVar("T")

_AVRO_MAGIC = b"Obj\x01"


Projection = Callable[[Mapping[str, Any]], dict[str, Any] | None]


def _rows(
    data: bytes, path: str, expect: Expected, project: Projection | None = None
) -> Iterator[Mapping[str, Any]]:
    """Rows of any format, checked against ``expect`` (the size before the first row, the
    count after the last); ``project`` may cut an Avro writer schema down to the fields the
    caller reads (None: keep every field), so fastavro skips the rest."""
    problem = expect.mismatch(len(data))
    if problem is not None:
        raise CorruptMetadataError(path, problem)
    count = 0
    for row in _format_rows(data, path, project):
        count += 1
        yield row
    problem = expect.mismatch(len(data), count)
    if problem is not None:
        raise CorruptMetadataError(path, problem)


def _format_rows(data: bytes, path: str, project: Projection | None) -> Iterator[Mapping[str, Any]]:
    if data[:4] == _AVRO_MAGIC:
        import fastavro

        try:
            records = fastavro.reader(io.BytesIO(data))
            require_avro_codec(records.codec, path)
            reader_schema = project(records.writer_schema) if project else None  # type: ignore[arg-type]
            if reader_schema is not None:
                records = fastavro.reader(io.BytesIO(data), reader_schema=reader_schema)
            for record in records:
                if not isinstance(record, dict):
                    raise CorruptMetadataError(path, "Avro rows are not records")
                yield record
        except (ValueError, EOFError, KeyError, TypeError, IndexError) as exc:
            raise CorruptMetadataError(path, f"unreadable Avro ({exc})") from exc
        return
    if data[:3] == b"ORC" or data[:4] == b"PAR1":
        yield from _arrow_rows(data, path)
        return
    what = "empty file" if not data else f"unknown format (magic {data[:4]!r})"
    raise CorruptMetadataError(path, what)


def _arrow_rows(data: bytes, path: str) -> Iterator[Mapping[str, Any]]:
    import pyarrow as pa

    try:
        if data[:3] == b"ORC":
            import pyarrow.orc as orc

            table = orc.ORCFile(io.BytesIO(data)).read()
        else:
            import pyarrow.parquet as pq

            table = pq.read_table(io.BytesIO(data))
    except (pa.ArrowException, OSError, ValueError) as exc:
        raise CorruptMetadataError(path, f"unreadable {data[:3]!r} file ({exc})") from exc
    for batch in table.to_batches():
        yield from batch.to_pylist()


@contextmanager
def _row_layout(path: str) -> Iterator[None]:
    """A row without the fields or types expected is corrupt metadata, not a crash."""
    try:
        yield
    except (KeyError, TypeError, ValueError) as exc:
        if isinstance(exc, CorruptMetadataError):
            raise
        raise CorruptMetadataError(path, f"unexpected row layout ({exc!r})") from exc


def _decode(
    data: bytes, path: str, expect: Expected, convert: Callable[[Mapping[str, Any], str], T]
) -> Iterator[T]:
    with _row_layout(path):
        for row in _rows(data, path, expect):
            yield convert(row, path)


def _plain_name(name: Any, path: str) -> str:
    # Names must be bare: a separator or '..' would let metadata point outside the table.
    if not isinstance(name, str) or not name or "/" in name or "\\" in name or name in (".", ".."):
        raise CorruptMetadataError(path, f"file name {name!r} is not a plain file name")
    return name


def _check_version(row: Mapping[str, Any], expected: int, path: str) -> None:
    version = row.get("_VERSION", expected)
    if version != expected:
        raise CorruptMetadataError(path, f"unsupported _VERSION {version} (expected {expected})")


def _to_manifest_meta(row: Mapping[str, Any], path: str) -> ManifestFileMeta:
    _check_version(row, 2, path)
    return ManifestFileMeta(
        file_name=_plain_name(row["_FILE_NAME"], path),
        file_size=int(row["_FILE_SIZE"]),
        num_added_files=int(row["_NUM_ADDED_FILES"]),
        num_deleted_files=int(row["_NUM_DELETED_FILES"]),
        schema_id=int(row["_SCHEMA_ID"]),
        min_bucket=row.get("_MIN_BUCKET"),
        max_bucket=row.get("_MAX_BUCKET"),
        min_level=row.get("_MIN_LEVEL"),
        max_level=row.get("_MAX_LEVEL"),
        extra_files=tuple(_plain_name(n, path) for n in row.get("_EXTRA_FILES") or ()),
    )


_KINDS = (FileKind.ADD, FileKind.DELETE)


def _file_kind(row: Mapping[str, Any], path: str) -> FileKind:
    kind = row["_KIND"]
    if kind not in (0, 1):
        raise CorruptMetadataError(path, f"unknown _KIND {kind}")
    return _KINDS[kind]


def _to_entry(row: Mapping[str, Any], path: str) -> ManifestEntry:
    _check_version(row, 2, path)
    f = row["_FILE"]
    return ManifestEntry(
        kind=_file_kind(row, path),
        partition=bytes(row["_PARTITION"]),
        bucket=int(row["_BUCKET"]),
        total_buckets=int(row["_TOTAL_BUCKETS"]),
        file=DataFileMeta(
            file_name=_plain_name(f["_FILE_NAME"], path),
            file_size=int(f["_FILE_SIZE"]),
            row_count=int(f["_ROW_COUNT"]),
            level=int(f["_LEVEL"]),
            extra_files=tuple(_plain_name(n, path) for n in f.get("_EXTRA_FILES") or ()),
            schema_id=int(f["_SCHEMA_ID"]),
            min_sequence_number=int(f["_MIN_SEQUENCE_NUMBER"]),
            max_sequence_number=int(f["_MAX_SEQUENCE_NUMBER"]),
            creation_time=f.get("_CREATION_TIME"),
            delete_row_count=f.get("_DELETE_ROW_COUNT"),
            file_source=f.get("_FILE_SOURCE"),
            external_path=f.get("_EXTERNAL_PATH"),
            embedded_index=f.get("_EMBEDDED_FILE_INDEX"),
            first_row_id=f.get("_FIRST_ROW_ID"),
        ),
    )


def _to_expire_entry(row: Mapping[str, Any], path: str) -> ExpireFileEntry:
    """``_to_entry``'s checks on the fields expiry reads; the others are not converted."""
    _check_version(row, 2, path)
    f = row["_FILE"]
    extra = f.get("_EXTRA_FILES")
    return ExpireFileEntry(
        _file_kind(row, path),
        bytes(row["_PARTITION"]),
        int(row["_BUCKET"]),
        _plain_name(f["_FILE_NAME"], path),
        int(f["_FILE_SIZE"]),
        tuple(_plain_name(n, path) for n in extra) if extra else (),
        f.get("_EXTERNAL_PATH"),
        f.get("_FILE_SOURCE"),
    )


def _to_index_entry(row: Mapping[str, Any], path: str) -> IndexManifestEntry:
    _check_version(row, 1, path)
    ranges = tuple(
        DeletionVectorRange(str(r["f0"]), int(r["f1"]), int(r["f2"]), r.get("_CARDINALITY"))
        for r in row.get("_DELETIONS_VECTORS_RANGES") or ()
        if r is not None
    )
    return IndexManifestEntry(
        kind=FileKind(row["_KIND"]),
        partition=bytes(row["_PARTITION"]),
        bucket=int(row["_BUCKET"]),
        index_type=str(row["_INDEX_TYPE"]),
        file_name=_plain_name(row["_FILE_NAME"], path),
        file_size=int(row["_FILE_SIZE"]),
        row_count=int(row["_ROW_COUNT"]),
        external_path=row.get("_EXTERNAL_PATH"),
        dv_ranges=ranges,
    )


def decode_rows(data: bytes, path: str, *, expect: Expected) -> Iterator[Mapping[str, Any]]:
    """Raw rows of a metadata file (any format), for writers that copy rows unchanged."""
    return _rows(data, path, expect)


def decode_manifest_list_names(data: bytes, path: str, *, expect: Expected) -> list[ManifestRef]:
    """Name, size and entries of each manifest in a list: the lean path expiry and orphan
    cleaning need (they read the base list of every expiring snapshot)."""
    return manifest_refs(_rows(data, path, expect), path)


def manifest_refs(rows: Iterable[Mapping[str, Any]], path: str) -> list[ManifestRef]:
    """``decode_manifest_list_names`` of rows already decoded (``core.format.list_blocks``)."""
    out = []
    with _row_layout(path):
        for row in rows:
            name = row["_FILE_NAME"]
            if row.get("_VERSION", 2) != 2:
                _check_version(row, 2, path)
            if not isinstance(name, str) or "/" in name or "\\" in name or name in ("", ".", ".."):
                _plain_name(name, path)  # raises; the inline test keeps the usual case fast
            entries = int(row["_NUM_ADDED_FILES"]) + int(row["_NUM_DELETED_FILES"])
            out.append(ManifestRef(name, int(row["_FILE_SIZE"]), entries))
    return out


_projections: dict[str, dict[str, Any] | None] = {}


def _names_projection(writer: Mapping[str, Any]) -> dict[str, Any] | None:
    """The writer schema cut down to _VERSION, _FILE._FILE_NAME and _FILE._EXTRA_FILES:
    fastavro then skips everything else instead of building it. None if the layout is
    not the expected one (every field is then read)."""
    key = json.dumps(writer, sort_keys=True)
    if key in _projections:
        return _projections[key]
    projected: dict[str, Any] | None = None
    try:
        top = [f for f in writer["fields"] if f["name"] in ("_VERSION", "_FILE")]
        file_field = next(f for f in top if f["name"] == "_FILE")
        inner = dict(file_field["type"])
        inner["fields"] = [
            f for f in inner["fields"] if f["name"] in ("_FILE_NAME", "_EXTRA_FILES")
        ]
        if len(top) == 2 and len(inner["fields"]) == 2 and inner.get("type") == "record":
            projected = {
                **writer,
                "fields": [f if f is not file_field else {**f, "type": inner} for f in top],
            }
    except (KeyError, TypeError, StopIteration):
        projected = None
    _projections[key] = projected
    return projected


def decode_manifest_file_names(data: bytes, path: str, *, expect: Expected) -> list[str]:
    """Data and extra file names of every entry, ADD and DELETE alike: the used-name set
    of orphan cleaning, without building entries (about twice as fast)."""
    out: list[str] = []
    append = out.append
    with _row_layout(path):
        for row in _rows(data, path, expect, _names_projection):
            if row.get("_VERSION", 2) != 2:
                _check_version(row, 2, path)
            f = row["_FILE"]
            name = f["_FILE_NAME"]
            if not isinstance(name, str) or "/" in name or "\\" in name or name in ("", ".", ".."):
                _plain_name(name, path)  # raises; the inline test keeps the usual case fast
            append(name)
            extra = f.get("_EXTRA_FILES")
            if extra:
                out.extend(_plain_name(n, path) for n in extra)
    return out


def decode_manifest_list(data: bytes, path: str, *, expect: Expected) -> list[ManifestFileMeta]:
    return list(_decode(data, path, expect, _to_manifest_meta))


def decode_manifest(data: bytes, path: str, *, expect: Expected) -> Iterator[ManifestEntry]:
    return _decode(data, path, expect, _to_entry)


def decode_expire_entries(data: bytes, path: str, *, expect: Expected) -> Iterator[ExpireFileEntry]:
    """A manifest's entries as expiry reads them (kind and location only)."""
    return _decode(data, path, expect, _to_expire_entry)


def decode_index_manifest(data: bytes, path: str, *, expect: Expected) -> list[IndexManifestEntry]:
    return list(_decode(data, path, expect, _to_index_entry))


def merge_entries(entries: Iterable[ManifestEntry]) -> dict[Any, ManifestEntry]:
    """Replay ADD/DELETE entries in order, as Paimon's FileEntry.mergeEntries.

    An ADD cancels nothing and a later DELETE of the same identifier removes it; a DELETE
    with no earlier ADD stays in the result (callers decide what an unmatched DELETE means).
    """
    merged: dict[Any, ManifestEntry] = {}
    for entry in entries:
        key = entry.identifier
        if entry.kind is FileKind.ADD:
            merged[key] = entry
        elif key in merged:
            del merged[key]
        else:
            merged[key] = entry
    return merged


def live_entries(entries: Iterable[ManifestEntry]) -> list[ManifestEntry]:
    """The files a complete view (base + delta) holds: surviving ADD entries."""
    return [e for e in merge_entries(entries).values() if e.kind is FileKind.ADD]
