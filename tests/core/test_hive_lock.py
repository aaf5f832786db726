"""The Hive lock (core/catalog/hive_lock.py) on a real metastore: released when the locked
work fails, when waiting is interrupted, and when it is not had in time, so a failed or
stopped paimon-cli never leaves Java writers blocked behind its request."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable

import pytest
from support.hive_metastore import HiveMetastore

from core.catalog.hive_client import MetastoreClient, thrift
from core.catalog.hive_lock import HiveLock
from core.errors import CatalogLockError


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
