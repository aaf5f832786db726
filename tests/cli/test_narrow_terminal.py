"""80-column terminals (issue 25.4): no table breaks inside a time, a number, a name, an
option or a header word; paths fold only after a "/"; --help never breaks an option name at
a hyphen. Rich consoles are forced to be terminals of width 80 (``FORCE_COLOR`` and the
width ``Output`` asks the terminal for)."""

from __future__ import annotations

import io
import re
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from rich.cells import cell_len
from support.fixtures import Run
from support.hostile_names import (
    ANSI,
    BRANCH,
    CONSUMER,
    PART,
    RENAMED,
    TAG,
    TAG2,
    hostile_table,
)

import paimon_cli.output as output
from paimon_cli.main import app
from paimon_cli.output import Mode, Output

WIDTH = 80
TIME = re.compile(r"\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}[+-]\d{2}:\d{2}")
# The beginning of a shown time (a date, a blank, hours and minutes): it must go on whole.
TIME_START = re.compile(r"\d{4}-\d{2}-\d{2} \d{2}:\d{2}")


def _fits(text: str) -> None:
    """Every line fits the terminal and every time is whole."""
    long = [line for line in text.splitlines() if cell_len(line) > WIDTH]
    assert not long, "\n".join(long)
    starts = [m.start() for m in TIME_START.finditer(text)]
    whole = {m.start() for m in TIME.finditer(text)}
    broken = [text[s : s + 30] for s in starts if s not in whole]
    assert not broken, f"times broken: {broken}\n{text}"


@pytest.fixture
def narrow(run: Run, monkeypatch: pytest.MonkeyPatch) -> Callable[..., str]:
    """Runs a command on a terminal 80 columns wide; returns its stdout without styles."""
    monkeypatch.setattr(output, "terminal_width", lambda: WIDTH)

    def show(*args: object, code: int = 0) -> str:
        result = run(*args, env={"FORCE_COLOR": "1", "NO_COLOR": None, "COLUMNS": str(WIDTH)})
        assert result.exit_code == code, result.stdout + result.stderr
        text = ANSI.sub("", result.stdout)
        _fits(text)
        return text

    return show


@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return hostile_table(tmp_path_factory.mktemp("hostile-wh"))


@pytest.fixture
def table(hostile: Path, tmp_path: Path) -> Path:
    dest = tmp_path / "wh" / "db.db" / hostile.name
    shutil.copytree(hostile, dest, symlinks=True)
    return dest


def test_inspect_fits(narrow, run: Run, table: Path) -> None:  # type: ignore[no-untyped-def]
    for view in (
        "summary",
        "snapshots",
        "files",
        "manifests",
        "partitions",
        "tags",
        "consumers",
        "branches",
        "schema",
        "options",
        "retention",
    ):
        assert narrow("inspect", table, view).strip()
    narrow("inspect", table, "--check")
    snapshots = narrow("inspect", table, "snapshots")
    assert len(TIME.findall(snapshots)) == 3  # one whole time per snapshot
    for name in (TAG2, CONSUMER, BRANCH):
        assert name in narrow("inspect", table, "tags") + narrow(
            "inspect", table, "consumers"
        ) + narrow("inspect", table, "branches")
    victim = Path(run.json("inspect", table, "files")["files"][0]["path"])
    victim.unlink()
    check = narrow("inspect", table, "--check", code=3)
    assert victim.name in check


def test_changing_commands_fit(narrow, table: Path) -> None:  # type: ignore[no-untyped-def]
    narrow("create-tag", table, TAG, "--snapshot", "2")
    narrow("rename-tag", table, TAG, RENAMED)
    narrow("delete-tag", table, RENAMED, "--dry-run")
    narrow("expire-tags", table, "--older-than", "0 s", "--dry-run")
    narrow("rollback", table, "--to-snapshot", "2", "--dry-run")
    narrow("expire-snapshots", table, "--retain-max", "1", "--retain-min", "1", "--dry-run")
    narrow("expire-snapshots", table, "--retain-max", "1", "--retain-min", "1")
    narrow("expire-changelogs", table, "--dry-run")
    narrow("delete-orphan-files", table, "--dry-run")
    narrow("delete-orphan-files", table, "--quarantine")
    narrow("inspect", table, "runs")
    narrow("restore", table, "--last", "--dry-run")
    narrow("restore", table, "--last")
    narrow("purge-quarantine", table, "--dry-run")
    narrow("compact", table, "--dry-run")
    narrow("remove-unexisting-files", table, "--dry-run")
    # Partitions whose value is no date: the dry run exits 1, as the real run will.
    narrow("expire-partitions", table, "--expiration-time", "1 d", "--dry-run", code=1)
    narrow("maintain", table, "--dry-run")
    narrow("maintain", table)


