"""Once a command's snapshot (or tag) file exists with our content, the commit has happened:
Ctrl-C, SystemExit or an error answer right after that write never removes what it
references, and an "already exists" heard for our own earlier write is ours (issue 22
defect 2, issue 28 defect 1). Tables written by pypaimon; pypaimon and Java read the head."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from support import pypaimon_writer as pw
from support.java_paimon import assert_java_ok

from core.errors import StorageError
from core.io import fileio as fileio_module
from core.io.fileio import FileIO
from core.ops.inspection.check import check_table
from core.runtime.executors.local import LocalExecutor
from core.table.table import open_table

Fault = Callable[[str], BaseException]

FAULTS: dict[str, Fault] = {
    "sigint": lambda path: KeyboardInterrupt(),
    "system-exit": lambda path: SystemExit(3),
    "applied-then-500": lambda path: StorageError(f"{path}: 500 InternalError (it was stored)"),
}


class AfterPublishing(FileIO):
    """Raises ``fault`` right after the first snapshot (or tag) file was created."""

    def __init__(self, fault: Fault, marker: str) -> None:
        super().__init__()
        self.fault = fault
        self.marker = marker
        self.fired = False

    def write_if_absent(self, path: str, data: bytes) -> bool:
        created = super().write_if_absent(path, data)
        if self.marker in path and not self.fired:
            self.fired = True
            raise self.fault(path)
        return created


class LostAnswer(FileIO):
    """The store keeps the first create of a ``marker`` file but its answer is lost, so the
    client's retry is told the file exists (S3: 500, then 412 to the retried PUT)."""

    def __init__(self, marker: str) -> None:
        super().__init__()
        self.marker = marker
        self.retried: list[str] = []

    def write_if_absent(self, path: str, data: bytes) -> bool:
        if self.marker in path and not self.retried:
            assert super().write_if_absent(path, data)
            self.retried.append(path)  # the answer never arrived: the client asks again
        return super().write_if_absent(path, data)


def _use(monkeypatch: pytest.MonkeyPatch, fio: FileIO) -> None:
    monkeypatch.setattr(fileio_module, "FileIO", lambda *_a, **_k: fio)


def _small_files(wh: Path) -> Path:
    schema = pa.schema([("id", pa.int64()), ("dt", pa.string()), ("s", pa.string())])
    table = pw.create_table(wh, "db.small", schema, partition_keys=["dt"])
    for c in range(6):  # compaction.min.file-num (5) files per partition
        pw.append(table, [{"id": c * 2 + j, "dt": f"d{j}", "s": f"s{c}"} for j in range(2)])
    return pw.table_root(wh, "db.small")


def _broken(scenarios: dict[str, pw.Scenario], wh: Path) -> Path:
    """A copy of append_partitioned with the files snapshot 6 added deleted by hand."""
    s = scenarios["append_partitioned"]
    root = wh / s.root.parent.name / s.root.name
    shutil.copytree(s.root, root)
    for kind, name in pw.delta_entries(root.parents[1], s.identifier, 6):
        if kind == 0:
            (path,) = root.rglob(name)
            path.unlink()
    return root


def _command(
    name: str, tmp_path: Path, scenarios: dict[str, pw.Scenario]
) -> tuple[Path, list[str]]:
    if name == "compact":
        return _small_files(tmp_path / "wh"), ["compact"]
    if name == "expire-partitions":
        # Every value a date: a kept undated partition would fail the run (exit 1).
        dated = pw.dated_partitions(tmp_path / "wh", undated=False)
        return dated.root, ["expire-partitions", "--expiration-time", "1 d", "--max-expires", "2"]
    return _broken(scenarios, tmp_path / "wh"), ["remove-unexisting-files"]


def _head(root: Path) -> list[dict[str, Any]]:
    wh = root.parents[1]
    return pw.read_rows(wh, f"{root.parent.name[:-3]}.{root.name}")


