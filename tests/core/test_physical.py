"""core.format.physical: data files get the physical layout Paimon's Java writers give each type."""

from __future__ import annotations

import io
from typing import Any

import fastavro
import pyarrow as pa
import pyarrow.orc as orc
import pyarrow.parquet as pq
import pytest
from support import type_matrix as tm

from core.format import physical
from core.format.data_files import FileLayout, conform, read_table, unsupported_types
from core.format.model import DataField
from core.format.types import parse_type


def _write(
    fmt: str, fields: list[DataField], *, pk: bool = False, n: int = 12
) -> tuple[bytes, Any]:
    """Encode ``n`` matrix rows in ``fmt`` (a PK layout with system columns if ``pk``)."""
    layout = FileLayout.of(fields, ["id"] if pk else [])
    data = tm.arrow_table(fields, 0, n)
    if pk:
        extra = {
            "_KEY_id": data.column("id"),
            "_SEQUENCE_NUMBER": pa.array(range(n), pa.int64()),
            "_VALUE_KIND": pa.array([0] * n, pa.int8()),
        }
        data = pa.table({**extra, **{c: data.column(c) for c in data.column_names}})
    data = conform(data, layout.arrow_schema())
    payload = physical.encode(data, layout.columns(), fmt, "zstd", 1)
    # What we write reads back, rows unchanged.
    assert read_table(payload, f"f.{fmt}", layout.arrow_schema()).equals(data)
    return payload, layout


def _parquet_columns(payload: bytes) -> dict[str, Any]:
    schema = pq.ParquetFile(io.BytesIO(payload)).schema
    return {schema.column(i).path: schema.column(i) for i in range(len(schema))}


@pytest.mark.parametrize("pk", [False, True])
def test_parquet_physical_types_are_javas(pk: bool) -> None:
    payload, _ = _write("parquet", tm.fields("parquet"), pk=pk)
    cols = _parquet_columns(payload)

    def phys(path: str) -> tuple[str, str]:
        c = cols[path]
        return c.physical_type, str(c.logical_type)

    assert phys("c_tinyint") == ("INT32", "Int(bitWidth=8, isSigned=true)")
    assert phys("c_smallint") == ("INT32", "Int(bitWidth=16, isSigned=true)")
    assert phys("c_dec5")[0] == "INT32" and phys("c_dec9")[0] == "INT32"
    assert phys("c_dec10")[0] == "INT64" and phys("c_dec18")[0] == "INT64"
    assert phys("c_dec30")[0] == "FIXED_LEN_BYTE_ARRAY" and cols["c_dec30"].length == 13
    for name in ("c_char", "c_varchar", "c_string"):
        assert phys(name) == ("BYTE_ARRAY", "String")
    for name in ("c_binary", "c_varbinary", "c_bytes"):
        assert phys(name) == ("BYTE_ARRAY", "None")
    assert phys("c_date") == ("INT32", "Date")
    for name in ("c_time", "c_time3"):
        assert phys(name) == ("INT32", "Time(isAdjustedToUTC=true, timeUnit=milliseconds)")
    for name, utc, unit in [
        ("c_ts0", "false", "milliseconds"),
        ("c_ts3", "false", "milliseconds"),
        ("c_ts6", "false", "microseconds"),
        ("c_ltz3", "true", "milliseconds"),
        ("c_ltz6", "true", "microseconds"),
        ("c_row.t", "false", "milliseconds"),
    ]:
        kind, logical = phys(name)
        assert kind == "INT64" and f"isAdjustedToUTC={utc}, timeUnit={unit}" in logical, name
    assert cols["c_ts6"].max_definition_level == 0  # NOT NULL: required
    # Nested layouts: list/element, key_value with a required key, MULTISET value INT32.
    assert "c_array.list.element" in cols
    assert cols["c_array_nn.list.element"].max_definition_level == 1  # required list + element
    assert "c_map.key_value.key" in cols and "c_map.key_value.value" in cols
    assert phys("c_map_int.key_value.value") == ("INT64", "Decimal(precision=10, scale=2)")
    assert phys("c_multiset.key_value.value") == ("INT32", "None")
    assert cols["c_multiset.key_value.value"].max_definition_level == 2  # required value
    assert "c_nested.list.element.v.list.element" in cols
    if pk:
        assert phys("_KEY_id") == ("INT32", "None")
        assert phys("_SEQUENCE_NUMBER") == ("INT64", "None")
        assert phys("_VALUE_KIND") == ("INT32", "Int(bitWidth=8, isSigned=true)")


def test_parquet_field_ids_follow_special_fields() -> None:
    payload, _ = _write("parquet", tm.fields("parquet"), pk=True)
    arrow = pq.read_schema(io.BytesIO(payload))

    def fid(f: pa.Field) -> int:
        return int(f.metadata[b"PARQUET:field_id"])

    ids = {f.name: f for f in arrow}
    assert fid(ids["_KEY_id"]) == 2**31 // 2 - 1 + 0
    assert fid(ids["_SEQUENCE_NUMBER"]) == 2**31 - 2
    assert fid(ids["_VALUE_KIND"]) == 2**31 - 3
    array = ids["c_array"]
    assert fid(array) == 28
    # SpecialFields: base Integer.MAX_VALUE / 4, 1024 ids per depth level.
    assert fid(array.type.value_field) == 2**31 // 4 - 1 + 28 * 1024 + 1
    m = ids["c_map"]
    assert fid(m.type.key_field) == 2**31 // 4 - 1 - 30 * 1024 - 1
    assert fid(m.type.item_field) == 2**31 // 4 - 1 + 30 * 1024 + 1
    row = ids["c_row"].type
    assert [fid(row.field(i)) for i in range(row.num_fields)] == [100, 101, 102]
    nested = ids["c_nested"].type.value_field.type  # the row inside the array
    inner = nested.field("v").type.value_field
    assert fid(inner) == 2**31 // 4 - 1 + 104 * 1024 + 1  # a row field starts at depth 0


