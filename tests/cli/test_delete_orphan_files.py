"""`paimon delete-orphan-files` as users run it."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from support.invariants import age_tree, assert_no_dangling_references, plant, tree_state


@pytest.fixture
def table(scenarios, copy_table) -> Path:
    root: Path = copy_table(scenarios["append_partitioned"].root)
    return root


def test_dry_run_lists_and_changes_nothing(run, table: Path) -> None:
    orphan = plant(table / "manifest" / "manifest-deadbeef-0")
    before = tree_state(table)
    result = run("delete-orphan-files", table, "--dry-run")
    assert result.exit_code == 0, result.stderr
    assert "1 orphan file" in result.stdout and "manifest/manifest-deadbeef-0" in result.stdout
    assert tree_state(table) == before
    quiet = run("delete-orphan-files", table, "--dry-run", "-q")
    assert quiet.stdout.splitlines() == [str(orphan)]


def test_json_and_real_run(run, table: Path) -> None:
    orphan = plant(table / "manifest" / "manifest-deadbeef-0")
    doc = run.json("delete-orphan-files", table)
    assert doc["command"] == "delete-orphan-files" and doc["dry_run"] is False
    orphans = doc["plan"]["details"]["orphans"]
    assert [o["path"] for o in orphans] == [str(orphan)]
    assert orphans[0]["dir_kind"] == "manifest" and orphans[0]["size"] == 6
    assert orphans[0]["age_ms"] > 2 * 86_400_000
    assert doc["report"]["status"] == "ok"
    assert not orphan.exists()
    assert_no_dangling_references(table)


@pytest.mark.parametrize(
    ("args", "code", "phrase"),
    [
        (["--older-than", "10m"], 2, "--allow-recent"),
        (["--older-than", "2999-01-01 00:00:00", "--allow-recent"], 2, "future"),
        (["--older-than", "whenever"], 2, "cannot read time"),
    ],
)
def test_bad_options(run, table: Path, args: list[str], code: int, phrase: str) -> None:
    plant(table / "manifest" / "manifest-deadbeef-0")
    before = tree_state(table)
    result = run("delete-orphan-files", table, *args)
    assert result.exit_code == code, result.stderr
    assert phrase in result.stderr and "Traceback" not in result.stderr
    assert tree_state(table) == before


def test_missing_table(run, tmp_path: Path) -> None:
    result = run("delete-orphan-files", tmp_path / "nope")
    assert result.exit_code == 1 and "does not exist" in result.stderr


def test_glob(run, scenarios, tmp_path: Path) -> None:
    wh = tmp_path / "wh"
    for name in ("many_commits", "path_directory"):
        shutil.copytree(scenarios[name].root, wh / "db.db" / scenarios[name].root.name)
    plant(wh / "db.db" / "many_commits" / "manifest" / "manifest-deadbeef-0")
    result = run("delete-orphan-files", "db.*", "--warehouse", wh, "--json")
    assert result.exit_code == 0, result.stderr
    doc = json.loads(result.stdout)
    assert doc["summary"] == {"tables": 2, "failed": 0}
    counts = {Path(t["table"]).name: len(t["plan"]["details"]["orphans"]) for t in doc["tables"]}
    assert counts == {"many_commits": 1, "path_directory": 0}


def test_batches_render_as_one_row_and_json_keeps_every_orphan(
    run, table: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import core.ops.orphans.orphan_files as orphan_files

    monkeypatch.setattr(orphan_files, "BATCH", 2)
    planted = [plant(table / "manifest" / f"manifest-deadbeef-{i}") for i in range(5)]
    human = run("delete-orphan-files", table, "--dry-run")
    assert "5 orphan files" in human.stdout
    doc = run.json("delete-orphan-files", table)
    assert [o["path"] for o in doc["plan"]["details"]["orphans"]] == sorted(map(str, planted))
    assert doc["plan"]["details"]["orphans"][0]["modified"]["utc"].endswith("Z")
    assert [p["name"] for p in doc["report"]["phases"]] == [
        "orphan-files-1",
        "orphan-files-2",
        "orphan-files-3",
    ]
    assert not any(p.exists() for p in planted)
    for p in planted:
        plant(p)
    result = run("delete-orphan-files", table)
    assert result.exit_code == 0, result.stderr
    assert "orphan-files (3 batches)" in result.stdout
    assert "orphan-files-2" not in result.stdout


@pytest.mark.parametrize("engine", ["local", "spark"])
def test_a_candidate_modified_in_the_future_is_refused(
    run, scenarios, copy_table, engine, request
) -> None:
    """A Paimon-shaped file stamped a day after now: the clock that stamps files and this
    machine's disagree, so no age can be trusted (issue 28 defect 4)."""
    if engine == "spark":
        request.getfixturevalue("spark_cli")
    root = copy_table(scenarios["append_partitioned"].root)
    age_tree(root)
    old = plant(next(root.rglob("bucket-0")) / "data-0ddba11-old-0.parquet")
    future = plant(next(root.rglob("bucket-0")) / "data-0ddba11-future-0.parquet", days=-1)
    before = tree_state(root)
    result = run("delete-orphan-files", root, "--engine", engine)
    assert result.exit_code == 1
    message = " ".join(result.stderr.split())
    assert future.name in message and "in the future" in message
    assert tree_state(root) == before and old.exists()


def test_quarantine_of_temp_files_restores(run, table: Path) -> None:
    """Orphans in snapshot/ are Paimon's temp files, never snapshots: restore puts them
    back without reading them as one (it did, and refused on 'invalid JSON')."""
    planted = [
        plant(table / "snapshot" / ".snapshot-9.0a1b.tmp"),
        plant(table / "manifest" / "manifest-deadbeef-0"),
        plant(next(table.rglob("bucket-*")) / "data-deadbeef-0.parquet"),
    ]
    doc = run.json("delete-orphan-files", table, "--quarantine")
    assert doc["report"]["status"] == "ok"
    assert not any(p.exists() for p in planted)
    restored = run.json("restore", table, doc["run_id"])
    assert restored["report"]["restored"] == len(planted)
    assert all(p.read_bytes() == b"orphan" for p in planted)
    assert_no_dangling_references(table)
