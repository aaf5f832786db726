"""Read and write Paimon data files with pyarrow (parquet, orc; avro through fastavro).

Physical layouts: append files hold the table's columns;
primary-key files hold ``_KEY_<pk>`` copies of the trimmed primary key (field id
1073741823 + id), ``_SEQUENCE_NUMBER`` (BIGINT NOT NULL, id 2147483646), ``_VALUE_KIND``
(TINYINT NOT NULL, id 2147483645), then every table column. Paimon's readers match
columns by name; parquet files also carry the field ids Java writes (``PARQUET:field_id``).

Stats follow Java's writers: value columns use ``metadata.stats-mode`` (default
``truncate(16)``), per-field ``fields.<f>.stats-mode`` and
``metadata.stats-keep-first-n-columns``; system columns (``_KEY_*``) use
``truncate(128)``; with ``metadata.stats-dense-store`` (default true) columns without stats
are left out and ``_VALUE_STATS_COLS`` names the rest (null when every column has stats).
"""

from __future__ import annotations

import datetime as dt
import io
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from core.errors import CorruptMetadataError, InvalidOptionError
from core.format import binary_row
from core.format.arrow_types import arrow_type
from core.format.codecs import require_avro_codec
from core.format.model import DataField
from core.format.options import TableOptions
from core.format.types import DataType

KEY_PREFIX = "_KEY_"
KEY_FIELD_ID_START = 2**31 // 2 - 1  # Integer.MAX_VALUE / 2 (SpecialFields)
SEQUENCE_NUMBER = "_SEQUENCE_NUMBER"
VALUE_KIND = "_VALUE_KIND"
SEQUENCE_NUMBER_ID = 2**31 - 2
VALUE_KIND_ID = 2**31 - 3
FORMATS = ("parquet", "orc", "avro")
SYSTEM_STATS_MODE = "truncate(128)"  # StatsCollectorFactories: system fields

_NO_MINMAX = frozenset({"ARRAY", "MAP", "ROW", "MULTISET", "VARIANT", "BLOB", "VECTOR"})


def unsupported_types(fields: Sequence[DataField], file_format: str = "parquet") -> list[str]:
    """Columns paimon-cli cannot write as Paimon (Java) writes them in ``file_format``,
    each with its type and why (core.format.physical)."""
    from core.format import physical

    columns = [physical.Column(f.name, f.type, f.id) for f in fields]
    return physical.refusals(columns, file_format)


def _field(name: str, t: DataType, field_id: int, *, nullable: bool | None = None) -> Any:
    import pyarrow as pa

    return pa.field(
        name,
        arrow_type(t),
        nullable=t.nullable if nullable is None else nullable,
        metadata={b"PARQUET:field_id": str(field_id).encode()},
    )


@dataclass(frozen=True, slots=True)
class FileLayout:
    """Physical columns of a data file: (name, type, field id), keys first for PK files.

    ``thin`` (``data-file.thin-mode``, Paimon 1.0+) leaves the ``_KEY_<pk>`` copies out of
    the files written: their values are the value columns of the same field ids. In memory
    (merging, statistics) a layout always has the key columns."""

    key_fields: tuple[DataField, ...]  # trimmed primary key, as _KEY_<name> columns
    value_fields: tuple[DataField, ...]
    primary_key: bool
    thin: bool = False

    @classmethod
    def of(
        cls, fields: Sequence[DataField], trimmed_pk: Sequence[str], *, thin: bool = False
    ) -> FileLayout:
        by_name = {f.name: f for f in fields}
        keys = tuple(by_name[k] for k in trimmed_pk)
        return cls(keys, tuple(fields), bool(trimmed_pk), thin and bool(trimmed_pk))

    @property
    def key_columns(self) -> list[str]:
        return [KEY_PREFIX + f.name for f in self.key_fields]

    def arrow_schema(self) -> Any:
        """The in-memory layout: key columns, system columns, value columns."""
        import pyarrow as pa

        out = [
            _field(KEY_PREFIX + f.name, f.type, KEY_FIELD_ID_START + f.id) for f in self.key_fields
        ]
        if self.primary_key:
            system = (
                (SEQUENCE_NUMBER, pa.int64(), SEQUENCE_NUMBER_ID),
                (VALUE_KIND, pa.int8(), VALUE_KIND_ID),
            )
            out += [
                pa.field(name, t, nullable=False, metadata={b"PARQUET:field_id": str(fid).encode()})
                for name, t, fid in system
            ]
        out += [_field(f.name, f.type, f.id) for f in self.value_fields]
        return pa.schema(out)

    def read_schema(self) -> Any:
        """What is read from any data file: everything but the key columns. Paimon master
        reads every key from the value column of its field id (FormatReaderMapping
        trimKeyFields), so thin and full files read alike."""
        schema = self.arrow_schema()
        for name in self.key_columns:
            schema = schema.remove(schema.get_field_index(name))
        return schema

    def with_keys(self, raw: Any) -> Any:
        """``raw`` (read with ``read_schema``) with the key columns, copied from the values."""
        for i, (f, name) in enumerate(zip(self.key_fields, self.key_columns, strict=True)):
            raw = raw.add_column(i, name, raw.column(f.name))
        return raw

    def columns(self) -> list[Any]:
        """The file's columns with Paimon types and field ids (core.format.physical.Column):
        a thin file has no key columns."""
        from core.format.physical import Column

        out = []
        if self.primary_key:
            if not self.thin:
                out += [
                    Column(KEY_PREFIX + f.name, f.type, KEY_FIELD_ID_START + f.id)
                    for f in self.key_fields
                ]
            out.append(Column(SEQUENCE_NUMBER, DataType("BIGINT", False), SEQUENCE_NUMBER_ID))
            out.append(Column(VALUE_KIND, DataType("TINYINT", False), VALUE_KIND_ID))
        return out + [Column(f.name, f.type, f.id) for f in self.value_fields]


