"""--help groups the shared options under headed panels after the command's own options;
each default is shown one way (``[default: x]``); maintain's --check is a flag, as
inspect's, with --check-level for what it probes, and the old value spelling is a usage
error that names the new one (issue 37)."""

from __future__ import annotations

import re
from pathlib import Path

import pyarrow as pa
import pytest
from support import pypaimon_writer as pw
from support.fixtures import Run

from paimon_cli.help_panels import OWN, SHARED_PANELS
from paimon_cli.main import app
from paimon_cli.shared import _SHARED

COMMANDS = sorted(cmd.name for cmd in app.registered_commands if cmd.name)
HEADINGS = ("Arguments", OWN, *SHARED_PANELS)
# The panel every shared option is listed under: each option once, in one panel.
SHARED_OPTIONS = {
    "--dry-run": "Run control",
    "--plan": "Run control",
    "--quarantine": "Run control",
    "--wait-lease": "Run control",
    "--allow-unsafe-commit": "Run control",
    "--timezone": "Run control",
    "--json": "Output",
    "--quiet": "Output",
    "--limit": "Output",
    "--warehouse": "Table",
    "--catalog": "Table",
    "--branch": "Table",
    "--options": "Table",
    "--fs-option": "Storage",
    "--max-requests-per-second": "Storage",
    "--parallelism": "Storage",
    "--engine": "Spark",
    "--spark-master": "Spark",
    "--spark-remote": "Spark",
    "--spark-conf": "Spark",
}


def _sections(text: str) -> dict[str, list[str]]:
    """--help's sections by heading (a line ending in ':' at column 0), their lines."""
    sections: dict[str, list[str]] = {}
    current = None
    for line in text.splitlines():
        if line.endswith(":") and not line.startswith(" ") and line[:-1] in HEADINGS:
            current = line[:-1]
            sections[current] = []
        elif current is not None and line.strip():
            sections[current].append(line)
    return sections


def _options_in(lines: list[str]) -> set[str]:
    """The long option names a section's rows start with."""
    found = set()
    for line in lines:
        match = re.match(r"\s{2}(?:-\w, )?(--[\w-]+)", line)
        if match and not line.startswith(" " * 6):
            found.add(match.group(1))
    return found


def test_every_shared_option_has_a_panel() -> None:
    assert {p.panel for p in _SHARED} <= set(SHARED_PANELS)
    assert len(_SHARED) == len(SHARED_OPTIONS)


