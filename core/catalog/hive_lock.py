"""Paimon's Hive lock, taken as Java's HiveCatalogLock takes it, so that Java writers and
this tool exclude each other on a table.

- One EXCLUSIVE lock component at TABLE level on ``database.table`` (every branch of a
  table shares it), no operation type, requested as the current user from this host.
- While the metastore answers WAITING: sleep 50 ms doubling up to ``lock-check-max-sleep``
  (8 s), ask again (``check_lock``), until ``lock-acquire-timeout`` (8 min) has passed.
- A lock not ACQUIRED by then is released (the metastore would otherwise keep our request
  queued ahead of other writers) and refused: nothing was committed.
- Released after the commit, also when it fails or is interrupted (Ctrl-C while waiting
  too); a failed release is a warning: the commit stands, and the metastore times the
  lock out by itself (``hive.txn.timeout``).
"""

from __future__ import annotations

import getpass
import logging
import socket
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from core.catalog.hive_client import MetastoreClient, thrift
from core.catalog.polling_lock import FIRST_SLEEP_MS, PollingLock
from core.errors import CatalogLockError, CatalogUnreachableError

logger = logging.getLogger(__name__)


class HiveLock(PollingLock):
    """The metastore lock of one table; each ``hold`` opens its own connection."""

    def __init__(
        self,
        uri: str,
        database: str,
        table: str,
        *,
        timeout_ms: int,
        max_sleep_ms: int,
        sleep: Callable[[float], None] = time.sleep,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        super().__init__(
            timeout_ms=timeout_ms, max_sleep_ms=max_sleep_ms, sleep=sleep, monotonic=monotonic
        )
        self.uri = uri
        self.database = database
        self.table = table
        self.description = f"Hive lock {database}.{table} ({uri})"

    @contextmanager
    def hold(self) -> Iterator[None]:
        with MetastoreClient(self.uri) as client:
            lock_id = self._acquire(client)
            try:
                yield
            finally:
                _release(client, lock_id, self.description)

    def _acquire(self, client: MetastoreClient) -> int:
        hms = thrift()
        component = hms.LockComponent(
            type=hms.LockType.EXCLUSIVE,
            level=hms.LockLevel.TABLE,
            dbname=self.database,
            tablename=self.table,
        )
        request = hms.LockRequest(component=[component], user=_user(), hostname=_host())
        start = self._monotonic()
        response = client.lock(request)
        lock_id = int(response.lockid)
        acquired = False
        try:
            sleep_ms = FIRST_SLEEP_MS
            while response.state == hms.LockState.WAITING:
                if (self._monotonic() - start) * 1000 >= self.timeout_ms:
                    break
                sleep_ms = self._pause(sleep_ms)
                response = client.check_lock(lock_id)
            acquired = response.state == hms.LockState.ACQUIRED
        finally:
            if not acquired:  # a queued request would block the writers behind it
                _release(client, lock_id, self.description)
        waited = self._monotonic() - start
        if acquired:
            logger.info("took the %s (lock id %d) after %.1f s", self.description, lock_id, waited)
            return lock_id
        state = _state_name(hms, response.state)
        raise CatalogLockError(
            f"could not take the {self.description} within {self.timeout_ms / 1000:g} s "
            f"(the metastore answered {state}): another writer holds the table; "
            "nothing was committed",
            hint="run again later, or raise lock-acquire-timeout in the catalog's options",
        )


def _release(client: MetastoreClient, lock_id: int, description: str) -> None:
    if lock_id <= 0:
        return
    try:
        client.unlock(lock_id)
    except CatalogUnreachableError as exc:
        logger.warning("could not release the %s (lock id %d): %s", description, lock_id, exc)


def _state_name(hms: Any, state: int) -> str:
    names = {v: str(k) for k, v in vars(hms.LockState).items() if isinstance(v, int)}
    return names.get(state, str(state))


def _user() -> str:
    try:
        return getpass.getuser()
    except Exception:  # noqa: BLE001 - no user name in a container: Java falls back too
        return "paimon-cli"


def _host() -> str:
    try:
        return socket.gethostname()
    except OSError:
        return "localhost"
