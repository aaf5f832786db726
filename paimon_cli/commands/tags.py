"""paimon create-tag / delete-tag / rename-tag / expire-tags (listing is `inspect tags`)."""

from __future__ import annotations

from typing import Annotated

import typer

from paimon_cli.completion import tag_names
from paimon_cli.params import optional
from paimon_cli.render import tags as render
from paimon_cli.selection import run_operation
from paimon_cli.shared import (
    CHANGING,
    DELETING,
    OPTIONS,
    PARALLELISM,
    PLAN,
    TIMEZONE,
    Common,
    command,
)

CREATE_EPILOG = """Examples:

  paimon create-tag /wh/db.db/orders release-1

  paimon create-tag /wh/db.db/orders nightly --snapshot 42 \\
    --time-retained '7 d' --replace

  paimon create-tag /wh/db.db/orders eod \\
    --from-timestamp '2026-11-20 18:00:00'
"""
DELETE_EPILOG = """Examples:

  paimon delete-tag /wh/db.db/orders release-1 --dry-run

  paimon delete-tag db.orders -w s3://lake/wh old-1 old-2 --json
"""
RENAME_EPILOG = """Examples:

  paimon rename-tag /wh/db.db/orders nightly release-2

  paimon rename-tag db.orders -w /wh tmp keep --json
"""
EXPIRE_EPILOG = """Examples:

  paimon expire-tags /wh/db.db/orders --dry-run

  paimon expire-tags /wh/db.db/orders --older-than '2024-07-01 00:00:00'
"""


@command("create-tag", CREATE_EPILOG, CHANGING | PLAN | TIMEZONE)
def create_tag(
    common: Common,
    name: Annotated[str, typer.Argument(help="Tag name.", show_default=False)],
    snapshot: Annotated[
        int | None,
        optional("--snapshot", help="Snapshot id to tag.", default_text="the latest"),
    ] = None,
    time_retained: Annotated[
        str | None,
        optional(
            "--time-retained",
            help="Keep the tag this long, e.g. '7 d' (table option tag.default-time-retained "
            "is not applied, as in Paimon's create_tag procedure).",
            default_text="no retention",
        ),
    ] = None,
    replace: Annotated[
        bool, typer.Option("--replace", help="Move an existing tag instead of failing.")
    ] = False,
    from_timestamp: Annotated[
        str | None,
        optional(
            "--from-timestamp",
            help="Tag the first snapshot committed at or after this time (or a tag's earlier "
            "one), as Paimon's create_tag_from_timestamp ('YYYY-MM-DD HH:MM:SS', a duration "
            "ago, epoch time or ISO-8601).",
        ),
    ] = None,
) -> None:
    """Create (or with --replace move) a tag on a snapshot, written exactly as Paimon writes it."""
    from core.ops.tags.tag_operations import CreateTag
    from core.runtime.requests import duration

    retained = duration("time_retained", time_retained or None)
    at = common.instant("from_timestamp", from_timestamp)
    op = CreateTag(name, common.zone, snapshot, retained, replace, at)
    run_operation(common, lambda _ex: op, render.CREATE)


@command("delete-tag", DELETE_EPILOG, CHANGING | DELETING | PARALLELISM)
def delete_tag(
    common: Common,
    names: Annotated[
        list[str],
        typer.Argument(help="Tag names (also comma-separated).", autocompletion=tag_names),
    ],
    force: Annotated[
        bool,
        typer.Option(
            "--force",
            help="Delete even a tag a branch was created from (files the branch uses stay).",
        ),
    ] = False,
) -> None:
    """Delete tags and the files only they kept alive (Paimon's TagDeletion, branch-safe)."""
    from core.ops.tags.tag_operations import DeleteTags

    wanted = tuple(n.strip() for item in names for n in item.split(",") if n.strip())
    op = DeleteTags(wanted, force)
    run_operation(common, lambda _ex: op, render.DELETE)


@command("rename-tag", RENAME_EPILOG, CHANGING)
def rename_tag(
    common: Common,
    old: Annotated[
        str,
        typer.Argument(help="Existing tag name.", show_default=False, autocompletion=tag_names),
    ],
    new: Annotated[str, typer.Argument(help="New tag name.", show_default=False)],
) -> None:
    """Rename a tag (the new name is created if absent, then the old file goes)."""
    from core.ops.tags.tag_operations import RenameTag

    op = RenameTag(old, new)
    run_operation(common, lambda _ex: op, render.RENAME)


@command("expire-tags", EXPIRE_EPILOG, CHANGING | DELETING | OPTIONS | PARALLELISM | TIMEZONE)
def expire_tags(
    common: Common,
    older_than: Annotated[
        str | None,
        optional(
            "--older-than",
            help="Also expire tags created before this ('YYYY-MM-DD HH:MM:SS', a duration "
            "ago, epoch time or ISO-8601); tags without retention use their file time.",
            default_text="only tags whose tagTimeRetained has passed, plus table option "
            "tag.num-retained-max",
        ),
    ] = None,
) -> None:
    """Expire tags whose retention has passed (or beyond tag.num-retained-max), with their files."""
    from core.ops.tags.tag_operations import ExpireTags

    op = ExpireTags(common.zone, common.cutoff("older_than", older_than))
    run_operation(common, lambda _ex: op, render.EXPIRE)
