"""purge-quarantine: delete quarantined runs for good (their undo is gone with them)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from core.runtime.operation import Env, Operation
from core.runtime.quarantine import PurgeRun, apply_purge, plan_purge
from core.table.table import PaimonTable


@dataclass(frozen=True, slots=True)
class PurgePlan:
    """The quarantined runs recorded before ``older_than_ms``, deleted for good."""

    older_than_ms: int
    runs: tuple[PurgeRun, ...]

    @property
    def files(self) -> int:
        return sum(len(r.files) for r in self.runs)

    @property
    def bytes(self) -> int:
        return sum(r.bytes for r in self.runs)


@dataclass(frozen=True)
class PurgeQuarantine(Operation[PurgePlan, int]):
    """Every quarantined run recorded before ``older_than_ms`` (a run still moving files
    into its quarantine is left alone); applying returns the files deleted."""

    command: ClassVar[str] = "purge-quarantine"

    older_than_ms: int

    def plan(self, table: PaimonTable, env: Env) -> PurgePlan:
        runs = plan_purge(table, older_than_ms=self.older_than_ms)
        return PurgePlan(self.older_than_ms, tuple(runs))

    def apply(self, table: PaimonTable, plan: PurgePlan, env: Env) -> int:
        if plan.runs and env.run is not None:
            env.run.begin_changes()
        fence = env.run.fence() if env.run is not None else None
        return apply_purge(table, list(plan.runs), fence)
