"""paimon maintain: what Paimon's commit-time maintenance would have done, for many tables."""

from __future__ import annotations

from collections.abc import Sequence
from enum import Enum
from pathlib import Path
from typing import Annotated

import typer

from paimon_cli.params import optional
from paimon_cli.shared import (
    ENGINE,
    QUARANTINE,
    TIMEZONE,
    UNBRANCHED,
    UNSAFE_COMMIT,
    Common,
    command,
)

EPILOG = """Examples:

  paimon maintain '*.*' --warehouse s3://lake/wh \\
    --metrics-file /var/lib/node_exporter/paimon.prom

  paimon maintain 'db.*' -w /wh --orphans --max-duration 50m \\
    --parallel-tables 4

  paimon maintain /wh/db.db/orders --dry-run --json
"""


class CheckLevel(str, Enum):
    """--check-level: what the check step probes."""

    full = "full"
    metadata = "metadata"


#: --check's values before it became a flag, and their spelling now
_OLD_CHECK = {
    "full": "--check-level full (the default)",
    "metadata": "--check-level metadata",
    "off": "--no-check",
}


def old_check_spelling(args: Sequence[str]) -> str | None:
    """``--check full|metadata|off`` (before ``--check`` became a flag): a usage error that
    says the new spelling, instead of 'unexpected extra argument' or a table named 'full'."""
    end = list(args).index("--") if "--" in args else len(args)
    for at, token in enumerate(args[:end]):
        name, eq, value = token.partition("=")
        if name != "--check":
            continue
        if not eq:
            value = args[at + 1] if at + 1 < end else ""
        if value in _OLD_CHECK or eq:
            new = _OLD_CHECK.get(value, "--check-level full|metadata")
            return (
                f"--check takes no value now: instead of --check {value}, use {new}; "
                "--check/--no-check turns the check step on or off"
            )
    return None


@command(
    "maintain",
    EPILOG,
    UNBRANCHED | QUARANTINE | UNSAFE_COMMIT | ENGINE | TIMEZONE,
    old_spelling=old_check_spelling,
)
def maintain(
    common: Common,
    orphans: Annotated[
        bool,
        typer.Option(
            "--orphans", help="Also delete orphan files, last (never after a failed step)."
        ),
    ] = False,
    orphans_older_than: Annotated[
        str | None,
        optional(
            "--orphans-older-than",
            help="Orphan cut-off with --orphans: a duration ago (3 d), epoch time (@1700000000), "
            "ISO-8601 or 'YYYY-MM-DD HH:MM:SS'; at least 1 hour ago.",
            default_text="1 day ago",
        ),
    ] = None,
    check: Annotated[
        bool,
        typer.Option(
            "--check/--no-check",
            help="The integrity check step (inspect --check) after the other steps, at "
            "--check-level; problems fail the table (exit 3).",
        ),
    ] = True,
    check_level: Annotated[
        CheckLevel | None,
        optional(
            "--check-level",
            default_text="full",
            help="What the check step probes: full, every file each snapshot, tag and "
            "changelog of every branch needs (one listing per directory holding 32 or more "
            "of them, else one request per file); metadata, only manifest lists, manifests, "
            "index manifests and schemas.",
        ),
    ] = None,
    compact: Annotated[
        bool,
        typer.Option(
            "--compact",
            help="Also compact each branch's data files, as 'paimon compact' (after the "
            "expiries), and its data manifests once there are manifest.merge-min-count of "
            "them (table option, 30 unless set), as 'paimon compact --manifests'.",
        ),
    ] = False,
    compact_max_bytes: Annotated[
        str | None,
        optional(
            "--compact-max-bytes",
            metavar="SIZE",
            help="With --compact: rewrite at most this many input bytes per table and run "
            "(e.g. '20 gb'; whole buckets, at least one), the rest in later runs.",
            default_text="no bound",
        ),
    ] = None,
    metrics_file: Annotated[
        Path | None,
        optional(
            "--metrics-file",
            help="Write Prometheus metrics here (text format, replaced atomically; tables "
            "not run this time keep their previous values and get paimon_maintenance_skipped "
            "1), e.g. for node_exporter's textfile collector. Not with --dry-run.",
            dir_okay=False,
        ),
    ] = None,
    max_duration: Annotated[
        str | None,
        optional(
            "--max-duration",
            help="Start no new table after this long (50m, 1h 30min: a unit is required); "
            "the tables left are reported as skipped (a warning, also with -q; exit 0) and "
            "tables start oldest-maintained first, so the next run starts with them.",
            default_text="no limit",
        ),
    ] = None,
    parallel_tables: Annotated[
        int,
        typer.Option("--parallel-tables", min=1, max=64, help="Tables maintained at once."),
    ] = 1,
) -> None:
    """Do what Paimon's commit-time maintenance would have, from each table's own options."""
    from core.format.options import parse_memory_size
    from core.ops.maintain.maintain import MaintainConfig
    from core.runtime.requests import duration, parsed
    from paimon_cli.maintenance import maintain_tables

    if check_level is not None and not check:
        raise typer.BadParameter("--no-check runs no check", param_hint="--check-level")
    if metrics_file is not None and common.dry_run:
        raise typer.BadParameter(
            "a dry run maintains nothing, so it writes no metrics", param_hint="--metrics-file"
        )
    config = MaintainConfig(
        now_ms=common.now_ms,
        zone=common.zone,
        dry_run=common.dry_run,
        orphans=orphans,
        orphans_older_than_ms=common.cutoff("orphans_older_than", orphans_older_than),
        allow_unsafe_commit=common.allow_unsafe_commit,
        wait_lease_ms=common.wait_lease_ms,
        check=(check_level or CheckLevel.full).value if check else "off",
        compact=compact,
        compact_max_bytes=None
        if compact_max_bytes is None
        else parsed("compact_max_bytes", lambda: parse_memory_size(compact_max_bytes)),
    )
    budget_ms = duration("max_duration", max_duration)
    maintain_tables(
        common,
        config,
        parallel_tables=parallel_tables,
        budget_s=None if budget_ms is None else budget_ms / 1000,
        metrics_file=metrics_file,
    )
