"""create-branch, delete-branch and fast-forward on real tables: the same files as
pypaimon's create_branch and drop_branch (Paimon master's FileSystemBranchManager), Paimon
master's fast_forward result, Java and pypaimon read every branch, snapshot and tag
afterwards, nothing main or another branch uses is ever deleted, a writer's commit made
meanwhile is never removed, and interrupted runs converge."""

from __future__ import annotations

import json
import shutil
import signal
from pathlib import Path
from typing import Any

import pytest
from support import pypaimon_writer as pw
from support.fixtures import Run
from support.invariants import (
    SignalAt,
    age_tree,
    assert_no_dangling_references,
    assert_rows_intact,
    files_under,
    tree_state,
)
from support.java_paimon import assert_java_ok, assert_same_rows

from core.io import fileio as fileio_module
from core.io.fileio import FileIO
from core.ops.branches.branches import FastForwardRaced
from core.ops.branches.fast_forward import FastForward
from core.ops.lifecycle import run as run_op
from core.runtime.executors.local import LocalExecutor
from core.table.table import open_table

SCENARIO = "tags_consumers_branches"  # main 1..8, tags t2 t4 t6, b1 from t4 (+2), 'empty'


def _copy(s: pw.Scenario, wh: Path) -> Path:
    root = wh / s.root.parent.name / s.root.name
    shutil.copytree(s.root, root, symlinks=True)
    return root


def _metadata(root: Path, under: str = "") -> dict[str, Any]:
    """Files below ``root/under`` outside .paimon-cli/: JSON parsed, hints as text."""
    out: dict[str, Any] = {}
    base = root / under if under else root
    for path in sorted(base.rglob("*")):
        rel = str(path.relative_to(root))
        if path.is_dir() or rel.startswith(".paimon-cli"):
            continue
        text = path.read_bytes()
        try:
            out[rel] = json.loads(text)
        except ValueError:
            out[rel] = text
    return out


def _pypaimon_table(wh: Path, s: pw.Scenario) -> Any:
    return pw.open_table(wh, s.identifier)


# -- create-branch ----------------------------------------------------------------------------
@pytest.mark.parametrize("tag", ["t2", None], ids=["from-tag", "empty"])
def test_create_branch_writes_what_pypaimon_writes(
    run: Run, scenarios: dict[str, pw.Scenario], tmp_path: Path, tag: str | None
) -> None:
    s = scenarios[SCENARIO]
    ours, theirs = _copy(s, tmp_path / "ours"), _copy(s, tmp_path / "theirs")
    main_before = tree_state(ours)
    args = ["--tag", tag] if tag else []
    dry = run("create-branch", ours, "b2", *args, "--dry-run")
    assert dry.exit_code == 0 and tree_state(ours) == main_before
    doc = run.json("create-branch", ours, "b2", *args)
    assert doc["plan"]["details"]["from_tag"] == tag
    _pypaimon_table(tmp_path / "theirs", s).branch_manager().create_branch("b2", tag)
    assert _metadata(ours, "branch/branch-b2") == _metadata(theirs, "branch/branch-b2")
    # nothing else changed
    after = {
        p: v
        for p, v in tree_state(ours).items()
        if "branch-b2" not in p and "/.paimon-cli/" not in p
    }
    assert after == main_before
    rows = pw.read_rows(tmp_path / "ours", s.identifier, branch="b2")
    assert rows == (pw.sort_rows(s.rows_at_tag(tag)) if tag else [])
    assert_no_dangling_references(ours)


def test_create_branch_is_read_by_java(
    run: Run, scenarios: dict[str, pw.Scenario], tmp_path: Path, java: Any
) -> None:
    s = scenarios[SCENARIO]
    root = _copy(s, tmp_path)
    assert run("create-branch", root, "b2", "--tag", "t2").exit_code == 0
    doc = java.verify(root, branch="b2")
    assert_java_ok(doc)
    assert doc["snapshot_ids"] == [2] and set(doc["tags"]) == {"t2"}
    assert doc["entries"]["latest"]["rows"] == len(s.rows_at_tag("t2"))
    # a branch from a branch's tag: b1's own tag t4
    assert run("create-branch", root, "b3", "--tag", "t4", "--branch", "b1").exit_code == 0
    doc = java.verify(root, branch="b3")
    assert_java_ok(doc)
    assert doc["entries"]["latest"]["rows"] == len(s.rows_at_tag("t4"))


