"""Changes a catalog carries out itself (REST: branches, fast-forward, rollback): Paimon
sends them to the catalog, which writes or removes the files. Two rules every one of them
follows: no ``--quarantine`` (the catalog deletes, so nothing can be moved aside first), and
a request whose answer was lost is settled by reading the catalog back, never by guessing."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from core.errors import CatalogOutcomeUnknownError, PaimonError, SafetyRefusalError
from core.runtime.operation import Env
from core.table.table import PaimonTable

T = TypeVar("T")


def refuse_quarantine(table: PaimonTable, command: str, what: str, env: Env, hint: str) -> None:
    """``command`` with ``--quarantine`` on a table whose catalog ``what`` itself."""
    if env.quarantine is not None:
        raise SafetyRefusalError(
            f"{command} on {table.name}: catalog {table.catalog.catalog} {what} itself, so "
            "they cannot be moved into a quarantine",
            hint=hint,
        )


def send_settled(
    send: Callable[[], None],
    *,
    read_back: Callable[[], T],
    done: Callable[[T], bool],
    what: str,
    read_what: str,
    look: str,
    again: str,
) -> None:
    """``send`` a request; when its answer is lost, ``read_back`` the catalog and return only
    if ``done`` says it happened. ``what``: the change ("creating branch 'b' on db.t");
    ``read_what``: what was read back; ``look``: the command that shows it; ``again``: the
    hint when the catalog does not show it done."""
    try:
        send()
    except CatalogOutcomeUnknownError as exc:
        try:
            happened = done(read_back())
        except PaimonError as read_error:
            raise CatalogOutcomeUnknownError(
                f"{what} got no answer ({exc.message}) and the catalog's {read_what} could "
                f"not be read back ({read_error.message})",
                hint=f"run `{look}` to see whether it happened",
            ) from exc
        if not happened:
            raise CatalogOutcomeUnknownError(
                f"{what} got no answer ({exc.message}) and the catalog's {read_what} does not "
                "show it done",
                hint=again,
            ) from exc


def latest_is(snapshot_id: int) -> Callable[[Mapping[str, Any] | None], bool]:
    """A ``done`` for ``send_settled``: the catalog's latest snapshot is ``snapshot_id``."""
    return lambda latest: latest is not None and int(latest.get("id", -1)) == snapshot_id
