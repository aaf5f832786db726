"""The physical layout Apache Paimon's writers give each Paimon type, per file format.

Java's readers pick their column reader from the Paimon type, not from the file, so a data
file must carry exactly the physical types Java writes (Paimon 0.9 ``ParquetSchemaConverter``,
``OrcSplitReaderUtil.toOrcType``, ``AvroSchemaConverter``; field ids as Paimon 1.x adds them):

- Parquet: DECIMAL precision <= 9 INT32, <= 18 INT64, else FIXED_LEN_BYTE_ARRAY (minimal
  bytes); TIMESTAMP(_LTZ) precision <= 3 INT64 millis, <= 6 INT64 micros, > 6 INT96; TIME INT32
  millis; TINYINT/SMALLINT INT32 int(8/16); CHAR/VARCHAR BINARY UTF8; ARRAY ``list/element``,
  MAP and MULTISET ``key_value`` (key required; MULTISET value INT32 required). Field ids on
  every column, nested ids from SpecialFields (array element, map key/value).
- ORC: TIME as int (millis of day); only BYTES among binary types; no MULTISET.
- Avro: nullable as ``["null", T]``; LTZ as ``local-timestamp-*``; MAP with CHAR/VARCHAR
  keys as an Avro map, others (and MULTISET) as an array of ``{key, value}`` records;
  timestamps up to precision 6, TIME up to precision 3.

What pyarrow cannot write that way is refused before anything is written (``refusals``).
"""

from __future__ import annotations

import datetime as dt
import io
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from core.format.arrow_types import arrow_type as logical
from core.format.codecs import require_avro_codec
from core.format.types import DataType

AVRO_RECORD = "org.apache.paimon.avro.generated.record"
_STRUCTURED_ID_BASE = 2**31 // 4 - 1  # SpecialFields.STRUCTURED_TYPE_FIELD_ID_BASE (MAX / 4)
_DEPTH_LIMIT = 1 << 10
_NEVER = frozenset({"VARIANT", "BLOB", "VECTOR"})
_BYTES_LENGTH = 2**31 - 1  # VarBinaryType.MAX_LENGTH: VARBINARY of this length is BYTES


@dataclass(frozen=True, slots=True)
class Column:
    """One top-level column of a data file: name, Paimon type, field id."""

    name: str
    type: DataType
    field_id: int


def _int32(value: int) -> int:
    """Java int arithmetic (SpecialFields computes nested ids in int and may wrap)."""
    return (value + 2**31) % 2**32 - 2**31


def array_element_id(field_id: int, depth: int) -> int:
    return _int32(_STRUCTURED_ID_BASE + field_id * _DEPTH_LIMIT + depth)


def map_key_id(field_id: int, depth: int) -> int:
    return _int32(_STRUCTURED_ID_BASE - field_id * _DEPTH_LIMIT - depth)


def map_value_id(field_id: int, depth: int) -> int:
    return _int32(_STRUCTURED_ID_BASE + field_id * _DEPTH_LIMIT + depth)


def _walk(t: DataType) -> Iterator[DataType]:
    yield t
    for child in t.children:
        yield from _walk(child)


def _is_timestamp(t: DataType) -> bool:
    return t.root in ("TIMESTAMP", "TIMESTAMP_LTZ")


def _precision(t: DataType) -> int:
    return 6 if t.precision is None else t.precision


# -- refusals -----------------------------------------------------------------------------------
def refusals(columns: Sequence[Column], fmt: str) -> list[str]:
    """Why files of ``fmt`` with these columns cannot be written as Java writes them
    (``column (TYPE): reason``); empty when they can."""
    out: list[str] = []
    for c in columns:
        for t in _walk(c.type):
            reason = _refusal(t, fmt)
            if reason:
                out.append(f"{c.name} ({c.type}): {reason}")
                break
    if fmt == "parquet":
        # pyarrow writes INT96 for every timestamp column of a file or for none.
        wide = [
            c for c in columns if any(_is_timestamp(t) and _precision(t) > 6 for t in _walk(c.type))
        ]
        narrow = [
            c
            for c in columns
            if any(_is_timestamp(t) and _precision(t) <= 6 for t in _walk(c.type))
        ]
        if wide and narrow:
            out += [
                f"{c.name} ({c.type}): parquet INT96 timestamps cannot be written next to "
                f"timestamps of precision <= 6 ({narrow[0].name})"
                for c in wide
            ]
    return out


def _refusal(t: DataType, fmt: str) -> str | None:
    if t.root in _NEVER:
        return f"{t.root} columns are not written by paimon-cli"
    if fmt == "orc":
        if t.root == "MULTISET":
            return "Paimon writes no MULTISET columns in orc"
        if t.root == "BINARY" or (t.root == "VARBINARY" and t.precision != _BYTES_LENGTH):
            return "Paimon writes only BYTES among binary types in orc"
    if fmt == "avro":
        if _is_timestamp(t) and _precision(t) > 6:
            return "Paimon writes avro timestamps up to precision 6"
        if t.root == "TIME" and (t.precision or 0) > 3:
            return "Paimon writes avro TIME up to precision 3"
    return None


