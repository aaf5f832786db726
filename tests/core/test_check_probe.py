"""A check asks storage by listing the directories that hold many needed files, and the
report is the one per-file stats give: missing files, wrong sizes, directories in place of
files."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from support.invariants import copy_scenario

import core.ops.inspection.check_probe as check_probe
from core.ops.inspection.check import check_table
from core.runtime.executors.local import LocalExecutor
from core.table.table import open_table


def _report(root: Path) -> Any:
    with LocalExecutor(2) as ex:
        return check_table(open_table(str(root)), executor=ex)


def test_listing_and_stats_report_the_same(scenarios: Any, tmp_path: Path, monkeypatch) -> None:
    _s, _wh, root = copy_scenario(scenarios, "many_commits", tmp_path)
    monkeypatch.setattr(check_probe, "LIST_FROM", 4)  # every directory of this table listed
    data = sorted(p for p in root.glob("bucket-*/*.parquet"))
    manifests = sorted((root / "manifest").iterdir())
    damaged = [data[-1], data[-2], data[-3], manifests[0]]
    data[-1].unlink()
    with data[-2].open("ab") as fh:
        fh.write(b"x")
    os.replace(data[-3], tmp_path / "moved")
    data[-3].mkdir()
    manifests[0].unlink()
    listed = _report(root)
    monkeypatch.setattr(check_probe, "LIST_FROM", 10**9)
    stated = _report(root)
    assert listed == stated
    assert {p.path for p in listed.problems} >= {str(p) for p in damaged[:3]}


@pytest.mark.parametrize("name", ["many_commits", "append_partitioned"])
def test_a_healthy_table_checks_clean(scenarios: Any, tmp_path: Path, name: str) -> None:
    _s, _wh, root = copy_scenario(scenarios, name, tmp_path)
    assert _report(root).problems == ()
