"""Tab completion of tag and branch names: read from the table typed earlier on the command
line (TABLE, -w, --branch), for arguments and options alike, and never an error."""

from __future__ import annotations

from pathlib import Path

import pytest
from support import pypaimon_writer as pw
from typer.testing import CliRunner

from paimon_cli.main import app


def _complete(line: str) -> list[str]:
    """What bash gets for ``line`` (the word under the cursor is the last one, possibly
    empty), as the completion script asks the program."""
    words = line.split(" ")
    env = {
        "_PAIMON_COMPLETE": "complete_bash",
        "COMP_WORDS": line,
        "COMP_CWORD": str(len(words) - 1),
    }
    result = CliRunner().invoke(app, [], env=env, prog_name="paimon")
    assert result.exit_code == 0, result.output
    assert not result.stderr
    return result.stdout.split()


@pytest.fixture(scope="module")
def table(tmp_path_factory: pytest.TempPathFactory) -> Path:
    wh = tmp_path_factory.mktemp("completion")
    return pw.tags_consumers_branches(wh).root


@pytest.mark.parametrize(
    ("typed", "expected"),
    [
        ("delete-tag TABLE ", ["t2", "t4", "t6"]),
        ("delete-tag TABLE t2 t", ["t2", "t4", "t6"]),
        ("rename-tag TABLE t", ["t2", "t4", "t6"]),
        ("rollback TABLE --to-tag t", ["t2", "t4", "t6"]),
        ("rollback --to-tag t", []),  # no table yet
        ("inspect TABLE files --tag ", ["t2", "t4", "t6"]),
        ("create-branch TABLE new --tag t6", ["t6"]),
        ("delete-tag TABLE --branch b1 ", ["t4"]),  # the branch's own tags
        ("delete-tag --branch=b1 TABLE ", ["t4"]),
        ("delete-branch TABLE ", ["b1", "empty"]),
        ("fast-forward TABLE e", ["empty"]),
        ("expire-snapshots TABLE --branch ", ["b1", "empty", "main"]),
        ("-v expire-tags TABLE --branch m", ["main"]),
    ],
)
def test_names_come_from_the_table_on_the_command_line(
    table: Path, typed: str, expected: list[str]
) -> None:
    assert _complete("paimon " + typed.replace("TABLE", str(table))) == expected


def test_db_table_with_a_warehouse(table: Path) -> None:
    wh, name = table.parents[1], f"{table.parent.name[:-3]}.{table.name}"
    assert _complete(f"paimon delete-branch -w {wh} {name} ") == ["b1", "empty"]
    assert _complete(f"paimon delete-tag {name} -w {wh} t6") == ["t6"]


@pytest.mark.parametrize(
    "typed",
    [
        "delete-tag /no/such/table ",
        "delete-tag 'unclosed ",
        "delete-tag 'db.*' -w /tmp ",
        "rollback FILE --to-tag ",
        "delete-branch FILE ",
    ],
)
def test_what_cannot_be_read_completes_nothing(typed: str, tmp_path: Path) -> None:
    afile = tmp_path / "file"
    afile.write_text("not a table")
    assert _complete("paimon " + typed.replace("FILE", str(afile))) == []


def test_an_error_never_reaches_the_shell(table: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import core.format.metadata_io as metadata_io
    import core.table.branch_manager as branch_manager

    def broken(*_args: object, **_kwargs: object) -> None:
        raise RuntimeError("storage on fire")

    monkeypatch.setattr(metadata_io, "list_named", broken)
    monkeypatch.setattr(branch_manager.BranchManager, "branches", broken)
    assert _complete(f"paimon delete-tag {table} ") == []
    assert _complete(f"paimon fast-forward {table} ") == []