def _commands() -> list[str]:
    import typer

    return sorted(typer.main.get_command(app).commands)  # type: ignore[attr-defined]


@pytest.mark.parametrize("command", ["", *_commands()])
def test_help_never_breaks_an_option_name(run: Run, command: str) -> None:
    args = [command, "--help"] if command else ["--help"]
    result = run(*args, env={"COLUMNS": str(WIDTH)})
    assert result.exit_code == 0, result.stderr
    lines = result.stdout.splitlines()
    assert all(cell_len(line) <= WIDTH for line in lines)
    broken = [line for line in lines if re.search(r"[A-Za-z0-9<>]-$", line)]
    assert not broken, broken
    words = set(result.stdout.split())
    import typer

    cmd = typer.main.get_command(app)
    if command:
        cmd = cmd.commands[command]  # type: ignore[attr-defined]
    for param in cmd.params:
        for opt in param.opts:
            if opt.startswith("--"):
                assert any(w.strip(",") == opt for w in words), (opt, result.stdout)


# -- the layout itself, on values of every kind -------------------------------------------------
HEADERS = ["phase", "already absent", "size", "created", "path", "detail"]
PATHS = [
    "dt=2024-01-01/hr=0/bucket-0/data-8b55daa1-6a80-4c1e-8d0f-81c841cab882-0.parquet",
    f"p={PART}/bucket-0/data-[bold]:m:.parquet",
    "manifest/manifest-list-70608df1-ef38-4b70-8b3e-f9e35524cabe-12",
]
ROWS = [
    [
        "data-files",
        "1234567",
        "12.3 MiB",
        "2026-11-26 14:05:49+00:00",
        path,
        "only used by expired snapshots 3..9 (kept by nothing else)",
    ]
    for path in PATHS
]


def _rendered(width: int, headers: list[str], rows: list[list[str]]) -> str:
    out = Output(Mode.HUMAN, no_color=True)
    buffer = io.StringIO()
    out.console.file = buffer
    out.console.width = width
    out.table(None, headers, rows)
    return buffer.getvalue()


@pytest.mark.parametrize("width", [80, 100, 60, 40])
def test_table_keeps_values_whole(width: int) -> None:
    text = _rendered(width, HEADERS, ROWS)
    lines = text.splitlines()
    assert all(cell_len(line) <= width for line in lines), text
    for row in ROWS:
        for value in row[:4]:  # a name, a number, a size, a time: never broken
            assert value in text, (value, text)
    for word in " ".join(HEADERS).split():
        assert re.search(rf"(^|\s){re.escape(word)}(\s|$)", text, re.M), (word, text)
    # A path folds only after a "/" (a file name wider than the terminal is cut: at 40).
    for path in PATHS if width > 40 else ():
        pieces = re.findall(r"[^/]*/|[^/]+", path)
        for piece in pieces:
            assert piece in text, (piece, text)


def test_table_too_wide_becomes_records() -> None:
    text = _rendered(60, HEADERS, ROWS[:1])
    assert "created         2026-11-26 14:05:49+00:00" in text
    assert "already absent  1234567" in text
    # A value wider than the room beside its label goes under it, whole.
    assert "\npath\n  dt=2024-01-01/hr=0/bucket-0/\n  data-8b55daa1-" in text
    narrow = _rendered(40, HEADERS, ROWS[:1])
    assert "\ncreated\n  2026-11-26 14:05:49+00:00\n" in narrow
