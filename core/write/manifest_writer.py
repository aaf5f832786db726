"""Avro writers for manifests, manifest lists and index manifests, laid out as Java writes them.

Schemas follow Paimon's ``AvroSchemaConverter`` output for ``ManifestEntry``,
``ManifestFileMeta`` and ``IndexManifestEntry`` at Java master: top-level
record ``record`` in namespace ``org.apache.paimon.avro.generated``, nested records named
``record_<FIELD>`` along the path, nullable fields as ``["null", T]`` with default null.
Java master validates the top level of data manifests strictly; older Java (0.9+) and
pypaimon read by field name, so this one layout satisfies every reader.

Rows are plain dicts keyed by Paimon's field names. Entries copied from existing manifests
keep every field (stats, keys, sequence numbers) as read, so DELETE entries carry the full
file metadata as Paimon's own drop-partition commit does.
"""

from __future__ import annotations

import io
import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from core.errors import InvalidOptionError
from core.format import binary_row
from core.format.codecs import require_avro_codec
from core.format.manifest import decode_rows
from core.format.model import Expected
from core.format.types import DataType
from core.io.fileio import FileIO

logger = logging.getLogger(__name__)

_NS = "org.apache.paimon.avro.generated"
MANIFEST_VERSION = 2
INDEX_MANIFEST_VERSION = 1


def _nullable(t: Any) -> list[Any]:
    return ["null", t]


def _field(name: str, t: Any) -> dict[str, Any]:
    return {"name": name, "type": t}


def _opt(name: str, t: Any) -> dict[str, Any]:
    return {"name": name, "type": _nullable(t), "default": None}


def _fields(*pairs: tuple[str, Any]) -> list[dict[str, Any]]:
    """Required fields, in order: ``("_NAME", type)`` each."""
    return [_field(name, t) for name, t in pairs]


def _record(name: str, fields: Sequence[dict[str, Any]]) -> dict[str, Any]:
    return {"type": "record", "name": name, "fields": list(fields)}


