"""One column of every Paimon type, with values: the type matrix of compaction's writers.

``COLUMNS`` are (name, schema-JSON type) pairs as Paimon stores them; ``rows(start, n)``
builds rows for them (nulls in every nullable column on some rows); ``fields(fmt)`` keeps
the columns Paimon writes in ``fmt`` (core.format.physical refuses the rest).
"""

from __future__ import annotations

import datetime as dt
import decimal
from typing import Any

from core.format import physical
from core.format.model import DataField
from core.format.types import parse_type

UTC = dt.timezone.utc

COLUMNS: list[tuple[str, Any]] = [
    ("id", "INT NOT NULL"),
    ("c_bool", "BOOLEAN"),
    ("c_tinyint", "TINYINT"),
    ("c_smallint", "SMALLINT"),
    ("c_int", "INT"),
    ("c_bigint", "BIGINT NOT NULL"),
    ("c_float", "FLOAT"),
    ("c_double", "DOUBLE"),
    ("c_dec5", "DECIMAL(5, 2)"),
    ("c_dec9", "DECIMAL(9, 0)"),
    ("c_dec10", "DECIMAL(10, 2)"),
    ("c_dec18", "DECIMAL(18, 4)"),
    ("c_dec30", "DECIMAL(30, 6)"),
    ("c_char", "CHAR(5)"),
    ("c_varchar", "VARCHAR(20)"),
    ("c_string", "STRING"),
    ("c_binary", "BINARY(4)"),
    ("c_varbinary", "VARBINARY(10)"),
    ("c_bytes", "BYTES"),
    ("c_date", "DATE"),
    ("c_time", "TIME(0)"),
    ("c_time3", "TIME(3)"),
    ("c_ts0", "TIMESTAMP(0)"),
    ("c_ts3", "TIMESTAMP(3)"),
    ("c_ts6", "TIMESTAMP(6) NOT NULL"),
    ("c_ts9", "TIMESTAMP(9)"),
    ("c_ltz3", "TIMESTAMP(3) WITH LOCAL TIME ZONE"),
    ("c_ltz6", "TIMESTAMP(6) WITH LOCAL TIME ZONE"),
    ("c_array", {"type": "ARRAY", "element": "INT"}),
    ("c_array_nn", {"type": "ARRAY NOT NULL", "element": "STRING NOT NULL"}),
    ("c_map", {"type": "MAP", "key": "STRING NOT NULL", "value": "BIGINT"}),
    ("c_map_int", {"type": "MAP", "key": "INT NOT NULL", "value": "DECIMAL(10, 2)"}),
    (
        "c_row",
        {
            "type": "ROW",
            "fields": [
                {"id": 100, "name": "a", "type": "INT NOT NULL"},
                {"id": 101, "name": "b", "type": "STRING"},
                {"id": 102, "name": "t", "type": "TIMESTAMP(3)"},
            ],
        },
    ),
    (
        "c_nested",
        {
            "type": "ARRAY",
            "element": {
                "type": "ROW",
                "fields": [
                    {"id": 103, "name": "k", "type": "STRING"},
                    {"id": 104, "name": "v", "type": {"type": "ARRAY", "element": "DOUBLE"}},
                ],
            },
        },
    ),
    ("c_multiset", {"type": "MULTISET", "element": "STRING NOT NULL"}),
]


def all_fields() -> list[DataField]:
    return [DataField(i, name, parse_type(raw)) for i, (name, raw) in enumerate(COLUMNS)]


def fields(fmt: str, *, multiset: bool = True) -> list[DataField]:
    """The columns Paimon writes in ``fmt`` (refused ones and, for parquet, the INT96
    timestamp that cannot share a file with the others, left out)."""
    out = []
    for f in all_fields():
        if not multiset and f.type.root == "MULTISET":
            continue
        if fmt == "parquet" and f.name == "c_ts9":
            continue
        if not physical.refusals([physical.Column(f.name, f.type, f.id)], fmt):
            out.append(f)
    return out


def value(name: str, i: int) -> Any:
    """Row ``i``'s value of column ``name``; None on some rows for nullable columns."""
    day = dt.date(2024, 1, 1) + dt.timedelta(days=i)
    wall = dt.datetime(2024, 3, 1, 12, 30, 15, 123456) + dt.timedelta(hours=i, microseconds=i)
    values: dict[str, Any] = {
        "id": i,
        "c_bool": i % 2 == 0,
        "c_tinyint": (i % 200) - 100,
        "c_smallint": i * 7 - 3000,
        "c_int": i * 1000 - 7,
        "c_bigint": i * 10**12 + 5,
        "c_float": float(i) + 0.5,
        "c_double": i / 4.0,
        "c_dec5": decimal.Decimal(f"{i % 999}.25"),
        "c_dec9": decimal.Decimal(123456789 - i),
        "c_dec10": decimal.Decimal(f"{12345678 + i}.99"),
        "c_dec18": decimal.Decimal(f"{10**13 + i}.1234"),
        "c_dec30": decimal.Decimal(f"{10**23 + i}.654321"),
        "c_char": f"c{i % 1000:04d}",
        "c_varchar": f"v-{i}-é",
        "c_string": f"s{i}" * (1 + i % 3),
        "c_binary": i.to_bytes(4, "big"),
        "c_varbinary": bytes([i % 256]) * (1 + i % 5),
        "c_bytes": f"b{i}".encode(),
        "c_date": day,
        "c_time": dt.time(i % 24, 15, 30),
        "c_time3": dt.time(i % 24, 15, 30, 250000),
        "c_ts0": wall.replace(microsecond=0),
        "c_ts3": wall.replace(microsecond=wall.microsecond // 1000 * 1000),
        "c_ts6": wall,
        "c_ts9": wall,
        "c_ltz3": wall.replace(microsecond=wall.microsecond // 1000 * 1000, tzinfo=UTC),
        "c_ltz6": wall.replace(tzinfo=UTC),
        "c_array": [i, None, i + 1] if i % 3 else [],
        "c_array_nn": [f"e{i}", f"e{i + 1}"],
        "c_map": {f"k{i}": i, "z": None},
        "c_map_int": {i: decimal.Decimal("1.50"), i + 1: None},
        "c_row": {"a": i, "b": None if i % 2 else f"r{i}", "t": wall.replace(microsecond=0)},
        "c_nested": [{"k": f"n{i}", "v": [0.5, float(i)]}, {"k": None, "v": None}],
        "c_multiset": {f"m{i % 3}": 2, "x": 1},
    }
    v = values[name]
    nullable = dict(COLUMNS)[name]
    nn = (nullable if isinstance(nullable, str) else nullable["type"]).endswith("NOT NULL")
    return None if (not nn and i % 5 == 4) else v


def rows(fs: list[DataField], start: int, n: int) -> list[dict[str, Any]]:
    return [{f.name: value(f.name, i) for f in fs} for i in range(start, start + n)]


def arrow_table(fs: list[DataField], start: int, n: int) -> Any:
    """Rows as an Arrow table of Paimon's Arrow types (maps as key/value pairs)."""
    import pyarrow as pa

    from core.format.arrow_types import arrow_type

    schema = pa.schema([pa.field(f.name, arrow_type(f.type), nullable=f.type.nullable) for f in fs])
    data = rows(fs, start, n)
    for row in data:
        for f in fs:
            if f.type.root in ("MAP", "MULTISET") and row[f.name] is not None:
                row[f.name] = list(row[f.name].items())
    return pa.Table.from_pylist(data, schema=schema)
