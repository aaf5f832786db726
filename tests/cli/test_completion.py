"""Tab completion of tag and branch names in bash, zsh and fish: read from the table typed
earlier on the command line (TABLE, -w, --branch), for arguments and options alike, and
never an error."""

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


@pytest.mark.parametrize("shell", ["zsh", "fish"])
def test_zsh_and_fish_pass_the_line_their_own_way(table: Path, shell: str) -> None:
    """zsh and fish give the program the whole line (``_TYPER_COMPLETE_ARGS``, as the
    checked-in scripts call it), not bash's words and cursor."""

    def complete(line: str) -> str:
        env = {"_PAIMON_COMPLETE": f"complete_{shell}", "_TYPER_COMPLETE_ARGS": line}
        if shell == "fish":
            env["_TYPER_COMPLETE_FISH_ACTION"] = "get-args"
        result = CliRunner().invoke(app, [], env=env, prog_name="paimon")
        assert result.exit_code == 0, result.output
        assert not result.stderr
        return result.stdout

    tags = complete(f"paimon rollback {table} --to-tag t")
    branches = complete(f"paimon delete-branch {table} e")
    if shell == "fish":
        assert tags.split() == ["t2", "t4", "t6"]
        assert branches.split() == ["empty"]
    else:
        assert tags.startswith("_arguments") and '"t2"\n"t4"\n"t6"' in tags
        assert branches == "_arguments '*: :((\"empty\"))'\n"
    # No candidate: fish offers nothing, zsh its own file completion; never an error.
    nothing = {"fish": "", "zsh": "_files"}[shell]
    assert complete("paimon delete-tag /no/such/table ").strip() == nothing