def test_parquet_int96_for_precision_above_6() -> None:
    f = DataField(0, "ts", parse_type("TIMESTAMP(9)"))
    data = pa.table({"ts": pa.array([1_700_000_000_123_456_789, None], pa.timestamp("ns"))})
    payload = physical.encode(data, [physical.Column("ts", f.type, 0)], "parquet", "zstd", 1)
    assert _parquet_columns(payload)["ts"].physical_type == "INT96"
    back = read_table(payload, "f.parquet", FileLayout.of([f], []).arrow_schema())
    assert back.column("ts").to_pylist() == data.column("ts").to_pylist()


def test_parquet_refuses_int96_next_to_int64_timestamps() -> None:
    fields = [
        DataField(0, "a", parse_type("TIMESTAMP(9)")),
        DataField(1, "b", parse_type("TIMESTAMP(3)")),
    ]
    (problem,) = unsupported_types(fields, "parquet")
    assert problem.startswith("a (TIMESTAMP(9)): parquet INT96") and "(b)" in problem
    assert unsupported_types(fields[:1], "parquet") == []
    assert unsupported_types(fields, "orc") == []


@pytest.mark.parametrize("pk", [False, True])
def test_orc_physical_types_are_javas(pk: bool) -> None:
    payload, _ = _write("orc", tm.fields("orc"), pk=pk)
    schema = orc.ORCFile(io.BytesIO(payload)).schema
    types = {f.name: f.type for f in schema}
    assert types["c_tinyint"] == pa.int8() and types["c_smallint"] == pa.int16()
    assert types["c_time"] == pa.int32() and types["c_time3"] == pa.int32()  # millis of day
    assert types["c_dec10"] == pa.decimal128(10, 2)
    assert types["c_bytes"] == pa.binary()
    assert types["c_ts3"] == pa.timestamp("ns") and types["c_ts9"] == pa.timestamp("ns")
    assert types["c_ltz6"].tz is not None  # TIMESTAMP_INSTANT, as createTimestampInstant
    assert pa.types.is_map(types["c_map"]) and pa.types.is_struct(types["c_row"])
    if pk:
        assert types["_VALUE_KIND"] == pa.int8() and types["_SEQUENCE_NUMBER"] == pa.int64()


def test_orc_refuses_what_java_never_writes() -> None:
    problems = unsupported_types(tm.all_fields(), "orc")
    assert [p.split(" ")[0] for p in problems] == ["c_binary", "c_varbinary", "c_multiset"]
    assert all("orc" in p for p in problems)


def test_avro_schema_is_javas() -> None:
    payload, _ = _write("avro", tm.fields("avro"), pk=True)
    schema = fastavro.reader(io.BytesIO(payload)).writer_schema
    assert schema["name"] == physical.AVRO_RECORD
    fields = {f["name"]: f for f in schema["fields"]}

    def of(name: str) -> Any:
        t = fields[name]["type"]
        return t[1] if isinstance(t, list) else t

    assert fields["_VALUE_KIND"]["type"] == "int" and fields["_SEQUENCE_NUMBER"]["type"] == "long"
    assert fields["c_int"]["type"] == ["null", "int"] and fields["c_int"]["default"] is None
    assert of("c_time3")["logicalType"] == "time-millis"
    assert of("c_ts0")["logicalType"] == "timestamp-millis"
    assert of("c_ts6")["logicalType"] == "timestamp-micros"
    assert of("c_ltz3")["logicalType"] == "local-timestamp-millis"
    assert of("c_ltz6")["logicalType"] == "local-timestamp-micros"
    assert of("c_dec10") == {"type": "bytes", "logicalType": "decimal", "precision": 10, "scale": 2}
    assert of("c_map")["type"] == "map"  # string keys: an Avro map
    int_map = of("c_map_int")  # other keys: an array of key/value records
    assert int_map["type"] == "array" and int_map["logicalType"] == "map"
    assert int_map["items"]["name"] == physical.AVRO_RECORD + "_c_map_int"
    assert [f["name"] for f in int_map["items"]["fields"]] == ["key", "value"]
    assert of("c_row")["name"] == physical.AVRO_RECORD + "_c_row"
    multiset = of("c_multiset")  # string elements: a map of counts (nullable INT)
    assert multiset["type"] == "map" and multiset["values"] == ["null", "int"]


def test_avro_refuses_precisions_java_cannot_write() -> None:
    fields = [
        DataField(0, "ts", parse_type("TIMESTAMP(9)")),
        DataField(1, "t", parse_type("TIME(6)")),
        DataField(2, "ok", parse_type("TIME(3)")),
    ]
    problems = unsupported_types(fields, "avro")
    assert [p.split(" ")[0] for p in problems] == ["ts", "t"]


def test_multiset_round_trips_in_parquet_and_avro() -> None:
    field = next(f for f in tm.all_fields() if f.name == "c_multiset")
    fields = [next(f for f in tm.all_fields() if f.name == "id"), field]
    for fmt in ("parquet", "avro"):
        payload, layout = _write(fmt, fields)
        back = read_table(payload, f"f.{fmt}", layout.arrow_schema())
        assert dict(back.column("c_multiset")[0].as_py()) == {"m0": 2, "x": 1}
