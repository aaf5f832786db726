"""maintain's log lines read from a cron mail: a first line with the run's one id and its
start, every line the run says about a table in one format (``<kind>: <table> <step>:
message``, no logger name, no timestamp of its own), a busy table named ``db.table`` once,
also under -q (issue 37, DECISIONS D22)."""

from __future__ import annotations

import io
import json
import logging
import os
import re
import socket
import sys
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pytest
from support import pypaimon_writer as pw
from support.fixtures import Run

from core.io.fileio import FileIO
from core.runtime.executors.local import LocalExecutor
from core.runtime.lease import Holder, acquire
from core.runtime.log_context import at, where
from core.runtime.runs import read_records
from paimon_cli import logs

FIRST = re.compile(
    r"paimon maintain run (?P<id>[0-9a-f]{12}) started "
    r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d[+-]\d\d:\d\d(?P<dry> \(dry run\))?"
)


@pytest.fixture
def warehouse(tmp_path: Path) -> Path:
    """Two tables of three commits each."""
    wh = tmp_path / "wh"
    for name in ("a", "b"):
        table = pw.create_table(wh, f"db.{name}", pa.schema([("id", pa.int64())]))
        for i in range(3):
            pw.append(table, [{"id": i}])
    return wh


@pytest.fixture
def quiet_logs() -> Iterator[None]:
    """The CLI's log configuration as a run has it, put back afterwards."""
    root = logging.getLogger()
    level, handlers = root.level, list(root.handlers)
    yield
    root.setLevel(level)
    root.handlers[:] = handlers
    logs.set_preface(None)


def test_the_first_line_has_the_run_id_every_table_record_carries(
    run: Run, warehouse: Path
) -> None:
    result = run("maintain", "db.*", "-w", warehouse, "--no-check")
    assert result.exit_code == 0, result.stderr
    first = result.stderr.splitlines()[0]
    match = FIRST.fullmatch(first)
    assert match and not match["dry"], first
    # One id for the run: each table's run record carries it (inspect TABLE runs).
    for name in ("a", "b"):
        (record,) = read_records(FileIO(), str(pw.table_root(warehouse, f"db.{name}")))
        assert record["run_id"] == match["id"]
    dry = run("maintain", "db.*", "-w", warehouse, "--no-check", "--dry-run")
    match = FIRST.fullmatch(dry.stderr.splitlines()[0])
    assert match and match["dry"]


def test_json_names_the_run_once_and_each_table_with_it(run: Run, warehouse: Path) -> None:
    """--json: the run's id at the top (what a first line on stderr would say), each
    table's record the same; a dry run has its own id there too."""
    result = run("maintain", "db.*", "-w", warehouse, "--no-check", "--json")
    assert result.exit_code == 0, result.stderr
    doc = json.loads(result.stdout)
    assert re.fullmatch(r"[0-9a-f]{12}", doc["run_id"]), doc["run_id"]
    assert [t["run_id"] for t in doc["tables"]] == [doc["run_id"]] * 2
    for name in ("a", "b"):
        records = read_records(FileIO(), str(pw.table_root(warehouse, f"db.{name}")))
        assert doc["run_id"] in {r["run_id"] for r in records}
    dry = json.loads(run("maintain", "db.*", "-w", warehouse, "--json", "--dry-run").stdout)
    assert dry["run_id"] != doc["run_id"] and all("run_id" not in t for t in dry["tables"])


def test_quiet_success_says_nothing(run: Run, warehouse: Path) -> None:
    """A cron line with -q mails only when there is something to read."""
    result = run("maintain", "db.*", "-w", warehouse, "-q", "--no-check")
    assert result.exit_code == 0, result.stderr
    assert (result.stdout, result.stderr) == ("", "")


