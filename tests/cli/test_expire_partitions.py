"""`paimon expire-partitions` as users run it: usage errors, dry run, JSON, readback."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support import pypaimon_writer as pw
from support.invariants import assert_no_dangling_references, tree_state


@pytest.fixture
def dated(tmp_path: Path) -> pw.Scenario:
    return pw.dated_partitions(tmp_path / "wh")


@pytest.mark.parametrize(
    ("args", "phrase"),
    [
        (["--expiration-time", "1 d", "--timestamp-formatter", "yyyy-bb"], "unknown pattern"),
        (["--expiration-time", "soon"], "invalid duration"),
        (["--expiration-time", "1 d", "--timestamp-pattern", "$day"], "not a partition key"),
        (["--expiration-time", "1 d", "--expire-strategy", "never"], "unknown strategy"),
        (["--expiration-time", "1 d", "--max-expires", "0"], "at least 1"),
        ([], "no expiration time"),
    ],
)
def test_bad_input_is_a_usage_error(run, dated, args: list[str], phrase: str) -> None:
    before = tree_state(dated.root)
    result = run("expire-partitions", dated.root, *args)
    assert result.exit_code == 2, (result.stdout, result.stderr)
    assert phrase in result.stderr and "Traceback" not in result.stderr
    assert tree_state(dated.root) == before


def test_dry_run_lists_partitions_and_changes_nothing(run, dated) -> None:
    before = tree_state(dated.root)
    result = run("expire-partitions", dated.root, "--expiration-time", "1 d", "--dry-run")
    assert result.exit_code == 0, result.stderr
    assert "dt=2024-07-01/hr=00" in result.stdout and "dry run" in result.stdout
    assert "par-1" in result.stderr  # the value that is not a date: warned and kept
    assert tree_state(dated.root) == before
    quiet = run("expire-partitions", dated.root, "--expiration-time", "1 d", "--dry-run", "-q")
    assert "dt=2024-07-09/hr=11" in quiet.stdout.splitlines()


def test_json_run_commits_and_pypaimon_reads_it(run, dated) -> None:
    result = run(
        "expire-partitions", dated.root, "--expiration-time", "1 d", "--max-expires", "4", "--json"
    )
    # dt=par-1 can never expire by value: the run drops the rest, then fails naming it.
    assert result.exit_code == 1
    doc = json.loads(result.stdout)
    assert doc["error"]["kind"] == "partitions_never_expire"
    assert "dt=par-1, hr=00" in doc["error"]["message"]
    assert doc["command"] == "expire-partitions" and doc["dry_run"] is False
    parts = [p["path"] for p in doc["plan"]["details"]["partitions"]]
    assert parts == [
        "dt=2024-07-01/hr=00",
        "dt=2024-07-01/hr=11",
        "dt=2024-07-01/hr=a,b",
        "dt=2024-07-02/hr=00",
    ]
    assert doc["report"]["snapshot_id"] == 4 and doc["report"]["files_marked_delete"] == 7
    rows = pw.read_rows(dated.warehouse, dated.identifier)
    assert {(r["dt"], r["hr"]) for r in rows}.isdisjoint(
        {("2024-07-01", "00"), ("2024-07-01", "11"), ("2024-07-01", "a,b"), ("2024-07-02", "00")}
    )
    assert len(rows) == 22 - 7
    assert_no_dangling_references(dated.root)
    check = run("inspect", dated.root, "--check")
    assert check.exit_code == 0, check.stdout


def test_table_option_fallback(run, dated, tmp_path: Path) -> None:
    result = run(
        "expire-partitions",
        dated.root,
        "--options",
        "partition.expiration-time=1 d,partition.timestamp-formatter=yyyyMMdd",
        "--json",
    )
    assert result.exit_code == 1  # no value parses: every partition would stay forever
    assert '"source": "dynamic"' in result.stdout
    assert '"partitions": []' in result.stdout  # yyyyMMdd matches none of the values


def test_each_parse_warning_is_said_once(run, dated) -> None:
    result = run("expire-partitions", dated.root, "--expiration-time", "1 d", "--dry-run")
    assert result.exit_code == 0, result.stderr
    warnings = [line for line in result.stderr.splitlines() if "cannot read a time" in line]
    assert warnings, result.stderr
    # One line per unreadable partition (it used to be printed and logged too).
    assert len(warnings) == len(set(warnings))
    assert sum("par-1" in line for line in warnings) == 1
