"""compact --engine spark on a deletion-vector append table does what the local engine does:
the same bins, vectors applied on the executors, the same new index files of kept vectors."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
from support.invariants import assert_no_dangling_references
from support.java_paimon import JavaPaimon, assert_same_rows
from support.java_writer import JavaWriter

from core.compaction.compact import CompactFlags, apply_compact, plan_compact
from core.format.deletion_vectors import INDEX_TYPE
from core.runtime.executors.local import LocalExecutor
from core.runtime.executors.spark import SparkExecutor
from core.table.table import open_table

pytestmark = [pytest.mark.spark, pytest.mark.java]

NOW = 4_000_000_000_000


def _script() -> dict[str, Any]:
    rows = [[["+I", i, i % 2, f"v{i}"] for i in range(10 * k, 10 * k + 10)] for k in range(4)]
    return {
        "table": "t",
        "schema": {
            "fields": [
                {"name": "id", "type": "BIGINT NOT NULL"},
                {"name": "p", "type": "INT NOT NULL"},
                {"name": "v", "type": "STRING"},
            ],
            "partitionKeys": ["p"],
            # Two files per scan: some vectors stay and move to new index files.
            "options": {
                "bucket": "-1",
                "deletion-vectors.enabled": "true",
                "compaction.file-num-limit": "3",
            },
        },
        "steps": [{"op": "write", "rows": r} for r in rows]
        + [{"op": "dv-delete", "field": "id", "values": [1, 2, 11, 13, 20, 22, 31, 33]}],
    }


def _state(root: Path) -> tuple[list[tuple[bytes, int, int]], list[tuple[bytes, Any]]]:
    t = open_table(str(root))
    latest = t.snapshots.latest()
    assert latest is not None
    files = sorted((e.partition, e.file.row_count, e.file.level) for e in t.live_files(latest))
    index = sorted(
        (e.partition, sorted((r.data_file, r.cardinality) for r in e.dv_ranges))
        for e in t.index_files(latest)
        if e.index_type == INDEX_TYPE
    )
    return files, index


def test_spark_compaction_of_an_append_dv_table_equals_local(
    tmp_path: Path, spark_executor: SparkExecutor, java_writer: JavaWriter, java: JavaPaimon
) -> None:
    local_root = java_writer.run(tmp_path / "local", _script())
    spark_root = tmp_path / "spark" / "db.db" / "t"
    shutil.copytree(local_root, spark_root)
    before = java.verify(local_root)
    plans = []
    for root, executor in ((local_root, None), (spark_root, spark_executor)):
        t = open_table(str(root))
        cplan = plan_compact(t, CompactFlags(), now_ms=NOW)
        plans.append(
            [sorted(r["_FILE"]["_FILE_NAME"] for r in task.inputs) for task in cplan.tasks]
        )
        assert any(task.kept_vectors for task in cplan.tasks)
        if executor is None:
            with LocalExecutor(2) as local:
                apply_compact(t, cplan, executor=local)
        else:
            apply_compact(t, cplan, executor=executor)
    assert plans[0] == plans[1] and plans[0]
    assert _state(local_root) == _state(spark_root)
    assert _state(spark_root)[1]  # kept vectors live on in new index files
    assert_same_rows(before, java.verify(spark_root))
    assert_no_dangling_references(spark_root)