def test_create_branch_from_a_tag_whose_snapshot_expired(
    run: Run, scenarios: dict[str, pw.Scenario], tmp_path: Path
) -> None:
    s = scenarios[SCENARIO]
    root = _copy(s, tmp_path)
    shutil.rmtree(root / "consumer")
    expire = run("expire-snapshots", root, "--retain-max", "2", "--retain-min", "1")
    assert expire.exit_code == 0, expire.stderr
    assert not (root / "snapshot" / "snapshot-2").exists()
    doc = run.json("create-branch", root, "old", "--tag", "t2")
    assert doc["plan"]["details"]["snapshot_restored_from_tag"] is True
    written = json.loads((root / "branch" / "branch-old" / "snapshot" / "snapshot-2").read_text())
    assert "tagCreateTime" not in written and written["id"] == 2
    assert pw.read_rows(tmp_path, s.identifier, branch="old") == pw.sort_rows(s.rows_at_tag("t2"))
    assert_no_dangling_references(root)


def test_create_branch_refusals(
    run: Run, scenarios: dict[str, pw.Scenario], tmp_path: Path
) -> None:
    root = _copy(scenarios[SCENARIO], tmp_path)
    state = tree_state(root)
    for args, code, phrase in (
        (["b1"], 1, "already exists"),
        (["b9", "--tag", "nope"], 1, "tag 'nope' does not exist"),
        (["main"], 2, "default branch"),
        (["123"], 2, "pure numeric"),
        (["a/b"], 2, "may not contain"),
    ):
        result = run("create-branch", root, *args)
        assert result.exit_code == code and phrase in result.stderr, (args, result.stderr)
    assert tree_state(root) == state


def test_create_branch_finishes_a_branch_left_halfway(
    run: Run, scenarios: dict[str, pw.Scenario], tmp_path: Path
) -> None:
    s = scenarios[SCENARIO]
    root = _copy(s, tmp_path / "ours")
    reference = _copy(s, tmp_path / "reference")
    assert run("create-branch", reference, "b2", "--tag", "t2").exit_code == 0
    half = root / "branch" / "branch-b2" / "schema"
    half.mkdir(parents=True)
    shutil.copy(root / "schema" / "schema-0", half / "schema-0")  # killed after the schema
    doc = run.json("create-branch", root, "b2", "--tag", "t2")
    assert doc["plan"]["details"]["finishing"] is True
    assert _metadata(root, "branch/branch-b2") == _metadata(reference, "branch/branch-b2")
    again = run("create-branch", root, "b2", "--tag", "t2")
    assert again.exit_code == 1 and "already exists" in again.stderr


# -- delete-branch ----------------------------------------------------------------------------
def test_delete_branch_leaves_what_pypaimon_leaves(
    run: Run, scenarios: dict[str, pw.Scenario], tmp_path: Path
) -> None:
    s = scenarios[SCENARIO]
    ours, theirs = _copy(s, tmp_path / "ours"), _copy(s, tmp_path / "theirs")
    dry = run("delete-branch", ours, "b1", "--dry-run", "-q")
    assert sorted(dry.stdout.split()) == sorted(
        str(p) for p in (ours / "branch" / "branch-b1").rglob("*") if p.is_file()
    )
    doc = run.json("delete-branch", ours, "b1")
    assert doc["report"]["status"] == "ok"
    _pypaimon_table(tmp_path / "theirs", s).branch_manager().drop_branch("b1")
    assert _metadata(ours) == _metadata(theirs)
    assert files_under(ours) == {p.replace(str(theirs), str(ours)) for p in files_under(theirs)}
    assert_rows_intact(tmp_path / "ours", s)
    assert_no_dangling_references(ours)


