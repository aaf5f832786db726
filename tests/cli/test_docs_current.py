"""Generated man pages and completion scripts are current and complete (`make docs`)."""

from __future__ import annotations

import re
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import typer.main

from paimon_cli import docgen
from paimon_cli.main import app

REPO = Path(__file__).resolve().parents[2]
REGENERATE = "run `python -m paimon_cli.docgen --update` and commit the result"
REQUIRED_SECTIONS = [
    "NAME",
    "SYNOPSIS",
    "DESCRIPTION",
    "OPTIONS",
    "EXIT STATUS",
    "ENVIRONMENT",
    "EXAMPLES",
    "SEE ALSO",
]
ENVIRONMENT = [
    "PAIMON_WAREHOUSE",
    "PAIMON_LOG_LEVEL",
    "PAIMON_DEBUG",
    "NO_COLOR",
    "FORCE_COLOR",
    "AWS_ACCESS_KEY_ID",
]


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("docgen")
    assert docgen.main(["--update", "--out", str(out)]) == 0
    return out


def _man_pages(root: Path) -> dict[str, str]:
    return {p.name: p.read_text(encoding="utf-8") for p in sorted((root / "man").glob("*.1"))}


def _sections(page: str) -> list[str]:
    return [m.strip('"') for m in re.findall(r"^\.SH (.+)$", page, flags=re.MULTILINE)]


def test_checked_in_docs_match_a_fresh_generation(generated: Path) -> None:
    fresh = docgen._owned_files(generated)
    stale = docgen.diff(fresh, REPO)
    assert not stale, f"man pages or completions are stale: {REGENERATE}\n\n{stale}"


def test_check_mode_passes_when_current_and_fails_with_a_diff_when_stale(
    generated: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert docgen.main(["--check", "--out", str(generated)]) == 0
    page = generated / "man" / "paimon.1"
    original = page.read_text(encoding="utf-8")
    page.write_text(original.replace(".SH EXIT STATUS", ".SH EXIT CODES"), encoding="utf-8")
    try:
        capsys.readouterr()
        assert docgen.main(["--check", "--out", str(generated)]) == 1
        captured = capsys.readouterr()
        assert "--- a/man/paimon.1" in captured.out
        assert "+.SH EXIT STATUS" in captured.out
        assert "docgen --update" in captured.err
    finally:
        page.write_text(original, encoding="utf-8")


def _command_paths(command: Any, path: list[str]) -> Iterator[list[str]]:
    yield path
    for name, sub in getattr(command, "commands", {}).items():
        if not sub.hidden:
            yield from _command_paths(sub, [*path, name])


def test_every_registered_command_has_a_page(generated: Path) -> None:
    expected = {
        "-".join(path) + ".1" for path in _command_paths(typer.main.get_command(app), ["paimon"])
    }
    assert len(expected) > 1, "no commands are registered"
    assert set(_man_pages(generated)) == expected
    missing = expected - set(_man_pages(REPO))
    assert not missing, f"no man page for {sorted(missing)}: {REGENERATE}"


def test_every_page_has_the_required_sections(generated: Path) -> None:
    for name, page in _man_pages(generated).items():
        sections = _sections(page)
        missing = [s for s in REQUIRED_SECTIONS if s not in sections]
        assert not missing, f"{name} lacks {missing}" + (
            " (give the command an epilog with '  paimon ...' example lines)"
            if "EXAMPLES" in missing
            else ""
        )
        order = [s for s in sections if s in REQUIRED_SECTIONS]
        assert order == REQUIRED_SECTIONS, f"{name}: sections out of order: {order}"
        assert page.startswith(f'.TH "{docgen.roff(name[:-2].upper())}" "1"')
        for var in ENVIRONMENT:
            assert f"\\fB{var}\\fR" in page, f"{name} does not document {var}"


def test_command_pages_document_their_options_and_examples(generated: Path) -> None:
    for page in docgen.iter_pages(docgen.command_tree()):
        text = (generated / "man" / f"{page.name}.1").read_text(encoding="utf-8")
        for param in page.command.get_params(page.ctx):
            if param.param_type_name == "option" and param.get_help_record(page.ctx):
                for opt in param.opts:
                    assert docgen.roff(opt) in text, f"{page.name}.1 misses {opt}"
        for example in docgen._examples(page.command):
            assert docgen.roff(example) in text


def test_output_is_deterministic_and_machine_independent(generated: Path) -> None:
    machine = {str(REPO), str(Path.home()), sys.prefix, sys.executable}
    for path in sorted(generated.rglob("*")):
        if not path.is_file():
            continue
        text = path.read_text(encoding="utf-8")
        leaks = [m for m in machine if m in text]
        assert not leaks, f"{path.name} contains machine paths {leaks}"
        assert not re.search(r"\b20\d\d-\d\d-\d\d\b", text), f"{path.name} contains a date"
        assert text.endswith("\n") and not text.endswith("\n\n"), path.name
        assert not any(line != line.rstrip() for line in text.splitlines()), path.name


def test_completion_scripts_call_back_into_paimon(generated: Path) -> None:
    completions = generated / "completions"
    assert "complete -o default -F _paimon_completion paimon" in (
        completions / "paimon.bash"
    ).read_text(encoding="utf-8")
    zsh = (completions / "_paimon").read_text(encoding="utf-8")
    assert zsh.startswith("#compdef paimon\n")
    assert "_PAIMON_COMPLETE=complete_zsh paimon" in zsh
    assert "complete --command paimon" in (completions / "paimon.fish").read_text(encoding="utf-8")


def test_paimon_cli_has_its_own_completion_scripts(generated: Path) -> None:
    completions = generated / "completions"
    bash = (completions / "paimon-cli.bash").read_text(encoding="utf-8")
    assert "_PAIMON_CLI_COMPLETE=complete_bash" in bash
    assert bash.rstrip().endswith("-F _paimon_cli_completion paimon-cli")
    assert (
        (completions / "_paimon-cli")
        .read_text(encoding="utf-8")
        .startswith("#compdef paimon-cli\n")
    )
    assert "complete --command paimon-cli" in (completions / "paimon-cli.fish").read_text(
        encoding="utf-8"
    )
