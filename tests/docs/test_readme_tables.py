"""The README's tables say what the program does (issue 37): which commands take
`--dry-run`, `--plan` and `--quarantine`, the exit codes of paimon_cli/errors.py, and the
time grammar's examples (read at a fixed instant in a fixed zone, never today's)."""

from __future__ import annotations

import datetime as dt
import re
import signal
from pathlib import Path

import pytest
import typer.main

from core.errors import InvalidOptionError
from core.runtime.timeparse import parse_duration, parse_instant
from paimon_cli import errors
from paimon_cli.main import app

README = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")


def _table(heading: str) -> list[list[str]]:
    """The rows (cells stripped) of the first table under a `## heading`."""
    section = README.split(f"\n## {heading}\n", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("|")]
    return [[c.strip() for c in re.split(r"(?<!\\)\|", row)[1:-1]] for row in rows[2:]]


def test_which_command_takes_what_matches_the_options() -> None:
    root = typer.main.get_command(app)
    commands = root.commands  # type: ignore[attr-defined]
    seen: set[str] = set()
    for names, *cells in _table("Which command takes what"):
        for name in re.findall(r"`([a-z-]+)`", names):
            seen.add(name)
            options = {o for p in commands[name].params for o in p.opts}
            for option, cell in zip(("--dry-run", "--plan", "--quarantine"), cells, strict=True):
                says = cell.startswith("yes")
                assert (option in options) == says, f"{name} {option}: README says {cell!r}"
    assert seen == set(commands), f"not in the table: {sorted(set(commands) - seen)}"


def test_exit_codes_are_the_programs() -> None:
    codes = {int(row[0].strip("`")) for row in _table("Exit codes")}
    assert codes == {
        errors.EXIT_OK,
        errors.EXIT_FAILURE,
        errors.EXIT_USAGE,
        errors.EXIT_DAMAGED,
        errors.EXIT_CLOSED_PIPE,
        128 + signal.SIGINT,
        128 + signal.SIGTERM,
    }
    assert (errors.EXIT_OK, errors.EXIT_FAILURE, errors.EXIT_USAGE) == (0, 1, 2)
    assert (errors.EXIT_DAMAGED, errors.EXIT_CLOSED_PIPE) == (3, 141)


NOW_MS = 1_750_000_000_000  # 2025-06-15, fixed: the examples are read against it
ZONE = dt.timezone(dt.timedelta(hours=10))


def test_every_time_example_reads() -> None:
    rows = _table("Times and durations")
    assert len(rows) == 6
    for form, _meaning, examples in rows:
        for example in re.findall(r"`([^`]+)`", examples):
            value = example.strip("'")
            instant = parse_instant(value, now_ms=NOW_MS, zone=ZONE)
            assert 0 < instant <= NOW_MS + 400 * 86_400_000, example
            if form.startswith("numbers with units"):
                assert instant == NOW_MS - parse_duration(value)
    assert parse_instant("2026-06-07 09:40:00", now_ms=NOW_MS, zone=ZONE) == parse_instant(
        "2026-06-07T09:40:00+10:00", now_ms=NOW_MS, zone=ZONE
    )


@pytest.mark.parametrize("refused", ["86400", "50"])
def test_the_refused_forms_are_refused(refused: str) -> None:
    assert f"`{refused}`" in README or f"--max-duration {refused}`" in README
    with pytest.raises(InvalidOptionError):
        parse_duration(refused)
    if len(refused) not in (10, 13):
        with pytest.raises(InvalidOptionError):
            parse_instant(refused, now_ms=NOW_MS, zone=ZONE)