def test_after_delete_branch_orphan_cleaning_keeps_what_main_uses(
    run: Run, scenarios: dict[str, pw.Scenario], tmp_path: Path, java: Any
) -> None:
    """b1's own data files are orphans once it is gone; the files it shared with main (up
    to its base tag t4) are main's and stay."""
    s = scenarios[SCENARIO]
    root = _copy(s, tmp_path)
    java_before = java.verify(root)
    b1_files = set(pw.scan_file_names(tmp_path, s.identifier, branch="b1"))
    main_files = set(pw.scan_file_names(tmp_path, s.identifier))
    assert run("delete-branch", root, "b1").exit_code == 0
    age_tree(root)
    orphans = run.json("delete-orphan-files", root)
    deleted = {Path(o["path"]).name for o in orphans["plan"]["details"]["orphans"]}
    deleted_data = {n for n in deleted if n.startswith("data-")}
    assert deleted_data == b1_files - main_files and len(deleted_data) == 2
    assert_rows_intact(tmp_path, s)
    assert_no_dangling_references(root)
    assert_same_rows(java_before, java.verify(root))
    assert pw.read_rows(tmp_path, s.identifier, branch="empty") == []


def test_delete_branch_quarantine_and_restore(
    run: Run, scenarios: dict[str, pw.Scenario], tmp_path: Path
) -> None:
    s = scenarios[SCENARIO]
    root = _copy(s, tmp_path)
    before = _metadata(root)
    assert run("delete-branch", root, "b1", "--quarantine").exit_code == 0
    assert not (root / "branch" / "branch-b1").exists()
    restored = run("restore", root, "--last")
    assert restored.exit_code == 0, restored.stdout + restored.stderr
    assert _metadata(root) == before
    assert pw.read_rows(tmp_path, s.identifier, branch="b1") == s.branch_expected["b1"]


def test_delete_branch_refusals(
    run: Run, scenarios: dict[str, pw.Scenario], tmp_path: Path
) -> None:
    root = _copy(scenarios[SCENARIO], tmp_path)
    schema = root / "schema" / "schema-0"
    data = json.loads(schema.read_text())
    data["options"]["scan.fallback-branch"] = "b1"
    schema.write_text(json.dumps(data))
    state = tree_state(root)
    fallback = run("delete-branch", root, "b1")
    assert fallback.exit_code == 1 and "scan.fallback-branch" in fallback.stderr
    missing = run("delete-branch", root, "nope")
    assert missing.exit_code == 1 and "does not exist" in missing.stderr
    assert run("delete-branch", root, "main").exit_code == 2
    assert tree_state(root) == state


# -- fast-forward -----------------------------------------------------------------------------
def _expected_fast_forward(root: Path) -> dict[str, Any]:
    """Paimon master's fastForward of b1 into main, by hand: main's snapshots from 4 on, its
    schemas from 0 on (b1's earliest snapshot has schema 0) and its tags on snapshots from 4
    on go; b1's snapshot, schema and tag files are copied in."""
    meta = _metadata(root)
    out = {
        k: v
        for k, v in meta.items()
        if not (
            (k.startswith("snapshot/snapshot-") and int(k.rsplit("-", 1)[1]) >= 4)
            or k.startswith("schema/")
            or (k.startswith("tag/") and int(v["id"]) >= 4)
            or k in ("snapshot/LATEST", "snapshot/EARLIEST")
        )
    }
    for k, v in meta.items():
        for sub in ("snapshot/snapshot-", "schema/", "tag/"):
            prefix = f"branch/branch-b1/{sub}"
            if k.startswith(prefix):
                out[k[len("branch/branch-b1/") :]] = v
    out["snapshot/LATEST"] = 6
    out["snapshot/EARLIEST"] = 1
    return out


