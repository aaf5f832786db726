"""Rollback of a table whose catalog keeps its snapshots (REST): Paimon sends it to the
catalog (``RESTCatalog.rollbackTo``), which removes the snapshots, changelogs and tags after
the target and moves its own latest snapshot; doing that on storage would leave the server
pointing at a snapshot that is gone. The plan is the one a rollback on storage makes (what
goes, the consumers and branches that refuse it); the catalog carries it out.

A request whose answer was lost is settled by reading the catalog's latest snapshot back:
the rollback happened when it is the target."""

from __future__ import annotations

from typing import Any

from core.errors import CatalogOutcomeUnknownError, PaimonError, SafetyRefusalError
from core.ops.details.repair import RollbackDetails
from core.runtime.operation import Env
from core.runtime.plans import Plan
from core.table.table import PaimonTable


def rollback_through_catalog(table: PaimonTable, plan: Plan[RollbackDetails], env: Env) -> None:
    if env.quarantine is not None:
        raise SafetyRefusalError(
            f"rollback on {table.name}: catalog {table.catalog.catalog} removes the snapshots "
            "itself, so they cannot be moved into a quarantine",
            hint="run the rollback without --quarantine (a tag on the latest snapshot first "
            "keeps a way back)",
        )
    d = plan.details
    instant: dict[str, Any] = (
        {"type": "tag", "tagName": d.target_tag}
        if d.target_tag is not None and d.snapshot_restored_from_tag
        else {"type": "snapshot", "snapshotId": d.target_snapshot}
    )
    try:
        table.catalog.rollback_to(table.branch, instant, d.latest_snapshot)
    except CatalogOutcomeUnknownError as exc:
        _settle(table, d.target_snapshot, exc)


def _settle(table: PaimonTable, target: int, exc: PaimonError) -> None:
    try:
        latest = table.catalog.latest_snapshot(table.branch)
    except PaimonError as read_error:
        raise CatalogOutcomeUnknownError(
            f"rolling {table.name} back to snapshot {target} got no answer ({exc.message}) "
            f"and the catalog could not be read back ({read_error.message})",
            hint="run `paimon inspect TABLE snapshots` to see whether it happened",
        ) from exc
    if latest is None or int(latest.get("id", -1)) != target:
        raise CatalogOutcomeUnknownError(
            f"rolling {table.name} back to snapshot {target} got no answer ({exc.message}) "
            "and the catalog's latest snapshot is not the target",
            hint="run the rollback again",
        ) from exc
