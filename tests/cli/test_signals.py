"""Real SIGINT and SIGTERM while a command changes a table (core.runtime.interrupts): a
deletion stops between file operations with its journal kept, and the next run finishes
it; a signal that arrives while a commit is published is held until the commit is
recorded, so the commit stands whole. Exit 128 + the signal (130 SIGINT, 143 SIGTERM) either
way, saying so, also outside those sections and in maintain (issue 37.6). pypaimon tables."""

from __future__ import annotations

import json
import signal
from pathlib import Path

import pyarrow as pa
import pytest
from support import pypaimon_writer as pw
from support.invariants import (
    SignalAt,
    assert_no_dangling_references,
    assert_rows_intact,
    copy_scenario,
)

from core.io import fileio as fileio_module
from core.runtime.journal import unfinished_journals
from core.runtime.runs import read_records
from core.table.table import open_table

SIGNALS = {"SIGINT": signal.SIGINT, "SIGTERM": signal.SIGTERM}


@pytest.mark.parametrize("name", list(SIGNALS))
def test_a_signal_during_expiry_stops_it_and_the_next_run_finishes(
    run, scenarios, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    _, _, reference = copy_scenario(scenarios, "append_partitioned", tmp_path / "reference")
    expire = ["--retain-max", "2", "--retain-min", "1"]
    assert run("expire-snapshots", reference, *expire).exit_code == 0
    s, wh, root = copy_scenario(scenarios, "append_partitioned", tmp_path)
    fio = SignalAt(SIGNALS[name], at=3)
    monkeypatch.setattr(fileio_module, "FileIO", lambda *_a, **_k: fio)
    result = run("expire-snapshots", root, *expire)
    monkeypatch.undo()
    assert fio.sent
    assert result.exit_code == 128 + SIGNALS[name], result.stdout
    assert f"interrupted by {name}" in result.stderr
    assert "Traceback" not in result.stderr
    table = open_table(str(root))
    assert len(unfinished_journals(table.fileio, table.location)) == 1
    (record,) = read_records(table.fileio, table.location)
    assert record["status"] == "interrupted"
    assert_no_dangling_references(root)
    assert_rows_intact(wh, s)
    # Any later command finishes the journal first.
    again = run("expire-snapshots", root, *expire, "--json")
    assert again.exit_code == 0, again.stderr
    assert json.loads(again.stdout)["report"]["resumed_journals"]
    table = open_table(str(root))
    assert not unfinished_journals(table.fileio, table.location)
    assert table.snapshots.ids() == open_table(str(reference)).snapshots.ids()
    assert_no_dangling_references(root)
    assert_rows_intact(wh, s)


def _small_files(wh: Path) -> Path:
    """Six small files in each of two partitions: compaction merges each partition."""
    schema = pa.schema([("id", pa.int64()), ("dt", pa.string())])
    table = pw.create_table(wh, "db.small", schema, partition_keys=["dt"])
    for c in range(6):
        pw.append(table, [{"id": c * 2 + j, "dt": f"d{j}"} for j in range(2)])
    return pw.table_root(wh, "db.small")


def test_a_signal_while_publishing_is_held_until_the_commit_is_recorded(
    run, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = _small_files(tmp_path / "wh")
    rows = pw.read_rows(tmp_path / "wh", "db.small")
    before = open_table(str(root)).snapshots.ids()
    fio = SignalAt(signal.SIGINT, marker="/snapshot/snapshot-")
    monkeypatch.setattr(fileio_module, "FileIO", lambda *_a, **_k: fio)
    result = run("compact", root)
    monkeypatch.undo()
    assert fio.sent
    assert result.exit_code == 130
    assert "interrupted by SIGINT" in result.stderr
    assert "a published commit is kept" in result.stderr
    table = open_table(str(root))
    head = before[-1] + 1
    assert table.snapshots.ids() == [*before, head]
    assert table.snapshots.snapshot(head).commit_kind == "COMPACT"
    (record,) = read_records(table.fileio, table.location)
    assert record["status"] == "interrupted"
    assert record["commits"] == [head]
    assert_no_dangling_references(root)
    assert pw.read_rows(tmp_path / "wh", "db.small") == rows


def test_sigterm_before_any_change_exits_143_and_leaves_no_lease(
    run, scenarios, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Outside the apply section (here: while taking the lease) SIGTERM used to kill the
    process where it stood; it unwinds as SIGINT does and exits 143."""
    _, _, root = copy_scenario(scenarios, "append_partitioned", tmp_path)
    before = open_table(str(root)).snapshots.ids()
    fio = SignalAt(signal.SIGTERM, marker="/.paimon-cli/lease/")
    monkeypatch.setattr(fileio_module, "FileIO", lambda *_a, **_k: fio)
    result = run("expire-snapshots", root, "--retain-max", "2", "--retain-min", "1")
    monkeypatch.undo()
    assert fio.sent
    assert result.exit_code == 143, (result.stdout, result.stderr)
    assert "interrupted by SIGTERM" in result.stderr and "Traceback" not in result.stderr
    assert open_table(str(root)).snapshots.ids() == before
    assert not list((root / ".paimon-cli" / "lease").glob("*"))


def test_a_signal_stops_maintain_as_a_whole(
    run, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A signal in one table's step used to fail that step and go on with the next table."""
    wh = tmp_path / "wh"
    for name in ("a", "b"):
        table = pw.create_table(
            wh,
            f"db.{name}",
            pa.schema([("id", pa.int64())]),
            options={"snapshot.num-retained.min": "1", "snapshot.num-retained.max": "1"},
        )
        for c in range(4):
            pw.append(table, [{"id": c}])
    fio = SignalAt(signal.SIGTERM, at=1)
    monkeypatch.setattr(fileio_module, "FileIO", lambda *_a, **_k: fio)
    result = run("maintain", "*.*", "-w", wh, "--no-check")
    monkeypatch.undo()
    assert fio.sent
    assert result.exit_code == 143, (result.stdout, result.stderr)
    assert "interrupted by SIGTERM" in result.stderr
    first = open_table(str(pw.table_root(wh, "db.a")))
    (record,) = read_records(first.fileio, first.location)
    assert (record["command"], record["status"]) == ("maintain", "interrupted")
    # The second table was never started.
    assert open_table(str(pw.table_root(wh, "db.b"))).snapshots.ids() == [1, 2, 3, 4]
