"""The automation examples (cron, systemd, the CI gate) of README.md and docs/ call
`paimon-cli`: pypaimon installs a `paimon` of its own, and a cron line calling it exits 2
(issue 37.4). The README and docs/automation.md say how to install from a checkout while the
package is not on PyPI, and the console script they name is the one pyproject.toml declares."""

from __future__ import annotations

import re
from pathlib import Path

import tomllib

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text(encoding="utf-8")
AUTOMATION = (ROOT / "docs" / "automation.md").read_text(encoding="utf-8")
# Every page that shows a cron line, a systemd unit or a CI gate.
PAGES = [README, AUTOMATION, (ROOT / "docs" / "spark-and-storage.md").read_text(encoding="utf-8")]


def _blocks(language: str) -> list[str]:
    return [b for page in PAGES for b in re.findall(rf"```{language}\n(.*?)```", page, flags=re.S)]


def _program(command: str) -> str:
    """The program a command line runs (its first word, without a directory)."""
    return command.split()[0].rsplit("/", 1)[-1]


def test_every_automation_example_calls_paimon_cli() -> None:
    cron = [line.split(None, 5)[5] for b in _blocks("cron") for line in b.splitlines() if line]
    systemd = [
        line.removeprefix("ExecStart=")
        for b in _blocks("ini")
        for line in b.splitlines()
        if line.startswith("ExecStart=")
    ]
    gates = [
        line
        for b in _blocks("sh")
        if "case $?" in b
        for line in b.splitlines()
        if "paimon" in line.split(" ", 1)[0]
    ]
    assert cron and systemd and gates
    for command in cron + systemd + gates:
        assert _program(command) == "paimon-cli", command


def test_the_readme_says_how_to_install_from_a_checkout() -> None:
    assert "not on PyPI" in README
    assert "pipx install ./paimon-cli" in README
    assert "/opt/paimon-cli/bin/pip install './paimon-cli[s3]'" in README
    assert "pipx install /path/to/paimon-cli" in AUTOMATION
    assert "pip install '/path/to/paimon-cli[s3]'" in AUTOMATION
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    assert "paimon-cli" in scripts