def _assert_committed(root: Path, before: list[int], rows: list[dict[str, Any]] | None) -> None:
    """One new snapshot, everything it references present, and it reads as expected (older
    snapshots of the remove-unexisting-files table still name the files lost by hand)."""
    table = open_table(str(root))
    head = before[-1] + 1
    assert table.snapshots.ids() == [*before, head]
    with LocalExecutor(2) as ex:
        problems = check_table(table, executor=ex).problems
    assert not [p for p in problems if p.referenced_by == f"snapshot {head}"], problems[:3]
    if rows is not None:
        assert _head(root) == rows


COMMANDS = ["compact", "expire-partitions", "remove-unexisting-files"]


@pytest.mark.parametrize("fault", list(FAULTS))
@pytest.mark.parametrize("command", COMMANDS)
def test_a_fault_right_after_the_snapshot_write_keeps_the_commit(
    run, scenarios, tmp_path: Path, monkeypatch, command: str, fault: str
) -> None:
    root, args = _command(command, tmp_path / "reference", scenarios)
    assert run(args[0], root, *args[1:]).exit_code == 0
    rows = _head(root)

    root, args = _command(command, tmp_path / "faulty", scenarios)
    before = open_table(str(root)).snapshots.ids()
    fio = AfterPublishing(FAULTS[fault], "/snapshot/snapshot-")
    _use(monkeypatch, fio)
    result = run(args[0], root, *args[1:])
    monkeypatch.undo()
    assert fio.fired
    # The error answer is read back as our snapshot: a success. Ctrl-C stops the command
    # (exit 130, saying so) and SystemExit too (3), but what it published stays whole.
    assert result.exit_code == {"sigint": 130, "system-exit": 3}.get(fault, 0), result.stderr
    if fault == "sigint":
        assert "interrupted by SIGINT" in result.stderr
    assert "Traceback" not in result.stderr
    _assert_committed(root, before, rows)


@pytest.mark.java
@pytest.mark.parametrize("command", COMMANDS)
def test_java_reads_the_head_after_ctrl_c(
    run, scenarios, tmp_path: Path, monkeypatch, java, command: str
) -> None:
    root, args = _command(command, tmp_path, scenarios)
    _use(monkeypatch, AfterPublishing(FAULTS["sigint"], "/snapshot/snapshot-"))
    assert run(args[0], root, *args[1:]).exit_code == 130
    monkeypatch.undo()
    doc = java.verify(root)
    if command == "remove-unexisting-files":
        # Older snapshots still name the files lost by hand; the repaired head reads.
        head = f"snapshot-{doc['latest_snapshot_id']}"
        assert not [k for k in doc["errors"] if head in k or "latest" in k], doc["errors"]
        assert not [m for m in doc["missing_files"] if head in m]
    else:
        assert_java_ok(doc)
    assert doc["entries"]["latest"]["rows"] == len(_head(root))


@pytest.mark.parametrize("command", COMMANDS)
def test_our_snapshot_heard_as_already_existing_is_our_commit(
    run, scenarios, tmp_path: Path, monkeypatch, command: str
) -> None:
    root, args = _command(command, tmp_path, scenarios)
    before = open_table(str(root)).snapshots.ids()
    fio = LostAnswer("/snapshot/snapshot-")
    _use(monkeypatch, fio)
    doc = run.json(args[0], root, *args[1:])
    monkeypatch.undo()
    assert fio.retried
    assert doc["report"]["attempts"] == 1 and doc["report"]["snapshot_id"] == before[-1] + 1
    _assert_committed(root, before, None)


def test_tag_heard_as_already_existing_is_ours(run, scenarios, copy_table, monkeypatch) -> None:
    root = copy_table(scenarios["append_partitioned"].root)
    before = open_table(str(root)).tags.names()
    for args in (["create-tag", root, "release"], ["rename-tag", root, "release", "gold"]):
        fio = LostAnswer("/tag/tag-")
        _use(monkeypatch, fio)
        result = run(*args)
        monkeypatch.undo()
        assert fio.retried and result.exit_code == 0, result.stderr
    assert open_table(str(root)).tags.names() == sorted([*before, "gold"])
