"""Issue 17 bug 1: damaged metadata (every kind, missing or truncated, one at a time) stops
orphan cleaning before any deletion; `inspect --check` names the damaged file once."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from support import pypaimon_writer as pw
from support.invariants import tree_state
from support.metadata_damage import (
    DAMAGES,
    TCB,
    Damage,
    _long_lived_changelogs,
    _no_preparation,
    damaged_copy,
)

from core.table.table import PaimonTable, open_table


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
    assert result.exit_code == 3, result.stderr
    problems = json.loads(result.stdout)["check"]["problems"]
    named = [p for p in problems if p["path"] == str(damaged)]
    assert len(named) == 1, problems
    assert named[0]["kind"] == ("missing" if damage.mode == "missing" else "unreadable")
    if damage.kind in ("snapshot", "tag", "changelog"):
        # an unreadable root is a problem of its own (the rest is still checked)
        assert named[0]["role"] == damage.kind


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
    meta = next(
        m
        for snap in original.snapshots.snapshots()
        for name in snap.manifest_lists
        for m in original.manifest_list(snap, name)
        if m.file_name == damaged.name
    )
    hidden = {e.file.file_name for e in original.manifest(meta)}
    latest_files = [f["path"] for f in run.json("inspect", src, "files")["files"]]
    lost = next(
        p.replace(str(src), str(root)) for p in latest_files if p.rpartition("/")[2] not in hidden
    )
    Path(lost).unlink()
    result = run("inspect", root, "--check", "--json")
    assert result.exit_code == 3
    check = json.loads(result.stdout)["check"]
    by_path = {}
    for p in check["problems"]:
        assert p["path"] not in by_path, p  # every problem once
        by_path[p["path"]] = p
    assert by_path[str(damaged)]["kind"] == "missing"
    assert by_path[str(damaged)]["role"] == "manifest"
    assert by_path[lost]["kind"] == "missing"
    assert check["files_checked"] >= healthy["files_checked"] - 2


# Every command that decodes manifests compares what it read with what the referrer
# records: a file cut at a block boundary (zero entries, no decode error) stops each one
# before any change, as a missing file does (issue 28 defect 2).
def _first_manifest(table: PaimonTable, root: Path) -> Path:
    """The first snapshot's delta manifest: every later base list names it again."""
    first = table.snapshots.snapshot(table.snapshots.ids()[0])
    return root / "manifest" / table.manifest_list_names(first, first.delta_manifest_list)[0][0]


def _first_changelog_manifest(table: PaimonTable, root: Path) -> Path:
    """The first long-lived changelog's delta manifest (its changelog, producer none)."""
    first = table.changelogs.snapshot(table.changelogs.ids()[0])
    return root / "manifest" / table.manifest_list_names(first, first.delta_manifest_list)[0][0]


def _latest_delta_list(table: PaimonTable, root: Path) -> Path:
    latest = table.snapshots.latest()
    assert latest is not None
    return root / "manifest" / latest.delta_manifest_list


CUTS = {
    "manifest": (TCB, _first_manifest),
    "delta-list": (TCB, _latest_delta_list),
    "partitioned-manifest": ("append_partitioned", _first_manifest),
    "changelog-manifest": ("many_commits", _first_changelog_manifest),
}
STOPPED = [
    ("manifest", "delete-orphan-files", []),
    ("manifest", "expire-snapshots", ["--retain-max", "1", "--retain-min", "1"]),
    ("manifest", "compact", []),
    ("manifest", "delete-tag", ["TAG"]),
    ("partitioned-manifest", "expire-partitions", ["--expiration-time", "1 d"]),
    ("delta-list", "delete-orphan-files", []),
    ("delta-list", "expire-snapshots", ["--retain-max", "1", "--retain-min", "1"]),
    ("delta-list", "compact", []),
    ("changelog-manifest", "expire-changelogs", ["--delete-all"]),
]


@pytest.mark.parametrize(("cut", "command", "args"), STOPPED, ids=lambda v: str(v))
def test_a_file_cut_at_a_block_boundary_stops_every_command(
    run: Any,
    scenarios: dict[str, pw.Scenario],
    tmp_path: Path,
    cut: str,
    command: str,
    args: list[str],
) -> None:
    scenario, pick = CUTS[cut]
    prepare = _long_lived_changelogs if cut == "changelog-manifest" else _no_preparation
    root, damaged, orphan = damaged_copy(
        scenarios, Damage(cut, "cut", scenario, pick, prepare), tmp_path
    )
    tags = open_table(str(root)).tags.names()
    before = tree_state(root)
    result = run(command, root, *[tags[0] if a == "TAG" else a for a in args])
    assert result.exit_code == 1, (result.stdout, result.stderr)
    assert damaged.name in result.stderr and "truncated or altered" in result.stderr
    assert "Traceback" not in result.stderr
    assert tree_state(root) == before
    assert orphan.exists()
