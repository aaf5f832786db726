"""What Paimon's catalog locks share (Java's JDBC and Hive locks alike): ask, and while
another writer holds the lock ask again after a pause that doubles from 50 ms up to
``lock-check-max-sleep``, until ``lock-acquire-timeout``. A lock travels to Spark
executors with its table, so it pickles without its clock and sleep."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from core.table.catalog_env import CommitLock

FIRST_SLEEP_MS = 50


class PollingLock(CommitLock):
    def __init__(
        self,
        *,
        timeout_ms: int,
        max_sleep_ms: int,
        sleep: Callable[[float], None] = time.sleep,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self.timeout_ms = timeout_ms
        self.max_sleep_ms = max_sleep_ms
        self._sleep = sleep
        self._monotonic = monotonic

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["_sleep"], state["_monotonic"] = None, None
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._sleep, self._monotonic = time.sleep, time.monotonic

    def _pause(self, sleep_ms: int) -> int:
        """Wait before the next try; returns the pause after this one."""
        sleep_ms = min(sleep_ms * 2, self.max_sleep_ms)
        self._sleep(sleep_ms / 1000)
        return sleep_ms
