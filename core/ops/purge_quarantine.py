"""purge-quarantine: delete quarantined runs for good (their undo is gone with them)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from core.runtime.operation import Env, Operation
from core.runtime.quarantine import PurgeRun, apply_purge, plan_purge
from core.table.table import PaimonTable


@dataclass(frozen=True)
class PurgeQuarantine(Operation[list[PurgeRun], int]):
    """Every quarantined run recorded before ``older_than_ms`` (a run still moving files
    into its quarantine is left alone); applying returns the files deleted."""

    command: ClassVar[str] = "purge-quarantine"

    older_than_ms: int

    def plan(self, table: PaimonTable, env: Env) -> list[PurgeRun]:
        return plan_purge(table, older_than_ms=self.older_than_ms)

    def apply(self, table: PaimonTable, plan: list[PurgeRun], env: Env) -> int:
        if plan and env.run is not None:
            env.run.begin_changes()
        return apply_purge(table, plan)
