"""One rule for row limits (issue 37.10, DECISIONS D19): a listing (an inspect view's rows,
a dry run's actions) shows at most a screenful on a terminal, ending with how many more
and how to see them; in a pipe or a file it shows every row, so grep finds them all;
``--limit N`` caps it anywhere and ``--limit 0`` shows all. The terminal is simulated as
the narrow-terminal tests do: ``Output`` asks ``terminal_width``."""

from __future__ import annotations

import datetime as dt
import io
import re
from pathlib import Path
from types import SimpleNamespace

import pytest
from support import pypaimon_writer as pw
from support.fixtures import Run

import paimon_cli.output as output
from core.ops.details.partitions import MetastoreChanges, MetastoreDrop
from paimon_cli.output import SCREEN, row_limit
from paimon_cli.render import RunView
from paimon_cli.render.expire_partitions import _metastore

COMMITS = SCREEN + 5
ROW = re.compile(r"^\s*\d+\s+\d{4}-\d{2}-\d{2} ", re.MULTILINE)  # a snapshot row: id, time


@pytest.fixture(scope="module")
def table(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return pw.append_partitioned(tmp_path_factory.mktemp("rows"), commits=COMMITS).root


@pytest.fixture
def terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(output, "terminal_width", lambda: 200)


def _rows(text: str) -> int:
    return len(ROW.findall(text))


def test_the_rule() -> None:
    assert row_limit(None, terminal=True) == SCREEN
    assert row_limit(None, terminal=False) is None
    assert row_limit(0, terminal=True) is None and row_limit(0, terminal=False) is None
    assert row_limit(7, terminal=True) == 7 and row_limit(7, terminal=False) == 7


def test_a_pipe_gets_every_row(run: Run, table: Path) -> None:
    result = run("inspect", table, "snapshots")
    assert result.exit_code == 0, result.stderr
    assert _rows(result.stdout) == COMMITS
    assert "more;" not in result.stdout


def test_a_terminal_gets_a_screenful_and_how_to_see_the_rest(
    run: Run, table: Path, terminal: None
) -> None:
    result = run("inspect", table, "snapshots")
    assert result.exit_code == 0, result.stderr
    assert _rows(result.stdout) == SCREEN
    assert result.stdout.rstrip().endswith("... 5 more; --limit N or a pipe shows all")


def test_limit_caps_a_pipe_and_zero_shows_all_on_a_terminal(
    run: Run, table: Path, terminal: None
) -> None:
    everything = run("inspect", table, "snapshots", "--limit", "0").stdout
    assert _rows(everything) == COMMITS and "more;" not in everything


def test_limit_in_a_pipe(run: Run, table: Path) -> None:
    capped = run("inspect", table, "snapshots", "--limit", "10").stdout
    assert _rows(capped) == 10
    assert capped.rstrip().endswith(f"... {COMMITS - 10} more; --limit 0 shows all")


def test_files_in_a_pipe_are_all_there_for_grep(run: Run, table: Path) -> None:
    files = run.json("inspect", table, "files")["files"]
    text = run("inspect", table, "files").stdout
    assert len(files) > SCREEN
    for f in files:
        assert f["path"].rsplit("/", 1)[-1] in text
    assert "more;" not in text


def test_a_dry_run_plan_listing_follows_the_same_rule(
    run: Run, table: Path, tmp_path: Path
) -> None:
    args = ("expire-snapshots", table, "--retain-min", "1", "--retain-max", "1")
    capped = run(*args, "--older-than", "0 s", "--dry-run", "--limit", "3").stdout
    actions = [line for line in capped.splitlines() if line.lstrip().startswith("snapshots ")]
    assert "more; --limit 0 shows all" in capped, capped
    everything = run(*args, "--older-than", "0 s", "--dry-run").stdout
    assert "more;" not in everything
    assert len(everything.splitlines()) > len(capped.splitlines()) + 10, actions


def test_a_negative_limit_is_a_usage_error(run: Run, table: Path) -> None:
    result = run("inspect", table, "snapshots", "--limit", "-1")
    assert result.exit_code == 2
    assert "--limit" in result.stderr


def _metastore_lines(drops: int, monkeypatch: pytest.MonkeyPatch, **kw: object) -> str:
    """expire-partitions' metastore drops as rendered, through the one row rule."""
    terminal = kw.pop("terminal", False)
    monkeypatch.setattr(output, "terminal_width", lambda: 200 if terminal else None)
    out = output.Output(output.Mode.HUMAN, **kw)  # type: ignore[arg-type]
    buffer = io.StringIO()
    out.console.file = buffer
    changes = MetastoreChanges(
        "hive", tuple(MetastoreDrop({"dt": f"d{i}"}, "expired") for i in range(drops))
    )
    _metastore(SimpleNamespace(metastore=changes), out, RunView(True, dt.timezone.utc))  # type: ignore[arg-type]
    return buffer.getvalue()


def test_metastore_drops_follow_the_one_rule(monkeypatch: pytest.MonkeyPatch) -> None:
    """The partitions expire-partitions drops from a metastore are a listing too: every one
    in a pipe, a screenful on a terminal, --limit anywhere."""
    piped = _metastore_lines(SCREEN + 5, monkeypatch)
    assert piped.count("(expired)") == SCREEN + 5 and "more;" not in piped
    assert "    dt=d0  (expired)" in piped
    shown = _metastore_lines(SCREEN + 5, monkeypatch, terminal=True)
    assert shown.count("(expired)") == SCREEN
    assert shown.rstrip().endswith("... 5 more; --limit N or a pipe shows all")
    capped = _metastore_lines(SCREEN + 5, monkeypatch, limit=3)
    assert capped.count("(expired)") == 3
    assert capped.rstrip().endswith(f"... {SCREEN + 2} more; --limit 0 shows all")
