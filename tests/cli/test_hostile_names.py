"""User data is shown as it is, never read as Rich markup or emoji codes (issue 25, bug 1).

A table whose path, tags, branch, consumer, partition values, column name and option value
hold ``[bold]``, ``[/]``, ``:m:`` (Rich's emoji code for Ⓜ), backslashes and non-ASCII text
goes through every command's human output, on a pipe and on a terminal (Rich forced to
one by ``FORCE_COLOR``): each name appears verbatim, no emoji appears, and Rich's own
styling still works on the terminal.
"""

from __future__ import annotations

import io
import logging
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.fixtures import Run
from support.hostile_names import (
    ANSI,
    BRANCH,
    COLUMN,
    CONSUMER,
    EMOJI,
    OPTION,
    ORPHAN,
    PART,
    RENAMED,
    TABLE_DIR,
    TAG,
    TAG2,
    hostile_table,
)

from paimon_cli import logs


@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return hostile_table(tmp_path_factory.mktemp("hostile-wh"))


@pytest.fixture
def table(hostile: Path, tmp_path: Path) -> Path:
    dest = tmp_path / "wh" / "db.db" / hostile.name
    shutil.copytree(hostile, dest, symlinks=True)
    return dest


@pytest.fixture(params=["pipe", "terminal"])
def shown(run: Run, request: pytest.FixtureRequest) -> Iterator[object]:
    """Runs a command; returns its stdout and stderr as a reader sees them (on a terminal:
    Rich's styles, then the text without them)."""
    terminal = request.param == "terminal"
    env = {"FORCE_COLOR": "1", "NO_COLOR": None} if terminal else {"FORCE_COLOR": None}
    styled: list[bool] = []

    def show(*args: object, code: int = 0) -> str:
        result = run(*args, env=env)
        assert result.exit_code == code, result.stdout + result.stderr
        raw = result.stdout + result.stderr
        styled.append("\x1b[" in raw)
        text = ANSI.sub("", raw)
        assert not [e for e in EMOJI if e in text], text
        return text

    yield show
    # Our own styles (bold titles, green "done") still reach a terminal, and only a terminal.
    assert any(styled) == terminal


def _assert_shown(text: str, *names: str) -> None:
    missing = [n for n in names if n not in text]
    assert not missing, f"{missing} not shown verbatim in:\n{text}"


def test_inspect_views_show_names_verbatim(shown, table: Path) -> None:  # type: ignore[no-untyped-def]
    _assert_shown(shown("inspect", table), TABLE_DIR)
    _assert_shown(shown("inspect", table, "tags"), TAG2)
    _assert_shown(shown("inspect", table, "branches"), BRANCH)
    _assert_shown(shown("inspect", table, "consumers"), CONSUMER)
    _assert_shown(shown("inspect", table, "partitions"), f"p={PART}")
    _assert_shown(shown("inspect", table, "schema"), COLUMN)
    _assert_shown(shown("inspect", table, "options"), OPTION)
    _assert_shown(shown("inspect", table, "retention"), "retain-min")
    _assert_shown(shown("inspect", table, "files", "--tag", TAG2), "p=")
    _assert_shown(shown("inspect", table, "--check"), "OK")
    _assert_shown(shown("inspect", table, "--branch", BRANCH), f"(branch {BRANCH})")
    missing = table.parent / "[bold]gone:m:"
    _assert_shown(shown("inspect", missing, code=1), str(missing))


def test_tag_commands_show_names_verbatim(shown, table: Path) -> None:  # type: ignore[no-untyped-def]
    _assert_shown(shown("create-tag", table, TAG, "--snapshot", "2"), TAG, TABLE_DIR)
    _assert_shown(shown("rename-tag", table, TAG, RENAMED), RENAMED)
    # A usage error quotes the refused name as given (a backslash is refused in tag names).
    _assert_shown(shown("rename-tag", table, RENAMED, "x\\[bold]:m:", code=2), "[bold]:m:")
    _assert_shown(shown("delete-tag", table, RENAMED, "--dry-run"), RENAMED)
    _assert_shown(shown("delete-tag", table, TAG, code=1), TAG)  # renamed away: not found
    _assert_shown(shown("expire-tags", table, "--older-than", "0 s"), TAG2)
    _assert_shown(shown("rollback", table, "--to-snapshot", "2", "--dry-run"), TABLE_DIR)


def test_deleting_commands_show_names_verbatim(shown, table: Path) -> None:  # type: ignore[no-untyped-def]
    expire = shown("expire-snapshots", table, "--retain-max", "1", "--retain-min", "1")
    _assert_shown(expire, TABLE_DIR, CONSUMER)
    _assert_shown(shown("expire-changelogs", table, "--dry-run"), TABLE_DIR)
    orphans = shown("delete-orphan-files", table, "--dry-run")
    _assert_shown(orphans, ORPHAN, TABLE_DIR)
    _assert_shown(shown("delete-orphan-files", table, "--quarantine"), ORPHAN)
    _assert_shown(shown("inspect", table, "runs"), "delete-orphan-files")
    _assert_shown(shown("restore", table, "--last", "--dry-run"), ORPHAN)
    _assert_shown(shown("restore", table, "--last"), "restored 1")
    _assert_shown(shown("compact", table, "--dry-run"), TABLE_DIR)
    _assert_shown(shown("remove-unexisting-files", table, "--dry-run"), TABLE_DIR)
    _assert_shown(shown("maintain", table, "--dry-run"), TABLE_DIR)


def test_partition_expiry_warnings_show_values_and_pattern_verbatim(  # type: ignore[no-untyped-def]
    shown, table: Path
) -> None:
    args = ("expire-partitions", table, "--expiration-time", "1 d", "--dry-run")
    # '10' and PART are not dates: the plan names each value and the pattern as written (and
    # the dry run exits 1, as the real run will).
    default = shown(*args, code=1)
    _assert_shown(default, "y-M-d[ H:m:s]", repr(PART), f"p={PART}", TABLE_DIR)
    formatted = shown(*args, "--timestamp-formatter", "yyyy-MM-dd", code=1)
    _assert_shown(formatted, "'yyyy-MM-dd'", repr(PART), "p=2024-01-01")


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_log_lines_on_a_terminal_show_names_verbatim(monkeypatch: pytest.MonkeyPatch) -> None:
    """On a terminal logs go through Rich's handler: a logged name stays as it is."""
    err = _Terminal()
    monkeypatch.setattr(sys, "stderr", err)
    root = logging.getLogger()
    level, handlers = root.level, list(root.handlers)
    try:
        logs.configure(0, None)
        logging.getLogger("paimon_cli.test").warning("tag %s on %s", TAG, TABLE_DIR)
    finally:
        root.handlers[:] = handlers
        root.setLevel(level)
    text = ANSI.sub("", err.getvalue())
    _assert_shown(text, TAG, TABLE_DIR)
    assert "Ⓜ" not in text
