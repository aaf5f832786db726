"""``--plan FILE`` on every command whose plan is file actions: a plan saved from
``--dry-run --json`` is applied through the one lifecycle (re-checked, never re-planned) and
leaves the tree a plain run leaves; a plan that went stale (a commit since), that is for
another table, or that is not what the command line asks for is refused and nothing
changes. pypaimon tables, and a Paimon 0.9 (Java) table with long-lived changelogs.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from support import pypaimon_writer as pw
from support.fixtures import JAVA_BUILT, java_built_now_ms
from support.invariants import age_tree, assert_no_dangling_references, plant, tree_state
from support.invariants import tree_digests as digests

from core.runtime.clock import NOW_ENV

# name: (scenario, command line after the table)
COMMANDS: dict[str, tuple[str, list[str]]] = {
    "expire-snapshots": (
        "many_commits",
        ["expire-snapshots", "--retain-max", "3", "--retain-min", "1", "--older-than", "0ms"],
    ),
    "delete-tag": ("tags_consumers_branches", ["delete-tag", "t2"]),
    "expire-tags": ("tags_consumers_branches", ["expire-tags"]),
    "rollback": ("tags_consumers_branches", ["rollback", "--to-snapshot", "5", "--force"]),
    "create-tag": ("tags_consumers_branches", ["create-tag", "reviewed", "--snapshot", "3"]),
    "delete-branch": ("tags_consumers_branches", ["delete-branch", "b1"]),
    "fast-forward": ("tags_consumers_branches", ["fast-forward", "b1", "--force"]),
    "delete-orphan-files": ("append_partitioned", ["delete-orphan-files"]),
    "expire-partitions": (
        "append_partitioned",
        ["expire-partitions", "--expiration-time", "1d", "--timestamp-formatter", "yyyy-MM-dd"],
    ),
}


def _copy(scenarios: dict[str, pw.Scenario], tmp_path: Path, name: str, scenario: str) -> Path:
    s = scenarios[scenario]
    root = tmp_path / name / "wh" / s.root.parent.name / s.root.name
    shutil.copytree(s.root, root, symlinks=True)
    age_tree(root)
    bucket = min(root.rglob("bucket-0"))  # the first bucket directory, under a partition
    plant(bucket / "data-orphan.parquet", content=b"orphan data")
    return root


def _shape(tree: dict[str, Any]) -> tuple[set[str], int]:
    """The paths of a tree, manifests by count only."""
    manifests = {p for p in tree if "/manifest/" in p}
    return set(tree) - manifests, len(manifests)


def _saved(run: Any, root: Path, args: list[str], tmp_path: Path) -> Path:
    dry = run(args[0], root, *args[1:], "--dry-run", "--json")
    assert dry.exit_code == 0, dry.stderr
    path = tmp_path / f"{args[0]}-plan.json"
    path.write_text(dry.stdout)
    return path


def _applies_as_a_plain_run(
    run: Any, copy: Callable[[str], Path], args: list[str], *, repairs_latest: bool = False
) -> None:
    """A plan saved on one copy (``copy(label)``) and applied with --plan leaves the tree a
    plain run leaves on another copy; nothing is missing (``repairs_latest``: for the latest
    snapshot, which a repair makes whole, while older snapshots still name the lost file)."""
    plain = copy(f"{args[0]}-plain")
    assert run(args[0], plain, *args[1:]).exit_code == 0
    root = copy(f"{args[0]}-saved")
    before = digests(root)
    plan = _saved(run, root, args, root.parents[2])
    applied = run(args[0], root, *args[1:], "--plan", plan)
    assert applied.exit_code == 0, applied.stderr
    after = digests(root)
    assert after != before
    # The same files as a plain run (a commit names its manifests anew, and its snapshot
    # file holds its own time).
    assert _shape(after) == _shape(digests(plain))
    if repairs_latest:
        assert run("inspect", root, "--check", "--snapshot", "latest").exit_code == 0
    else:
        assert_no_dangling_references(root)


@pytest.mark.parametrize("command", list(COMMANDS))
def test_a_saved_plan_is_applied_as_a_plain_run_would(
    run: Any, scenarios: dict[str, pw.Scenario], tmp_path: Path, command: str
) -> None:
    scenario, args = COMMANDS[command]
    _applies_as_a_plain_run(run, lambda label: _copy(scenarios, tmp_path, label, scenario), args)


def test_saved_plans_of_the_other_commands_apply_as_plain_runs(
    run: Any, scenarios: dict[str, pw.Scenario], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The commands README and docs/safety.md list as taking --plan whose tables need more
    than a copy: long-lived changelogs (Paimon 0.9, Java), a data file lost by hand, a branch
    from a tag."""

    def changelogs(label: str) -> Path:
        root = tmp_path / label / "wh" / "db.db" / "changelog_decoupled"
        shutil.copytree(JAVA_BUILT / "changelog_decoupled" / "table", root, symlinks=True)
        # Its changelogs expire by age: judge them as of the fixture's build, not today.
        monkeypatch.setenv(NOW_ENV, str(java_built_now_ms("changelog_decoupled")))
        return root

    def lost_file(label: str) -> Path:
        s = scenarios["append_partitioned"]
        root = _copy(scenarios, tmp_path, label, "append_partitioned")
        added = [n for kind, n in pw.delta_entries(root.parents[1], s.identifier, 6) if kind == 0]
        (path,) = root.rglob(min(added))
        path.unlink()
        return root

    def tagged(label: str) -> Path:
        return _copy(scenarios, tmp_path, label, "tags_consumers_branches")

    _applies_as_a_plain_run(run, changelogs, ["expire-changelogs", "--retain-max", "3"])
    _applies_as_a_plain_run(run, lost_file, ["remove-unexisting-files"], repairs_latest=True)
    _applies_as_a_plain_run(run, tagged, ["create-branch", "reviewed", "--tag", "t2"])


