"""Paimon's JDBC distributed lock, taken the way Java's JdbcCatalogLock takes it, so that
Java writers and this tool exclude each other.

- The lock is a row in ``paimon_distributed_locks`` (``lock_id`` primary key,
  ``acquired_at`` set by the database, ``expire_time_seconds``), created with Java's
  columns when absent; ``lock_id`` is ``<catalog-key>.<database>.<table>`` (the table
  without a branch: every branch of a table shares its lock).
- Taking it: delete the row of the same id if it is older than its own expiry (by the
  database's clock, with each dialect's expression), then insert ours with an expiry of
  ``lock-acquire-timeout`` in whole seconds; a unique-key violation means another holder.
  Retries sleep 100 ms, doubling up to ``lock-check-max-sleep`` (8 s), until
  ``lock-acquire-timeout`` (8 min) has passed: then a refusal, nothing committed.
- Releasing deletes our row. Unlike Java, only ours (the id with the ``acquired_at`` we
  read back): a lock that expired under us and was taken by another writer stays theirs.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from core.catalog.jdbc_connect import Connection, JdbcSettings
from core.catalog.polling_lock import FIRST_SLEEP_MS, PollingLock
from core.errors import CatalogLockError

logger = logging.getLogger(__name__)

TABLE = "paimon_distributed_locks"

_CREATE = (
    f"CREATE TABLE IF NOT EXISTS {TABLE} ("
    "lock_id VARCHAR({length}) NOT NULL, "
    "acquired_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP NOT NULL, "
    "expire_time_seconds BIGINT DEFAULT 0 NOT NULL, "
    "PRIMARY KEY (lock_id))"
)
_INSERT = f"INSERT INTO {TABLE} (lock_id, expire_time_seconds) VALUES (?, ?)"
# A lock older than its expiry, by the database's own clock (Java's dialects).
_EXPIRED = {
    "sqlite": "strftime('%s', 'now') - strftime('%s', acquired_at) > expire_time_seconds",
    "postgresql": "EXTRACT(EPOCH FROM AGE(NOW(), acquired_at)) > expire_time_seconds",
}


class JdbcLock(PollingLock):
    """The lock of one table; each ``hold`` opens its own connection (picklable)."""

    def __init__(
        self,
        settings: JdbcSettings,
        lock_id: str,
        *,
        timeout_ms: int,
        max_sleep_ms: int,
        key_max_length: int = 255,
        sleep: Callable[[float], None] = time.sleep,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        super().__init__(
            timeout_ms=timeout_ms, max_sleep_ms=max_sleep_ms, sleep=sleep, monotonic=monotonic
        )
        self.settings = settings
        self.lock_id = lock_id
        self.key_max_length = key_max_length
        self.description = f"JDBC lock {lock_id}"

    @contextmanager
    def hold(self) -> Iterator[None]:
        conn = self.settings.connect()
        try:
            acquired_at = self._acquire(conn)
            try:
                yield
            finally:
                self._release(conn, acquired_at)
        finally:
            conn.close()

    def _acquire(self, conn: Connection) -> Any:
        create_table(conn, self.key_max_length)
        start = self._monotonic()
        sleep_ms = FIRST_SLEEP_MS
        problem = None
        while True:
            acquired, problem = self._try(conn)
            if acquired is not None:
                logger.debug("took %s", self.description)
                return acquired
            if (self._monotonic() - start) * 1000 > self.timeout_ms:
                break
            sleep_ms = self._pause(sleep_ms)
        raise CatalogLockError(
            f"could not take the catalog's {self.description} within "
            f"{self.timeout_ms / 1000:g} s: {problem or 'another writer holds it'}; "
            "nothing was committed",
            hint=f"a holder that died frees it after its expiry (the row in {TABLE}); "
            "run again later, or raise lock-acquire-timeout in the catalog's options",
        )

    def _try(self, conn: Connection) -> tuple[Any, str | None]:
        """Our row's ``acquired_at`` when we took the lock, else None and why not."""
        any_error, unique_violation = conn.errors
        try:
            expired = _EXPIRED[conn.protocol]
            freed = conn.execute(
                f"DELETE FROM {TABLE} WHERE {expired} AND lock_id = ?", [self.lock_id]
            )
            if freed:
                logger.info("removed an expired %s", self.description)
            conn.execute(_INSERT, [self.lock_id, self.timeout_ms // 1000])
        except unique_violation:
            return None, None
        except any_error as exc:  # Java counts any SQL error as "not acquired" and retries
            return None, f"the catalog database answered: {str(exc).strip().splitlines()[0]}"
        rows = conn.query(f"SELECT acquired_at FROM {TABLE} WHERE lock_id = ?", [self.lock_id])
        return (rows[0][0] if rows else None), None

    def _release(self, conn: Connection, acquired_at: Any) -> None:
        try:
            conn.execute(
                f"DELETE FROM {TABLE} WHERE lock_id = ? AND acquired_at = ?",
                [self.lock_id, acquired_at],
            )
        except conn.errors[0] as exc:
            # The commit stands; the row expires on its own.
            logger.warning("could not release the %s: %s", self.description, exc)


def create_table(conn: Connection, key_max_length: int) -> None:
    """The lock table with Java's columns, when the catalog database has none yet."""
    any_error = conn.errors[0]
    try:
        conn.execute(_CREATE.format(length=key_max_length))
    except any_error:
        # Two creators racing (PostgreSQL's IF NOT EXISTS is not atomic): fine if it is there.
        conn.query(f"SELECT lock_id FROM {TABLE} WHERE 1 = 0")
