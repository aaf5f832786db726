"""paimon inspect: what is in a table, what retention would do, and whether it is intact."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from paimon_cli.inspection import View
from paimon_cli.shared import Common, Shared, command

EPILOG = """Examples:

  paimon inspect s3://lake/wh/db.db/orders

  paimon inspect orders --warehouse /wh -w /wh files --snapshot 12 --json

  paimon inspect /wh/db.db/orders --check
"""


@command(
    "inspect",
    epilog=EPILOG,
    shared=Shared.QUIET | Shared.BRANCH | Shared.ENGINE | Shared.TIMEZONE,
)
def inspect(
    common: Common,
    view: Annotated[View, typer.Argument(help="What to show.")] = View.summary,
    snapshot: Annotated[
        int | None,
        typer.Option(
            "--snapshot",
            help="Snapshot id for files, manifests and partitions (default: latest).",
            show_default=False,
        ),
    ] = None,
    tag: Annotated[
        str | None,
        typer.Option(
            "--tag",
            help="Tag for files, manifests and partitions instead of a snapshot.",
            show_default=False,
        ),
    ] = None,
    check: Annotated[
        bool,
        typer.Option(
            "--check",
            help="Verify that every file referenced by "
            "every snapshot, tag and changelog exists with its recorded size; exit 1 "
            "and list the problems otherwise.",
        ),
    ] = False,
    skip_storage: Annotated[
        bool,
        typer.Option(
            "--skip-storage",
            help="Summary: do not list storage to total the bytes on disk (faster on huge tables).",
        ),
    ] = False,
    metrics_file: Annotated[
        Path | None,
        typer.Option(
            "--metrics-file",
            help="Summary: also write the paimon_table_* gauges to this Prometheus text "
            "file (replaced atomically; other tables' series are kept).",
            show_default=False,
            dir_okay=False,
        ),
    ] = None,
) -> None:
    """Show a table's snapshots, files, partitions, tags and retention; or check its integrity."""
    from paimon_cli.inspection import ViewRequest, inspect_tables

    if snapshot is not None and tag is not None:
        raise typer.BadParameter("give --snapshot or --tag, not both")
    if metrics_file is not None and (check or view is not View.summary):
        raise typer.BadParameter(
            "goes with the summary view (not --check)", param_hint="--metrics-file"
        )
    request = ViewRequest(view, snapshot, tag, skip_storage, common.zone)
    inspect_tables(common, request, check=check, metrics_file=metrics_file)
