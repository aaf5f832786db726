"""A run with --quarantine, or a restore, dies (or hits a storage error) at every mutating
storage operation in turn: the table stays consistent, a rerun converges, nothing is lost."""

from __future__ import annotations

import contextlib
import shutil
from pathlib import Path
from typing import Any

import pytest
from support.invariants import Crash, CrashingFileIO, age_tree, assert_no_dangling_references
from support.invariants import tree_digests as digests

from core.errors import StorageError
from core.io import fileio as fileio_module

COMMANDS: dict[str, tuple[str, list[str]]] = {
    "expire-snapshots": (
        "many_commits",
        ["expire-snapshots", "--retain-max", "24", "--retain-min", "1"],
    ),
    "delete-tag": ("tags_consumers_branches", ["delete-tag", "t2"]),
    "rollback": ("tags_consumers_branches", ["rollback", "--to-tag", "t4", "--force"]),
}


def _copy(scenarios, tmp_path: Path, tag: str, scenario: str) -> Path:
    s = scenarios[scenario]
    root = tmp_path / tag / "wh" / s.root.parent.name / s.root.name
    shutil.copytree(s.root, root, symlinks=True)
    age_tree(root)
    return root


def _crashing(monkeypatch: pytest.MonkeyPatch, n: int, crash: bool) -> dict[str, CrashingFileIO]:
    holder: dict[str, CrashingFileIO] = {}

    def make(*_a: Any, **_kw: Any) -> CrashingFileIO:
        holder["fio"] = CrashingFileIO(n, crash=crash)
        return holder["fio"]

    monkeypatch.setattr(fileio_module, "FileIO", make)
    return holder


def _restore_all(run, root: Path) -> None:
    for _ in range(5):
        if run("restore", root, "--last").exit_code != 0:
            return
    raise AssertionError("restore --last never ran out of runs")


@pytest.mark.parametrize("crash", [True, False], ids=["process-dies", "storage-error"])
@pytest.mark.parametrize("command", list(COMMANDS))
def test_interrupted_quarantine_converges_and_restores(
    run, scenarios, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, command: str, crash: bool
) -> None:
    scenario, args = COMMANDS[command]
    ref = _copy(scenarios, tmp_path, "reference", scenario)
    original = digests(ref)
    assert run(args[0], ref, *args[1:]).exit_code == 0
    reference = digests(ref)
    n = 1
    while n < 300:
        root = _copy(scenarios, tmp_path, f"run{n}", scenario)
        holder = _crashing(monkeypatch, n, crash)
        with contextlib.suppress(Crash, StorageError):
            run(args[0], root, *args[1:], "--quarantine")
        monkeypatch.undo()
        if holder["fio"].count < n:
            break
        assert_no_dangling_references(root)
        again = run(args[0], root, *args[1:], "--quarantine")
        if again.exit_code != 0:  # the deletion had finished: the name is a typo now
            assert "does not exist" in again.stderr, again.stderr
            assert not list((root / ".paimon-cli" / "journal").glob("*.json"))
        assert digests(root) == reference, n
        _restore_all(run, root)
        assert digests(root) == original, n
        assert_no_dangling_references(root)
        shutil.rmtree(tmp_path / f"run{n}")
        n += 1
    assert n > 3


@pytest.mark.parametrize("crash", [True, False], ids=["process-dies", "storage-error"])
def test_interrupted_restore_converges(
    run, scenarios, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, crash: bool
) -> None:
    scenario, args = COMMANDS["expire-snapshots"]
    n = 1
    while n < 300:
        root = _copy(scenarios, tmp_path, f"run{n}", scenario)
        original = digests(root)
        assert run(args[0], root, *args[1:], "--quarantine").exit_code == 0
        holder = _crashing(monkeypatch, n, crash)
        with contextlib.suppress(Crash, StorageError):
            run("restore", root, "--last")
        monkeypatch.undo()
        if holder["fio"].count < n:
            break
        assert run("restore", root, "--last").exit_code == 0 or digests(root) == original
        assert digests(root) == original, n
        assert_no_dangling_references(root)
        shutil.rmtree(tmp_path / f"run{n}")
        n += 1
    assert n > 3