def test_fast_forward_gives_paimons_result_and_every_reader_agrees(
    run: Run, scenarios: dict[str, pw.Scenario], tmp_path: Path, java: Any
) -> None:
    s = scenarios[SCENARIO]
    root = _copy(s, tmp_path)
    expected = _expected_fast_forward(root)
    refused = run("fast-forward", root, "b1")
    assert refused.exit_code == 1 and "consumer 'fast'" in refused.stderr  # it read 4..6
    doc = run.json("fast-forward", root, "b1", "--force")
    d = doc["plan"]["details"]
    # snapshot 4 is the very snapshot b1 was created from: it stays where it is
    assert d["snapshots_removed"] == [5, 6, 7, 8] and d["snapshots_copied"] == [5, 6]
    assert d["tags_removed"] == ["t6"] and d["forced"] is True
    assert _metadata(root) == expected
    assert pw.read_rows_at_root(root) == s.branch_expected["b1"]
    for sid in (1, 2, 3, 4):
        assert pw.read_rows_at_root(root, snapshot_id=sid) == pw.sort_rows(s.expected[sid])
    assert pw.read_rows_at_root(root, tag="t2") == pw.sort_rows(s.rows_at_tag("t2"))
    assert_no_dangling_references(root)
    doc = java.verify(root)
    assert_java_ok(doc)
    assert doc["latest_snapshot_id"] == 6 and doc["earliest_snapshot_id"] == 1
    assert doc["entries"]["latest"]["rows"] == len(s.branch_expected["b1"])
    again = run("fast-forward", root, "b1", "--force")
    assert again.exit_code == 0 and "already holds" in again.stdout


def test_fast_forward_refusals(run: Run, scenarios: dict[str, pw.Scenario], tmp_path: Path) -> None:
    root = _copy(scenarios[SCENARIO], tmp_path)
    state = tree_state(root)
    for args, code, phrase in (
        (["empty"], 1, "has no snapshot"),
        (["nope"], 1, "does not exist"),
        (["main"], 2, "default branch"),
        (["b1", "--branch", "b1"], 1, "current branch"),
    ):
        result = run("fast-forward", root, *args)
        assert result.exit_code == code and phrase in result.stderr, (args, result.stderr)
    assert tree_state(root) == state


def _main_forked_after_b1(s: pw.Scenario, tmp_path: Path, *, commit: bool) -> Path:
    """main rolled back to 2 below b1's fork (its snapshot 4), then (``commit``) a writer's
    commit on 2 as snapshot 3 that b1 does not hold; consumers aside."""
    root = _copy(s, tmp_path)
    shutil.rmtree(root / "consumer")
    table = _pypaimon_table(tmp_path, s)
    table.rollback_to(2)
    if commit:
        pw.append(_pypaimon_table(tmp_path, s), [{"id": 777, "v": "after-rollback"}])
    return root


def test_fast_forward_refuses_to_drop_commits_made_after_the_fork(
    run: Run, scenarios: dict[str, pw.Scenario], tmp_path: Path, java: Any
) -> None:
    """Snapshot files name no parent: without this refusal main's new snapshot 3 stays with
    its row while b1's 4..6, which descend from the old 3, sit above it, and the writer's
    acknowledged row leaves main's head (Paimon splices them; --force does as Paimon)."""
    s = scenarios[SCENARIO]
    root = _main_forked_after_b1(s, tmp_path, commit=True)
    state = tree_state(root)
    refused = run("fast-forward", root, "b1")
    assert refused.exit_code == 1, refused.stderr
    assert (
        "main's snapshot 3 was committed after branch b1 forked from it at snapshot 4 "
        "(the branch's base tag 't4')" in refused.stderr
    )
    assert "--force" in refused.stderr and tree_state(root) == state
    assert {"id": 777, "v": "after-rollback"} in pw.read_rows_at_root(root)
    forced = run.json("fast-forward", root, "b1", "--force")
    assert forced["plan"]["details"]["snapshots_copied"] == [4, 5, 6]
    assert pw.read_rows_at_root(root) == s.branch_expected["b1"]
    assert {"id": 777, "v": "after-rollback"} in pw.read_rows_at_root(root, snapshot_id=3)
    assert_no_dangling_references(root)
    assert_java_ok(java.verify(root))


