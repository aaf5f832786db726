"""maintain --engine spark: the same steps, decisions and final file sets as the local engine."""

from __future__ import annotations

import shutil
import time
from pathlib import Path

import pytest
from support import pypaimon_writer as pw
from support.invariants import files_under, plant
from support.maintain_tables import build_warehouse

from core.ops.maintain.maintain import MaintainConfig, maintain_table
from core.runtime.executors.local import LocalExecutor
from core.runtime.executors.spark import SparkExecutor
from core.runtime.timeparse import resolve_zone
from core.table.table import open_table

pytestmark = pytest.mark.spark

UNPARTITIONED = ("by_count",)
TABLES = (*UNPARTITIONED, "partitions")


def test_spark_and_local_engines_maintain_alike(
    spark_executor: SparkExecutor, tmp_path: Path
) -> None:
    src = tmp_path / "src"
    build_warehouse(src)
    for name in UNPARTITIONED:
        plant(pw.table_root(src, f"db.{name}") / "bucket-0" / "data-orphan.parquet")
    local_wh = shutil.copytree(src, tmp_path / "local", symlinks=True)
    spark_wh = shutil.copytree(src, tmp_path / "spark", symlinks=True)
    config = MaintainConfig(now_ms=int(time.time() * 1000), zone=resolve_zone(None), orphans=True)
    for name in TABLES:
        results = []
        for wh, executor in ((local_wh, LocalExecutor(2)), (spark_wh, spark_executor)):
            root = pw.table_root(wh, f"db.{name}")
            result = maintain_table(open_table(str(root)), config, executor=executor)
            assert not result.failed, [(s.name, s.error) for s in result.steps]
            results.append(
                (
                    [(s.name, s.status) for s in result.steps],
                    result.count("expire-snapshots"),
                    result.files_deleted,
                )
            )
        assert results[0] == results[1], name
        a, b = pw.table_root(local_wh, f"db.{name}"), pw.table_root(spark_wh, f"db.{name}")
        rel_a = {str(Path(p).relative_to(a)) for p in files_under(a)}
        rel_b = {str(Path(p).relative_to(b)) for p in files_under(b)}
        # Partition expiry commits manifests with fresh UUID names: compare the rest.
        assert {p for p in rel_a if not p.startswith("manifest/")} == {
            p for p in rel_b if not p.startswith("manifest/")
        }, name
        assert not any(p.endswith("data-orphan.parquet") for p in rel_b), name