def format_of(file_name: str) -> str:
    ext = file_name.rsplit(".", 1)[-1].lower()
    if ext not in FORMATS:
        raise InvalidOptionError(f"cannot read data file {file_name}: format {ext!r} unsupported")
    return ext


# -- reading ------------------------------------------------------------------------------------
def read_table(data: bytes, file_name: str, schema: Any) -> Any:
    """Decode one data file and conform it to ``schema`` (columns by name, Paimon types)."""
    return conform(read_raw(data, file_name, schema), schema)


def read_raw(data: bytes | str, file_name: str, schema: Any, *, use_threads: bool = True) -> Any:
    """Decode the columns of ``schema`` from one data file (its bytes, or a local path read
    in place without a copy), in the file's own types.

    ``use_threads=False`` decodes on the calling thread: callers that already read many
    small files in parallel (compaction tasks) would otherwise pay Arrow's thread-pool
    hand-off per file, which costs more than decoding a few KB."""
    import pyarrow as pa

    fmt = format_of(file_name)
    names = list(schema.names)
    if isinstance(data, str) and fmt == "avro":
        with open(data, "rb") as fh:
            data = fh.read()
    try:
        # A native file (not a path string): pyarrow would otherwise resolve a file system
        # for every path, which costs more than reading a small file.
        with pa.OSFile(data) if isinstance(data, str) else pa.BufferReader(data) as source:
            if fmt == "parquet":
                import pyarrow.parquet as pq

                # Columns by name (a file's own order and extra columns do not matter).
                raw = pq.ParquetFile(source).read(columns=names, use_threads=use_threads)
            elif fmt == "orc":
                import pyarrow.orc as orc

                raw = orc.ORCFile(source).read(columns=names)
            else:
                assert isinstance(data, bytes)  # avro paths were read just above
                raw = _read_avro(data, schema, file_name)
    except FileNotFoundError:
        raise
    except (OSError, ValueError, KeyError, pa.ArrowException) as exc:
        raise CorruptMetadataError(file_name, f"cannot read data file: {exc}") from exc
    return raw


def conform(raw: Any, schema: Any) -> Any:
    """Columns of ``raw`` in ``schema`` order and types (Java and Python writers differ)."""
    import pyarrow as pa

    columns = []
    for f in schema:
        col = raw.column(f.name)
        if col.type != f.type:
            if pa.types.is_timestamp(f.type) and pa.types.is_timestamp(col.type):
                col = col.cast(f.type, safe=False) if col.type.tz == f.type.tz else col
                if col.type != f.type:  # same instant, other zone label
                    col = col.cast(pa.timestamp(col.type.unit)).cast(f.type)
            else:
                col = _cast(col, f.type)
        columns.append(col)
    return pa.Table.from_arrays(columns, schema=schema)


def _cast(col: Any, t: Any) -> Any:
    import pyarrow as pa

    try:
        return col.cast(t)
    except pa.ArrowTypeError:
        if not pa.types.is_nested(t):
            raise
    # Readers (ORC) report nested fields nullable; Arrow refuses to cast to NOT NULL
    # children, so cast with nullable children, then rebuild (rare path).
    relaxed = col.cast(_relaxed(t))
    return pa.chunked_array([pa.array(relaxed.to_pylist(), t)], t)


