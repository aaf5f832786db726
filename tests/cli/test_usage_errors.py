"""Usage errors and global flags as a newcomer meets them: --json honoured, our words,
flags accepted on either side of the command name, help that reads whole."""

from __future__ import annotations

import json

import pytest
import typer.main

from paimon_cli.commandline import reorder
from paimon_cli.main import app


@pytest.mark.parametrize(
    ("args", "phrase"),
    [
        (["expire-snapshots"], "Missing argument 'TABLE'"),
        (["expire-snapshots", "{root}", "--retain-min", "abc"], "'abc' is not a whole number"),
        (["expire-snapshots", "{root}", "--retain-mn", "3"], "did you mean --retain-min?"),
        (["inspect", "{root}", "snapshot"], "did you mean 'snapshots'?"),
        (["expire-snapshot", "{root}"], "Did you mean 'expire-snapshots'"),
        (["expire-snapshots", "{root}", "--retain-min", "0"], "at least 1"),
    ],
)
def test_usage_errors_honour_json(run, scenarios, args: list[str], phrase: str) -> None:
    root = str(scenarios["append_partitioned"].root)
    argv = [a.replace("{root}", root) for a in args]
    result = run(*argv, "--json")
    assert result.exit_code == 2, (result.stdout, result.stderr)
    assert result.stdout == ""
    error = json.loads(result.stderr)["error"]
    assert error["kind"] == "usage_error" and phrase in error["message"]
    human = run(*argv)
    assert human.exit_code == 2 and phrase in human.stderr and "Usage: paimon" in human.stderr
    assert "Input should be" not in human.stderr and "Value error" not in human.stderr


def test_usage_lines_name_arguments_in_capitals(run) -> None:
    for command in ("expire-snapshots", "inspect", "delete-tag", "rename-tag"):
        usage = run(command, "--help").stdout.splitlines()[0]
        assert "TABLE" in usage and "{" not in usage and "table" not in usage, usage
    assert "TABLE NAMES..." in run("delete-tag", "--help").stdout


def test_paimon_alone_prints_help_to_stdout(run) -> None:
    result = run()
    assert result.exit_code == 0
    assert "Usage: paimon" in result.stdout and "expire-snapshots" in result.stdout
    assert result.stderr == ""


def test_global_flags_follow_the_command_too(run, scenarios) -> None:
    root = scenarios["append_partitioned"].root
    dry = ["expire-snapshots", root, "--retain-max", "2", "--retain-min", "1", "--dry-run"]
    plain = run(*dry)
    verbose = run(*dry, "-v", "--debug", "--no-color")
    assert verbose.exit_code == 0, verbose.stderr

    def steady(text: str) -> list[str]:  # the cut-off line moves with the clock
        return [line for line in text.splitlines() if "older than" not in line]

    assert steady(verbose.stdout) == steady(plain.stdout)
    assert "info: " in verbose.stderr and "info: " not in plain.stderr  # -v took effect
    assert run("-q", *dry).stdout == run(*dry, "-q").stdout != ""


def test_reorder_moves_only_flags_outside_values() -> None:
    commands = ["inspect", "expire-snapshots"]
    assert reorder(["inspect", "T", "-vv", "--log-level", "debug"], commands) == [
        "-vv",
        "--log-level",
        "debug",
        "inspect",
        "T",
    ]
    assert reorder(["--log-level", "info", "-q", "expire-snapshots", "T"], commands) == [
        "--log-level",
        "info",
        "expire-snapshots",
        "-q",
        "T",
    ]
    # After `--` nothing moves.
    assert reorder(["inspect", "--", "-v"], commands) == ["inspect", "--", "-v"]


def test_help_examples_are_never_wrapped(run) -> None:
    group = typer.main.get_command(app)
    assert isinstance(group, typer.core.TyperGroup)
    for name, command in group.commands.items():
        examples = [
            line.strip()
            for line in (command.epilog or "").splitlines()
            if line.strip().startswith("paimon ")
        ]
        shown = {line.strip() for line in run(name, "--help").stdout.splitlines()}
        for example in examples:
            assert example in shown, (name, example)
