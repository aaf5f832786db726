"""Tab completion of tag and branch names, read from the table given earlier on the same
command line (TABLE, with ``--warehouse`` or ``--catalog``, ``--fs-option`` and ``--branch``
when given).

Completion runs at every <TAB> inside the user's shell, so it stays fast (one directory
listing of the table, no schema or manifest read, no retries) and never fails the shell
(``paimon_cli.errors.completion_candidates``).
"""

from __future__ import annotations

import os
import shlex
from typing import TYPE_CHECKING, Any

import typer
import typer.core

from paimon_cli.errors import completion_candidates

if TYPE_CHECKING:
    from core.io.fileio import FileIO


def _split(line: str) -> list[str]:
    """Shell words; an unclosed quote (a path being typed) ends the last word as typed."""
    lexer = shlex.shlex(line, posix=True)
    lexer.whitespace_split = True
    lexer.commenters = ""
    words: list[str] = []
    try:
        words.extend(lexer)
    except ValueError:
        words.append(lexer.token)
    return words


def _typed_words() -> list[str]:
    """The words on the command line before the one being completed, as the shell passed
    them (bash: COMP_WORDS and COMP_CWORD; zsh, fish: _TYPER_COMPLETE_ARGS)."""
    if "COMP_WORDS" in os.environ and "COMP_CWORD" in os.environ:
        return _split(os.environ["COMP_WORDS"])[1 : int(os.environ["COMP_CWORD"])]
    line = os.environ.get("_TYPER_COMPLETE_ARGS", "")
    words = _split(line)[1:]
    return words if line.endswith(" ") else words[:-1]


def _command_line(ctx: typer.Context) -> dict[str, Any]:
    """TABLE, --warehouse, --catalog, --branch and --fs-option as typed so far. Read from the words
    themselves: while an option still waits for its value (``--to-tag <TAB>``) the parsed
    parameters hold nothing (Click stops parsing at the option without a value)."""
    takes_value = {
        name: param.name
        for param in ctx.command.params
        if isinstance(param, typer.core.TyperOption) and not param.is_flag and not param.count
        for name in param.opts
    }
    words = _typed_words()
    name = ctx.info_name or ""
    words = words[words.index(name) + 1 :] if name in words else words
    found: dict[str, Any] = {"positional": [], "fs_option": []}
    i = 0
    while i < len(words):
        word = words[i]
        key, _, inline = word.partition("=")
        if word.startswith("-") and key in takes_value:
            value = inline if inline else (words[i + 1] if i + 1 < len(words) else None)
            i += 1 if inline else 2
            if takes_value[key] == "fs_option":
                found["fs_option"].append(value)
            else:
                found[str(takes_value[key])] = value
            continue
        if not word.startswith("-"):
            found["positional"].append(word)
        i += 1
    return found


def _table(ctx: typer.Context) -> tuple[FileIO, str] | None:
    """The storage and root of the one table the command line names so far, if any."""
    from core.io.fileio import FileIO
    from core.table.warehouse import is_glob, resolve_tables
    from paimon_cli.key_values import parse_fs_options

    typed = _command_line(ctx)
    spec = typed["positional"][0] if typed["positional"] else ctx.params.get("table")
    if not spec or is_glob(spec):
        return None
    warehouse = typed.get("warehouse") or os.environ.get("PAIMON_WAREHOUSE")
    options = parse_fs_options(list(typed["fs_option"] or ctx.params.get("fs_option") or ()))
    catalog_name = typed.get("catalog") or os.environ.get("PAIMON_CATALOG")
    if catalog_name:
        from core.catalog.factory import open_catalog

        # db.table in the catalog the command line names (its listing, its credentials).
        with open_catalog(
            catalog_name, spec=spec, warehouse=warehouse, fs_options=options
        ) as catalog:
            return catalog.fileio, catalog.resolve(spec)[0].location
    fileio = FileIO(options, retries=0)
    return fileio, resolve_tables(spec, warehouse, fileio)[0]


def _branch(ctx: typer.Context) -> str:
    return str(_command_line(ctx).get("branch") or ctx.params.get("branch") or "main")


def _tags(ctx: typer.Context, incomplete: str) -> list[str]:
    from core.format.metadata_io import list_named
    from core.io.fileio import join
    from core.table.paths import branch_root_of

    found = _table(ctx)
    if found is None:
        return []
    fileio, root = found
    branch = _branch(ctx)
    names = list_named(fileio, join(branch_root_of(root, branch), "tag"), "tag-")
    return sorted(n for n in names if n.startswith(incomplete))


def _branches(ctx: typer.Context, incomplete: str, *, main: bool) -> list[str]:
    from core.table.branch_manager import MAIN, BranchManager

    found = _table(ctx)
    if found is None:
        return []
    names = BranchManager(*found).branches() + ([MAIN] if main else [])
    return sorted(n for n in names if n.startswith(incomplete))


def tag_names(ctx: typer.Context, incomplete: str) -> list[str]:
    """Tags of the table (of ``--branch`` when given)."""
    return completion_candidates(lambda: _tags(ctx, incomplete))


def branch_names(ctx: typer.Context, incomplete: str) -> list[str]:
    """Branches of the table besides main (what delete-branch and fast-forward take)."""
    return completion_candidates(lambda: _branches(ctx, incomplete, main=False))


def any_branch(ctx: typer.Context, incomplete: str) -> list[str]:
    """Every branch, main included (``--branch``)."""
    return completion_candidates(lambda: _branches(ctx, incomplete, main=True))
