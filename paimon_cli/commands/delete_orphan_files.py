"""paimon delete-orphan-files: reclaim storage without ever touching live data."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from paimon_cli.params import optional
from paimon_cli.render.orphan_files import RENDERER
from paimon_cli.selection import run_operation
from paimon_cli.shared import DELETING, ENGINE, TIMEZONE, UNBRANCHED, Common, command

EPILOG = """Examples:

  paimon delete-orphan-files s3://lake/wh/db.db/orders --dry-run

  paimon delete-orphan-files /wh/db.db/orders --older-than '3 d' --json

  paimon delete-orphan-files 'db.*' --warehouse /wh

  paimon delete-orphan-files s3://lake/wh/db.db/orders \\
      --inventory s3://inv/lake/orders/2026-01-01T01-00Z/manifest.json
"""


# every branch is cleaned at once: no --branch
@command("delete-orphan-files", EPILOG, UNBRANCHED | DELETING | ENGINE | TIMEZONE)
def delete_orphan_files(
    common: Common,
    older_than: Annotated[
        str | None,
        optional(
            "--older-than",
            help="Only files last modified strictly before this are candidates: "
            "a duration ago (3 d), epoch time (@1700000000), ISO-8601 or 'YYYY-MM-DD HH:MM:SS'. "
            "Less than 1 hour ago needs --allow-recent.",
            default_text="1 day ago, as Paimon",
        ),
    ] = None,
    allow_recent: Annotated[
        bool,
        typer.Option(
            "--allow-recent",
            help="Allow --older-than less than one hour ago (only when no "
            "writer can be running: their uncommitted files would look like orphans).",
        ),
    ] = False,
    external_root_is_exclusive: Annotated[
        bool,
        typer.Option(
            "--external-root-is-exclusive",
            help="Also clean the data-file.external-paths roots. Only when no other table "
            "writes there: its live files would look like orphans (skipped by default).",
        ),
    ] = False,
    inventory: Annotated[
        str | None,
        optional(
            "--inventory",
            metavar="SOURCE",
            help="Take the object listing from this storage inventory instead of listing "
            "the table: an S3 Inventory manifest.json (CSV, ORC or Parquet), or a file list "
            "(Parquet or CSV with a 'path' column and optional 'size' and 'last_modified', "
            "else one path a line). Ages come from the inventory, which must be newer than "
            "the cut-off; every file is checked with a HEAD right before it is deleted.",
        ),
    ] = None,
    report_file: Annotated[
        Path | None,
        optional(
            "--report-file",
            help="Also write every orphan as a JSON line to this file (the plan lists at "
            "most 10,000 with --engine spark).",
            dir_okay=False,
        ),
    ] = None,
) -> None:
    """Delete files no snapshot, tag, branch or changelog references (by name, as Paimon)."""
    from core.ops.orphans.delete_orphan_files import delete_orphan_files
    from core.ops.orphans.orphan_files import DEFAULT_AGE_MS, OrphanRequest

    cutoff = common.cutoff("older_than", older_than)
    request = OrphanRequest(
        common.now_ms - DEFAULT_AGE_MS if cutoff is None else cutoff,
        allow_recent=allow_recent,
        external_exclusive=external_root_is_exclusive,
        report_file=str(report_file) if report_file else None,
        inventory=inventory,
    )
    run_operation(common, lambda ex: delete_orphan_files(request, ex), RENDERER)
