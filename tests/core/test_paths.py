"""Partition directory names exactly as Paimon writes them (PartitionPathUtils)."""

from __future__ import annotations

import datetime as dt

import pytest

from core.format.types import parse_type
from core.io.fileio import is_under, normalize_path
from core.table.paths import escape_path_name, java_double_str, partition_value_text


@pytest.mark.parametrize(
    ("raw", "escaped"),
    [
        ("a/b c=d", "a%2Fb c%3Dd"),
        ("12:00", "12%3A00"),
        ("zürich", "zürich"),
        ("x%y", "x%25y"),
        ("\t#?", "%09%23%3F"),
        ("[a]{b}^'\"*\\", "%5Ba%5D%7Bb%7D%5E%27%22%2A%5C"),
    ],
)
def test_escape_path_name(raw: str, escaped: str) -> None:
    assert escape_path_name(raw) == escaped


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (1.0, "1.0"),
        (1e-5, "1.0E-5"),
        (0.1, "0.1"),
        (1e7, "1.0E7"),
        (-2.5, "-2.5"),
        (3e-4, "3.0E-4"),
    ],
)
def test_java_double_to_string(value: float, text: str) -> None:
    assert java_double_str(value) == text


def test_legacy_and_cast_partition_names() -> None:
    d, ts = parse_type("DATE"), parse_type("TIMESTAMP(6)")
    assert partition_value_text(dt.date(2024, 5, 6), d, legacy=True) == "19849"
    assert partition_value_text(dt.date(2024, 5, 6), d, legacy=False) == "2024-05-06"
    value = dt.datetime(2024, 1, 2, 3, 4, 5, 123456)
    assert partition_value_text(value, ts, legacy=True) == "2024-01-02T03:04:05.123456"
    assert partition_value_text(value, ts, legacy=False) == "2024-01-02 03:04:05.123456"
    assert partition_value_text(dt.datetime(2024, 1, 1, 12), ts, legacy=True) == "2024-01-01T12:00"
    assert partition_value_text(True, parse_type("BOOLEAN"), legacy=True) == "true"


def test_path_lock_rejects_escapes() -> None:
    assert is_under("/wh/t/bucket-0/f", "/wh/t")
    assert not is_under("/wh/t/../x", "/wh/t")
    assert not is_under("/wh/t2/f", "/wh/t")
    assert not is_under("/wh/t", "/wh/t")
    assert normalize_path("FILE:/tmp/x/") == "/tmp/x"
    assert normalize_path("file:///tmp/x") == "/tmp/x"
    assert normalize_path("S3://bucket/k/") == "s3://bucket/k"
