"""maintain --max-duration (issue 37.1): tables the budget leaves out are said (in the
summary, and as a warning under -q, exit 0), every selected table keeps a series in the
metrics file (also when none was started), and the tables start oldest-maintained first
(from their run records) so a short budget cannot starve the same tail every run.
pypaimon tables; the budget's clock is a fake one, so which tables run is exact."""

from __future__ import annotations

import itertools
import types
from pathlib import Path

import pyarrow as pa
import pytest
from support import pypaimon_writer as pw

from core.ops.maintain.metrics import parse
from core.runtime.runs import read_records
from core.table.table import open_table
from paimon_cli import maintenance

NAMES = ("a", "b", "c")


@pytest.fixture
def wh(tmp_path: Path) -> Path:
    wh = tmp_path / "wh"
    for name in NAMES:
        table = pw.create_table(wh, f"db.{name}", pa.schema([("id", pa.int64())]))
        pw.append(table, [{"id": 1}])
    return wh


@pytest.fixture
def one_table_per_run(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each reading of the run's clock is a second later: with a 2 s budget the first table
    starts (read at 1 s), takes two readings, and no table starts after it."""
    ticks = itertools.count()
    monkeypatch.setattr(maintenance, "time", types.SimpleNamespace(monotonic=lambda: next(ticks)))


def _maintained(wh: Path) -> dict[str, int]:
    """How many maintain run records each table has."""
    out = {}
    for name in NAMES:
        table = open_table(str(pw.table_root(wh, f"db.{name}")))
        out[name] = len(read_records(table.fileio, table.location))
    return out


def test_the_budget_rotates_through_the_tables(run, wh: Path, one_table_per_run: None) -> None:
    runs = []
    for _ in range(4):
        result = run("maintain", "*.*", "-w", wh, "-q", "--max-duration", "2 s", "--no-check")
        assert result.exit_code == 0, result.stderr
        assert result.stdout == ""
        first, line = result.stderr.splitlines()  # the run's first line, then the warning
        assert first.startswith("paimon maintain run ")
        assert line.startswith("warning: --max-duration reached: 2 of 3 tables not started (")
        assert line.endswith("); the next run starts with them")
        runs.append(_maintained(wh))
    # Never maintained first (by name), then the one maintained longest ago.
    assert runs == [
        {"a": 1, "b": 0, "c": 0},
        {"a": 1, "b": 1, "c": 0},
        {"a": 1, "b": 1, "c": 1},
        {"a": 2, "b": 1, "c": 1},
    ]
    # The report keeps the selection's order, whatever order the tables ran in.
    doc = run.json("maintain", "*.*", "-w", wh, "--max-duration", "2 s", "--no-check")
    assert [s["table"] for s in doc["skipped"]] == [
        str(pw.table_root(wh, f"db.{n}")) for n in ("a", "c")
    ]
    assert [t["name"] for t in doc["tables"]] == ["db.b"]
    human = run("maintain", "*.*", "-w", wh, "--max-duration", "2 s", "--no-check")
    assert "warning: --max-duration reached: 2 of 3 tables not started (db.a, db.b)" in (
        human.stdout
    )


def test_every_table_has_its_series_also_when_none_was_started(run, wh: Path) -> None:
    prom = wh.parent / "paimon.prom"
    none = run("maintain", "*.*", "-w", wh, "-q", "--max-duration", "0 ms", "--metrics-file", prom)
    assert none.exit_code == 0
    assert "3 of 3 tables not started (db.a, db.b, db.c)" in none.stderr

    def series() -> dict[tuple[str, str], float]:
        return {(s.name, s.table or ""): s.value for s in parse(prom.read_text())}

    got = series()
    for name in NAMES:
        assert got[("paimon_maintenance_skipped", f"db.{name}")] == 1
        # Never succeeded: 0, so a staleness alert fires instead of seeing no series.
        assert got[("paimon_maintenance_last_success_timestamp_seconds", f"db.{name}")] == 0
    assert run("maintain", "db.a", "-w", wh, "--metrics-file", prom).exit_code == 0
    after = series()
    assert after[("paimon_maintenance_skipped", "db.a")] == 0
    assert after[("paimon_maintenance_last_success_timestamp_seconds", "db.a")] > 0
    assert after[("paimon_maintenance_last_success_timestamp_seconds", "db.b")] == 0
    # A later skip keeps the last success it had.
    last = after[("paimon_maintenance_last_success_timestamp_seconds", "db.a")]
    run("maintain", "*.*", "-w", wh, "-q", "--max-duration", "0 ms", "--metrics-file", prom)
    assert series()[("paimon_maintenance_last_success_timestamp_seconds", "db.a")] == last
    assert series()[("paimon_maintenance_skipped", "db.a")] == 1
