"""Branch commands against writers and expired forks (issue 33, defects 4 and 6), on tables
pypaimon wrote, read back by pypaimon and by Apache Paimon (Java).

- delete-branch racing a writer on that branch: the writer's next commit reuses the id of
  the snapshot the run just removed (pypaimon finds its latest by listing once the
  ``LATEST`` hint names a missing file). The run compares commits, not ids, stops, and
  leaves the writer's snapshot with its schema.
- fast-forward after the branch expired the snapshot it forked from: main's commits after
  the fork are found from the branch's base tag, and refused without ``--force``.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from support import pypaimon_writer as pw
from support.fixtures import Run
from support.invariants import assert_no_dangling_references, tree_state
from support.java_paimon import assert_java_ok

from core.io import fileio as fileio_module
from core.io.fileio import FileIO

SCENARIO = "tags_consumers_branches"  # main 1..8, b1 from t4 with 4, 5, 6


def _copy(s: pw.Scenario, wh: Path) -> Path:
    root = wh / s.root.parent.name / s.root.name
    shutil.copytree(s.root, root, symlinks=True)
    return root


class _WriterAfter(FileIO):
    """A writer commits to a branch right after the run removed (or quarantined) ``path``."""

    def __init__(self, path: str, commit: Any) -> None:
        super().__init__()
        self.path = path
        self.commit = commit

    def _fire(self, path: str) -> None:
        if path == self.path and self.commit is not None:
            commit, self.commit = self.commit, None
            commit()

    def delete(self, path: str) -> bool:
        done = super().delete(path)
        self._fire(path)
        return done

    def move(self, src: str, dst: str, *, replace: bool = False) -> bool:
        done = super().move(src, dst, replace=replace)
        self._fire(src)
        return done


def _delete_branch_raced(
    run: Run, monkeypatch: pytest.MonkeyPatch, root: Path, target: str, commit: Any, *args: str
) -> Any:
    fio = _WriterAfter(str(root / "branch" / "branch-b1" / target), commit)
    monkeypatch.setattr(fileio_module, "FileIO", lambda *_a, **_k: fio)
    result = run("delete-branch", root, "b1", *args)
    monkeypatch.undo()
    assert fio.commit is None, "the writer never ran"
    return result


@pytest.mark.java
@pytest.mark.parametrize("quarantine", [False, True], ids=["delete", "quarantine"])
def test_delete_branch_stops_when_a_writer_reuses_the_id_it_removed(
    run: Run,
    scenarios: dict[str, pw.Scenario],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    java: Any,
    quarantine: bool,
) -> None:
    s = scenarios[SCENARIO]
    root = _copy(s, tmp_path)
    row = {"id": 4242, "v": "writer"}

    def commit() -> None:
        branch = pw.open_table(tmp_path, s.identifier, branch="b1")
        assert pw.append(branch, [row]) == 6  # the id the run just removed

    args = ["--quarantine"] if quarantine else []
    result = _delete_branch_raced(run, monkeypatch, root, "snapshot/snapshot-6", commit, *args)
    assert result.exit_code == 1, result.stdout + result.stderr
    assert "Traceback" not in result.stderr
    assert "delete-branch b1 stopped: a writer committed to the branch" in result.stderr
    branch = root / "branch" / "branch-b1"
    assert (branch / "schema" / "schema-0").exists()
    rows = pw.read_rows(tmp_path, s.identifier, branch="b1")
    assert row in rows
    assert pw.read_rows(tmp_path, s.identifier) == pw.sort_rows(s.expected[8])
    assert_no_dangling_references(root)
    assert run("inspect", root, "--branch", "b1", "--check").exit_code == 0
    doc = java.verify(root, branch="b1")
    assert_java_ok(doc)
    assert doc["latest_snapshot_id"] == 6
    # The journal is discarded, never finished over the writer's commit.
    again = run("create-tag", root, "after", "--json")
    assert again.exit_code == 0, again.stderr
    assert row in pw.read_rows(tmp_path, s.identifier, branch="b1")
    assert (branch / "schema" / "schema-0").exists()


def test_delete_branch_puts_the_schema_back_when_a_writer_commits_during_its_deletion(
    run: Run, scenarios: dict[str, pw.Scenario], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every commit file went; the writer, holding the schema in memory, commits the
    branch's first snapshot again right after ``schema-0`` went: it comes back."""
    s = scenarios[SCENARIO]
    root = _copy(s, tmp_path)
    row = {"id": 4343, "v": "late writer"}
    writer = pw.open_table(tmp_path, s.identifier, branch="b1")  # schema read now

    def commit() -> None:
        pw.append(writer, [row])

    result = _delete_branch_raced(run, monkeypatch, root, "schema/schema-0", commit)
    assert result.exit_code == 1, result.stdout + result.stderr
    assert "stopped: a writer committed to the branch" in result.stderr
    assert "Traceback" not in result.stderr
    assert (root / "branch" / "branch-b1" / "schema" / "schema-0").exists()
    assert pw.read_rows(tmp_path, s.identifier, branch="b1") == [row]
    assert_no_dangling_references(root)


