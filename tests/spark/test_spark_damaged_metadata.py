"""Issue 17 bug 1 on the Spark engine: damaged metadata of every kind stops orphan cleaning
before any deletion, as on the local engine."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from support import pypaimon_writer as pw
from support.invariants import tree_state
from support.metadata_damage import REMOTE_DAMAGES, Damage, damaged_copy

from core.errors import PaimonError
from core.ops.orphans.orphan_files_spark import SparkOrphanClean
from core.runtime.executors.spark import SparkExecutor
from core.table.table import open_table


@pytest.mark.parametrize("damage", REMOTE_DAMAGES, ids=lambda d: d.id)
def test_spark_orphan_cleaning_aborts(
    spark_executor: SparkExecutor,
    scenarios: dict[str, pw.Scenario],
    tmp_path: Path,
    damage: Damage,
) -> None:
    root, damaged, orphan = damaged_copy(scenarios, damage, tmp_path)
    before = tree_state(root)
    now = int(time.time() * 1000)
    clean = SparkOrphanClean(open_table(str(root)), spark_executor, now - 86_400_000, now)
    with pytest.raises(PaimonError) as raised:
        clean.plan()
    assert damaged.name in raised.value.message
    assert tree_state(root) == before
    assert orphan.exists()
