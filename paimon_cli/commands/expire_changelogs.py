"""paimon expire-changelogs: Paimon's expire_changelogs procedure, pointers first."""

from __future__ import annotations

from typing import Annotated

import typer

from paimon_cli.params import optional
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
        optional(
            "--retain-max",
            help="Changelogs beyond this many snapshot ids from the latest expire (table "
            "options are not consulted, as in the procedure).",
            default_text="unlimited",
        ),
    ] = None,
    retain_min: Annotated[
        int | None,
        optional(
            "--retain-min",
            help="Changelogs of the newest N snapshot ids are kept.",
            default_text="1",
        ),
    ] = None,
    older_than: Annotated[
        str | None,
        optional(
            "--older-than",
            help="Only changelogs committed before this expire: a duration ago (90m, 7 d), epoch "
            "time (@1700000000), ISO-8601 or 'YYYY-MM-DD HH:MM:SS'.",
            default_text="no time bound, so only --retain-max expires anything",
        ),
    ] = None,
    max_deletes: Annotated[
        int | None,
        optional(
            "--max-deletes",
            help="At most this many changelogs per run.",
            default_text="unlimited",
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
    from core.ops.expiry.expire_changelogs import ExpireChangelogs
    from core.retention.changelog_range import ChangelogFlags

    older_than_ms = common.cutoff("older_than", older_than)
    flags = ChangelogFlags(retain_max, retain_min, older_than_ms, max_deletes, delete_all)
    run_operation(common, lambda _ex: ExpireChangelogs(flags), RENDERER)
