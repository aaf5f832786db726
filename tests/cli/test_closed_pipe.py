"""A reader that goes away (`... --dry-run -q | head -1`, `inspect files | head`): the
command stops quietly with 141 (128 + SIGPIPE, what `cat` gives), never a traceback, an
"unexpected BrokenPipeError ... report it as a bug" or a silent exit 1 (issue 37.9). Real
processes and pipes: the pipe is closed before the command writes its first byte."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from support import pypaimon_writer as pw


@pytest.fixture(scope="module")
def table(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return pw.append_partitioned(tmp_path_factory.mktemp("pipe") / "wh").root


def _closed_reader(*args: str | Path) -> subprocess.CompletedProcess[bytes]:
    """Run the CLI with stdout a pipe whose reader is gone before anything is written."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "paimon_cli", *map(str, args)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()  # the process is still importing: its first write finds no reader
    err = proc.stderr.read()
    proc.stderr.close()
    return subprocess.CompletedProcess(proc.args, proc.wait(timeout=120), b"", err)


@pytest.mark.parametrize(
    "args",
    [
        ("expire-snapshots", "--retain-max", "1", "--retain-min", "1", "--dry-run", "-q"),
        ("inspect", "files"),
        ("inspect", "snapshots", "--json"),
        ("expire-snapshots", "--retain-max", "1", "--retain-min", "1", "--dry-run"),
    ],
    ids=["plain-lines", "rich-table", "json", "human-plan"],
)
def test_a_closed_pipe_exits_141_quietly(table: Path, args: tuple[str, ...]) -> None:
    before = sorted(p.name for p in (table / "snapshot").iterdir())
    command, *rest = args
    result = _closed_reader(command, table, *rest)
    assert result.returncode == 141, result.stderr
    assert result.stderr == b""
    # A dry run changed nothing, whatever happened to its output.
    assert sorted(p.name for p in (table / "snapshot").iterdir()) == before