@pytest.mark.parametrize(
    "command", ["expire-snapshots", "delete-tag", "rollback", "expire-partitions"]
)
def test_a_stale_saved_plan_is_refused_and_nothing_changes(
    run: Any, scenarios: dict[str, pw.Scenario], tmp_path: Path, command: str
) -> None:
    scenario, args = COMMANDS[command]
    s = scenarios[scenario]
    root = _copy(scenarios, tmp_path, "stale", scenario)
    plan = _saved(run, root, args, tmp_path)
    pw.truncate(pw.open_table(root.parents[1], s.identifier))  # a writer's commit since
    before = tree_state(root)
    result = run(args[0], root, *args[1:], "--plan", plan)
    assert result.exit_code == 1
    assert "the saved plan is stale: it was made at snapshot" in result.stderr
    assert "nothing was changed" in result.stderr
    assert "Traceback" not in result.stderr
    assert tree_state(root) == before


def test_a_saved_plan_for_another_target_or_table_is_refused(
    run: Any, scenarios: dict[str, pw.Scenario], tmp_path: Path
) -> None:
    scenario, args = COMMANDS["delete-tag"]
    root = _copy(scenarios, tmp_path, "one", scenario)
    other = _copy(scenarios, tmp_path, "other", scenario)
    plan = _saved(run, root, args, tmp_path)
    before = tree_state(root)
    wrong_tag = run("delete-tag", root, "t4", "--plan", plan)
    assert wrong_tag.exit_code == 1
    assert "not what this command line asks for: it deletes tags ['t2'], not ['t4']" in (
        " ".join(wrong_tag.stderr.split())
    )
    assert tree_state(root) == before
    elsewhere = tree_state(other)
    wrong_table = run("delete-tag", other, "t2", "--plan", plan)
    assert wrong_table.exit_code == 1
    assert f"the saved plan is for {root}" in " ".join(wrong_table.stderr.split())
    assert tree_state(other) == elsewhere


def test_a_saved_plan_of_another_command_is_a_usage_error(
    run: Any, scenarios: dict[str, pw.Scenario], tmp_path: Path
) -> None:
    scenario, args = COMMANDS["delete-tag"]
    root = _copy(scenarios, tmp_path, "one", scenario)
    plan = _saved(run, root, args, tmp_path)
    result = run("expire-tags", root, "--plan", plan)
    assert result.exit_code == 2
    assert "plan is for delete-tag" in result.stderr