def test_a_busy_table_is_named_once_after_the_first_line_under_quiet(
    run: Run, warehouse: Path
) -> None:
    busy = pw.table_root(warehouse, "db.a")
    holder = Holder("expire-snapshots", "c" * 12, "u", socket.gethostname(), os.getpid())
    lease = acquire(FileIO(), str(busy), holder)
    try:
        result = run("maintain", "db.*", "-w", warehouse, "-q", "--no-check")
    finally:
        lease.release()
    assert result.exit_code == 0, result.stderr
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert FIRST.fullmatch(lines[0]), lines
    assert len(lines) == 2, lines
    assert lines[1].startswith("warning: db.a: skipped, busy: expire-snapshots (run cccccccccccc")
    # Said once, by name: the path of the table appears nowhere.
    assert result.stderr.count("db.a") == 1
    assert str(busy) not in result.stderr
    assert "db.b" not in result.stderr  # maintained: nothing to say


def test_log_lines_inside_a_step_name_the_table_and_step(
    run: Run, warehouse: Path, monkeypatch: pytest.MonkeyPatch, quiet_logs: None
) -> None:
    """A storage retry's warning (core/io/retry.py's logger) inside a step reads as the
    CLI's own warnings do, with the table and step, after the first line."""
    from core.ops.maintain import maintain as maintain_module

    original = maintain_module._run_step

    def noisy(ctx: object, name: str, step: object) -> None:
        if name == "expire-snapshots":
            logging.getLogger("core.io.retry").warning(
                "cannot reach the storage for %s (%s); retrying for up to %.0f s",
                "snapshot/LATEST",
                "ConnectionError",
                30,
            )
        original(ctx, name, step)  # type: ignore[arg-type]

    monkeypatch.setattr(maintain_module, "_run_step", noisy)
    result = run("maintain", "db.b", "-w", warehouse, "-q", "--no-check")
    assert result.exit_code == 0, result.stderr
    lines = result.stderr.splitlines()
    assert FIRST.fullmatch(lines[0]), lines
    assert lines[1:] == [
        "warning: db.b expire-snapshots: cannot reach the storage for snapshot/LATEST "
        "(ConnectionError); retrying for up to 30 s"
    ]
    assert "core.io" not in result.stderr


def test_the_handler_writes_one_format(quiet_logs: None, monkeypatch: pytest.MonkeyPatch) -> None:
    err = io.StringIO()
    monkeypatch.setattr(sys, "stderr", err)
    logs.configure(1, None)
    logs.set_preface("paimon maintain run 0123456789ab started 2026-01-02 03:04:05+00:00")
    log = logging.getLogger("core.io.retry")
    with at("db.orders expire-snapshots (branch b1)"):
        log.warning("transient storage error on %s", "x")
        log.info("retry %d", 1)
    log.warning("outside a table")
    assert err.getvalue().splitlines() == [
        "paimon maintain run 0123456789ab started 2026-01-02 03:04:05+00:00",
        "warning: db.orders expire-snapshots (branch b1): transient storage error on x",
        "info: db.orders expire-snapshots (branch b1): retry 1",
        "warning: outside a table",
    ]


def test_worker_threads_carry_the_step_label() -> None:
    """A storage call on the executor's threads logs as the step that asked for it."""
    with LocalExecutor(4) as ex, at("db.orders expire-snapshots"):
        labels = set(ex.imap(lambda _i: where(), range(16), work="io"))
    assert labels == {"db.orders expire-snapshots"}
    assert where() is None


def test_an_error_comes_after_the_first_line_and_ends_the_run(
    run: Run, tmp_path: Path, quiet_logs: None
) -> None:
    missing = tmp_path / "no-warehouse"
    result = run("maintain", "db.*", "-w", missing, "-q")
    assert result.exit_code == 1
    first, error, *_ = result.stderr.splitlines()
    assert FIRST.fullmatch(first), result.stderr
    assert error.startswith("Error: warehouse ") and error.endswith(" does not exist")
    # --json: stderr is the error document alone
    doc = run("maintain", "db.*", "-w", missing, "--json")
    assert doc.exit_code == 1
    assert doc.stderr.startswith('{"error": ')
    # The run's first line is not said again by a later command of the same process.
    later = run("inspect", missing / "t")
    assert "paimon maintain run" not in later.stderr
