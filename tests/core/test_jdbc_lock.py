"""Paimon's JDBC distributed lock on SQLite: a Java-style holder makes a taker wait until
it lets go; a holder past its expiry is removed; the table has Java's columns."""

from __future__ import annotations

import sqlite3
import threading
import time
from pathlib import Path

import pytest
from support.jdbc_catalog import java_lock_holder

from core.catalog.jdbc_connect import JdbcSettings
from core.catalog.jdbc_lock import JdbcLock
from core.errors import CatalogLockError


def _lock(db: Path, timeout_ms: int = 5000) -> JdbcLock:
    settings = JdbcSettings(f"jdbc:sqlite:{db}")
    return JdbcLock(settings, "jdbc.db.t", timeout_ms=timeout_ms, max_sleep_ms=100)


def test_waits_for_the_holder_then_takes_it(tmp_path: Path) -> None:
    db = tmp_path / "catalog.db"
    sqlite3.connect(db).close()
    let_go = threading.Event()

    def holder() -> None:
        with java_lock_holder(lambda: sqlite3.connect(db), "jdbc.db.t"):
            let_go.wait(10)

    thread = threading.Thread(target=holder)
    thread.start()
    time.sleep(0.2)  # the holder's row is in
    threading.Timer(0.5, let_go.set).start()
    start = time.monotonic()
    with _lock(db).hold():
        waited = time.monotonic() - start
        rows = (
            sqlite3.connect(db)
            .execute("SELECT lock_id, expire_time_seconds FROM paimon_distributed_locks")
            .fetchall()
        )
    thread.join()
    assert waited >= 0.3
    assert rows == [("jdbc.db.t", 5)]  # ours: the acquire timeout in seconds, as Java's
    assert sqlite3.connect(db).execute("SELECT * FROM paimon_distributed_locks").fetchall() == []


def test_refuses_after_the_timeout(tmp_path: Path) -> None:
    db = tmp_path / "catalog.db"
    sqlite3.connect(db).close()
    with java_lock_holder(lambda: sqlite3.connect(db), "jdbc.db.t"):
        start = time.monotonic()
        with pytest.raises(CatalogLockError, match="within 0.3 s"), _lock(db, 300).hold():
            pass
        assert time.monotonic() - start < 3


def test_an_expired_holder_is_removed(tmp_path: Path) -> None:
    db = tmp_path / "catalog.db"
    sqlite3.connect(db).close()
    holder = java_lock_holder(lambda: sqlite3.connect(db), "jdbc.db.t", expire_seconds=-1)
    with holder, _lock(db, 300).hold():
        pass
