"""paimon restore / purge-quarantine: undo a quarantined run, or drop old quarantine for good."""

from __future__ import annotations

from typing import Annotated

import typer

from paimon_cli.params import optional
from paimon_cli.render import restore as render
from paimon_cli.selection import run_operation
from paimon_cli.shared import TIMEZONE, UNBRANCHED, Common, command

RESTORE_EPILOG = """Examples:

  paimon restore /wh/db.db/orders --last --dry-run

  paimon restore /wh/db.db/orders 3f9a1c2b7d4e
"""
PURGE_EPILOG = """Examples:

  paimon purge-quarantine /wh/db.db/orders --older-than '7 d' --dry-run

  paimon purge-quarantine 'db.*' -w s3://lake/wh --older-than '7 d'
"""


@command("restore", RESTORE_EPILOG, UNBRANCHED)
def restore(
    common: Common,
    run_id: Annotated[
        str | None,
        typer.Argument(help="Run id (see 'paimon inspect TABLE runs').", show_default=False),
    ] = None,
    last: Annotated[
        bool, typer.Option("--last", help="Restore the newest quarantined run.")
    ] = False,
) -> None:
    """Move a quarantined run's files back (data, manifests, snapshots and tags, then hints)."""
    from core.ops.undo.restore import Restore

    op = Restore.of(run_id, last)
    run_operation(common, lambda _ex: op, render.RESTORE)


@command("purge-quarantine", PURGE_EPILOG, UNBRANCHED | TIMEZONE)
def purge_quarantine(
    common: Common,
    older_than: Annotated[
        str | None,
        optional(
            "--older-than",
            help="Only runs quarantined before this: a duration ago (7d), epoch time "
            "(@1700000000), ISO-8601 or 'YYYY-MM-DD HH:MM:SS'.",
            default_text="every quarantined run",
        ),
    ] = None,
) -> None:
    """Delete quarantined runs for good (they can no longer be restored)."""
    from core.ops.undo.purge_quarantine import PurgeQuarantine

    cutoff = common.cutoff("older_than", older_than)
    op = PurgeQuarantine(common.now_ms + 1 if cutoff is None else cutoff)
    run_operation(common, lambda _ex: op, render.PURGE)
