"""compact on Spark plans and writes exactly what the local engine does (one task per bin)."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import pyarrow as pa
import pytest
from support import pypaimon_writer as pw
from support import rust_writer as rw
from support.invariants import assert_no_dangling_references

from core.compaction.compact import CompactFlags, apply_compact, plan_compact
from core.runtime.executors.local import LocalExecutor
from core.runtime.executors.spark import SparkExecutor
from core.table.table import open_table

pytestmark = pytest.mark.spark

NOW = 4_000_000_000_000


def _twins(tmp_path: Path, build: str) -> tuple[Path, Path]:
    schema = pa.schema(
        [
            pa.field("id", pa.int64(), nullable=False),
            pa.field("dt", pa.string(), nullable=False),
            ("v", pa.string()),
            ("arr", pa.list_(pa.int32())),
        ]
    )
    pk = build != "append"
    engine = {"merge-engine": "partial-update"} if build == "partial-update" else {}
    table = pw.create_table(
        tmp_path / "local",
        "db.t",
        schema,
        partition_keys=["dt"],
        primary_keys=["id", "dt"] if pk else [],
        options={"bucket": "2", **engine} if pk else {},
    )
    for c in range(6):
        pw.append(
            table,
            [
                {"id": i, "dt": f"d{i % 3}", "v": None if i == c else f"v{c}", "arr": [c, i]}
                for i in range(c, c + 9)
            ],
        )
    local = pw.table_root(tmp_path / "local", "db.t")
    spark = tmp_path / "spark" / "db.db" / "t"
    shutil.copytree(local, spark)
    return local, spark


def _shape(root: Path) -> list[tuple[bytes, int, int, int, int]]:
    t = open_table(str(root))
    latest = t.snapshots.latest()
    assert latest is not None
    return sorted(
        (e.partition, e.bucket, e.file.level, e.file.row_count, e.file.min_sequence_number)
        for e in t.live_files(latest)
    )


@pytest.mark.parametrize("build", ["append", "pk", "partial-update"])
def test_spark_compaction_equals_local(
    tmp_path: Path, spark_executor: SparkExecutor, build: str
) -> None:
    local_root, spark_root = _twins(tmp_path, build)
    before = pw.read_rows_at_root(local_root)
    plans = []
    for root, executor in ((local_root, None), (spark_root, spark_executor)):
        t = open_table(str(root))
        cplan = plan_compact(t, CompactFlags(), now_ms=NOW)
        plans.append(
            [
                (task.partition, task.bucket, [r["_FILE"]["_FILE_NAME"] for r in task.inputs])
                for task in cplan.tasks
            ]
        )
        if executor is None:
            with LocalExecutor(4) as local:
                apply_compact(t, cplan, executor=local)
        else:
            apply_compact(t, cplan, executor=executor)
    assert plans[0] == plans[1] and plans[0]
    assert _shape(local_root) == _shape(spark_root)
    assert pw.read_rows_at_root(local_root) == pw.read_rows_at_root(spark_root) == before
    assert_no_dangling_references(spark_root)


def test_spark_compaction_of_a_deletion_vector_table_equals_local(
    tmp_path: Path, spark_executor: SparkExecutor, java_built: Callable[[str], Path]
) -> None:
    local_root = java_built("pk_deletion_vectors")
    spark_root = tmp_path / "spark" / "pk_deletion_vectors"
    shutil.copytree(local_root, spark_root)
    for root, executor in ((local_root, None), (spark_root, spark_executor)):
        t = open_table(str(root))
        cplan = plan_compact(t, CompactFlags(), now_ms=NOW)
        assert sum(len(task.deletion_vectors) for task in cplan.tasks) == 2
        if executor is None:
            with LocalExecutor(2) as local:
                apply_compact(t, cplan, executor=local)
        else:
            apply_compact(t, cplan, executor=executor)
    assert _shape(local_root) == _shape(spark_root)
    index = [
        sorted((e.partition, e.bucket) for e in t.index_files(t.snapshots.latest()))  # type: ignore[arg-type]
        for t in (open_table(str(local_root)), open_table(str(spark_root)))
    ]
    assert index[0] == index[1]
    assert_no_dangling_references(spark_root)


def test_spark_compaction_of_a_postpone_bucket_table_equals_local(
    tmp_path: Path, spark_executor: SparkExecutor
) -> None:
    """A partition's postpone files are one task (routed into its real buckets on the
    worker): Spark writes what the local engine writes, and pypaimon-rust reads it."""
    wh = rw.RustWarehouse(tmp_path / "local")
    wh.sql(
        f"CREATE TABLE {wh.qualified('t')} (id INT, v STRING, p INT, PRIMARY KEY (id, p)) "
        "PARTITIONED BY (p) WITH ('bucket' = '-2', 'postpone.default-bucket-num' = '3')"
    )
    for c in range(3):
        wh.sql(
            f"INSERT INTO {wh.qualified('t')} VALUES "
            + rw.values([(i, f"v{c}", i % 2) for i in range(c, c + 8)])
        )
    local_root = wh.table_root("t")
    spark_wh = rw.RustWarehouse(tmp_path / "spark")
    spark_root = spark_wh.table_root("t")
    shutil.copytree(local_root, spark_root)
    for root, executor in ((local_root, None), (spark_root, spark_executor)):
        t = open_table(str(root))
        cplan = plan_compact(t, CompactFlags(), now_ms=NOW)
        assert len(cplan.postpone) == 2
        if executor is None:
            with LocalExecutor(4) as local:
                apply_compact(t, cplan, executor=local)
        else:
            apply_compact(t, cplan, executor=executor)
    assert _shape(local_root) == _shape(spark_root)
    assert wh.read("t") == spark_wh.read("t") and len(wh.read("t")) == 10
    assert_no_dangling_references(spark_root)
