"""Issue 12 "Also fix": shared external roots, journal temp files, every changing command
finishes journals, and the messages that said the wrong thing."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

import pytest
from support import pypaimon_writer as pw
from support.invariants import (
    age,
    age_tree,
    assert_no_dangling_references,
    assert_rows_intact,
    copy_scenario,
    files_under,
)

from core.table.table import open_table

JOURNAL = (".paimon-cli", "journal")


def test_shared_external_root_is_not_cleaned_by_default(run: Any, tmp_path: Path) -> None:
    """Two tables writing into one external root: cleaning one must not delete the other's
    live files (Paimon does); only --external-root-is-exclusive lists that root."""
    ext = tmp_path / "shared-ext"
    a = pw.external_paths(tmp_path / "wh-a", ext)
    b = pw.external_paths(tmp_path / "wh-b", ext)
    age_tree(ext)
    age_tree(a.root)
    before = files_under(ext)
    doc = run.json("delete-orphan-files", a.root)
    skipped = doc["plan"]["details"]["external_roots_skipped"]
    assert sorted(skipped) == sorted(str(ext.resolve() / p) for p in ("p1", "p2"))
    assert doc["plan"]["details"]["orphans"] == []
    assert files_under(ext) == before
    assert_rows_intact(b.warehouse, b)
    text = run("delete-orphan-files", a.root, "--dry-run").stdout
    assert "--external-root-is-exclusive" in " ".join(text.split())
    # What the flag would do here is exactly the danger: b's live files look like orphans.
    dry = run.json("delete-orphan-files", a.root, "--dry-run", "--external-root-is-exclusive")
    b_names = {f["path"].rpartition("/")[2] for f in run.json("inspect", b.root, "files")["files"]}
    listed = {o["path"].rpartition("/")[2] for o in dry["plan"]["details"]["orphans"]}
    assert b_names and b_names <= listed


def test_journal_temp_files_of_a_killed_write_are_removed(
    run: Any, scenarios: dict[str, pw.Scenario], tmp_path: Path
) -> None:
    _s, _wh, root = copy_scenario(scenarios, "many_commits", tmp_path)
    journal = root.joinpath(*JOURNAL)
    journal.mkdir(parents=True)
    stale = journal / ".expire-snapshots-1-0123456789ab.json.5f0c.tmp"
    stale.write_text('{"format": 1, "comm')
    age(stale, days=0.5)
    young = journal / ".expire-snapshots-2-0123456789ab.json.77aa.tmp"
    young.write_text("{")
    doc = run.json("create-tag", root, "t")
    assert not stale.exists()
    assert young.exists()  # may be a journal being written right now
    assert any("killed while writing its journal" in n for n in doc["report"]["notes"])


def _leave_journal(run: Any, root: Path) -> Path:
    dry = run.json("expire-snapshots", root, "--retain-max", "5", "--retain-min", "1", "--dry-run")
    journal = root.joinpath(*JOURNAL)
    journal.mkdir(parents=True)
    path = journal / f"expire-snapshots-{dry['plan']['created_ms']}-0123456789ab.json"
    path.write_text(json.dumps(dry["plan"]))
    return path


@pytest.mark.parametrize(
    "command",
    [
        ["compact"],
        ["create-tag", "release"],
        ["rename-tag", "t2", "t2-renamed"],
        ["expire-partitions", "--expiration-time", "1 d", "--timestamp-formatter", "yyyy-MM-dd"],
    ],
    ids=lambda c: c[0],
)
def test_every_changing_command_finishes_journals(
    run: Any, scenarios: dict[str, pw.Scenario], tmp_path: Path, command: list[str]
) -> None:
    name = "append_partitioned" if command[0] == "expire-partitions" else "tags_consumers_branches"
    s, wh, root = copy_scenario(scenarios, name, tmp_path)
    _leave_journal(run, root)
    result = run(command[0], root, *command[1:])
    assert result.exit_code == 0, result.stderr
    assert "finished an interrupted run first" in " ".join(result.stdout.split())
    assert not root.joinpath(*JOURNAL).exists()
    table = open_table(str(root))
    assert table.snapshots.ids()[0] > 1  # the journal's expiry happened
    assert_no_dangling_references(root)
    if command[0] != "expire-partitions":
        assert_rows_intact(wh, s)


def test_deleting_a_tag_the_branch_created_itself(
    run: Any, scenarios: dict[str, pw.Scenario], tmp_path: Path
) -> None:
    """b1's own tag is not "a tag b1 was created from"."""
    _s, _wh, root = copy_scenario(scenarios, "tags_consumers_branches", tmp_path)
    assert run("create-tag", root, "own", "--branch", "b1").exit_code == 0
    result = run("delete-tag", root, "own", "--branch", "b1")
    assert result.exit_code == 0, result.stderr
    assert not (root / "branch" / "branch-b1" / "tag" / "tag-own").exists()
    refused = run("delete-tag", root, "t4")
    assert refused.exit_code == 1
    assert "branch b1 was created from tag 't4'" in " ".join(refused.stderr.split())
    assert_no_dangling_references(root)


def test_journal_temp_cleanup_keeps_a_journal_being_written(tmp_path: Path) -> None:
    """The cut-off protects a concurrent run's journal write (unit check of the age rule)."""
    from core.io.fileio import FileIO
    from core.runtime.journal import TEMP_MIN_AGE_MS, journal_dir, remove_stale_temps

    root = tmp_path / "t"
    d = Path(journal_dir(str(root)))
    d.mkdir(parents=True)
    tmp = d / ".x.json.1.tmp"
    tmp.write_text("")
    now = int(time.time() * 1000)
    assert remove_stale_temps(FileIO(), str(root), now) == []
    old = (now - TEMP_MIN_AGE_MS - 1000) / 1000
    os.utime(tmp, (old, old))
    assert remove_stale_temps(FileIO(), str(root), now) == [str(tmp)]
    assert not d.exists()
