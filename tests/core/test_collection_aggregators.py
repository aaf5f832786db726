"""What paimon-cli refuses about collection aggregates, and where Java's hash order stops
being reproduced: the merge stops instead of guessing."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pytest

from core.compaction.merge_engines import MergeFunctionError, MergeSpec
from core.compaction.merge_tree import merge_bucket
from core.format.data_files import FileLayout
from core.format.model import DataField
from core.format.types import parse_type

ROW = {"type": "ROW", "fields": [{"id": 9, "name": "i", "type": "INT"}]}


def _field(name: str, raw: Any) -> DataField:
    return DataField(1, name, parse_type(raw))


KEY = DataField(0, "k", parse_type("INT NOT NULL"))


def _refusals(field: DataField, options: dict[str, str]) -> list[str]:
    return MergeSpec.of((KEY, field), ["k"], {"merge-engine": "aggregation", **options}).refusals()


@pytest.mark.parametrize(
    ("raw", "options", "phrase"),
    [
        ("INT", {"fields.f.aggregate-function": "collect"}, "needs an ARRAY column"),
        (
            {"type": "ARRAY", "element": "TIMESTAMP(9)"},
            {"fields.f.aggregate-function": "collect", "fields.f.distinct": "true"},
            "not hashed",
        ),
        (
            {"type": "MAP", "key": ROW, "value": "INT"},
            {"fields.f.aggregate-function": "merge_map"},
            "map keys of type ROW",
        ),
        (
            {"type": "ARRAY", "element": "INT"},
            {"fields.f.aggregate-function": "nested_update"},
            "ARRAY<ROW>",
        ),
        (
            {"type": "ARRAY", "element": ROW},
            {"fields.f.aggregate-function": "nested_update", "fields.f.nested-sequence-field": "i"},
            "nested-sequence-field requires fields.f.nested-key",
        ),
        (
            {"type": "ARRAY", "element": ROW},
            {"fields.f.aggregate-function": "nested_update", "fields.f.nested-key": "x"},
            "nested field x not found",
        ),
        (
            {"type": "ARRAY", "element": ROW},
            {"fields.f.aggregate-function": "nested_partial_update"},
            "requires fields.f.nested-key",
        ),
        (
            {"type": "MAP", "key": "INT", "value": ROW},
            {"fields.f.aggregate-function": "merge_map_with_keytime"},
            "at least 2 fields",
        ),
        ("VARBINARY(100)", {"fields.f.aggregate-function": "rbm32"}, "roaring bitmap"),
        ("VARBINARY(100)", {"fields.f.aggregate-function": "theta_sketch"}, "theta sketch"),
    ],
)
def test_refused_before_anything_is_written(raw: Any, options: dict[str, str], phrase: str) -> None:
    problems = _refusals(_field("f", raw), options)
    assert len(problems) == 1 and phrase in problems[0]


def test_supported_collection_aggregates_are_not_refused() -> None:
    ok = [
        (
            _field("f", {"type": "ARRAY", "element": "STRING"}),
            {"fields.f.distinct": "true"},
            "collect",
        ),
        (_field("f", {"type": "ARRAY", "element": ROW}), {"fields.f.distinct": "true"}, "collect"),
        (_field("f", {"type": "MAP", "key": "BIGINT", "value": ROW}), {}, "merge_map"),
        (
            _field("f", {"type": "ARRAY", "element": ROW}),
            {"fields.f.nested-key": "i"},
            "nested_update",
        ),
    ]
    for field, options, func in ok:
        assert _refusals(field, {"fields.f.aggregate-function": func, **options}) == []


def test_a_java_hash_bucket_that_would_become_a_tree_stops_the_merge() -> None:
    """Twelve multiples of 64 share a bucket until the table reaches 64 slots, where Java
    turns the bucket into a tree and orders it differently: refused, not guessed."""
    field = _field("f", {"type": "ARRAY", "element": "INT"})
    layout = FileLayout.of((KEY, field), ["k"])
    rows = [
        {"_KEY_k": 1, "_SEQUENCE_NUMBER": s, "_VALUE_KIND": 0, "k": 1, "f": v}
        for s, v in enumerate([[i * 64 for i in range(6)], [i * 64 for i in range(6, 12)]])
    ]
    data = pa.Table.from_pylist(rows, schema=layout.arrow_schema())
    options = {
        "merge-engine": "aggregation",
        "fields.f.aggregate-function": "collect",
        "fields.f.distinct": "true",
    }
    with pytest.raises(MergeFunctionError, match="tree"):
        merge_bucket(data, ["_KEY_k"], MergeSpec.of((KEY, field), ["k"], options))
    rows[1]["f"] = [i * 64 for i in range(6, 9)]  # nine values: Java still resizes instead
    data = pa.Table.from_pylist(rows, schema=layout.arrow_schema())
    merged = merge_bucket(data, ["_KEY_k"], MergeSpec.of((KEY, field), ["k"], options))
    assert sorted(merged.column("f").to_pylist()[0]) == [i * 64 for i in range(9)]
