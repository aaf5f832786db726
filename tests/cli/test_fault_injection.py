"""Every mutating storage operation of a run fails once (process death or storage error):
the table stays consistent and a rerun converges to the uninterrupted result."""

from __future__ import annotations

import contextlib
import shutil
from pathlib import Path
from typing import Any

import pytest
from support import pypaimon_writer as pw
from support.invariants import (
    Crash,
    CrashingFileIO,
    age_tree,
    assert_no_dangling_references,
    files_under,
    plant,
)

from core.errors import StorageError
from core.io import fileio as fileio_module
from core.table.table import open_table


def _aged_copy(src: Path, dest: Path) -> Path:
    shutil.copytree(src, dest)
    age_tree(dest)
    for i in range(3):
        plant(dest / "manifest" / f"manifest-orphan-{i}", content=b"x")
    return dest


def _logical_state(wh: Path, identifier: str, root: Path) -> dict[str, Any]:
    table = open_table(str(root))
    return {
        "snapshots": len(table.snapshots.ids()),
        "tags": {t.name: pw.read_rows(wh, identifier, tag=t.name) for t in table.tags.tags()},
        "rows": pw.read_rows(wh, identifier),
    }


COMMANDS: dict[str, tuple[str, list[str], str]] = {
    # name: (scenario, arguments after the table, what must converge)
    "delete-orphan-files": ("append_partitioned", ["delete-orphan-files"], "files"),
    "expire-partitions": (
        "append_partitioned",
        ["expire-partitions", "--expiration-time", "1 d", "--timestamp-formatter", "yyyy-MM-dd"],
        "logical",
    ),
    "create-tag": ("append_partitioned", ["create-tag", "release"], "logical"),
    "delete-tag": ("tags_consumers_branches", ["delete-tag", "t2"], "logical"),
    "create-branch": ("tags_consumers_branches", ["create-branch", "b2", "--tag", "t2"], "files"),
    "delete-branch": ("tags_consumers_branches", ["delete-branch", "b1"], "files"),
    "fast-forward": ("tags_consumers_branches", ["fast-forward", "b1", "--force"], "files"),
}


@pytest.mark.parametrize("crash", [True, False], ids=["process-dies", "storage-error"])
@pytest.mark.parametrize("command", list(COMMANDS))
def test_every_operation_fails_once(
    run, scenarios, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, command: str, crash: bool
) -> None:
    scenario_name, args, mode = COMMANDS[command]
    s = scenarios[scenario_name]

    def state(root: Path, wh: Path) -> Any:
        if mode == "files":  # the hints a fallback expire-snapshots writes aside
            hints = ("/EARLIEST", "/LATEST")
            return {
                p.replace(str(root), "ROOT") for p in files_under(root) if not p.endswith(hints)
            }
        return _logical_state(wh, s.identifier, root)

    def table_at(tag: str) -> tuple[Path, Path]:
        wh = tmp_path / tag / "wh"
        return wh, _aged_copy(s.root, wh / s.root.parent.name / s.root.name)

    wh, root = table_at("reference")
    assert run(args[0], root, *args[1:]).exit_code == 0
    reference = state(root, wh)

    n = 1
    while n < 200:
        wh, root = table_at(f"run{n}")
        holder: dict[str, CrashingFileIO] = {}

        def crashing(
            *_a: Any, _n: int = n, _h: dict[str, CrashingFileIO] = holder, **_kw: Any
        ) -> CrashingFileIO:
            _h["fio"] = CrashingFileIO(_n, crash=crash)
            return _h["fio"]

        monkeypatch.setattr(fileio_module, "FileIO", crashing)
        with contextlib.suppress(Crash, StorageError):
            run(args[0], root, *args[1:])
        monkeypatch.undo()
        if holder["fio"].count < n:
            break  # the run ended before its Nth mutating operation: all points covered
        assert_no_dangling_references(root)
        pw.read_rows(wh, s.identifier)  # the latest snapshot still reads
        again = run(args[0], root, *args[1:])
        if again.exit_code != 0:
            # The interrupted run already did the user-visible part (the tag is gone, or
            # was created and only its run record was missing); any later command finishes
            # its journal.
            assert "does not exist" in again.stderr or "already exists" in again.stderr, (
                again.stderr
            )
            assert run("expire-snapshots", root).exit_code == 0
        assert state(root, wh) == reference, (command, n)
        shutil.rmtree(tmp_path / f"run{n}")
        n += 1
    assert n > 1  # at least one mutating operation was interrupted