def _relaxed(t: Any) -> Any:
    """``t`` with every nested field nullable."""
    import pyarrow as pa

    def field(f: Any) -> Any:
        return pa.field(f.name, _relaxed(f.type), nullable=True)

    if pa.types.is_map(t):
        return pa.map_(
            pa.field(t.key_field.name, _relaxed(t.key_type), nullable=False), field(t.item_field)
        )
    if pa.types.is_list(t):
        return pa.list_(field(t.value_field))
    if pa.types.is_struct(t):
        return pa.struct([field(t.field(i)) for i in range(t.num_fields)])
    return t


def _read_avro(data: bytes, schema: Any, file_name: str) -> Any:
    import fastavro

    from core.format.physical import avro_rows_to_arrow

    records = fastavro.reader(io.BytesIO(data))
    require_avro_codec(records.codec, file_name)
    return avro_rows_to_arrow(list(records), schema)


# -- writing ------------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class WriteOptions:
    """How Paimon would write a data file of this table (format, compression, stats)."""

    file_format: str
    compression: str
    zstd_level: int
    stats_mode: str
    field_stats_modes: Mapping[str, str]
    keep_first_n: int
    dense_stats: bool
    prefix: str

    @classmethod
    def of(cls, options: TableOptions, *, level: int) -> WriteOptions:
        fmt = (options.get("file.format") or "parquet").strip().lower()
        if fmt not in FORMATS:
            raise InvalidOptionError(
                f"file.format={fmt}: paimon-cli writes parquet, orc and avro data files only"
            )
        compression = (options.get("file.compression") or "zstd").strip().lower()
        mode = _stats_mode_for_level(options, level)
        field_modes = {}
        for key, value in {**options.table, **options.dynamic}.items():
            m = re.fullmatch(r"fields\.(.+)\.stats-mode", key)
            if m:
                field_modes[m.group(1)] = _check_mode(value, key)
        keep = options.get_int("metadata.stats-keep-first-n-columns")
        dense = options.get("metadata.stats-dense-store")
        return cls(
            file_format=fmt,
            compression=compression,
            zstd_level=options.get_int("file.compression.zstd-level") or 1,
            stats_mode=mode,
            field_stats_modes=field_modes,
            keep_first_n=-1 if keep is None else keep,
            dense_stats=True if dense is None else dense.strip().lower() == "true",
            prefix=options.get("data-file.prefix") or "data-",
        )


def _check_mode(value: str, key: str) -> str:
    mode = value.strip().lower()
    if mode in ("none", "counts", "full") or re.fullmatch(r"truncate\(\d+\)", mode):
        return mode
    raise InvalidOptionError(
        f"{key}={value!r} is not a stats mode (none, counts, full, truncate(N))"
    )


def _stats_mode_for_level(options: TableOptions, level: int) -> str:
    per_level = options.get("metadata.stats-mode.per.level") or ""
    for part in per_level.split(","):
        if ":" in part:
            lvl, mode = part.split(":", 1)
            if lvl.strip() == str(level):
                return _check_mode(mode, "metadata.stats-mode.per.level")
    return _check_mode(options.get("metadata.stats-mode") or "truncate(16)", "metadata.stats-mode")


def encode_file(table: Any, opts: WriteOptions, columns: Sequence[Any]) -> bytes:
    """Serialise an Arrow table (``columns``: its core.format.physical.Column list) in the table's
    format and compression, with the physical types Paimon's Java writers use."""
    from core.format import physical

    return physical.encode(table, columns, opts.file_format, opts.compression, opts.zstd_level)


# -- stats --------------------------------------------------------------------------------------
def _truncate_max_str(s: str, n: int) -> str | None:
    """TruncateSimpleColStatsCollector.truncateMax for strings (code points)."""
    if len(s) <= n:
        return s
    chars = list(s[:n])
    for i in range(n - 1, -1, -1):
        nxt = ord(chars[i]) + 1
        if nxt <= 0x10FFFF and not 0xD800 <= nxt <= 0xDFFF:
            return "".join(chars[:i]) + chr(nxt)
    return None


def _truncate_max_bytes(b: bytes, n: int) -> bytes | None:
    if len(b) <= n:
        return b
    head = bytearray(b[:n])
    for i in range(n - 1, -1, -1):
        if head[i] != 0xFF:
            head[i] += 1
            return bytes(head[: i + 1])
    return None


def _python_value(value: Any) -> Any:
    if isinstance(value, dt.datetime) and value.tzinfo is not None:
        return value.astimezone(dt.timezone.utc).replace(tzinfo=None)
    return value


