"""paimon inspect: what is in a table, what retention would do, and whether it is intact."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from paimon_cli.completion import tag_names
from paimon_cli.params import optional
from paimon_cli.render.inspect import View
from paimon_cli.shared import BRANCH, ENGINE, LIMIT, QUIET, TIMEZONE, Common, command

EPILOG = """Examples:

  paimon inspect s3://lake/wh/db.db/orders

  paimon inspect db.orders --warehouse /wh files --snapshot 12 --json

  paimon inspect /wh/db.db/orders --check \\
    --metrics-file /var/lib/node_exporter/paimon.prom

  paimon inspect /wh/db.db/orders --check --snapshot latest -q
"""


@command("inspect", EPILOG, QUIET | LIMIT | BRANCH | ENGINE | TIMEZONE)
def inspect(
    common: Common,
    view: Annotated[
        View,
        typer.Argument(
            metavar="VIEW",
            show_choices=False,
            help="What to show: summary, snapshots, files, manifests, partitions, tags, "
            "consumers, branches, schema, options, retention or runs.",
        ),
    ] = View.summary,
    snapshot: Annotated[
        str | None,
        optional(
            "--snapshot",
            metavar="ID|latest",
            help="Snapshot for files, manifests and partitions; with --check, check only "
            "this snapshot.",
            default_text="latest",
        ),
    ] = None,
    tag: Annotated[
        str | None,
        optional(
            "--tag",
            help="Tag for files, manifests and partitions instead of a snapshot; with "
            "--check, check only this tag.",
            autocompletion=tag_names,
        ),
    ] = None,
    check: Annotated[
        bool,
        typer.Option(
            "--check",
            help="Verify that every file referenced by every snapshot, tag and changelog of "
            "every branch (or only --snapshot / --tag) exists with its recorded size; exit 3 "
            "and list the problems otherwise (1: could not check).",
        ),
    ] = False,
    skip_storage: Annotated[
        bool,
        typer.Option(
            "--skip-storage",
            help="Summary: do not list storage, and so leave out the bytes and files on "
            "storage and the space picture (which also reads the manifest lists of every "
            "snapshot, tag and changelog); the latest snapshot's files, retention and file "
            "sizes are still read. Faster on huge and on deep tables.",
        ),
    ] = False,
    metrics_file: Annotated[
        Path | None,
        optional(
            "--metrics-file",
            help="Also write gauges to this Prometheus text file (replaced atomically; "
            "other tables' series are kept): the summary's paimon_table_*, or with --check "
            "the paimon_table_integrity_* of the check.",
            dir_okay=False,
        ),
    ] = None,
) -> None:
    """Show a table's snapshots, files, partitions, tags and retention; or check its integrity."""
    from core.ops.inspection.check import CheckScope
    from core.runtime.requests import snapshot_choice
    from paimon_cli.inspection import ViewRequest, inspect_tables

    if snapshot is not None and tag is not None:
        raise typer.BadParameter("give --snapshot or --tag, not both")
    _refuse_ignored(view, check=check, snapshot=snapshot, tag=tag, skip_storage=skip_storage)
    if metrics_file is not None and not check and view is not View.summary:
        raise typer.BadParameter(
            "goes with the summary view or --check", param_hint="--metrics-file"
        )
    chosen = snapshot_choice("snapshot", snapshot)
    request = ViewRequest(
        view, None if chosen == "latest" else chosen, tag, skip_storage, common.zone
    )
    scope = CheckScope.of(snapshot=chosen, tag=tag) if check else None
    inspect_tables(common, request, scope=scope, metrics_file=metrics_file)


# The views that show one snapshot's (or tag's) content.
_OF_SNAPSHOT = (View.files, View.manifests, View.partitions)


def _refuse_ignored(
    view: View, *, check: bool, snapshot: str | None, tag: str | None, skip_storage: bool
) -> None:
    """An option the chosen view would ignore is a usage error: silently showing something
    else (all snapshots, the latest summary) reads as an answer to the question asked."""
    if check and view is not View.summary:
        raise typer.BadParameter(
            f"--check checks the table, it shows no {view.value} view: drop one of the two",
            param_hint="VIEW",
        )
    picked = "--snapshot" if snapshot is not None else "--tag" if tag is not None else None
    if picked is not None and not check and view not in _OF_SNAPSHOT:
        raise typer.BadParameter(
            f"the {view.value} view shows no single snapshot: {picked} goes with the files, "
            "manifests and partitions views, or with --check",
            param_hint=picked,
        )
    if skip_storage and (check or view is not View.summary):
        raise typer.BadParameter(
            "goes with the summary view only (the others never list storage)",
            param_hint="--skip-storage",
        )
