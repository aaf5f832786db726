"""The compact command as an operation: plan which files Paimon would merge, rewrite them
(locally or on Spark), then one COMPACT commit. The compactor itself is ``core.compaction``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from core.compaction.compact import (
    CompactFlags,
    CompactPlan,
    CompactResult,
    apply_compact,
    plan_compact,
)
from core.runtime.operation import Env, Operation
from core.table.table import PaimonTable


@dataclass(frozen=True)
class Compact(Operation[CompactPlan, CompactResult]):
    """Paimon's compaction of the latest snapshot, committed once (COMPACT)."""

    command: ClassVar[str] = "compact"

    flags: CompactFlags = CompactFlags()
    allow_unsafe: bool = False

    def plan(self, table: PaimonTable, env: Env) -> CompactPlan:
        return plan_compact(table, self.flags, now_ms=env.now_ms)

    def apply(self, table: PaimonTable, plan: CompactPlan, env: Env) -> CompactResult | None:
        if not plan.tasks:
            return None
        return apply_compact(
            table, plan, executor=env.executor, allow_unsafe=self.allow_unsafe, run=env.run
        )