def test_fast_forward_refuses_a_hole_below_the_branch(
    run: Run, scenarios: dict[str, pw.Scenario], tmp_path: Path
) -> None:
    """main rolled back to 2 below b1's fork at 4: copying 4..6 would leave no snapshot 3,
    which inspect --check reports and no reader expects; --force does not change that."""
    root = _main_forked_after_b1(scenarios[SCENARIO], tmp_path, commit=False)
    state = tree_state(root)
    for force in ([], ["--force"]):
        refused = run("fast-forward", root, "b1", *force)
        assert refused.exit_code == 1, refused.stderr
        assert "snapshot 3 would be missing from main's history" in refused.stderr
    assert tree_state(root) == state
    assert run("inspect", root, "--check").exit_code == 0


class _WriterRaces(FileIO):
    """A writer commits to main right after fast-forward removed main's snapshots."""

    def __init__(self, last_delete: str, writer: Any) -> None:
        super().__init__()
        self.last_delete = last_delete
        self.writer = writer

    def delete(self, path: str) -> bool:
        deleted = super().delete(path)
        if path == self.last_delete and self.writer is not None:
            writer, self.writer = self.writer, None
            pw.append(writer, [{"id": 999, "v": "writer"}])  # lands as snapshot 5
        return deleted


def test_fast_forward_never_loses_a_writers_commit(
    run: Run, scenarios: dict[str, pw.Scenario], tmp_path: Path
) -> None:
    s = scenarios[SCENARIO]
    root = _copy(s, tmp_path)
    shutil.rmtree(root / "consumer")
    fileio = _WriterRaces(str(root / "snapshot" / "snapshot-5"), _pypaimon_table(tmp_path, s))
    table = open_table(str(root), fileio=fileio)
    with LocalExecutor(1) as ex, pytest.raises(FastForwardRaced, match="snapshot 5"):
        run_op(FastForward("b1", force=True), table, executor=ex)
    writers = open_table(str(root)).snapshots.snapshot(5)
    rows = pw.read_rows_at_root(root)
    assert {"id": 999, "v": "writer"} in rows
    # the next command discards the journal instead of removing the writer's commit
    assert run("create-tag", root, "after").exit_code == 0
    assert open_table(str(root)).snapshots.snapshot(5).raw["uuid"] == writers.raw["uuid"]
    assert {"id": 999, "v": "writer"} in pw.read_rows_at_root(root)
    assert not list((root / ".paimon-cli" / "journal").glob("*.json"))
    assert_no_dangling_references(root)


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_a_signal_stops_fast_forward_safely_and_the_next_run_finishes_it(
    run: Run,
    scenarios: dict[str, pw.Scenario],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    signum: int,
) -> None:
    s = scenarios[SCENARIO]
    reference = _copy(s, tmp_path / "reference")
    assert run("fast-forward", reference, "b1", "--force").exit_code == 0
    root = _copy(s, tmp_path / "run")
    fio = SignalAt(signum, at=3)  # while main's replaced snapshots go
    monkeypatch.setattr(fileio_module, "FileIO", lambda *_a, **_k: fio)
    result = run("fast-forward", root, "b1", "--force")
    monkeypatch.undo()
    assert fio.sent and result.exit_code == 128 + signum and "interrupted by" in result.stderr
    assert "Traceback" not in result.stderr
    assert_no_dangling_references(root)
    assert pw.read_rows_at_root(root)  # main reads (the older part of its history)
    again = run("create-tag", root, "after", "--json")  # any command finishes it first
    assert again.exit_code == 0, again.stderr
    assert json.loads(again.stdout)["report"]["resumed_journals"]
    got = {k: v for k, v in _metadata(root).items() if k != "tag/tag-after"}
    assert got == _metadata(reference)
    assert pw.read_rows_at_root(root) == s.branch_expected["b1"]
