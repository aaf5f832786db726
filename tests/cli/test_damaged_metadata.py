"""Issue 17 bug 1: damaged metadata (every kind, missing or truncated, one at a time) stops
orphan cleaning before any deletion; `inspect --check` names the damaged file once."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pypaimon_writer as pw
import pytest
from invariants import tree_state
from metadata_damage import DAMAGES, Damage, damaged_copy

from core.table.table import open_table


@pytest.mark.parametrize("damage", DAMAGES, ids=lambda d: d.id)
def test_orphan_cleaning_aborts_before_any_deletion(
    run: Any, scenarios: dict[str, pw.Scenario], tmp_path: Path, damage: Damage
) -> None:
    root, damaged, orphan = damaged_copy(scenarios, damage, tmp_path)
    before = tree_state(root)
    result = run("delete-orphan-files", root)
    assert result.exit_code == 1, result.stdout
    assert damaged.name in result.stderr, result.stderr
    assert "Traceback" not in result.stderr
    assert tree_state(root) == before
    assert orphan.exists()


@pytest.mark.parametrize("damage", DAMAGES, ids=lambda d: d.id)
def test_check_reports_the_damaged_file_once(
    run: Any, scenarios: dict[str, pw.Scenario], tmp_path: Path, damage: Damage
) -> None:
    root, damaged, _orphan = damaged_copy(scenarios, damage, tmp_path)
    result = run("inspect", root, "--check", "--json")
    assert result.exit_code == 1, result.stderr
    if damage.kind in ("snapshot", "tag", "changelog"):
        # an unreadable root is an error naming it, not a problem of a referenced file
        assert damaged.name in result.stderr, result.stderr
        return
    problems = json.loads(result.stdout)["check"]["problems"]
    named = [p for p in problems if p["path"] == str(damaged)]
    assert len(named) == 1, problems
    assert named[0]["kind"] == damage.mode.replace("truncated", "unreadable")


def test_check_keeps_checking_what_is_still_reachable(
    run: Any, scenarios: dict[str, pw.Scenario], tmp_path: Path
) -> None:
    """A missing manifest of a mid-history snapshot hides nothing else: a data file lost
    through another manifest is still reported, and about as many files are checked."""
    damage = next(d for d in DAMAGES if d.id == "manifest-missing")
    src = scenarios[damage.scenario].root
    healthy = run.json("inspect", src, "--check")["check"]
    root, damaged, _orphan = damaged_copy(scenarios, damage, tmp_path)
    original = open_table(str(src))
    hidden = {e.file.file_name for e in original.manifest(damaged.name)}
    latest_files = [f["path"] for f in run.json("inspect", src, "files")["files"]]
    lost = next(
        p.replace(str(src), str(root)) for p in latest_files if p.rpartition("/")[2] not in hidden
    )
    Path(lost).unlink()
    result = run("inspect", root, "--check", "--json")
    assert result.exit_code == 1
    check = json.loads(result.stdout)["check"]
    by_path = {}
    for p in check["problems"]:
        assert p["path"] not in by_path, p  # every problem once
        by_path[p["path"]] = p
    assert by_path[str(damaged)]["kind"] == "missing"
    assert by_path[str(damaged)]["role"] == "manifest"
    assert by_path[lost]["kind"] == "missing"
    assert check["files_checked"] >= healthy["files_checked"] - 2
