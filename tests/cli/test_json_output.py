"""`--json` documents are streamed: lazy plan parts come out exactly as eager ones."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from typing import Any

import pytest

from core.runtime.details import RawDetails
from core.runtime.plans import FileAction, LazyRows, Phase, Plan, Requirements
from paimon_cli.output import Mode, Output


class _Row(Mapping[str, Any]):
    def __init__(self, n: int) -> None:
        self.n = n

    def __getitem__(self, key: str) -> Any:
        if key == "n":
            return self.n
        raise KeyError(key)

    def __iter__(self) -> Iterator[str]:
        return iter(("n",))

    def __len__(self) -> int:
        return 1


def test_streamed_document_equals_json_dumps(capsys: pytest.CaptureFixture[str]) -> None:
    actions = tuple(FileAction("delete", f"/t/bucket-0/f{i}", "data", i) for i in range(3))
    plan = Plan(
        "delete-orphan-files",
        "/t",
        "main",
        1,
        (Phase("orphan-files-1", actions), Phase("empty", ())),
        Requirements(1, None, {}, (), None),
        RawDetails({"orphans": LazyRows(list(range(3)), _Row), "none": LazyRows([], _Row), "n": 2}),
    )
    eager = {"plan": plan.to_json(), "nested": {"x": [1, {"y": None}]}, "s": "é"}
    Output(Mode.JSON).json({**eager, "plan": plan.to_json(lazy=True)})
    out = capsys.readouterr().out
    assert out == json.dumps(eager, indent=2) + "\n"
    assert json.loads(out)["plan"]["details"]["orphans"] == [{"n": 0}, {"n": 1}, {"n": 2}]
    assert json.loads(out)["plan"]["phases"][1]["actions"] == []


def test_lazy_rows_behave_as_a_sequence() -> None:
    rows = LazyRows([1, 2, 3], lambda x: x * 10)
    assert len(rows) == 3 and list(rows) == [10, 20, 30] and rows[1] == 20
    assert list(rows[1:]) == [20, 30] and rows[-1] == 30
