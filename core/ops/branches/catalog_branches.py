"""Branches of a table whose catalog keeps its snapshots (REST): Paimon creates and drops
them through the catalog (``CatalogBranchManager``), which writes or removes the branch's
files itself. The plans are the ones made on storage (the same checks and refusals); the
catalog carries them out. A request whose answer was lost is settled by listing the
catalog's branches."""

from __future__ import annotations

from collections.abc import Callable

from core.errors import CatalogOutcomeUnknownError, PaimonError, SafetyRefusalError
from core.runtime.operation import Env
from core.table.table import PaimonTable


def create_branch_through_catalog(
    table: PaimonTable, branch: str, from_tag: str | None, env: Env
) -> None:
    _refuse_quarantine(table, "create-branch", env)
    _settled(
        table,
        lambda: table.catalog.create_branch(branch, from_tag),
        done=lambda names: branch in names,
        what=f"creating branch {branch!r}",
    )


def drop_branch_through_catalog(table: PaimonTable, branch: str, env: Env) -> None:
    _refuse_quarantine(table, "delete-branch", env)
    _settled(
        table,
        lambda: table.catalog.drop_branch(branch),
        done=lambda names: branch not in names,
        what=f"deleting branch {branch!r}",
    )


def fast_forward_through_catalog(
    table: PaimonTable, branch: str, branch_latest: int, env: Env
) -> None:
    _refuse_quarantine(table, "fast-forward", env)
    try:
        table.catalog.fast_forward(branch)
    except CatalogOutcomeUnknownError as exc:
        try:
            latest = table.catalog.latest_snapshot(table.branch)
        except PaimonError as read_error:
            raise CatalogOutcomeUnknownError(
                f"fast-forwarding {table.name} to branch {branch!r} got no answer "
                f"({exc.message}) and the catalog could not be read back ({read_error.message})",
                hint="run `paimon inspect TABLE snapshots` to see whether it happened",
            ) from exc
        if latest is None or int(latest.get("id", -1)) != branch_latest:
            raise CatalogOutcomeUnknownError(
                f"fast-forwarding {table.name} to branch {branch!r} got no answer "
                f"({exc.message}) and the catalog's latest snapshot is not the branch's",
                hint="run the command again",
            ) from exc


def _refuse_quarantine(table: PaimonTable, command: str, env: Env) -> None:
    if env.quarantine is not None:
        raise SafetyRefusalError(
            f"{command} on {table.name}: catalog {table.catalog.catalog} changes the branch's "
            "files itself, so they cannot be moved into a quarantine",
            hint=f"run {command} without --quarantine",
        )


def _settled(
    table: PaimonTable, send: Callable[[], None], *, done: Callable[[list[str]], bool], what: str
) -> None:
    try:
        send()
    except CatalogOutcomeUnknownError as exc:
        try:
            happened = done(table.catalog.branches())
        except PaimonError as read_error:
            raise CatalogOutcomeUnknownError(
                f"{what} on {table.name} got no answer ({exc.message}) and the catalog's "
                f"branches could not be read back ({read_error.message})",
                hint="run `paimon inspect TABLE branches` to see whether it happened",
            ) from exc
        if not happened:
            raise CatalogOutcomeUnknownError(
                f"{what} on {table.name} got no answer ({exc.message}) and the catalog does "
                "not show it done",
                hint="run the command again",
            ) from exc
