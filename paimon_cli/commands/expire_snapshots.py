"""paimon expire-snapshots: Paimon's snapshot expiry, pointers first, with a readable plan."""

from __future__ import annotations

from typing import Annotated

from paimon_cli.params import optional
from paimon_cli.render.expire_snapshots import RENDERER
from paimon_cli.selection import run_operation
from paimon_cli.shared import CHANGING, DELETING, ENGINE, OPTIONS, TIMEZONE, Common, command

EPILOG = """Examples:

  paimon expire-snapshots s3://lake/wh/db.db/orders --retain-max 5 \\
    --retain-min 1

  paimon expire-snapshots /wh/db.db/orders --older-than '7 d' --retain-min 3 \\
    --dry-run

  paimon expire-snapshots 'db.*' --warehouse s3://lake/wh --json
"""


@command("expire-snapshots", EPILOG, CHANGING | DELETING | OPTIONS | ENGINE | TIMEZONE)
def expire_snapshots(
    common: Common,
    retain_min: Annotated[
        int | None,
        optional(
            "--retain-min",
            help="Newest snapshots always kept. Must be at least 1.",
            default_text="table option snapshot.num-retained.min, else 10",
        ),
    ] = None,
    retain_max: Annotated[
        int | None,
        optional(
            "--retain-max",
            help="Snapshots beyond this count expire whatever their age.",
            default_text="table option snapshot.num-retained.max, else unlimited",
        ),
    ] = None,
    older_than: Annotated[
        str | None,
        optional(
            "--older-than",
            help="Expire a snapshot once its successor is older than this: a "
            "duration ago (90m, 7 d), epoch time (@1700000000), ISO-8601 or 'YYYY-MM-DD HH:MM:SS'.",
            default_text="now minus table option snapshot.time-retained, else 1 h",
        ),
    ] = None,
    max_deletes: Annotated[
        int | None,
        optional(
            "--max-deletes",
            help="At most this many snapshot ids per run.",
            default_text="table option snapshot.expire.limit, else 50",
        ),
    ] = None,
) -> None:
    """Expire old snapshots and delete the files only they used, exactly as Paimon does."""
    from core.ops.expiry.expire_snapshots import ExpireFlags, ExpireSnapshots

    flags = ExpireFlags(
        retain_min, retain_max, common.cutoff("older_than", older_than), max_deletes
    )
    run_operation(common, lambda _ex: ExpireSnapshots(flags), RENDERER)
