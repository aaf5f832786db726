"""paimon rollback: Paimon's rollback_to a snapshot or tag, pointers first, with a journal."""

from __future__ import annotations

from typing import Annotated

import typer

from paimon_cli.completion import tag_names
from paimon_cli.params import optional
from paimon_cli.render.rollback import RENDERER
from paimon_cli.selection import run_operation
from paimon_cli.shared import CHANGING, DELETING, TIMEZONE, Common, command

EPILOG = """Examples:

  paimon rollback /wh/db.db/orders --to-snapshot 42 --dry-run

  paimon rollback /wh/db.db/orders --to-tag release-1 --quarantine

  paimon rollback /wh/db.db/orders --to-timestamp '2026-11-20 08:00:00' \\
    --dry-run

  paimon rollback db.orders -w s3://lake/wh --to-snapshot 42 --force --json
"""


@command("rollback", EPILOG, CHANGING | DELETING | TIMEZONE)
def rollback(
    common: Common,
    to_snapshot: Annotated[
        int | None,
        optional(
            "--to-snapshot",
            min=1,
            help="Keep this snapshot as the latest (an expired one a tag holds works too).",
        ),
    ] = None,
    to_tag: Annotated[
        str | None,
        optional(
            "--to-tag",
            help="Roll back to this tag's snapshot (restored from the tag if it expired).",
            autocompletion=tag_names,
        ),
    ] = None,
    to_timestamp: Annotated[
        str | None,
        optional(
            "--to-timestamp",
            help="Keep the latest snapshot committed at or before this time, as Paimon's "
            "rollback_to_timestamp ('YYYY-MM-DD HH:MM:SS', a duration ago, epoch time or "
            "ISO-8601).",
        ),
    ] = None,
    force: Annotated[
        bool,
        typer.Option(
            "--force",
            help="Roll back even when a consumer has read, or a branch was created from a "
            "tag on, a snapshot that goes.",
        ),
    ] = False,
) -> None:
    """Roll a table back to a snapshot, tag or time, as Paimon's rollback_to does."""
    from core.ops.undo.rollback import Rollback

    op = Rollback(to_snapshot, to_tag, force, common.instant("to_timestamp", to_timestamp))
    run_operation(common, lambda _ex: op, RENDERER)