def test_delete_branch_refuses_a_plan_whose_snapshot_is_another_commit_now(
    run: Run, scenarios: dict[str, pw.Scenario], tmp_path: Path
) -> None:
    """A saved plan names snapshot 6 of b1; a writer's commit now holds that id (the branch
    rolled back to 5, then committed): same ids, another commit, refused before any
    change."""
    s = scenarios[SCENARIO]
    root = _copy(s, tmp_path)
    plan = tmp_path / "plan.json"
    saved = run("delete-branch", root, "b1", "--dry-run", "--json")
    assert saved.exit_code == 0, saved.stderr
    plan.write_text(saved.stdout)
    branch = pw.open_table(tmp_path, s.identifier, branch="b1")
    branch.rollback_to(5)
    pw.append(pw.open_table(tmp_path, s.identifier, branch="b1"), [{"id": 1, "v": "new 6"}])
    state = tree_state(root)
    result = run("delete-branch", root, "b1", "--plan", str(plan))
    assert result.exit_code == 1, result.stdout + result.stderr
    assert "snapshot 6 (another commit than planned)" in result.stderr, result.stderr
    assert "Traceback" not in result.stderr
    assert tree_state(root) == state


# -- fast-forward: the fork from the branch's base tag ----------------------------------------
def _expired_fork(tmp_path: Path) -> tuple[Path, Path]:
    """main 1..5, tag t5, branch b from t5; main commits 6; b commits 6'..8' and expires
    down to 7'..8'; main commits 7 and 8 (the sequence of issue 33, defect 6)."""
    wh = tmp_path / "wh"
    schema = pa.schema([("id", pa.int64()), ("v", pa.string())])
    table = pw.create_table(wh, "db.fork", schema)
    for i in range(1, 6):
        pw.append(table, [{"id": i, "v": f"main {i}"}])
    pw.create_tag(table, "t5", 5)
    branch = pw.create_branch(table, "b", "t5")
    pw.append(table, [{"id": 6, "v": "main 6"}])
    for i in range(6, 9):
        pw.append(branch, [{"id": 100 + i, "v": f"b {i}"}])
    root = pw.table_root(wh, "db.fork")
    return wh, root


@pytest.mark.java
def test_fast_forward_refuses_main_commits_after_a_fork_the_branch_expired(
    run: Run, tmp_path: Path, java: Any
) -> None:
    wh, root = _expired_fork(tmp_path)
    expired = run(
        "expire-snapshots", root, "--branch", "b", "--retain-max", "2", "--retain-min", "1"
    )
    assert expired.exit_code == 0, expired.stderr
    assert sorted(p.name for p in (root / "branch/branch-b/snapshot").glob("snapshot-*")) == [
        "snapshot-7",
        "snapshot-8",
    ]
    main = pw.open_table(wh, "db.fork")
    pw.append(main, [{"id": 7, "v": "main 7"}])
    pw.append(main, [{"id": 8, "v": "main 8"}])
    state = tree_state(root)
    refused = run("fast-forward", root, "b")
    assert refused.exit_code == 1, refused.stdout + refused.stderr
    assert "Traceback" not in refused.stderr
    assert (
        "main's snapshots 6..8 were committed after branch b forked from it at snapshot 5 "
        "(the branch's base tag 't5')" in refused.stderr
    )
    assert "--force" in refused.stderr and tree_state(root) == state
    assert {"id": 6, "v": "main 6"} in pw.read_rows(wh, "db.fork")
    # --force does as Paimon: b's 7'..8' on top of main's 6, whose row leaves the head
    forced = run.json("fast-forward", root, "b", "--force")
    assert forced["plan"]["details"]["forced"] is True
    assert any("forced: main's snapshots 6..8" in n for n in forced["plan"]["details"]["notes"])
    assert_no_dangling_references(root)
    doc = java.verify(root)
    assert_java_ok(doc)
    assert doc["latest_snapshot_id"] == 8


def test_fast_forward_refuses_when_the_fork_cannot_be_known(run: Run, tmp_path: Path) -> None:
    """The branch's base tag deleted and its fork snapshot expired: nothing tells where it
    left main, so main's snapshots may be commits it does not hold."""
    wh, root = _expired_fork(tmp_path)
    assert run("delete-tag", root, "t5", "--branch", "b").exit_code == 0
    expired = run(
        "expire-snapshots", root, "--branch", "b", "--retain-max", "2", "--retain-min", "1"
    )
    assert expired.exit_code == 0, expired.stderr
    state = tree_state(root)
    refused = run("fast-forward", root, "b")
    assert refused.exit_code == 1, refused.stdout + refused.stderr
    assert "where branch b forked from main cannot be known" in refused.stderr
    assert tree_state(root) == state


def test_fast_forward_of_an_untouched_main_needs_no_force(run: Run, tmp_path: Path) -> None:
    """main stopped at the fork (its writers moved to the branch): nothing of main's is
    lost, even with the fork snapshot expired in the branch."""
    wh = tmp_path / "wh"
    schema = pa.schema([("id", pa.int64()), ("v", pa.string())])
    table = pw.create_table(wh, "db.clean", schema)
    for i in range(1, 4):
        pw.append(table, [{"id": i, "v": f"main {i}"}])
    pw.create_tag(table, "t3", 3)
    branch = pw.create_branch(table, "b", "t3")
    for i in range(4, 7):
        pw.append(branch, [{"id": 100 + i, "v": f"b {i}"}])
    root = pw.table_root(wh, "db.clean")
    args = ("--branch", "b", "--retain-max", "3", "--retain-min", "1")
    assert run("expire-snapshots", root, *args).exit_code == 0
    assert not (root / "branch/branch-b/snapshot/snapshot-3").exists()
    done = run.json("fast-forward", root, "b")
    assert done["plan"]["details"]["snapshots_copied"] == [4, 5, 6]
    assert done["plan"]["details"]["forced"] is False
    assert pw.read_rows(wh, "db.clean") == pw.read_rows(wh, "db.clean", branch="b")
    assert_no_dangling_references(root)