# -- arrow types --------------------------------------------------------------------------------
def arrow_type(t: DataType, fmt: str, field_id: int | None = None, depth: int = 0) -> Any:
    """The Arrow type pyarrow must be handed to write ``t`` as Java does in ``fmt``; for
    parquet nested fields carry their ids (``field_id`` is the top-level column's)."""
    import pyarrow as pa

    def child(name: str, c: DataType, cid: int | None, *, nullable: bool) -> Any:
        meta = None if cid is None or fmt != "parquet" else {b"PARQUET:field_id": str(cid).encode()}
        return pa.field(
            name, arrow_type(c, fmt, field_id, depth + 1), nullable=nullable, metadata=meta
        )

    root = t.root
    if root == "TIME" and fmt == "orc":
        return pa.int32()
    if root == "ARRAY":
        (element,) = t.children
        eid = None if field_id is None else array_element_id(field_id, depth + 1)
        return pa.list_(child("element", element, eid, nullable=element.nullable))
    if root in ("MAP", "MULTISET"):
        key = t.children[0]
        value = t.children[1] if root == "MAP" else DataType("INT", False)
        kid = None if field_id is None else map_key_id(field_id, depth + 1)
        vid = None if field_id is None else map_value_id(field_id, depth + 1)
        return pa.map_(
            child("key", key, kid, nullable=False),
            child("value", value, vid, nullable=value.nullable),
        )
    if root == "ROW":
        ids = t.field_ids or (None,) * len(t.children)
        fields = []
        for name, c, cid in zip(t.field_names, t.children, ids, strict=True):
            meta = (
                None
                if cid is None or fmt != "parquet"
                else {b"PARQUET:field_id": str(cid).encode()}
            )
            # Fields of a row start their own id space (depth 0), as Java converts DataFields.
            fields.append(
                pa.field(name, arrow_type(c, fmt, cid, 0), nullable=c.nullable, metadata=meta)
            )
        return pa.struct(fields)
    return logical(t)


def arrow_schema(columns: Sequence[Column], fmt: str) -> Any:
    import pyarrow as pa

    fields = []
    for c in columns:
        meta = {b"PARQUET:field_id": str(c.field_id).encode()} if fmt == "parquet" else None
        fields.append(
            pa.field(
                c.name, arrow_type(c.type, fmt, c.field_id), nullable=c.type.nullable, metadata=meta
            )
        )
    return pa.schema(fields)


# -- encoding -----------------------------------------------------------------------------------
def encode(
    table: Any, columns: Sequence[Column], fmt: str, compression: str, zstd_level: int
) -> bytes:
    """Serialise ``table`` (columns in ``columns`` order, Paimon's Arrow types) as Java would
    write the file. Callers have checked ``refusals`` first."""
    import pyarrow as pa

    if fmt == "avro":
        return _encode_avro(table, columns, compression)
    physical = table.cast(arrow_schema(columns, fmt))
    sink = pa.BufferOutputStream()
    if fmt == "parquet":
        import pyarrow.parquet as pq

        kwargs: dict[str, Any] = {}
        if compression == "zstd":
            kwargs["compression_level"] = zstd_level
        int96 = any(_is_timestamp(t) and _precision(t) > 6 for c in columns for t in _walk(c.type))
        pq.write_table(
            physical,
            sink,
            compression="none" if compression in ("none", "uncompressed") else compression,
            store_decimal_as_integer=True,
            use_deprecated_int96_timestamps=int96,
            **kwargs,
        )
    else:
        import pyarrow.orc as orc

        codec = "uncompressed" if compression in ("none", "uncompressed") else compression
        orc.write_table(physical, sink, compression=codec)
    data: bytes = sink.getvalue().to_pybytes()
    return data


# -- avro ---------------------------------------------------------------------------------------
def _avro_is_array_map(t: DataType) -> bool:
    return t.children[0].root not in ("CHAR", "VARCHAR", "STRING")


def avro_type(t: DataType, row_name: str = AVRO_RECORD) -> Any:
    """AvroSchemaConverter.convertToSchema: ``row_name`` names nested records."""
    plain = _avro_plain(t, row_name)
    return ["null", plain] if t.nullable else plain


