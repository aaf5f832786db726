"""paimon expire-partitions: drop expired partitions with an OVERWRITE commit, as Paimon does."""

from __future__ import annotations

from typing import Annotated

from paimon_cli.params import optional
from paimon_cli.render.expire_partitions import RENDERER
from paimon_cli.selection import run_operation
from paimon_cli.shared import CHANGING, OPTIONS, PLAN, TIMEZONE, UNSAFE_COMMIT, Common, command

EPILOG = """Examples:

  paimon expire-partitions /wh/db.db/events --expiration-time '30 d' --dry-run

  paimon expire-partitions db.events -w /wh --expiration-time 7d \\
    --timestamp-formatter yyyyMMdd

  paimon expire-partitions /wh/db.db/logs --expiration-time 2d \\
    --timestamp-pattern '$dt $hour:00:00'
"""


@command("expire-partitions", EPILOG, CHANGING | PLAN | OPTIONS | UNSAFE_COMMIT | TIMEZONE)
def expire_partitions(
    common: Common,
    expiration_time: Annotated[
        str | None,
        optional(
            "--expiration-time",
            help="Partitions older than this expire, e.g. '7 d' (this or the table option "
            "is required).",
            default_text="table option partition.expiration-time",
        ),
    ] = None,
    timestamp_formatter: Annotated[
        str | None,
        optional(
            "--timestamp-formatter",
            help="Java DateTimeFormatter pattern for the partition time, e.g. yyyyMMdd.",
            default_text="table option partition.timestamp-formatter, else 'y-M-d[ H:m:s]'",
        ),
    ] = None,
    timestamp_pattern: Annotated[
        str | None,
        optional(
            "--timestamp-pattern",
            help="How partition values form the time, e.g. '$dt $hour:00:00'.",
            default_text="table option partition.timestamp-pattern, else the first partition key",
        ),
    ] = None,
    expire_strategy: Annotated[
        str | None,
        optional(
            "--expire-strategy",
            help="values-time (parse the values) or update-time (newest file creation).",
            default_text="table option partition.expiration-strategy, else values-time",
        ),
    ] = None,
    max_expires: Annotated[
        int | None,
        optional(
            "--max-expires",
            help="At most this many partitions per run.",
            default_text="table option partition.expiration-max-num, else 100",
        ),
    ] = None,
) -> None:
    """Drop expired partitions (an OVERWRITE commit); expire-snapshots frees their files later."""
    from core.ops.expiry.expire_partitions import ExpirePartitions, PartitionExpireFlags

    flags = PartitionExpireFlags(
        expiration_time, timestamp_formatter, timestamp_pattern, expire_strategy, max_expires
    )
    run_operation(
        common,
        lambda _ex: ExpirePartitions(flags, common.zone, common.allow_unsafe_commit),
        RENDERER,
    )
