"""paimon create-branch / delete-branch / fast-forward (listing is `inspect branches`)."""

from __future__ import annotations

from typing import Annotated

import typer

from paimon_cli.completion import branch_names, tag_names
from paimon_cli.params import optional
from paimon_cli.render import branches as render
from paimon_cli.selection import run_operation
from paimon_cli.shared import CHANGING, DELETING, PLAN, UNBRANCHED, Common, command

CREATE_EPILOG = """Examples:

  paimon create-branch /wh/db.db/orders audit --tag release-1

  paimon create-branch /wh/db.db/orders scratch --dry-run
"""
DELETE_EPILOG = """Examples:

  paimon delete-branch /wh/db.db/orders scratch --dry-run

  paimon delete-branch db.orders -w s3://lake/wh audit --quarantine
"""
FAST_FORWARD_EPILOG = """Examples:

  paimon fast-forward /wh/db.db/orders audit --dry-run

  paimon fast-forward db.orders -w /wh audit --json
"""

NewBranch = Annotated[str, typer.Argument(help="Name of the new branch.", show_default=False)]
BranchName = Annotated[
    str, typer.Argument(help="Branch name.", show_default=False, autocompletion=branch_names)
]


@command("create-branch", CREATE_EPILOG, CHANGING | PLAN)
def create_branch(
    common: Common,
    name: NewBranch,
    tag: Annotated[
        str | None,
        optional(
            "--tag",
            help="Start the branch at this tag's snapshot.",
            default_text="an empty branch with the table's schemas and no snapshot",
            autocompletion=tag_names,
        ),
    ] = None,
) -> None:
    """Create a branch, empty or from a tag, exactly as Paimon's create_branch does."""
    from core.ops.branches.branches import CreateBranch

    op = CreateBranch(name, tag)
    run_operation(common, lambda _ex: op, render.CREATE)


@command("delete-branch", DELETE_EPILOG, UNBRANCHED | DELETING)
def delete_branch(common: Common, name: BranchName) -> None:
    """Delete a branch's directory as Paimon's delete_branch does; shared files stay."""
    from core.ops.branches.branches import DeleteBranch

    op = DeleteBranch(name)
    run_operation(common, lambda _ex: op, render.DELETE)


@command("fast-forward", FAST_FORWARD_EPILOG, CHANGING | PLAN)
def fast_forward(
    common: Common,
    name: BranchName,
    force: Annotated[
        bool,
        typer.Option(
            "--force",
            help="Fast-forward even when a consumer has read, or a branch was created from a "
            "tag on, a snapshot that is replaced, or the table holds commits made after the "
            "branch's earliest snapshot below it (they leave the table's history, as in Paimon).",
        ),
    ] = False,
) -> None:
    """Make a branch's history the table's (or --branch's), as Paimon's fast_forward does."""
    from core.ops.branches.fast_forward import FastForward

    op = FastForward(name, force)
    run_operation(common, lambda _ex: op, render.FAST_FORWARD)
