"""Branches of a table whose catalog keeps its snapshots (REST): Paimon creates and drops
them through the catalog (``CatalogBranchManager``), which writes or removes the branch's
files itself. The plans are the ones made on storage (the same checks and refusals); the
catalog carries them out. A request whose answer was lost is settled by listing the
catalog's branches (``core.ops.catalog_requests``)."""

from __future__ import annotations

from core.ops.catalog_requests import latest_is, refuse_quarantine, send_settled
from core.runtime.operation import Env
from core.table.table import PaimonTable


def _no_quarantine(table: PaimonTable, command: str, env: Env) -> None:
    refuse_quarantine(
        table, command, "changes the branch's files", env, f"run {command} without --quarantine"
    )


def create_branch_through_catalog(
    table: PaimonTable, branch: str, from_tag: str | None, env: Env
) -> None:
    _no_quarantine(table, "create-branch", env)
    send_settled(
        lambda: table.catalog.create_branch(branch, from_tag),
        read_back=table.catalog.branches,
        done=lambda names: branch in names,
        what=f"creating branch {branch!r} on {table.name}",
        read_what="branches",
        look="paimon inspect TABLE branches",
        again="run the command again",
    )


def drop_branch_through_catalog(table: PaimonTable, branch: str, env: Env) -> None:
    _no_quarantine(table, "delete-branch", env)
    send_settled(
        lambda: table.catalog.drop_branch(branch),
        read_back=table.catalog.branches,
        done=lambda names: branch not in names,
        what=f"deleting branch {branch!r} on {table.name}",
        read_what="branches",
        look="paimon inspect TABLE branches",
        again="run the command again",
    )


def fast_forward_through_catalog(
    table: PaimonTable, branch: str, branch_latest: int, env: Env
) -> None:
    _no_quarantine(table, "fast-forward", env)

    send_settled(
        lambda: table.catalog.fast_forward(branch),
        read_back=lambda: table.catalog.latest_snapshot(table.branch),
        done=latest_is(branch_latest),
        what=f"fast-forwarding {table.name} to branch {branch!r}",
        read_what="latest snapshot",
        look="paimon inspect TABLE snapshots",
        again="run the command again",
    )
