"""Storage with the credentials a REST catalog vends for a table (its data token), renewed
before they expire: a long run (an orphan clean listing millions of files) must not die at
the token's expiry, and a token is only good for its own table."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

from core.catalog.options import storage_options
from core.io.fileio import FileIO

logger = logging.getLogger(__name__)

#: a data token: its storage settings (Paimon's keys) and when it expires (epoch ms)
Fetch = Callable[[], tuple[Mapping[str, str], int]]

#: renew once less than this much of a token's life is left (or half of it, if shorter)
RENEW_MARGIN_MS = 5 * 60 * 1000


def _now_ms() -> int:
    # Wall clock on purpose: a token expires in real time, whatever PAIMON_CLI_NOW pins.
    return int(time.time() * 1000)


class VendedFileIO(FileIO):
    """A FileIO whose storage settings are the catalog's base settings plus the table's
    current data token, fetched again when little of its life is left."""

    def __init__(
        self,
        base_options: Mapping[str, str],
        fetch: Fetch,
        *,
        max_requests_per_second: float | None = None,
    ) -> None:
        super().__init__(base_options, max_requests_per_second=max_requests_per_second)
        self._base = dict(base_options)
        self._fetch = fetch
        self._renew_lock = threading.Lock()
        self._renew_at = 0  # epoch ms; 0: no token yet
        self.renewals = 0

    def renew_credentials(self) -> None:
        if _now_ms() < self._renew_at:
            return
        with self._renew_lock:
            if _now_ms() < self._renew_at:
                return  # another thread renewed it meanwhile
            fetched_at = _now_ms()
            token, expires_at = self._fetch()
            self.replace_storage_options({**self._base, **storage_options(token)})
            life = max(expires_at - fetched_at, 0)
            self._renew_at = expires_at - min(RENEW_MARGIN_MS, life // 2)
            self.renewals += 1
            logger.info("data token renewed; it expires in %.0f s", life / 1000)

    def __reduce__(self) -> tuple[Any, ...]:
        # Executors (Spark) get the credentials the driver holds now, as a plain FileIO.
        self.renew_credentials()
        return (FileIO, (dict(self.storage_options),))
