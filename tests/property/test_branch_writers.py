"""delete-branch racing a writer on that branch at a drawn moment (issue 33, defect 4), on
pypaimon-written tables: the writer commits right before or after the n-th deletion (or
quarantine move) of the run, on the latest snapshot it finds then, with or without the
schema read before the run started.

Whatever the moment: the run exits 0 or 1 without a traceback; every snapshot, tag and
changelog left anywhere reads its schema and every file it references; a writer's
acknowledged commit that is still in the branch reads its row; and a run that exited 0
left no branch behind.
"""

from __future__ import annotations

import shutil
import uuid
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support import pypaimon_writer as pw
from support.fixtures import Run
from support.invariants import assert_no_dangling_references
from support.reference_check import missing_references

from core.io import fileio as fileio_module
from core.io.fileio import FileIO

SCENARIO = "tags_consumers_branches"  # b1 from t4 with snapshots 4, 5, 6


class _WriterAt(FileIO):
    """Runs ``commit`` before or after the ``at``-th deletion or move of a file of the
    branch. (A writer that commits once the run removed the branch's last schema writes
    into a deleted branch, whatever deletes it: Paimon's delete_branch alike.)"""

    def __init__(self, branch: str, at: int, after: bool, commit: Any) -> None:
        super().__init__()
        self.branch = branch
        self.at, self.after, self.commit = at, after, commit
        self.calls = 0

    def _around(self, path: str, act: Any) -> bool:
        if self.branch not in path:
            return bool(act())
        self.calls += 1
        self._step(False)
        done = bool(act())
        self._step(True)
        return done

    def _step(self, when_after: bool) -> None:
        if when_after == self.after and self.calls == self.at and self.commit is not None:
            commit, self.commit = self.commit, None
            commit()

    def delete(self, path: str) -> bool:
        return self._around(path, lambda: super(_WriterAt, self).delete(path))

    def move(self, src: str, dst: str, *, replace: bool = False) -> bool:
        return self._around(src, lambda: super(_WriterAt, self).move(src, dst, replace=replace))


@settings(
    max_examples=25,
    deadline=None,
    database=None,
    derandomize=True,  # the same moments every run
    suppress_health_check=list(HealthCheck),
)
@given(
    at=st.integers(1, 8),  # b1: a tag, three snapshots, hints, a consumer, a schema
    after=st.booleans(),
    quarantine=st.booleans(),
    schema_first=st.booleans(),
)
def test_delete_branch_never_leaves_a_writers_commit_without_its_schema(
    scenarios: dict[str, pw.Scenario],
    tmp_path: Path,
    at: int,
    after: bool,
    quarantine: bool,
    schema_first: bool,
) -> None:
    s = scenarios[SCENARIO]
    wh = tmp_path / uuid.uuid4().hex[:8]
    root = wh / s.root.parent.name / s.root.name
    shutil.copytree(s.root, root, symlinks=True)
    row = {"id": 7777, "v": "writer"}
    acknowledged: list[int] = []
    early = pw.open_table(wh, s.identifier, branch="b1") if schema_first else None

    def commit() -> None:
        try:  # a writer on a half-deleted branch may fail: no acknowledged commit then
            table = early or pw.open_table(wh, s.identifier, branch="b1")
            acknowledged.append(pw.append(table, [row]))
        except Exception:  # noqa: BLE001
            return

    fio = _WriterAt(str(root / "branch" / "branch-b1") + "/", at, after, commit)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(fileio_module, "FileIO", lambda *_a, **_k: fio)
        result = Run()("delete-branch", root, "b1", *(["--quarantine"] if quarantine else []))
    assert result.exit_code in (0, 1), result.stdout + result.stderr
    assert "Traceback" not in result.stderr, result.stderr
    assert not missing_references(root), missing_references(root)[:5]
    assert_no_dangling_references(root)
    branch = root / "branch" / "branch-b1"
    if result.exit_code == 0:
        assert not list(branch.glob("snapshot/snapshot-*")), "exit 0, yet the branch has commits"
    if acknowledged and (branch / "snapshot" / f"snapshot-{acknowledged[0]}").exists():
        assert row in pw.read_rows(wh, s.identifier, branch="b1")
    # the next command finishes or discards the run's journal; still nothing is missing
    assert Run()("create-tag", root, "later").exit_code == 0
    assert not missing_references(root)
