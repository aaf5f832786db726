"""Consumer expiry: ``consumer.expiration-time``.

Paimon's commit maintenance deletes every ``consumer-<id>`` file last modified strictly
before ``now - consumer.expiration-time`` (ConsumerManager.expire), before snapshot expiry
runs, so a dead streaming reader stops pinning snapshots. A consumer file is its reader's
heartbeat: the executor re-reads the modification time and keeps a file touched since.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, replace
from typing import ClassVar

from core.io.fileio import join
from core.ops.details.tags import ConsumerExpiryDetails, ConsumerState
from core.runtime.operation import Deletion, Env
from core.runtime.plans import FileAction, Phase, Plan, Requirements
from core.runtime.timeparse import format_instant
from core.table.table import PaimonTable

ConsumerPlan = Plan[ConsumerExpiryDetails]
COMMAND = "expire-consumers"


def _idle(mtime_ms: int | None, cutoff: int | None) -> bool:
    """Strictly before the cut-off, as ConsumerManager.expire (isAfter)."""
    return cutoff is not None and mtime_ms is not None and mtime_ms < cutoff


def plan_consumer_expire(
    table: PaimonTable, *, now_ms: int, zone: dt.tzinfo | None = None
) -> ConsumerPlan:
    """Delete the consumer files idle longer than ``consumer.expiration-time``."""
    expiration = table.options.get_duration_ms("consumer.expiration-time")
    consumers = table.consumers.consumers()
    cutoff = None if expiration is None else now_ms - expiration
    stale = [c for c in consumers if _idle(c.mtime_ms, cutoff)]
    directory = table.consumers.directory
    actions = tuple(
        FileAction(
            "delete",
            join(directory, f"consumer-{c.id}"),
            "consumer",
            c.size,
            f"last modified {format_instant(c.mtime_ms or 0, zone)}, before the cut-off",
        )
        for c in stale
    )
    details = ConsumerExpiryDetails(
        expiration,
        cutoff,
        tuple(ConsumerState(c.id, c.next_snapshot, c.mtime_ms, c in stale) for c in consumers),
    )
    requirements = Requirements.latest(table.snapshots.latest_id())
    return Plan(
        COMMAND,
        table.location,
        table.branch,
        now_ms,
        (Phase("consumer-files", actions),),
        requirements,
        details,
    )


def recheck(table: PaimonTable, plan: ConsumerPlan) -> ConsumerPlan:
    """Keep consumers whose file was written since planning (the reader is alive)."""
    cutoff = plan.details.cutoff_ms
    if cutoff is None:
        return plan
    listing = table.consumers.consumers()
    still_stale = {
        join(table.consumers.directory, f"consumer-{c.id}")
        for c in listing
        if _idle(c.mtime_ms, cutoff)
    }
    phases = tuple(
        replace(p, actions=tuple(a for a in p.actions if a.path in still_stale))
        for p in plan.phases
    )
    return replace(plan, phases=phases)


@dataclass(frozen=True)
class ExpireConsumers(Deletion[ConsumerExpiryDetails]):
    """Consumers idle past ``consumer.expiration-time``. No journal: an interrupted run
    leaves consumer files a rerun plans again."""

    command: ClassVar[str] = COMMAND

    zone: dt.tzinfo | None = None  # the table zone the reasons show times in

    def plan(self, table: PaimonTable, env: Env) -> ConsumerPlan:
        return plan_consumer_expire(table, now_ms=env.now_ms, zone=self.zone)

    def recheck(self, table: PaimonTable, plan: ConsumerPlan) -> ConsumerPlan:
        return recheck(table, plan)
