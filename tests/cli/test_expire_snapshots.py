"""`paimon expire-snapshots` as users run it: flags, output modes, exit codes, saved plans."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from support.invariants import assert_no_dangling_references, tree_state


@pytest.fixture
def table(scenarios, copy_table) -> Path:
    root: Path = copy_table(scenarios["many_commits"].root)
    return root


@pytest.mark.parametrize(
    ("args", "phrase"),
    [
        (["--retain-min", "0"], "at least 1"),
        (["--retain-min", "-3"], "at least 1"),
        (["--retain-max", "0"], "at least 1"),
        (["--max-deletes", "0"], "at least 1"),
        (["--retain-min", "5", "--retain-max", "2"], "greater than --retain-max"),
        (["--retain-max", "5"], "retain-min"),  # table default retain-min 10 > 5, as in Paimon
        (["--older-than", "yesterday-ish"], "cannot read time"),
        (["--options", "novalue"], "not key=value"),
        (["--timezone", "Nowhere/Land"], "Nowhere/Land"),
    ],
)
def test_impossible_options_are_usage_errors(
    run, table: Path, args: list[str], phrase: str
) -> None:
    before = tree_state(table)
    result = run("expire-snapshots", table, *args)
    assert result.exit_code == 2, (result.stdout, result.stderr)
    assert phrase in result.stderr
    assert "Traceback" not in result.stderr
    assert tree_state(table) == before


def test_human_run_reports_range_and_totals(run, table: Path) -> None:
    result = run("expire-snapshots", table, "--retain-min", "5", "--older-than", "0 ms")
    assert result.exit_code == 0, result.stderr
    out = result.stdout
    assert "expiring 1..25 (25)" in out
    assert "stopped by retain-min" in out
    assert "done" in out
    assert_no_dangling_references(table)


def test_json_document_schema(run, table: Path) -> None:
    doc = run.json("expire-snapshots", table, "--retain-min", "5", "--older-than", "0 ms")
    assert doc["command"] == "expire-snapshots" and doc["schema_version"] == 1
    assert doc["dry_run"] is False
    plan, report = doc["plan"], doc["report"]
    assert plan["details"]["snapshots"] == list(range(1, 26))
    assert plan["details"]["config"]["retain_min"] == {"value": 5, "source": "flag"}
    assert [p["name"] for p in plan["phases"]] == ["snapshot-files", "manifests", "data-files"]
    assert report["status"] == "ok"
    done = {p["name"]: p["done"] for p in report["phases"]}
    assert done["snapshot-files"] == 26  # 25 snapshot files + the EARLIEST hint
    assert plan["totals"]["by_kind"]["snapshot"]["files"] == 25


def test_quiet_dry_run_prints_paths_only(run, table: Path) -> None:
    result = run(
        "expire-snapshots", table, "--retain-min", "25", "--older-than", "0 ms", "--dry-run", "-q"
    )
    assert result.exit_code == 0
    lines = result.stdout.splitlines()
    assert lines and all(line.startswith(str(table)) for line in lines)
    assert str(table / "snapshot" / "snapshot-1") in lines


def test_nothing_to_do_is_success(run, table: Path) -> None:
    result = run("expire-snapshots", table)  # defaults: snapshots are younger than 1 hour
    assert result.exit_code == 0
    assert "expiring none" in result.stdout


def _dry_run_document(run, table: Path) -> str:
    """The --dry-run --json document of an expiry of snapshots 1..10 (of 30)."""
    result = run(
        "expire-snapshots",
        table,
        "--retain-min",
        "20",
        "--older-than",
        "0 ms",
        "--dry-run",
        "--json",
    )
    assert result.exit_code == 0, result.stderr
    return str(result.stdout)


def test_saved_plan_is_rechecked_and_applied(run, table: Path, tmp_path: Path) -> None:
    plan_file = tmp_path / "plan.json"
    plan_file.write_text(_dry_run_document(run, table))
    result = run("expire-snapshots", table, "--plan", plan_file)
    assert result.exit_code == 0, result.stderr
    assert not (table / "snapshot" / "snapshot-10").exists()
    assert_no_dangling_references(table)


def test_saved_plan_refused_when_a_tag_appeared(run, table: Path, tmp_path: Path) -> None:
    plan_file = tmp_path / "plan.json"
    plan_file.write_text(_dry_run_document(run, table))
    (table / "tag").mkdir(exist_ok=True)
    shutil.copy(table / "snapshot" / "snapshot-5", table / "tag" / "tag-late")
    before = tree_state(table)
    result = run("expire-snapshots", table, "--plan", plan_file)
    assert result.exit_code == 1
    assert "tag main/late" in result.stderr
    assert tree_state(table) == before


def test_saved_plan_refused_when_a_snapshot_it_deletes_is_another_commit(
    run, table: Path, tmp_path: Path
) -> None:
    """Issue 22: the same id, another commit (as after a rollback and new writes)."""
    plan_file = tmp_path / "plan.json"
    plan_file.write_text(_dry_run_document(run, table))
    path = table / "snapshot" / "snapshot-3"
    data = json.loads(path.read_text())
    data.update(timeMillis=data["timeMillis"] + 1, commitUser="another-writer")
    path.write_text(json.dumps(data))
    before = tree_state(table)
    result = run("expire-snapshots", table, "--plan", plan_file)
    assert result.exit_code == 1
    assert "snapshot 3 was replaced by another commit" in " ".join(result.stderr.split())
    assert tree_state(table) == before


def test_unfinished_journal_is_finished_and_reported(run, table: Path) -> None:
    dry = json.loads(_dry_run_document(run, table))
    journal = table / ".paimon-cli" / "journal"
    journal.mkdir(parents=True)
    (journal / "expire-snapshots-1-abc.json").write_text(json.dumps(dry["plan"]))
    announced = run("expire-snapshots", table, "--dry-run")
    assert "1 unfinished run found: a real run finishes it first" in announced.stdout
    doc = run.json("expire-snapshots", table, "--retain-min", "20", "--older-than", "0 ms")
    assert len(doc["report"]["resumed_journals"]) == 1
    assert not journal.exists()
    assert not (table / "snapshot" / "snapshot-10").exists()
    assert_no_dangling_references(table)


def test_corrupt_journal_stops_everything(run, table: Path) -> None:
    journal = table / ".paimon-cli" / "journal"
    journal.mkdir(parents=True)
    (journal / "expire-snapshots-1-abc.json").write_text("{oops")
    before = tree_state(table)
    result = run("expire-snapshots", table, "--retain-min", "5", "--older-than", "0 ms")
    assert result.exit_code == 1
    assert "unreadable journal" in result.stderr
    assert tree_state(table) == before


def test_glob_over_a_warehouse(run, scenarios, tmp_path: Path) -> None:
    wh = tmp_path / "wh"
    for name in ("many_commits", "path_directory"):
        shutil.copytree(scenarios[name].root, wh / "db.db" / scenarios[name].root.name)
    result = run(
        "expire-snapshots",
        "db.*",
        "--warehouse",
        wh,
        "--retain-min",
        "2",
        "--older-than",
        "0 ms",
        "--json",
    )
    assert result.exit_code == 0, result.stderr
    doc = json.loads(result.stdout)
    assert doc["summary"] == {"tables": 2, "failed": 0}
    assert all(t["status"] == "ok" for t in doc["tables"])