def _avro_plain(t: DataType, row_name: str) -> Any:
    root = t.root
    simple = {
        "BOOLEAN": "boolean",
        "TINYINT": "int",
        "SMALLINT": "int",
        "INT": "int",
        "BIGINT": "long",
        "FLOAT": "float",
        "DOUBLE": "double",
        "CHAR": "string",
        "VARCHAR": "string",
        "STRING": "string",
        "BINARY": "bytes",
        "VARBINARY": "bytes",
        "BYTES": "bytes",
    }
    if root in simple:
        return simple[root]
    if root == "DATE":
        return {"type": "int", "logicalType": "date"}
    if root == "TIME":
        return {"type": "int", "logicalType": "time-millis"}
    if root == "DECIMAL":
        return {
            "type": "bytes",
            "logicalType": "decimal",
            "precision": t.precision,
            "scale": t.scale,
        }
    if _is_timestamp(t):
        unit = "millis" if _precision(t) <= 3 else "micros"
        prefix = "local-timestamp" if root == "TIMESTAMP_LTZ" else "timestamp"
        return {"type": "long", "logicalType": f"{prefix}-{unit}"}
    if root == "ROW":
        fields = []
        for name, c in zip(t.field_names, t.children, strict=True):
            f: dict[str, Any] = {"name": name, "type": avro_type(c, f"{row_name}_{name}")}
            if c.nullable:
                f["default"] = None
            fields.append(f)
        return {"type": "record", "name": row_name, "fields": fields}
    if root == "ARRAY":
        return {"type": "array", "items": avro_type(t.children[0], row_name)}
    if root in ("MAP", "MULTISET"):
        key = t.children[0]
        value = t.children[1] if root == "MAP" else DataType("INT")
        if not _avro_is_array_map(t):
            return {"type": "map", "values": avro_type(value, row_name)}
        value_field: dict[str, Any] = {
            "name": "value",
            "type": avro_type(value, f"{row_name}_value"),
        }
        if value.nullable:
            value_field["default"] = None
        record = {
            "type": "record",
            "name": row_name,
            "fields": [{"name": "key", "type": avro_type(key, f"{row_name}_key")}, value_field],
        }
        return {"type": "array", "items": record, "logicalType": "map"}
    raise ValueError(f"no avro layout for {t}")


def avro_schema(columns: Sequence[Column]) -> dict[str, Any]:
    """The record schema of a data file (top-level record ``AVRO_RECORD``, not nullable)."""
    row = DataType(
        "ROW",
        False,
        children=tuple(c.type for c in columns),
        field_names=tuple(c.name for c in columns),
    )
    schema: dict[str, Any] = _avro_plain(row, AVRO_RECORD)
    return schema


def _avro_value(value: Any, t: DataType) -> Any:
    """An Arrow ``as_py`` value in the shape fastavro writes for ``t``'s Avro layout."""
    if value is None:
        return None
    root = t.root
    if root == "TIMESTAMP_LTZ" and isinstance(value, dt.datetime) and value.tzinfo is not None:
        return value.astimezone(dt.timezone.utc).replace(tzinfo=None)
    if root == "ARRAY":
        return [_avro_value(v, t.children[0]) for v in value]
    if root == "ROW":
        return {
            name: _avro_value(value.get(name), c)
            for name, c in zip(t.field_names, t.children, strict=True)
        }
    if root in ("MAP", "MULTISET"):
        key = t.children[0]
        vt = t.children[1] if root == "MAP" else DataType("INT")
        pairs = [(_avro_value(k, key), _avro_value(v, vt)) for k, v in value]
        if _avro_is_array_map(t):
            return [{"key": k, "value": v} for k, v in pairs]
        return dict(pairs)
    return value


def _needs_reshape(t: DataType) -> bool:
    return any(x.root in ("TIMESTAMP_LTZ", "MAP", "MULTISET") for x in _walk(t))


_AVRO_CODECS = {"zstd": "zstandard", "none": "null", "uncompressed": "null"}


def _encode_avro(table: Any, columns: Sequence[Column], compression: str) -> bytes:
    import fastavro

    schema = fastavro.parse_schema(avro_schema(columns))
    reshape = [c for c in columns if _needs_reshape(c.type)]

    def records() -> Iterator[dict[str, Any]]:
        for row in table.to_pylist():
            for c in reshape:
                row[c.name] = _avro_value(row[c.name], c.type)
            yield row

    codec = _AVRO_CODECS.get(compression, compression)
    require_avro_codec(codec, "writing Avro data files (file.compression)")
    buf = io.BytesIO()
    fastavro.writer(buf, schema, records(), codec=codec)
    return buf.getvalue()


def avro_rows_to_arrow(rows: list[Any], schema: Any) -> Any:
    """Avro records (fastavro) as an Arrow table of ``schema``: array-shaped maps
    (``[{key, value}]``) become Arrow maps."""
    import pyarrow as pa

    def fix(value: Any, t: Any) -> Any:
        if value is None:
            return None
        if pa.types.is_map(t):
            items = (
                value.items()
                if isinstance(value, dict)
                else ((e["key"], e["value"]) for e in value)
            )
            return [(fix(k, t.key_type), fix(v, t.item_type)) for k, v in items]
        if pa.types.is_list(t):
            return [fix(v, t.value_type) for v in value]
        if pa.types.is_struct(t):
            return {f.name: fix(value.get(f.name), f.type) for f in t}
        return value

    nested = [f for f in schema if pa.types.is_nested(f.type)]
    if nested:
        for row in rows:
            for f in nested:
                row[f.name] = fix(row.get(f.name), f.type)
    plain = pa.schema([pa.field(f.name, f.type) for f in schema])
    return pa.Table.from_pylist(rows, schema=plain)


__all__ = [
    "AVRO_RECORD",
    "Column",
    "array_element_id",
    "arrow_schema",
    "arrow_type",
    "avro_schema",
    "avro_type",
    "avro_rows_to_arrow",
    "encode",
    "map_key_id",
    "map_value_id",
    "refusals",
]
