"""In-process compaction and expiry for tests that check what they leave behind."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from core.compaction.compact import CompactFlags, apply_compact, plan_compact
from core.ops.expiry.expire_snapshots import ExpireFlags, plan_expire_snapshots
from core.ops.expiry.expire_snapshots_checks import recheck
from core.runtime.executors.local import LocalExecutor
from core.runtime.report import ExecutionReport
from core.table.table import open_table
from support.lifecycle import apply

# A fixed clock far in the future: nothing is too recent to expire.
NOW = 4_000_000_000_000


def compact(root: Path) -> Any:
    """Plan and apply a default compaction; (plan, result)."""
    t = open_table(str(root))
    cplan = plan_compact(t, CompactFlags(), now_ms=NOW)
    with LocalExecutor(2) as ex:
        return cplan, apply_compact(t, cplan, executor=ex)


def expire_all_but_latest(root: Path) -> None:
    t = open_table(str(root))
    with LocalExecutor(2) as ex:
        plan = plan_expire_snapshots(t, ExpireFlags(1, 1, NOW, None), now_ms=NOW, executor=ex)
        apply(t, plan, recheck=recheck, executor=ex, report=ExecutionReport())
