"""``--json`` documents are written byte for byte as the standard indenting encoder writes
them (``paimon_cli.json_stream``), whatever the values."""

from __future__ import annotations

import enum
import json
from collections.abc import Mapping
from typing import Any

import pytest

from core.runtime.plans import FileAction, LazyRows
from paimon_cli.json_stream import iterencode
from paimon_cli.output import _json_default


class _Kind(enum.Enum):
    A = "a"


class _Text(str):
    pass


class _Count(int):
    pass


class _Row(Mapping[str, Any]):
    def __init__(self, **values: Any) -> None:
        self.values = values

    def __getitem__(self, key: str) -> Any:
        return self.values[key]

    def __iter__(self) -> Any:
        return iter(self.values)

    def __len__(self) -> int:
        return len(self.values)


DOCS: list[Any] = [
    {},
    [],
    {"a": []},
    {"a": {}},
    [{}],
    {"x": 1, "y": -2.5, "z": None, "t": True, "f": False, "s": 'é\n"q"\u2028'},
    {"nan": float("nan"), "inf": float("inf"), "ninf": float("-inf"), "big": 10**30},
    {1: "int key", 2.5: "float key", None: "null key"},
    {True: "bool key", False: "false key"},
    {"nested": [{"a": 1}, {"b": [1, 2, {"c": None}]}, [], [[]], "s", 3]},
    {"tuple": (1, "two", (3,)), "enum": _Kind.A, "sub": _Text("x"), "n": _Count(3)},
    {"row": _Row(a=1, b="x"), "rows": [_Row(), _Row(k=[1])]},
    {"actions": LazyRows((FileAction("delete", "/t/a", "data", 3, "why"),), FileAction.to_json)},
    {"empty_lazy": LazyRows((), FileAction.to_json)},
    "top-level string",
    42,
    [True, None, 1.0],
]


@pytest.mark.parametrize("doc", DOCS, ids=[str(i) for i in range(len(DOCS))])
def test_same_bytes_as_the_standard_encoder(doc: Any) -> None:
    expected = "".join(json.JSONEncoder(indent=2, default=_json_default).iterencode(doc))
    assert "".join(iterencode(doc, _json_default)) == expected


def test_many_rows_are_written_in_batches_with_the_same_bytes() -> None:
    rows = [{"op": "delete", "path": f"/t/f-{i}", "size": i, "ok": i % 2 == 0} for i in range(2000)]
    doc = {"rows": rows + [{"nested": {"x": 1}}] + rows}
    expected = "".join(json.JSONEncoder(indent=2, default=_json_default).iterencode(doc))
    chunks = list(iterencode(doc, _json_default))
    assert "".join(chunks) == expected
    assert len(chunks) < 100


def test_unsupported_keys_fail_as_in_the_standard_encoder() -> None:
    with pytest.raises(TypeError):
        "".join(iterencode({(1, 2): "tuple key"}, _json_default))
