"""The `paimon` Typer app: global diagnostics options and command registration."""

from __future__ import annotations

import os
import sys
from typing import Annotated

import typer

from core import __version__
from paimon_cli import logs
from paimon_cli.commandline import PaimonGroup
from paimon_cli.commands import compact as compact_cmd
from paimon_cli.commands import delete_orphan_files as delete_orphan_files_cmd
from paimon_cli.commands import expire_changelogs as expire_changelogs_cmd
from paimon_cli.commands import expire_partitions as expire_partitions_cmd
from paimon_cli.commands import expire_snapshots as expire_snapshots_cmd
from paimon_cli.commands import inspect as inspect_cmd
from paimon_cli.commands import maintain as maintain_cmd
from paimon_cli.commands import remove_unexisting as remove_unexisting_cmd
from paimon_cli.commands import rollback as rollback_cmd
from paimon_cli.commands import tags as tags_cmd
from paimon_cli.commands import undo as undo_cmd
from paimon_cli.state import AppState

# The second console script (pyproject.toml [project.scripts]).
ALIAS = "paimon-cli"

app = typer.Typer(
    name="paimon",
    cls=PaimonGroup,
    help="Fast, safe maintenance for Apache Paimon tables.\n\n"
    "Every destructive command builds a plan first: --dry-run prints it, --json emits it, "
    "and nothing a retained snapshot, tag, branch or consumer needs is ever deleted.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    pretty_exceptions_show_locals=False,
    context_settings={"help_option_names": ["-h", "--help"]},
    rich_markup_mode=None,
)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"paimon-cli {__version__}")
        raise typer.Exit()


@app.callback()
def root(
    ctx: typer.Context,
    verbose: Annotated[
        int,
        typer.Option(
            "--verbose", "-v", count=True, help="More logging on stderr (-v info, -vv debug)."
        ),
    ] = 0,
    log_level: Annotated[
        str | None,
        typer.Option(
            "--log-level",
            envvar="PAIMON_LOG_LEVEL",
            help="Log level name (overrides -v).",
            show_default=False,
        ),
    ] = None,
    no_color: Annotated[bool, typer.Option("--no-color", help="Disable colours.")] = False,
    debug: Annotated[
        bool, typer.Option("--debug", envvar="PAIMON_DEBUG", help="Show tracebacks on errors.")
    ] = False,
    version: Annotated[
        bool,
        typer.Option(
            "--version", callback=_version, is_eager=True, help="Print the version and exit."
        ),
    ] = False,
) -> None:
    """Fast, safe maintenance for Apache Paimon tables."""
    logs.configure(verbose, log_level)
    ctx.obj = AppState(verbosity=verbose, debug=debug, no_color=no_color)


inspect_cmd.register(app)
expire_snapshots_cmd.register(app)
expire_changelogs_cmd.register(app)
expire_partitions_cmd.register(app)
tags_cmd.register(app)
delete_orphan_files_cmd.register(app)
compact_cmd.register(app)
maintain_cmd.register(app)
undo_cmd.register(app)
rollback_cmd.register(app)
remove_unexisting_cmd.register(app)


def main() -> None:
    # `paimon-cli` is the same program under a name pypaimon cannot take (D5): it names
    # itself, and completes (`_PAIMON_CLI_COMPLETE`), as invoked.
    invoked = os.path.basename(sys.argv[0]) if sys.argv else ""
    app(prog_name=ALIAS if invoked.startswith(ALIAS) else "paimon")
