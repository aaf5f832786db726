"""paimon expire-changelogs: Paimon's expire_changelogs procedure, pointers first."""

from __future__ import annotations

from typing import Annotated

import typer

from paimon_cli.render.expire_changelogs import RENDERER
from paimon_cli.selection import run_operation
from paimon_cli.shared import CHANGING, DELETING, ENGINE, TIMEZONE, Common, command

EPILOG = """Examples:

  paimon expire-changelogs /wh/db.db/orders --retain-max 100 --dry-run

  paimon expire-changelogs s3://lake/wh/db.db/orders --older-than '7 d' \\
    --retain-min 10

  paimon expire-changelogs /wh/db.db/orders --delete-all
"""


@command("expire-changelogs", EPILOG, CHANGING | DELETING | ENGINE | TIMEZONE)
def expire_changelogs(
    common: Common,
    retain_max: Annotated[
        int | None,
        typer.Option(
            "--retain-max",
            help="Changelogs beyond this many snapshot ids from the latest expire "
            "(default: unlimited; table options are not consulted, as in the procedure).",
            show_default=False,
        ),
    ] = None,
    retain_min: Annotated[
        int | None,
        typer.Option(
            "--retain-min",
            help="Changelogs of the newest N snapshot ids are kept (default: 1).",
            show_default=False,
        ),
    ] = None,
    older_than: Annotated[
        str | None,
        typer.Option(
            "--older-than",
            help="Only changelogs committed before this expire: a duration (90m, 7 d), epoch "
            "millis, ISO-8601, or 'YYYY-MM-DD HH:MM:SS' in local time (default: no time "
            "bound, so only --retain-max expires anything).",
            show_default=False,
        ),
    ] = None,
    max_deletes: Annotated[
        int | None,
        typer.Option(
            "--max-deletes",
            help="At most this many changelogs per run (default: unlimited).",
            show_default=False,
        ),
    ] = None,
    delete_all: Annotated[
        bool,
        typer.Option(
            "--delete-all",
            help="Expire every long-lived changelog (all must be older than the earliest "
            "snapshot) and remove the changelog hints.",
        ),
    ] = False,
) -> None:
    """Expire long-lived changelogs (changelog/changelog-N) and the files only they use,
    as Paimon's expire_changelogs procedure does."""
    from core.ops.expire_changelogs import ExpireChangelogs
    from core.retention.changelog_range import ChangelogFlags
    from core.runtime.requests import instant

    older_than_ms = instant("older_than", older_than, now_ms=common.now_ms, zone=common.zone)
    flags = ChangelogFlags(retain_max, retain_min, older_than_ms, max_deletes, delete_all)
    run_operation(common, lambda _ex: ExpireChangelogs(flags), RENDERER)
