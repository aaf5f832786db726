"""Paimon data types as stored in schema JSON (`"INT NOT NULL"`, `{"type": "ARRAY", ...}`)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from core.errors import CorruptMetadataError

_ATOMIC = re.compile(
    r"^(?P<root>[A-Z_]+(?: [A-Z_]+)*?)\s*(?:\((?P<args>[^)]*)\))?"
    r"(?P<ltz> WITH LOCAL TIME ZONE)?(?P<notnull> NOT NULL)?$"
)


# Type families (Paimon's DataTypeFamily), by root name
CHARACTER_STRINGS = frozenset({"CHAR", "VARCHAR", "STRING"})
BINARY_STRINGS = frozenset({"BINARY", "VARBINARY", "BYTES"})
INTEGERS = frozenset({"TINYINT", "SMALLINT", "INT", "BIGINT"})
FLOATS = frozenset({"FLOAT", "DOUBLE"})
DATETIMES = frozenset({"DATE", "TIME", "TIMESTAMP", "TIMESTAMP_LTZ"})


@dataclass(frozen=True, slots=True)
class DataType:
    """A parsed type: ``root`` is Paimon's type name (``TIMESTAMP_LTZ`` for local-zone)."""

    root: str
    nullable: bool = True
    precision: int | None = None
    scale: int | None = None
    children: tuple[DataType, ...] = ()
    field_names: tuple[str, ...] = ()
    field_ids: tuple[int, ...] = ()  # ROW fields' ids (parquet field ids of nested fields)

    def __str__(self) -> str:
        text = self.root
        if self.root == "DECIMAL":
            text = f"DECIMAL({self.precision}, {self.scale})"
        elif self.precision is not None:
            text = f"{self.root}({self.precision})"
        return text if self.nullable else f"{text} NOT NULL"


_DEFAULT_PRECISION = {"TIMESTAMP": 6, "TIMESTAMP_LTZ": 6, "TIME": 0, "DECIMAL": 10}


def parse_type(raw: Any, *, where: str = "schema") -> DataType:
    """Parse a schema JSON type (string or object)."""
    if isinstance(raw, dict):
        kind = str(raw.get("type", ""))
        nullable = not kind.endswith(" NOT NULL")
        root = kind.removesuffix(" NOT NULL").strip()
        if root in ("ARRAY", "MULTISET"):
            return DataType(root, nullable, children=(parse_type(raw.get("element"), where=where),))
        if root == "MAP":
            key = parse_type(raw.get("key"), where=where)
            value = parse_type(raw.get("value"), where=where)
            return DataType(root, nullable, children=(key, value))
        if root == "ROW":
            fields = raw.get("fields") or []
            return DataType(
                root,
                nullable,
                children=tuple(parse_type(f.get("type"), where=where) for f in fields),
                field_names=tuple(str(f.get("name")) for f in fields),
                field_ids=tuple(int(f["id"]) for f in fields if "id" in f)
                if all("id" in f for f in fields)
                else (),
            )
        if root == "VECTOR":
            return DataType(
                root,
                nullable,
                precision=int(raw.get("length", 0)),
                children=(parse_type(raw.get("element"), where=where),),
            )
        raise CorruptMetadataError(where, f"unknown complex type {kind!r}")
    if not isinstance(raw, str):
        raise CorruptMetadataError(where, f"bad type {raw!r}")
    m = _ATOMIC.match(raw.strip().upper())
    if not m:
        raise CorruptMetadataError(where, f"unknown type {raw!r}")
    root = m.group("root")
    args = [a.strip() for a in (m.group("args") or "").split(",") if a.strip()]
    if m.group("ltz"):
        root = "TIMESTAMP_LTZ" if root == "TIMESTAMP" else root
    root = {
        "TIMESTAMP_WITH_LOCAL_TIME_ZONE": "TIMESTAMP_LTZ",
        "INTEGER": "INT",
        "DEC": "DECIMAL",
        "NUMERIC": "DECIMAL",
    }.get(root, root)
    precision = int(args[0]) if args else _DEFAULT_PRECISION.get(root)
    scale = int(args[1]) if len(args) > 1 else (0 if root == "DECIMAL" else None)
    return DataType(root, m.group("notnull") is None, precision, scale)
