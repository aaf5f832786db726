"""Partitions values-time can never judge (a DATE partition is dt=18262 under Paimon's
legacy names) cannot stay silently: the plan and JSON name them and what to set, a real run
fails after dropping what it can, and maintain fails (its later steps still run) with a
metric to alert on."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from support import rust_writer as rw
from support.fixtures import Run

from core.ops.maintain.metrics import parse

Copy = Callable[[str], tuple[rw.RustWarehouse, rw.RustTable, Path]]


def test_date_partitions_fail_a_real_run_with_what_to_set(run: Run, rust_copy: Copy) -> None:
    _wh, _table, root = rust_copy("date_partitions")
    dry = run("expire-partitions", root, "--expiration-time", "1 d", "--dry-run", "--json")
    assert dry.exit_code == 1  # a dry run exits as its real run will (README "Exit codes")
    details = json.loads(dry.stdout)["plan"]["details"]
    assert sorted(s["partition"]["dt"] for s in details["skipped"]) == ["18048", "18262", "47117"]
    assert "partition.expiration-strategy = update-time" in details["skipped_hint"]
    assert "DATE" in details["skipped_hint"]

    real = run("expire-partitions", root, "--expiration-time", "1 d", "--json")
    assert real.exit_code == 1
    doc = json.loads(real.stdout)
    assert doc["error"]["kind"] == "partitions_never_expire"
    assert "3 partitions of" in doc["error"]["message"]
    assert doc["error"]["hint"] == doc["plan"]["details"]["skipped_hint"]

    human = run("expire-partitions", root, "--expiration-time", "1 d")
    assert human.exit_code == 1
    assert "can never expire" in human.stderr and "update-time" in human.stderr


def test_expirable_partitions_go_and_the_run_still_fails(run: Run, tmp_path: Path) -> None:
    wh = rw.RustWarehouse(tmp_path / "wh")
    wh.sql(f"CREATE TABLE {wh.qualified('mixed')} (id INT, dt STRING) PARTITIONED BY (dt)")
    wh.sql(f"INSERT INTO {wh.qualified('mixed')} VALUES {rw.values([(1, '2020-01-01'), (2, 'x')])}")
    root = wh.table_root("mixed")
    result = run("expire-partitions", root, "--expiration-time", "1 d")
    assert result.exit_code == 1
    assert "dt=x" in result.stderr
    assert "timestamp-formatter" in result.stderr  # not a typed date: check the formatter
    assert wh.read("mixed") == [{"id": 2, "dt": "x"}]  # 2020-01-01 was dropped all the same


def test_maintain_fails_reports_and_keeps_going(run: Run, rust_copy: Copy, tmp_path: Path) -> None:
    wh, table, root = rust_copy("date_partitions")
    wh.sql(
        f"ALTER TABLE {wh.qualified(table.name)} SET TBLPROPERTIES "
        "('partition.expiration-time' = '1 d', 'snapshot.num-retained.max' = '1', "
        "'snapshot.num-retained.min' = '1')"
    )
    metrics = tmp_path / "paimon.prom"
    result = run("maintain", root, "--metrics-file", metrics, "--json")
    assert result.exit_code == 1
    (doc,) = json.loads(result.stdout)["tables"]
    assert doc["status"] == "failed"
    steps = {s["step"]: s for s in doc["steps"]}
    assert steps["expire-partitions"]["status"] == "failed"
    assert steps["expire-partitions"]["error"]["kind"] == "partitions_never_expire"
    assert steps["expire-snapshots"]["status"] == "ok"  # not blocked by it
    samples = {
        s.name: s.value for s in parse(metrics.read_text()) if s.table == "db.date_partitions"
    }
    assert samples["paimon_maintenance_partitions_unexpirable"] == 3
    assert samples["paimon_maintenance_success"] == 0