def _top(fields: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The top-level record, named ``record`` in Paimon's namespace as Java names it."""
    return {"type": "record", "name": "record", "namespace": _NS, "fields": list(fields)}


def _array(items: Any) -> dict[str, Any]:
    return {"type": "array", "items": items}


def _stats(name: str) -> dict[str, Any]:
    # SimpleStats: _NULL_COUNTS is a nullable array of nullable longs.
    return _record(
        name,
        [
            *_fields(("_MIN_VALUES", "bytes"), ("_MAX_VALUES", "bytes")),
            _opt("_NULL_COUNTS", _array(["null", "long"])),
        ],
    )


_STRING_ARRAY = _array("string")
_FILE_NAME_SIZE = (("_FILE_NAME", "string"), ("_FILE_SIZE", "long"))

DATA_FILE_FIELDS: tuple[dict[str, Any], ...] = (
    *_fields(
        *_FILE_NAME_SIZE,
        ("_ROW_COUNT", "long"),
        ("_MIN_KEY", "bytes"),
        ("_MAX_KEY", "bytes"),
        ("_KEY_STATS", _stats("record__FILE__KEY_STATS")),
        ("_VALUE_STATS", _stats("record__FILE__VALUE_STATS")),
        ("_MIN_SEQUENCE_NUMBER", "long"),
        ("_MAX_SEQUENCE_NUMBER", "long"),
        ("_SCHEMA_ID", "long"),
        ("_LEVEL", "int"),
        ("_EXTRA_FILES", _STRING_ARRAY),
    ),
    _opt("_CREATION_TIME", {"type": "long", "logicalType": "timestamp-millis"}),
    _opt("_DELETE_ROW_COUNT", "long"),
    _opt("_EMBEDDED_FILE_INDEX", "bytes"),
    _opt("_FILE_SOURCE", "int"),
    _opt("_VALUE_STATS_COLS", _STRING_ARRAY),
    _opt("_EXTERNAL_PATH", "string"),
    _opt("_FIRST_ROW_ID", "long"),
    _opt("_WRITE_COLS", _STRING_ARRAY),
    _opt("_WRITE_COLS_SEQUENCES", _array("long")),
)

# The fields a data manifest entry and an index manifest entry both start with.
_ENTRY_HEAD = (("_VERSION", "int"), ("_KIND", "int"), ("_PARTITION", "bytes"), ("_BUCKET", "int"))

MANIFEST_ENTRY_SCHEMA: dict[str, Any] = _top(
    _fields(
        *_ENTRY_HEAD,
        ("_TOTAL_BUCKETS", "int"),
        ("_FILE", _record("record__FILE", DATA_FILE_FIELDS)),
    )
)

MANIFEST_FILE_META_SCHEMA: dict[str, Any] = _top(
    [
        *_fields(
            ("_VERSION", "int"),
            *_FILE_NAME_SIZE,
            ("_NUM_ADDED_FILES", "long"),
            ("_NUM_DELETED_FILES", "long"),
            ("_PARTITION_STATS", _stats("record__PARTITION_STATS")),
            ("_SCHEMA_ID", "long"),
        ),
        *(
            _opt(name, t)
            for name, t in (
                ("_MIN_BUCKET", "int"),
                ("_MAX_BUCKET", "int"),
                ("_MIN_LEVEL", "int"),
                ("_MAX_LEVEL", "int"),
                ("_MIN_ROW_ID", "long"),
                ("_MAX_ROW_ID", "long"),
            )
        ),
    ]
)

_DELETION_VECTOR_RANGE = _record(
    "record__DELETIONS_VECTORS_RANGES",
    [*_fields(("f0", "string"), ("f1", "int"), ("f2", "int")), _opt("_CARDINALITY", "long")],
)
_GLOBAL_INDEX = _record(
    "record__GLOBAL_INDEX",
    [
        *_fields(
            ("_ROW_RANGE_START", "long"), ("_ROW_RANGE_END", "long"), ("_INDEX_FIELD_ID", "int")
        ),
        _opt("_EXTRA_FIELD_IDS", _array("int")),
        _opt("_INDEX_META", "bytes"),
        _opt("_SOURCE_META", "bytes"),
    ],
)

INDEX_MANIFEST_ENTRY_SCHEMA: dict[str, Any] = _top(
    [
        *_fields(*_ENTRY_HEAD, ("_INDEX_TYPE", "string"), *_FILE_NAME_SIZE, ("_ROW_COUNT", "long")),
        _opt("_DELETIONS_VECTORS_RANGES", _array(["null", _DELETION_VECTOR_RANGE])),
        _opt("_EXTERNAL_PATH", "string"),
        _opt("_GLOBAL_INDEX", _GLOBAL_INDEX),
    ]
)

# manifest.compression -> Avro codec name (Paimon maps zstd to Avro's "zstandard").
_CODECS = {"zstd": "zstandard", "none": "null", "null": "null", "snappy": "snappy"}
_CODECS.update({"deflate": "deflate", "bzip2": "bzip2", "xz": "xz"})


def avro_codec(compression: str | None) -> str:
    """The Avro codec for a ``manifest.compression`` value."""
    key = (compression or "zstd").strip().lower()
    if key not in _CODECS:
        raise InvalidOptionError(
            f"manifest.compression {compression!r} has no Avro codec paimon-cli can write "
            f"(supported: {', '.join(sorted(_CODECS))})"
        )
    return _CODECS[key]


Conformer = Callable[[Any], Any]


def _identity(value: Any) -> Any:
    return value


def _compile(avro_type: Any) -> Conformer:
    """A function shaping a value read by any reader (Avro, ORC, Parquet; older versions)
    to ``avro_type``: missing nullable fields become null, unknown fields are dropped.
    Compiled once per schema: commits shape every carried-over manifest entry.

    A value already in shape (rows read back from a manifest written with this schema, as
    Paimon master and paimon-cli write them) is returned as it is, not copied: a
    compaction carries 10,000s of them over as DELETE entries. Callers must not mutate a
    shaped value."""
    if isinstance(avro_type, list):  # ["null", T]
        inner = _compile(avro_type[1])
        if inner is _identity:
            return _identity
        return lambda v: None if v is None else inner(v)
    if isinstance(avro_type, dict):
        kind = avro_type["type"]
        if kind == "record":
            return _compile_record(avro_type["fields"])
        if kind == "array":
            item = _compile(avro_type["items"])
            if item is _identity:
                return lambda v: v if type(v) is list else list(v or ())

            def array(value: Any) -> list[Any]:
                out = [item(x) for x in (value or ())]
                same = type(value) is list and all(a is b for a, b in zip(out, value, strict=True))
                return value if same else out

            return array
        return _identity
    if avro_type == "bytes":
        return lambda v: v if v is None or type(v) is bytes else bytes(v)
    return _identity


def _compile_record(avro_fields: Sequence[Mapping[str, Any]]) -> Conformer:
    fields = [(f["name"], _compile(f["type"])) for f in avro_fields]
    names = frozenset(name for name, _ in fields)
    shaped = [(name, fn) for name, fn in fields if fn is not _identity]

    def record(value: Any) -> dict[str, Any]:
        if type(value) is dict and value.keys() == names:
            out: dict[str, Any] = value
            for name, fn in shaped:
                old = value[name]
                new = fn(old)
                if new is not old:
                    if out is value:
                        out = dict(value)
                    out[name] = new
            return out
        get = (value or {}).get
        return {name: fn(get(name)) if fn is not _identity else get(name) for name, fn in fields}

    return record


_CONFORMERS: dict[int, Conformer] = {}


def _conform(value: Any, schema: Mapping[str, Any]) -> Any:
    fn = _CONFORMERS.get(id(schema))
    if fn is None:
        fn = _CONFORMERS[id(schema)] = _compile(schema)
    return fn(value)


def conform_entry(row: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = _conform(row, MANIFEST_ENTRY_SCHEMA)
    return out


def conform_manifest_meta(row: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = _conform(row, MANIFEST_FILE_META_SCHEMA)
    return out


def conform_index_entry(row: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = _conform(row, INDEX_MANIFEST_ENTRY_SCHEMA)
    return out


def encode_avro(schema: Mapping[str, Any], rows: Sequence[Mapping[str, Any]], codec: str) -> bytes:
    import fastavro

    require_avro_codec(codec, "writing Avro metadata (manifest.compression)")
    buf = io.BytesIO()
    fastavro.writer(buf, fastavro.parse_schema(dict(schema)), list(rows), codec=codec)
    return buf.getvalue()


def read_raw_rows(fileio: FileIO, path: str, *, expect: Expected) -> list[dict[str, Any]]:
    """Every row of a metadata file as a dict (any manifest format), checked against what
    its referrer records; rows the decoder already made dicts are not copied."""
    data = fileio.read_bytes(path)
    return [r if type(r) is dict else dict(r) for r in decode_rows(data, path, expect=expect)]


# -- manifest-list statistics -------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class WrittenFile:
    name: str
    path: str
    size: int


def partition_stats(partitions: Iterable[bytes], types: Sequence[DataType]) -> dict[str, Any]:
    """SimpleStats over one partition per entry: min, max and null count of every field.

    Strings compare as code points (= Paimon's UTF-8 byte order), numbers numerically; a
    too-narrow range would hide files from pruning readers, so every entry counts."""
    n = len(types)
    mins: list[Any] = [None] * n
    maxs: list[Any] = [None] * n
    nulls = [0] * n
    decoded: dict[bytes, tuple[Any, ...]] = {}
    for partition in partitions:
        if not n:
            continue
        values = decoded.get(partition)
        if values is None:
            values = decoded[partition] = binary_row.decode(partition, types)
        for i, v in enumerate(values):
            if v is None:
                nulls[i] += 1
                continue
            if mins[i] is None or v < mins[i]:
                mins[i] = v
            if maxs[i] is None or v > maxs[i]:
                maxs[i] = v
    return {
        "_MIN_VALUES": binary_row.encode(mins, types),
        "_MAX_VALUES": binary_row.encode(maxs, types),
        "_NULL_COUNTS": nulls,
    }


def manifest_meta(
    name: str,
    size: int,
    entries: Sequence[Mapping[str, Any]],
    partition_types: Sequence[DataType],
    *,
    latest_schema_id: int,
) -> dict[str, Any]:
    """The manifest-list row describing a manifest of ``entries`` (ManifestAvroWriter#result)."""
    added = sum(1 for e in entries if e["_KIND"] == 0)
    files = [e["_FILE"] for e in entries]
    row_ids = [(f["_FIRST_ROW_ID"], f["_ROW_COUNT"]) for f in files]
    known_row_ids = bool(row_ids) and all(first is not None for first, _ in row_ids)
    return {
        "_VERSION": MANIFEST_VERSION,
        "_FILE_NAME": name,
        "_FILE_SIZE": size,
        "_NUM_ADDED_FILES": added,
        "_NUM_DELETED_FILES": len(entries) - added,
        "_PARTITION_STATS": partition_stats((e["_PARTITION"] for e in entries), partition_types),
        "_SCHEMA_ID": max(f["_SCHEMA_ID"] for f in files) if files else latest_schema_id,
        "_MIN_BUCKET": min(e["_BUCKET"] for e in entries) if entries else None,
        "_MAX_BUCKET": max(e["_BUCKET"] for e in entries) if entries else None,
        "_MIN_LEVEL": min(f["_LEVEL"] for f in files) if files else None,
        "_MAX_LEVEL": max(f["_LEVEL"] for f in files) if files else None,
        "_MIN_ROW_ID": min(a for a, _ in row_ids) if known_row_ids else None,
        "_MAX_ROW_ID": max(a + c - 1 for a, c in row_ids) if known_row_ids else None,
    }


__all__ = [
    "INDEX_MANIFEST_ENTRY_SCHEMA",
    "INDEX_MANIFEST_VERSION",
    "MANIFEST_ENTRY_SCHEMA",
    "MANIFEST_FILE_META_SCHEMA",
    "MANIFEST_VERSION",
    "WrittenFile",
    "avro_codec",
    "conform_entry",
    "conform_index_entry",
    "conform_manifest_meta",
    "encode_avro",
    "manifest_meta",
    "partition_stats",
    "read_raw_rows",
]
