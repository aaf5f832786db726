"""--catalog with ``metastore: hive`` against a real Hive Metastore 2.3 (the session's
``hive_metastore``): tables found by name and glob through the metastore, partitions
dropped from the metastore after expire-partitions commits (``.done`` markers too), a
refused drop finished by the next run, the Hive lock excluding a concurrent holder, and one
clear line, nothing changed, for bad input. Tables are written by pypaimon and registered
as Paimon's HiveCatalog registers them (``support.hive_tables``)."""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from support import hive_tables as ht
from support import pypaimon_writer as pw
from support.fixtures import Run
from support.hive_metastore import HiveMetastore
from support.invariants import tree_state

from core.catalog.hive_client import MetastoreClient, thrift
from core.catalog.hive_lock import HiveLock
from core.errors import CatalogLockError

run = Run()
DAYS = ("2024-07-01", "2024-07-02", "2024-07-03", "2999-01-01")
MIRRORED = {
    "metastore.partitioned-table": "true",
    "partition.expiration-time": "1 d",
    "partition.timestamp-formatter": "yyyy-MM-dd",
}


def _yaml(tmp_path: Path, hms: HiveMetastore, warehouse: Path, **extra: str) -> Path:
    path = tmp_path / "hive.yaml"
    lines = ["metastore: hive", f"uri: {hms.uri}", f"warehouse: {warehouse}"]
    lines += [f"{k}: {v}" for k, v in extra.items()]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _events(warehouse: Path, db: str, name: str = "events", days: Any = DAYS, **opts: str) -> Path:
    """A pypaimon table partitioned by dt, one append per day."""
    schema = pa.schema([("id", pa.int64()), ("dt", pa.string())])
    table = pw.create_table(
        warehouse, f"{db}.{name}", schema, partition_keys=["dt"], options={**MIRRORED, **opts}
    )
    for i, day in enumerate(days):
        pw.append(table, [{"id": i, "dt": day}])
    return pw.table_root(warehouse, f"{db}.{name}")


@pytest.fixture
def db() -> str:
    return f"db_{uuid.uuid4().hex[:8]}"


def test_tables_by_name_and_glob_through_the_metastore(
    hive_metastore: HiveMetastore, tmp_path: Path, db: str
) -> None:
    wh = tmp_path / "wh"
    events = _events(wh, db)
    other = _events(wh, db, "other", days=DAYS[:1])
    ht.register(hive_metastore.uri, events, db, "events", partitioned=True)
    ht.register(hive_metastore.uri, other, db, "other")
    _plain_hive_table(hive_metastore.uri, db, "plain_hive")
    cat = _yaml(tmp_path, hive_metastore, wh)

    found = run.json("expire-snapshots", f"{db}.events", "--catalog", cat, "--dry-run")
    assert found["identifier"] == f"{db}.events"
    result = run("inspect", f"{db}.*", "--catalog", cat)
    assert result.exit_code == 0, result.stderr
    assert f"{db}.events" in result.stdout and f"{db}.other" in result.stdout
    assert "plain_hive" not in result.stdout  # not a Paimon table: not listed
    refused = run("inspect", f"{db}.plain_hive", "--catalog", cat)
    assert refused.exit_code == 1
    assert "not a Paimon table" in refused.stderr


def test_expired_partitions_and_done_markers_leave_the_metastore(
    hive_metastore: HiveMetastore, tmp_path: Path, db: str
) -> None:
    wh = tmp_path / "wh"
    root = _events(wh, db)
    done = [("2024-07-01.done",), ("2999-01-01.done",)]
    ht.register(hive_metastore.uri, root, db, "events", partitioned=True, done=done)
    cat = _yaml(tmp_path, hive_metastore, wh)
    before = ht.partitions(hive_metastore.uri, db, "events")
    assert len(before) == 6

    state = tree_state(root)
    plan = run.json("expire-partitions", f"{db}.events", "--catalog", cat, "--dry-run")
    drops = [d["partition"]["dt"] for d in plan["plan"]["details"]["metastore"]["drops"]]
    assert drops == ["2024-07-01", "2024-07-01.done", "2024-07-02", "2024-07-03"]
    human = run("expire-partitions", f"{db}.events", "--catalog", cat, "--dry-run")
    assert "would drop 4 partitions:" in human.stdout
    assert "dt=2024-07-01.done  (done marker; expired)" in human.stdout
    assert tree_state(root) == state
    assert ht.partitions(hive_metastore.uri, db, "events") == before  # dry run: untouched

    result = run("expire-partitions", f"{db}.events", "--catalog", cat)
    assert result.exit_code == 0, result.stderr
    assert "dropped 4 partitions from the metastore" in result.stdout
    assert ht.partitions(hive_metastore.uri, db, "events") == [
        ("2999-01-01",),
        ("2999-01-01.done",),
    ]
    assert not (root / ".paimon-cli" / "metastore").exists()  # the intent is gone
    check = run("inspect", f"{db}.events", "--check", "--catalog", cat)
    assert check.exit_code == 0, check.stdout + check.stderr