@pytest.mark.parametrize("command", COMMANDS)
def test_shared_options_are_in_panels_after_the_commands_own(run: Run, command: str) -> None:
    result = run(command, "--help", env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.stderr
    sections = _sections(result.stdout)
    headings = [h for h in sections if h != "Arguments"]
    # The command's own options first (with -h/--help), then the panels in their order.
    assert headings[0] == OWN
    assert headings[1:] == [p for p in SHARED_PANELS if p in sections]
    assert "Table" in headings and "Output" in headings  # every command has --json, -w
    own = _options_in(sections[OWN])
    assert "--help" in own
    assert not own & set(SHARED_OPTIONS), "a shared option listed among the command's own"
    for panel in SHARED_PANELS:
        for option in _options_in(sections.get(panel, [])):
            assert SHARED_OPTIONS[option] == panel, (option, panel)


@pytest.mark.parametrize("command", COMMANDS)
def test_each_default_is_shown_one_way(run: Run, command: str) -> None:
    text = run(command, "--help", env={"COLUMNS": "200"}).stdout
    flat = " ".join(text.split())
    assert "(default" not in flat, "a default in the help prose, not [default: ...]"
    assert "[default: (" not in flat, "Typer's parenthesised default text"


def test_defaults_given_as_text_read_as_defaults(run: Run) -> None:
    flat = " ".join(run("maintain", "--help", env={"COLUMNS": "200"}).stdout.split())
    assert "[default: 1 day ago]" in flat  # --orphans-older-than
    assert "[default: full]" in flat  # --check-level
    assert "[default: check]" in flat  # --check/--no-check
    assert "[default: local[*]]" in flat  # --spark-master
    assert "[default: 2 x CPUs, at least 4; 1<=x<=1024]" in flat  # --parallelism


def test_man_pages_list_the_panels(tmp_path: Path) -> None:
    from paimon_cli import docgen

    page = docgen.man_pages()["man/paimon-maintain.1"]
    options = page.split(".SH OPTIONS", 1)[1].split(".SH EXIT STATUS", 1)[0]
    subsections = re.findall(r"^\.SS (.+)$", options, flags=re.M)
    assert subsections == ["Run control", "Output", "Table", "Storage", "Spark"]
    own = options.split(".SS", 1)[0]
    assert "\\fB\\-\\-check\\-level\\fR" in own
    assert "\\fB\\-\\-dry\\-run\\fR" not in own


def test_man_page_exit_status_lists_every_code() -> None:
    from paimon_cli import docgen, errors

    codes = [code for code, _ in docgen.EXIT_STATUS]
    assert codes == ["0", "1", "2", "3", "130", "141", "143"]
    for value in (errors.EXIT_OK, errors.EXIT_FAILURE, errors.EXIT_USAGE, errors.EXIT_DAMAGED):
        assert str(value) in codes
    assert str(errors.EXIT_CLOSED_PIPE) in codes
    page = docgen.man_pages()["man/paimon-maintain.1"]
    status = page.split(".SH EXIT STATUS", 1)[1].split(".SH ENVIRONMENT", 1)[0]
    assert re.findall(r"^\\fB(\d+)\\fR$", status, flags=re.M) == codes


def _sample(tmp_path: Path) -> Path:
    """A pypaimon table of two commits."""
    table = pw.create_table(tmp_path / "wh", "db.t", pa.schema([("id", pa.int64())]))
    for i in range(2):
        pw.append(table, [{"id": i}])
    return pw.root_of(table)


def test_maintain_check_is_a_flag_that_a_flag_may_follow(run: Run, tmp_path: Path) -> None:
    table = _sample(tmp_path)
    result = run("maintain", table, "--check", "--dry-run", "--json")
    assert result.exit_code == 0, result.stderr
    assert '"dry_run": true' in result.stdout
    # inspect's --check is a flag too: the same spelling works on both.
    inspect = run("inspect", table, "--check", "--json")
    assert inspect.exit_code == 0, inspect.stderr


def test_maintain_check_level_and_no_check(run: Run, tmp_path: Path) -> None:
    table = _sample(tmp_path)
    meta = run.json("maintain", table, "--check-level", "metadata", "--dry-run")
    step = next(s for s in meta["tables"][0]["steps"] if s["step"] == "check")
    assert step["status"] == "ok"
    assert step["reason"].startswith("--check-level metadata")
    off = run.json("maintain", table, "--no-check", "--dry-run")
    step = next(s for s in off["tables"][0]["steps"] if s["step"] == "check")
    assert (step["status"], step["reason"]) == ("skipped", "--no-check")
    both = run("maintain", table, "--no-check", "--check-level", "metadata")
    assert both.exit_code == 2
    assert "--check-level" in both.stderr
    assert run("maintain", table, "--check-level", "off").exit_code == 2


@pytest.mark.parametrize(
    ("old", "new"),
    [
        (["--check", "full"], "--check-level full"),
        (["--check", "metadata"], "--check-level metadata"),
        (["--check", "off"], "--no-check"),
        (["--check=metadata"], "--check-level metadata"),
        (["--check=off"], "--no-check"),
    ],
)
def test_the_old_check_spelling_names_the_new_one(
    run: Run, tmp_path: Path, old: list[str], new: str
) -> None:
    table = tmp_path / "not-read"  # refused before anything is opened
    for args in ([table, *old, "--dry-run"], [*old, table]):
        result = run("maintain", *args)
        assert result.exit_code == 2, result.stdout
        message = " ".join(result.stderr.split())
        assert "--check takes no value now" in message
        assert f"use {new}" in message
        assert "Traceback" not in result.stderr


def test_the_old_spelling_with_json_is_a_json_usage_error(run: Run, tmp_path: Path) -> None:
    result = run("maintain", tmp_path / "t", "--check", "off", "--json")
    assert result.exit_code == 2
    assert '"kind": "usage_error"' in result.stderr
    assert "--no-check" in result.stderr
