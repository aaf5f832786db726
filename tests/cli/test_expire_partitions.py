"""`paimon expire-partitions` as users run it: usage errors, dry run, JSON, readback."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
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
    # dt=par-1 is no date: the dry run exits 1 as the real run will, and says why.
    assert result.exit_code == 1, result.stderr
    assert "dt=2024-07-01/hr=00" in result.stdout and "dry run" in result.stdout
    assert "dt=par-1/hr=00" in result.stdout  # the plan lists it, with why
    assert "then exits 1" in result.stdout
    assert result.stderr.startswith("Error: 1 partition of ")
    assert tree_state(dated.root) == before
    quiet = run("expire-partitions", dated.root, "--expiration-time", "1 d", "--dry-run", "-q")
    assert quiet.exit_code == 1
    assert "dt=2024-07-09/hr=11" in quiet.stdout.splitlines()
    assert quiet.stderr.startswith("Error: 1 partition of ")
    doc = run("expire-partitions", dated.root, "--expiration-time", "1 d", "--dry-run", "--json")
    assert doc.exit_code == 1
    assert json.loads(doc.stdout)["error"]["kind"] == "partitions_never_expire"
    assert tree_state(dated.root) == before


def test_a_quiet_real_run_that_fails_says_so(run, dated) -> None:
    """-q: nothing on stdout, and the failure as an Error line (cron mails stderr)."""
    result = run("expire-partitions", dated.root, "--expiration-time", "1 d", "-q")
    assert result.exit_code == 1
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert lines[0].endswith("can never expire by their values (dt=par-1/hr=00)"), lines
    assert lines[0].startswith("Error: ") and lines[1].startswith("Hint: ")
    assert "--expire-strategy" not in result.stderr


def test_json_run_commits_and_pypaimon_reads_it(run, dated) -> None:
    result = run(
        "expire-partitions", dated.root, "--expiration-time", "1 d", "--max-expires", "4", "--json"
    )
    # dt=par-1 can never expire by value: the run drops the rest, then fails naming it.
    assert result.exit_code == 1
    doc = json.loads(result.stdout)
    assert doc["error"]["kind"] == "partitions_never_expire"
    assert "(dt=par-1/hr=00)" in doc["error"]["message"]
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


def test_unreadable_partitions_are_said_once(run, dated) -> None:
    result = run("expire-partitions", dated.root, "--expiration-time", "1 d", "--dry-run")
    # Once for them all, as the Error (no warning per partition besides).
    assert [line for line in result.stderr.splitlines() if "par-1" in line] == [
        line for line in result.stderr.splitlines() if line.startswith("Error: ")
    ]
    assert "warning" not in result.stderr


def test_maintain_says_it_once_per_table_with_what_maintain_can_do(run, tmp_path: Path) -> None:
    """maintain -q: one line for the table (not a warning per partition), naming the
    partitions as p0=0/p1=1 and no option of expire-partitions that maintain lacks; its dry
    run says (and exits) the same."""
    wh = tmp_path / "wh"
    schema = pa.schema([("id", pa.int64()), ("p0", pa.int64()), ("p1", pa.int64())])
    options = {"partition.expiration-time": "1 d"}
    table = pw.create_table(wh, "db.t", schema, partition_keys=["p0", "p1"], options=options)
    pw.append(table, [{"id": 1, "p0": 0, "p1": 0}, {"id": 2, "p0": 0, "p1": 1}])
    root = pw.table_root(wh, "db.t")
    for extra in (["--dry-run"], []):
        result = run("maintain", root, "-q", "--no-check", *extra)
        assert result.exit_code == 1, result.stderr
        lines = result.stderr.splitlines()
        assert len(lines) == 3, lines
        assert lines[0].startswith("paimon maintain run ") and " started " in lines[0]
        assert lines[1].startswith("paimon maintain: 1 of 1 table ")
        assert (
            lines[2].startswith("  db.t")
            and "expire-partitions failed: 2 partitions of " in (lines[2])
        )
        assert lines[2].endswith("can never expire by their values (p0=0/p1=0, p0=0/p1=1)")
        assert "--expire-strategy" not in result.stderr and "warning" not in result.stderr