def test_a_refused_drop_is_finished_by_the_next_run(
    hive_metastore: HiveMetastore, tmp_path: Path, db: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from core.catalog.hive_client import MetastoreRefusedError
    from core.catalog.hive_partitions import HivePartitions

    wh = tmp_path / "wh"
    root = _events(wh, db)
    ht.register(hive_metastore.uri, root, db, "events", partitioned=True)
    cat = _yaml(tmp_path, hive_metastore, wh)

    def refuse(self: HivePartitions, partitions: Any) -> Any:
        raise MetastoreRefusedError("the Hive Metastore refused to drop a partition: test")

    with monkeypatch.context() as patched:
        patched.setattr(HivePartitions, "drop", refuse)
        failed = run("expire-partitions", f"{db}.events", "--catalog", cat)
    assert failed.exit_code == 1
    assert "refused to drop a partition" in failed.stderr
    assert len(ht.partitions(hive_metastore.uri, db, "events")) == 4  # the table moved on
    live = {r["dt"] for r in pw.read_rows(wh, f"{db}.events")}
    assert live == {"2999-01-01"}
    assert list((root / ".paimon-cli" / "metastore").glob("*.json"))

    check = run("inspect", f"{db}.events", "--check", "--catalog", cat)
    assert check.exit_code == 3  # checked: the metastore drifted from the table
    assert "metastore-extra" in check.stdout

    plan = run.json("expire-partitions", f"{db}.events", "--catalog", cat, "--dry-run")
    assert plan["plan"]["details"]["metastore"]["left_by_earlier_runs"] == 3
    again = run("expire-partitions", f"{db}.events", "--catalog", cat)
    assert again.exit_code == 0, again.stderr
    assert ht.partitions(hive_metastore.uri, db, "events") == [("2999-01-01",)]
    assert not list((root / ".paimon-cli").glob("metastore/*.json"))


def test_an_interrupted_drop_is_finished_by_the_next_run(
    hive_metastore: HiveMetastore, tmp_path: Path, db: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from core.catalog.hive_partitions import HivePartitions

    wh = tmp_path / "wh"
    root = _events(wh, db)
    ht.register(hive_metastore.uri, root, db, "events", partitioned=True)
    cat = _yaml(tmp_path, hive_metastore, wh)
    real_drop = HivePartitions.drop

    def ctrl_c_after_one(self: HivePartitions, partitions: Any) -> Any:
        real_drop(self, partitions[:1])
        raise KeyboardInterrupt

    with monkeypatch.context() as patched:
        patched.setattr(HivePartitions, "drop", ctrl_c_after_one)
        stopped = run("expire-partitions", f"{db}.events", "--catalog", cat)
    assert stopped.exit_code == 130  # SIGINT's code (README "Exit codes")
    assert "interrupted" in stopped.stderr
    assert len(ht.partitions(hive_metastore.uri, db, "events")) == 3
    again = run("expire-partitions", f"{db}.events", "--catalog", cat)
    assert again.exit_code == 0, again.stderr
    assert ht.partitions(hive_metastore.uri, db, "events") == [("2999-01-01",)]


def test_check_reports_drift_both_ways(
    hive_metastore: HiveMetastore, tmp_path: Path, db: str
) -> None:
    wh = tmp_path / "wh"
    root = _events(wh, db, days=DAYS[:2])
    ht.register(hive_metastore.uri, root, db, "events", partitioned=True)
    with MetastoreClient(hive_metastore.uri) as client:
        client.drop_partition(db, "events", ["2024-07-02"])
    ht.add_partition(hive_metastore.uri, root, db, "events", ["2020-01-01"])
    cat = _yaml(tmp_path, hive_metastore, wh)
    doc = run("inspect", f"{db}.events", "--check", "--catalog", cat, "--json")
    assert doc.exit_code == 3
    problems = json.loads(doc.stdout)["check"]["problems"]
    kinds = {(p["kind"], p["path"]) for p in problems}
    assert ("metastore-extra", "dt=2020-01-01") in kinds
    assert ("metastore-missing", "dt=2024-07-02") in kinds


def test_the_hive_lock_excludes_a_concurrent_holder(
    hive_metastore: HiveMetastore, tmp_path: Path, db: str
) -> None:
    wh = tmp_path / "wh"
    root = _events(wh, db)
    ht.register(hive_metastore.uri, root, db, "events", partitioned=True)
    cat = _yaml(
        tmp_path,
        hive_metastore,
        wh,
        **{"lock.enabled": "true", "lock-acquire-timeout": "2 s", "lock-check-max-sleep": "200 ms"},
    )
    hms = thrift()
    with MetastoreClient(hive_metastore.uri) as holder:
        component = hms.LockComponent(
            type=hms.LockType.EXCLUSIVE, level=hms.LockLevel.TABLE, dbname=db, tablename="events"
        )
        held = holder.lock(hms.LockRequest(component=[component], user="java", hostname="w1"))
        assert held.state == hms.LockState.ACQUIRED
        snapshots = sorted(p.name for p in (root / "snapshot").iterdir())
        partitions = ht.partitions(hive_metastore.uri, db, "events")

        refused = run("expire-partitions", f"{db}.events", "--catalog", cat)
        assert refused.exit_code == 1
        assert "could not take the Hive lock" in refused.stderr
        assert sorted(p.name for p in (root / "snapshot").iterdir()) == snapshots
        assert ht.partitions(hive_metastore.uri, db, "events") == partitions
        # our queued request was released: only the holder's lock is left
        assert [lk.lockid for lk in holder.show_locks(db, "events")] == [held.lockid]

        # a holder that releases while we wait: the commit goes through after it
        patient = _yaml(tmp_path, hive_metastore, wh, **{"lock.enabled": "true"})
        releaser = threading.Timer(1.5, holder.unlock, args=(held.lockid,))
        started = time.monotonic()
        releaser.start()
        try:
            done = run("expire-partitions", f"{db}.events", "--catalog", patient)
        finally:
            releaser.join()
        assert done.exit_code == 0, done.stderr
        assert time.monotonic() - started >= 1.5
        assert holder.show_locks(db, "events") == []  # ours was released after the commit
    assert ht.partitions(hive_metastore.uri, db, "events") == [("2999-01-01",)]


def test_unreachable_metastore_is_one_line(tmp_path: Path) -> None:
    from support.hive_metastore import _free_port

    cat = tmp_path / "hive.yaml"
    cat.write_text(f"metastore: hive\nuri: thrift://127.0.0.1:{_free_port()}\n", "utf-8")
    result = run("expire-partitions", "db.events", "--catalog", cat)
    assert result.exit_code == 1
    assert "cannot be reached" in result.stderr
    assert "Traceback" not in result.stderr


def test_location_disagreeing_with_storage_is_refused(
    hive_metastore: HiveMetastore, tmp_path: Path, db: str
) -> None:
    wh = tmp_path / "wh"
    root = _events(wh, db)
    elsewhere = tmp_path / "moved"
    elsewhere.mkdir()
    ht.register(
        hive_metastore.uri, root, db, "events", partitioned=True, location=elsewhere.as_uri()
    )
    cat = _yaml(tmp_path, hive_metastore, wh)
    state = tree_state(root)
    result = run("expire-partitions", f"{db}.events", "--catalog", cat)
    assert result.exit_code == 1
    assert "the metastore and the storage disagree" in result.stderr
    assert tree_state(root) == state
    assert len(ht.partitions(hive_metastore.uri, db, "events")) == 4


def test_a_value_hive_cannot_hold_is_refused_before_any_change(
    hive_metastore: HiveMetastore, tmp_path: Path, db: str
) -> None:
    wh = tmp_path / "wh"
    root = _events(wh, db, days=("2024-07-01", "2024-07-02\x01"))
    ht.register(hive_metastore.uri, root, db, "events", partitioned=False)
    cat = _yaml(tmp_path, hive_metastore, wh)
    state = tree_state(root)
    args = ["--expire-strategy", "update-time", "--expiration-time", "1 ms"]
    result = run("expire-partitions", f"{db}.events", "--catalog", cat, *args)
    assert result.exit_code == 1
    assert "cannot be represented in the metastore" in result.stderr
    assert tree_state(root) == state


def _plain_hive_table(uri: str, db: str, name: str) -> None:
    hms = thrift()
    sd = hms.StorageDescriptor(
        cols=[hms.FieldSchema(name="x", type="int", comment=None)],
        location=None,
        inputFormat="org.apache.hadoop.mapred.TextInputFormat",
        outputFormat="org.apache.hadoop.hive.ql.io.HiveIgnoreKeyTextOutputFormat",
        serdeInfo=hms.SerDeInfo(
            name=None,
            serializationLib="org.apache.hadoop.hive.serde2.lazy.LazySimpleSerDe",
            parameters={},
        ),
    )
    table = hms.Table(
        tableName=name,
        dbName=db,
        sd=sd,
        partitionKeys=[],
        parameters={},
        tableType="EXTERNAL_TABLE",
    )
    with MetastoreClient(uri) as client:
        client.create_table(table)


def test_maintain_drops_expired_partitions_from_the_metastore(
    hive_metastore: HiveMetastore, tmp_path: Path, db: str
) -> None:
    wh = tmp_path / "wh"
    root = _events(wh, db)
    ht.register(
        hive_metastore.uri, root, db, "events", partitioned=True, done=[("2024-07-02.done",)]
    )
    cat = _yaml(tmp_path, hive_metastore, wh)
    result = run("maintain", f"{db}.events", "--catalog", cat)
    assert result.exit_code == 0, result.stdout + result.stderr
    assert ht.partitions(hive_metastore.uri, db, "events") == [("2999-01-01",)]


def test_without_the_hive_extra_the_error_says_what_to_install(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import sys

    from core.catalog import hive_client

    monkeypatch.setitem(sys.modules, "thriftpy2", None)  # import fails as if not installed
    monkeypatch.setattr(hive_client, "_THRIFT", None)
    cat = tmp_path / "hive.yaml"
    cat.write_text("metastore: hive\nuri: thrift://127.0.0.1:9083\n", "utf-8")
    result = run("expire-snapshots", "db.events", "--catalog", cat)
    assert result.exit_code == 1
    assert "pip install 'paimon-cli[hive]'" in result.stderr
    assert "Traceback" not in result.stderr


def test_rollback_takes_the_partitions_it_removed_out_of_the_metastore(
    hive_metastore: HiveMetastore, tmp_path: Path, db: str
) -> None:
    wh = tmp_path / "wh"
    root = _events(wh, db)  # one partition per snapshot, 1..4
    ht.register(
        hive_metastore.uri, root, db, "events", partitioned=True, done=[("2024-07-03.done",)]
    )
    cat = _yaml(tmp_path, hive_metastore, wh)
    result = run("rollback", f"{db}.events", "--to-snapshot", "2", "--catalog", cat)
    assert result.exit_code == 0, result.stdout + result.stderr
    assert ht.partitions(hive_metastore.uri, db, "events") == [("2024-07-01",), ("2024-07-02",)]
    assert not list((root / ".paimon-cli").glob("metastore/*.json"))


# -- the lock itself: released on failure, interrupt and refusal (one metastore per session:
# these share the file, so the xdist worker that runs it starts the only one) --
def _lock(hms: HiveMetastore, db: str, sleep: Callable[[float], None] = time.sleep) -> HiveLock:
    return HiveLock(hms.uri, db, "t", timeout_ms=60_000, max_sleep_ms=100, sleep=sleep)


def _hold(client: MetastoreClient, db: str) -> int:
    hms = thrift()
    component = hms.LockComponent(
        type=hms.LockType.EXCLUSIVE, level=hms.LockLevel.TABLE, dbname=db, tablename="t"
    )
    response = client.lock(hms.LockRequest(component=[component], user="java", hostname="w"))
    assert response.state == hms.LockState.ACQUIRED
    return int(response.lockid)


def test_released_when_the_work_fails(hive_metastore: HiveMetastore) -> None:
    db = f"db_{uuid.uuid4().hex[:8]}"
    with pytest.raises(RuntimeError), _lock(hive_metastore, db).hold():
        with MetastoreClient(hive_metastore.uri) as client:
            assert len(client.show_locks(db, "t")) == 1
        raise RuntimeError("the commit failed")
    with MetastoreClient(hive_metastore.uri) as client:
        assert client.show_locks(db, "t") == []


def test_released_when_waiting_is_interrupted(hive_metastore: HiveMetastore) -> None:
    db = f"db_{uuid.uuid4().hex[:8]}"

    def ctrl_c(_seconds: float) -> None:
        raise KeyboardInterrupt

    with MetastoreClient(hive_metastore.uri) as holder:
        held = _hold(holder, db)
        with pytest.raises(KeyboardInterrupt), _lock(hive_metastore, db, sleep=ctrl_c).hold():
            pytest.fail("the lock is held by another")
        assert [lk.lockid for lk in holder.show_locks(db, "t")] == [held]
        holder.unlock(held)


def test_refused_in_time_and_released(hive_metastore: HiveMetastore) -> None:
    db = f"db_{uuid.uuid4().hex[:8]}"
    clock = iter(range(0, 1000, 1))
    with MetastoreClient(hive_metastore.uri) as holder:
        held = _hold(holder, db)
        lock = HiveLock(
            hive_metastore.uri,
            db,
            "t",
            timeout_ms=3_000,
            max_sleep_ms=100,
            sleep=lambda _s: None,
            monotonic=lambda: float(next(clock)),
        )
        with pytest.raises(CatalogLockError, match="could not take the Hive lock"), lock.hold():
            pytest.fail("the lock is held by another")
        assert [lk.lockid for lk in holder.show_locks(db, "t")] == [held]
        holder.unlock(held)
