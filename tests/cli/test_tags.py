"""Tag commands as users run them: exit codes, dry runs, JSON, refusal without --force."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support import pypaimon_writer as pw
from support.invariants import tree_state


@pytest.fixture
def table(scenarios, copy_table) -> Path:
    root: Path = copy_table(scenarios["tags_consumers_branches"].root)
    return root


@pytest.mark.parametrize(
    ("args", "phrase"),
    [
        (["create-tag", "{t}", "a/b"], "'/'"),
        (["create-tag", "{t}", "x", "--time-retained", "forever"], "invalid duration"),
        (["delete-tag", "{t}", "../t2"], "'/'"),
        (["rename-tag", "{t}", "t2", "a/b"], "'/'"),
    ],
)
def test_bad_names_are_usage_errors(run, table: Path, args: list[str], phrase: str) -> None:
    before = tree_state(table)
    result = run(*[a.replace("{t}", str(table)) for a in args])
    assert result.exit_code == 2, (result.stdout, result.stderr)
    assert phrase in result.stderr and "Traceback" not in result.stderr
    assert tree_state(table) == before


def test_failures_exit_1_and_write_nothing(run, table: Path) -> None:
    before = tree_state(table)
    exists = run("create-tag", table, "t2")
    assert exists.exit_code == 1 and "already exists" in exists.stderr
    gone = run("create-tag", table, "x", "--snapshot", "77", "--json")
    assert gone.exit_code == 1 and gone.stdout == ""
    assert json.loads(gone.stderr)["error"]["kind"] == "tag_error"
    refused = run("delete-tag", table, "t4")
    assert refused.exit_code == 1 and "--force" in refused.stderr
    assert tree_state(table) == before


def test_create_rename_delete_round_trip(run, scenarios, table: Path) -> None:
    s = scenarios["tags_consumers_branches"]
    wh = table.parents[1]
    doc = run.json("create-tag", table, "rel", "--snapshot", "5", "--time-retained", "1 d")
    assert doc["plan"]["details"]["snapshot_id"] == 5 and doc["report"]["status"] == "ok"
    assert pw.read_rows(wh, s.identifier, tag="rel") == s.expected[5]
    assert run("rename-tag", table, "rel", "release").exit_code == 0
    assert pw.read_rows(wh, s.identifier, tag="release") == s.expected[5]
    dry = run("delete-tag", table, "release,t2", "--dry-run")
    assert dry.exit_code == 0 and (table / "tag" / "tag-release").exists()
    doc = run.json("delete-tag", table, "release", "t2")
    assert doc["report"]["status"] == "ok"
    assert not (table / "tag" / "tag-release").exists()
    assert run("inspect", table, "--check").exit_code == 0


def test_expire_tags_dry_run_then_run(run, table: Path) -> None:
    before = tree_state(table)
    dry = run("expire-tags", table, "--dry-run")
    assert dry.exit_code == 0 and "t6" in dry.stdout
    assert tree_state(table) == before
    doc = run.json("expire-tags", table)
    assert [t["tag"] for t in doc["plan"]["details"]["tags"]] == ["t6"]
    assert not (table / "tag" / "tag-t6").exists() and (table / "tag" / "tag-t4").exists()


def test_tag_files_go_with_their_sizes_and_times_in_one_format(run, table: Path) -> None:
    """Issue 25.6: a tag deletion shows the tag file's size, not '-' or 0 B; a reason
    shows its time like every other time (the table zone, with its offset)."""
    import re

    sizes = {p.name: p.stat().st_size for p in (table / "tag").iterdir()}
    doc = run.json("expire-tags", table, "--older-than", "0 s", "--dry-run")
    actions = [a for phase in doc["plan"]["phases"] for a in phase["actions"]]
    tag_actions = [a for a in actions if a["kind"] == "tag"]
    assert tag_actions
    assert {Path(a["path"]).name: a["size"] for a in tag_actions} == {
        Path(a["path"]).name: sizes[Path(a["path"]).name] for a in tag_actions
    }
    shown = r"\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}[+-]\d{2}:\d{2}"
    for tag in doc["plan"]["details"]["tags"]:
        assert re.fullmatch(
            rf"(retention ended|created) {shown}(, before --older-than)?", tag["reason"]
        ), tag["reason"]
    human = run("delete-tag", table, "t2", "--dry-run")
    assert human.exit_code == 0
    assert "0 B" not in human.stdout, human.stdout
