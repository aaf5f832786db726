"""Run history: every real run of a changing command leaves one record; dry runs none."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support.invariants import tree_state


@pytest.fixture
def table(scenarios, copy_table) -> Path:
    root: Path = copy_table(scenarios["many_commits"].root)
    return root


def _records(root: Path) -> list[dict[str, object]]:
    runs = root / ".paimon-cli" / "runs"
    return [json.loads(p.read_text()) for p in sorted(runs.glob("*.json"))] if runs.exists() else []


def test_real_runs_are_recorded_dry_runs_and_inspect_are_not(run, table: Path) -> None:
    before = tree_state(table)
    assert run("expire-snapshots", table, "--retain-max", "5", "--retain-min", "1", "--dry-run")
    assert run("inspect", table).exit_code == 0
    assert run("inspect", table, "snapshots", "--json").exit_code == 0
    assert tree_state(table) == before  # no record, no .paimon-cli directory

    doc = run.json("expire-snapshots", table, "--retain-max", "5", "--retain-min", "1")
    records = _records(table)
    assert len(records) == 1
    rec = records[0]
    assert doc["run_id"] == rec["run_id"]
    assert rec["command"] == "expire-snapshots" and rec["status"] == "ok"
    assert rec["options"]["retain_max"] == 5 and rec["options"]["dry_run"] is False
    assert rec["quarantine"] is False and rec["user"] and rec["host"]
    assert rec["started"]["epoch_ms"] <= rec["ended"]["epoch_ms"]
    assert str(rec["plan_digest"]).startswith("sha256:")
    planned = doc["plan"]["totals"]
    assert rec["totals"]["files"] == planned["files"]
    assert rec["totals"]["bytes"] == planned["bytes"]
    assert rec["totals"]["by_kind"] == planned["by_kind"]
    name = next((table / ".paimon-cli" / "runs").glob("*.json")).name
    assert name.endswith(f"-{rec['run_id']}.json")

    # A commit-type command is recorded; one refused before any change is not.
    assert run("create-tag", table, "rel").exit_code == 0
    assert run("create-tag", table, "rel").exit_code == 1
    assert [r["status"] for r in _records(table)] == ["ok", "ok"]


def test_inspect_runs_lists_them(run, table: Path) -> None:
    run.json("expire-snapshots", table, "--retain-max", "20", "--retain-min", "1")
    run.json("create-tag", table, "rel")
    doc = run.json("inspect", table, "runs")
    assert doc["view"] == "runs"
    assert [r["command"] for r in doc["runs"]] == ["expire-snapshots", "create-tag"]
    human = run("inspect", table, "runs")
    assert human.exit_code == 0
    assert "expire-snapshots" in human.stdout and doc["runs"][0]["run_id"] in human.stdout


def test_secret_options_are_not_recorded(run, table: Path) -> None:
    run("create-tag", table, "rel", "--fs-option", "secret_key=hunter2")
    text = json.dumps(_records(table))
    assert "hunter2" not in text and "secret_key=***" in text


def test_orphan_cleaning_never_touches_the_records(run, table: Path) -> None:
    run.json("create-tag", table, "rel")
    records = tree_state(table / ".paimon-cli" / "runs")
    assert records
    doc = run.json("delete-orphan-files", table, "--older-than", "2 h", "--allow-recent")
    assert not any("/.paimon-cli/" in o["path"] for o in doc["plan"]["details"]["orphans"])
    after = tree_state(table / ".paimon-cli" / "runs")
    assert set(records) <= set(after)


def _aged(root: Path, run_id: str, stamp: str = "20200101T000000000Z") -> Path:
    """Make a run's record look started at ``stamp`` (its file name says when)."""
    runs = root / ".paimon-cli" / "runs"
    (path,) = runs.glob(f"*-{run_id}.json")
    return path.rename(runs / f"{stamp}-{run_id}.json")


def test_history_is_bounded_by_count(run, table: Path) -> None:
    """Issue 25.5: paimon-cli.runs.num-retained (here through --options) keeps the newest."""
    ids = []
    for _ in range(5):
        doc = run.json(
            "expire-snapshots",
            table,
            "--retain-min",
            "25",
            "--options",
            "paimon-cli.runs.num-retained=3",
        )
        ids.append(doc["run_id"])
    assert [r["run_id"] for r in _records(table)] == ids[-3:]
    # Without the option: the default (100) keeps them all.
    run.json("create-tag", table, "t")
    assert len(_records(table)) == 4


def test_history_is_bounded_by_age_but_keeps_what_restore_needs(run, table: Path) -> None:
    """Records started before paimon-cli.runs.time-retained (default 90 d) go, except the
    record of a run whose quarantine can still be restored; a file of another name stays."""
    plain = run.json("create-tag", table, "t1")["run_id"]
    quarantined = run.json(
        "expire-snapshots", table, "--retain-max", "25", "--retain-min", "1", "--quarantine"
    )["run_id"]
    _aged(table, plain)
    _aged(table, quarantined, "20200101T000000001Z")
    foreign = table / ".paimon-cli" / "runs" / "notes.json"
    foreign.write_text("{}")
    latest = run.json("create-tag", table, "t2")["run_id"]
    assert [r["run_id"] for r in _records(table) if "run_id" in r] == [quarantined, latest]
    assert foreign.exists()
    assert run("restore", table, "--last").exit_code == 0  # restored: no longer needed
    run.json("create-tag", table, "t3")
    assert quarantined not in {r.get("run_id") for r in _records(table)}
    assert run("inspect", table, "--check").exit_code == 0


def test_maintain_bounds_the_history_too(run, table: Path) -> None:
    """maintain writes its record through the same path and prunes after it: a record older
    than paimon-cli.runs.time-retained goes, the newer ones and maintain's own stay."""
    old = run.json("create-tag", table, "t1")["run_id"]
    _aged(table, old)
    kept = run.json("create-tag", table, "t2")["run_id"]
    doc = run.json("maintain", table)
    assert doc["tables"][0]["status"] == "ok", doc
    ids = [r["run_id"] for r in _records(table)]
    assert old not in ids and kept in ids and len(ids) == 2
    assert any(r.get("command") == "maintain" for r in _records(table))