def column_stats(column: Any, t: DataType, mode: str) -> tuple[Any, Any, int | None] | None:
    """(min, max, null count) of one column as Java's collector of ``mode`` reports it;
    None for mode ``none``."""
    import pyarrow.compute as pc

    if mode == "none":
        return None
    nulls = int(column.null_count)
    if mode == "counts" or t.root in _NO_MINMAX or nulls == len(column):
        return None, None, nulls
    mm = pc.min_max(column)
    low, high = _python_value(mm["min"].as_py()), _python_value(mm["max"].as_py())
    if isinstance(low, float) and (low != low or high != high):
        return None, None, nulls  # NaN: no usable bound
    m = re.fullmatch(r"truncate\((\d+)\)", mode)
    if m:
        n = int(m.group(1))
        if isinstance(low, str):
            low, high = low[:n], _truncate_max_str(high, n)
        elif isinstance(low, bytes):
            low, high = low[:n], _truncate_max_bytes(high, n)
        if high is None:
            return None, None, nulls
    return low, high, nulls


@dataclass(frozen=True, slots=True)
class Stats:
    """A SimpleStats record (``_MIN_VALUES``/``_MAX_VALUES``/``_NULL_COUNTS``) + stats cols."""

    record: dict[str, Any]
    cols: list[str] | None

    @staticmethod
    def empty() -> dict[str, Any]:
        return {
            "_MIN_VALUES": binary_row.encode([], []),
            "_MAX_VALUES": binary_row.encode([], []),
            "_NULL_COUNTS": [],
        }


def stats_of(
    table: Any,
    fields: Sequence[tuple[str, DataField]],
    modes: Sequence[str],
    *,
    dense: bool,
) -> Stats:
    """SimpleStatsConverter.toBinary over ``(column name, field)`` pairs."""
    results = [
        column_stats(table.column(col), f.type, mode)
        for (col, f), mode in zip(fields, modes, strict=True)
    ]
    if dense:
        kept = [(f, r) for (_, f), r in zip(fields, results, strict=True) if r is not None]
        cols = None if len(kept) == len(fields) else [f.name for f, _ in kept]
    else:
        kept = [(f, r or (None, None, None)) for (_, f), r in zip(fields, results, strict=True)]
        cols = None
    types = [_nullable(f.type) for f, _ in kept]
    record = {
        "_MIN_VALUES": binary_row.encode([r[0] for _, r in kept], types),
        "_MAX_VALUES": binary_row.encode([r[1] for _, r in kept], types),
        "_NULL_COUNTS": [r[2] for _, r in kept],
    }
    return Stats(record, cols)


def _nullable(t: DataType) -> DataType:
    return DataType(t.root, True, t.precision, t.scale, t.children, t.field_names)


def value_stats_modes(
    fields: Sequence[DataField], opts: WriteOptions, thin_keys: frozenset[str] = frozenset()
) -> list[str]:
    """StatsCollectorFactories.createStatsFactories for non-system columns. In a thin file
    the key's value columns (``thin_keys``) keep the system columns' ``truncate(128)``
    (they stand in for ``_KEY_*``) and do not count towards
    ``metadata.stats-keep-first-n-columns``."""
    modes = []
    count = 0
    for f in fields:
        if f.name in opts.field_stats_modes:
            modes.append(opts.field_stats_modes[f.name])
        elif f.name in thin_keys:
            modes.append(SYSTEM_STATS_MODE)
            continue
        elif opts.keep_first_n >= 0 and count >= opts.keep_first_n:
            modes.append("none")
        else:
            modes.append(opts.stats_mode)
        count += 1
    return modes


def key_row(table: Any, columns: Sequence[str], index: int, types: Sequence[DataType]) -> bytes:
    """BinaryRow of the key columns at ``index`` (``_MIN_KEY`` / ``_MAX_KEY``)."""
    values = [_python_value(table.column(c)[index].as_py()) for c in columns]
    return binary_row.encode(values, types)


def key_rows(table: Any, columns: Sequence[str], types: Sequence[DataType]) -> list[bytes]:
    """BinaryRow of the key columns of every row (bucket routing)."""
    values = [table.column(c).to_pylist() for c in columns]
    return [
        binary_row.encode([_python_value(v) for v in row], types)
        for row in zip(*values, strict=True)
    ]


__all__ = [
    "FORMATS",
    "KEY_PREFIX",
    "SEQUENCE_NUMBER",
    "SYSTEM_STATS_MODE",
    "VALUE_KIND",
    "FileLayout",
    "Stats",
    "WriteOptions",
    "arrow_type",
    "column_stats",
    "conform",
    "encode_file",
    "format_of",
    "key_row",
    "key_rows",
    "read_raw",
    "read_table",
    "stats_of",
    "unsupported_types",
    "value_stats_modes",
]
