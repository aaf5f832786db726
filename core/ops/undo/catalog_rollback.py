"""Rollback of a table whose catalog keeps its snapshots (REST): Paimon sends it to the
catalog (``RESTCatalog.rollbackTo``), which removes the snapshots, changelogs and tags after
the target and moves its own latest snapshot; doing that on storage would leave the server
pointing at a snapshot that is gone. The plan is the one a rollback on storage makes (what
goes, the consumers and branches that refuse it); the catalog carries it out.

A request whose answer was lost is settled by reading the catalog's latest snapshot back:
the rollback happened when it is the target."""

from __future__ import annotations

from typing import Any

from core.ops.catalog_requests import latest_is, refuse_quarantine, send_settled
from core.ops.details.repair import RollbackDetails
from core.runtime.operation import Env
from core.runtime.plans import Plan
from core.table.table import PaimonTable


def rollback_through_catalog(table: PaimonTable, plan: Plan[RollbackDetails], env: Env) -> None:
    refuse_quarantine(
        table,
        "rollback",
        "removes the snapshots",
        env,
        "run the rollback without --quarantine (a tag on the latest snapshot first keeps a "
        "way back)",
    )
    d = plan.details
    instant: dict[str, Any] = (
        {"type": "tag", "tagName": d.target_tag}
        if d.target_tag is not None and d.snapshot_restored_from_tag
        else {"type": "snapshot", "snapshotId": d.target_snapshot}
    )

    send_settled(
        lambda: table.catalog.rollback_to(table.branch, instant, d.latest_snapshot),
        read_back=lambda: table.catalog.latest_snapshot(table.branch),
        done=latest_is(d.target_snapshot),
        what=f"rolling {table.name} back to snapshot {d.target_snapshot}",
        read_what="latest snapshot",
        look="paimon inspect TABLE snapshots",
        again="run the rollback again",
    )
