"""Branch commands against writers and expired forks (issue 33, defect 4), on tables
pypaimon wrote, read back by pypaimon and by Apache Paimon (Java).

- delete-branch racing a writer on that branch: the writer's next commit reuses the id of
  the snapshot the run just removed (pypaimon finds its latest by listing once the
  ``LATEST`` hint names a missing file). The run compares commits, not ids, stops, and
  leaves the writer's snapshot with its schema.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

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
    assert run("delete-branch", root, "b1", "--dry-run", "--json").exit_code == 0
    saved = run("delete-branch", root, "b1", "--dry-run", "--json")
    plan.write_text(saved.stdout)
    branch = pw.open_table(tmp_path, s.identifier, branch="b1")
    branch.rollback_to(5)
    pw.append(pw.open_table(tmp_path, s.identifier, branch="b1"), [{"id": 1, "v": "new 6"}])
    state = tree_state(root)
    result = run("delete-branch", root, "b1", "--plan", str(plan))
    assert result.exit_code == 1, result.stdout + result.stderr
    assert "Traceback" not in result.stderr
    assert tree_state(root) == state
