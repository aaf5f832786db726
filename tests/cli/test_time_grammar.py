"""One grammar for times and durations on every command (issue 37, item 3; README "Times and
durations"): what `date +%s` prints is epoch seconds, a duration needs a unit, a cut-off in
the future is refused, and what the tool prints reads back; on a pypaimon-written table."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from support import pypaimon_writer as pw
from support.fixtures import Run
from support.invariants import tree_state

EXPIRE = ("expire-snapshots", "{t}", "--retain-min", "1", "--dry-run")


@pytest.fixture
def table(copy_table: Any, scenarios: dict[str, pw.Scenario]) -> Path:
    root: Path = copy_table(scenarios["append_partitioned"].root)
    return root


def _args(table: Path, args: tuple[str, ...]) -> list[str]:
    return [a.replace("{t}", str(table)) for a in args]


@pytest.mark.parametrize(
    ("value", "ms"),
    [
        ("1700000000", 1_700_000_000_000),  # `date +%s`
        ("@1700000000", 1_700_000_000_000),
        ("1700000000000", 1_700_000_000_000),
        ("2023-11-14T22:13:20Z", 1_700_000_000_000),
        ("2023-11-14 23:13:20+01:00", 1_700_000_000_000),
    ],
)
def test_epoch_seconds_and_millis_and_iso(run: Run, table: Path, value: str, ms: int) -> None:
    doc = run.json(*_args(table, EXPIRE), "--older-than", value)
    assert doc["plan"]["details"]["config"]["older_than_ms"] == ms


@pytest.mark.parametrize("value", ["90m", "1h 30min", "1 h 30 min", "5400 s"])
def test_durations_with_units_mean_that_long_ago(run: Run, table: Path, value: str) -> None:
    doc = run.json(*_args(table, EXPIRE), "--older-than", value)
    d = doc["plan"]["details"]
    # the plan's "now" is read a moment after the command line's
    assert 0 <= d["now_ms"] - d["config"]["older_than_ms"] - 90 * 60_000 < 60_000


@pytest.mark.parametrize(
    ("args", "option", "phrase"),
    [
        (("--older-than", "86400"), "--older-than", "ambiguous"),  # not 86 s, not a day
        (("--older-than", "50"), "--older-than", "ambiguous"),
        (("--older-than", "2099-01-01 00:00:00"), "--older-than", "in the future"),
        (("--older-than", "-1 h"), "--older-than", "in the future"),
        (("--older-than", "1.5h"), "--older-than", "cannot read time"),
        (("--wait-lease", "5"), "--wait-lease", "has no unit"),
    ],
)
def test_what_cannot_be_read_unambiguously_is_a_usage_error(
    run: Run, table: Path, args: tuple[str, str], option: str, phrase: str
) -> None:
    before = tree_state(table)
    result = run(*_args(table, EXPIRE), *args)
    assert result.exit_code == 2, (result.stdout, result.stderr)
    assert f"Invalid value for {option}" in result.stderr and phrase in result.stderr
    assert "Traceback" not in result.stderr
    assert tree_state(table) == before


@pytest.mark.parametrize(
    "command",
    [
        ("delete-orphan-files", "{t}", "--allow-recent", "--older-than"),
        ("expire-changelogs", "{t}", "--older-than"),
        ("expire-tags", "{t}", "--older-than"),
        ("purge-quarantine", "{t}", "--older-than"),
        ("maintain", "{t}", "--orphans", "--orphans-older-than"),
    ],
)
def test_every_cut_off_refuses_the_future(run: Run, table: Path, command: tuple[str, ...]) -> None:
    before = tree_state(table)
    result = run(*_args(table, command), "2099-01-01 00:00:00")
    assert result.exit_code == 2, (result.stdout, result.stderr)
    assert "in the future" in result.stderr and command[-1] in result.stderr
    assert tree_state(table) == before


@pytest.mark.parametrize(
    "command",
    [
        ("maintain", "{t}", "--dry-run", "--max-duration"),
        ("create-tag", "{t}", "x", "--snapshot", "1", "--time-retained"),
        ("expire-partitions", "{t}", "--dry-run", "--expiration-time"),
    ],
)
def test_a_bare_number_is_no_duration(run: Run, table: Path, command: tuple[str, ...]) -> None:
    """``maintain --max-duration 50`` skipped most tables: 50 was read as milliseconds."""
    before = tree_state(table)
    result = run(*_args(table, command), "50")
    assert result.exit_code == 2, (result.stdout, result.stderr)
    assert f"Invalid value for {command[-1]}" in result.stderr
    assert "has no unit" in result.stderr and "50 s" in result.stderr
    assert tree_state(table) == before


def test_durations_with_several_units_everywhere(run: Run, table: Path) -> None:
    doc = run.json("maintain", table, "--dry-run", "--max-duration", "1h 30min")
    assert doc["tables"], doc
    tag = run.json("create-tag", table, "x", "--snapshot", "1", "--time-retained", "1 d 12 h")
    assert tag["plan"]["details"]["time_retained_ms"] == 36 * 3_600_000
    written = json.loads((table / "tag" / "tag-x").read_text())
    assert written["tagTimeRetained"] is not None


def test_what_a_plan_prints_reads_back(run: Run, table: Path) -> None:
    """The instant and the duration a human plan shows are accepted as they are shown."""
    shown = run(*_args(table, EXPIRE), "--older-than", "1h 30min", "--timezone", "Asia/Kolkata")
    assert shown.exit_code == 0, shown.stderr
    m = re.search(r"older than (\S+ \S+) \(time-retained ([^,]+),", shown.stdout)
    assert m, shown.stdout
    instant, retained = m.groups()
    assert instant.endswith("+05:30")
    doc = run.json(*_args(table, EXPIRE), "--older-than", instant)
    first = run.json(*_args(table, EXPIRE), "--older-than", "1h 30min")
    older = doc["plan"]["details"]["config"]["older_than_ms"]
    again = first["plan"]["details"]["config"]["older_than_ms"]
    # shown to the second: the same instant without its milliseconds (a moment earlier)
    assert older % 1000 == 0 and 0 <= again - older < 60_000
    assert run(*_args(table, EXPIRE), "--older-than", retained).exit_code == 0
