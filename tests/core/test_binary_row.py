"""BinaryRow decoding/encoding against real partition bytes Apache Paimon (Java) writes."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest

from core.errors import CorruptMetadataError
from core.format import binary_row
from core.format.types import parse_type

STR, INT = parse_type("STRING"), parse_type("INT")


def h(text: str) -> bytes:
    return bytes.fromhex(text.replace(" ", ""))


@pytest.mark.parametrize(
    ("raw", "types", "values"),
    [
        (
            h(
                "00000002 0000000000000000 0a00000018000000 0100000000000000"
                "323032342d30312d 3031000000000000"
            ),
            [STR, INT],
            ("2024-01-01", 1),
        ),
        (
            h("00000002 0000000000000000 612f622063 3d6487 0300000000000000"),
            [STR, INT],
            ("a/b c=d", 3),
        ),
        (
            h("00000002 0003000000000000 0000000000000000 0000000000000000"),
            [STR, INT],
            (None, None),
        ),
        (
            h(
                "00000004 0000000000000000 894d000000000000 f9ffffff00000000 0100000000000000"
                "cb04fb711f010000"
            ),
            [parse_type("DATE"), INT, parse_type("BOOLEAN"), parse_type("BIGINT")],
            (dt.date(2024, 5, 6), -7, True, 1234567890123),
        ),
        (h("00000001 0000000000000000 0000000000000080"), [STR], ("",)),
        (h("00000001 0000000000000000 2000000000000081"), [STR], (" ",)),
    ],
)
def test_decode_and_encode_match_real_bytes(raw: bytes, types: list, values: tuple) -> None:
    assert binary_row.decode(raw, types) == values
    assert binary_row.encode(values, types) == raw


@pytest.mark.parametrize(
    ("type_text", "value"),
    [
        ("TINYINT", -5),
        ("SMALLINT", 300),
        ("FLOAT", 1.5),
        ("DOUBLE", -2.25),
        ("DECIMAL(10, 2)", Decimal("12.34")),
        ("DECIMAL(38, 4)", Decimal("-123456789012345678.1234")),
        ("TIMESTAMP(3)", dt.datetime(2024, 1, 2, 3, 4, 5, 123000)),
        ("TIMESTAMP(6)", dt.datetime(2024, 1, 2, 3, 4, 5, 123456)),
        ("STRING", "a longer string than seven bytes, zürich 東京"),
        ("BYTES", b"\x00\x01\x02"),
        ("TIME(0)", dt.time(12, 30, 15)),
    ],
)
def test_round_trip_every_partition_type(type_text: str, value: object) -> None:
    types = [parse_type(type_text), INT]
    assert binary_row.decode(binary_row.encode([value, 7], types), types) == (value, 7)


def test_garbage_is_a_clear_corruption_error() -> None:
    with pytest.raises(CorruptMetadataError):
        binary_row.decode(b"\x00\x00\x00\x05\x00", [STR])
    with pytest.raises(CorruptMetadataError):
        binary_row.decode(h("00000001 0000000000000000 0a000000ff000000"), [STR])
