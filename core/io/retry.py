"""Throttling and retries for object-store requests (issue: cron on S3, nobody watching).

Transient failures (HTTP 429/5xx, SlowDown, connection resets, timeouts) are retried with
exponential backoff and full jitter; permanent ones (403, 404, bad requests) are not.
"""

from __future__ import annotations

import errno
import logging
import random
import threading
import time
from collections.abc import Callable
from typing import TypeVar

logger = logging.getLogger(__name__)

T = TypeVar("T")

_TRANSIENT_CODES = frozenset(
    {
        "SlowDown",
        "Throttling",
        "ThrottlingException",
        "RequestLimitExceeded",
        "RequestTimeout",
        "RequestTimeoutException",
        "InternalError",
        "ServiceUnavailable",
        "TooManyRequests",
        "500",
        "502",
        "503",
        "504",
        "429",
    }
)
_TRANSIENT_STATUS = frozenset({429, 500, 502, 503, 504})
_TRANSIENT_ERRNO = frozenset(
    {errno.ECONNRESET, errno.ETIMEDOUT, errno.EPIPE, errno.EAGAIN, errno.ECONNABORTED}
)
_TRANSIENT_TEXT = (
    "SlowDown",
    "Reduce your request rate",
    "Please reduce your request rate",
    "ServiceUnavailable",
    "Throttl",
    "Connection reset",
    "timed out",
)
_TRANSIENT_CLASSES = (
    "ServerDisconnectedError",
    "ClientConnectionError",
    "ClientOSError",
    "ConnectionClosedError",
    "EndpointConnectionError",
    "ReadTimeoutError",
    "ConnectTimeoutError",
    "ServerTimeoutError",
    "IncompleteReadError",
)


def is_transient(exc: BaseException) -> bool:
    """True for failures worth retrying; 403/404 and malformed requests are permanent."""
    if isinstance(
        exc,
        (
            FileNotFoundError,
            PermissionError,
            IsADirectoryError,
            NotADirectoryError,
            FileExistsError,
        ),
    ):
        return False
    if isinstance(exc, (TimeoutError, ConnectionError)):
        return True
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if type(current).__name__ in _TRANSIENT_CLASSES:
            return True
        response = getattr(current, "response", None)
        if isinstance(response, dict):
            code = str(response.get("Error", {}).get("Code", ""))
            status = response.get("ResponseMetadata", {}).get("HTTPStatusCode")
            if code in _TRANSIENT_CODES or status in _TRANSIENT_STATUS:
                return True
        if isinstance(current, OSError) and current.errno in _TRANSIENT_ERRNO:
            return True
        if any(text in str(current) for text in _TRANSIENT_TEXT):
            return True
        current = current.__cause__ or current.__context__
    return False


class RateLimiter:
    """Token bucket shared by every thread of a run: at most ``rate`` requests per second."""

    def __init__(self, rate: float) -> None:
        if rate <= 0:
            raise ValueError("rate must be positive")
        self.rate = rate
        self._lock = threading.Lock()
        self._next = time.monotonic()

    def acquire(self) -> None:
        with self._lock:
            now = time.monotonic()
            slot = max(self._next, now)
            self._next = slot + 1.0 / self.rate
        delay = slot - now
        if delay > 0:
            time.sleep(delay)


class Retrier:
    """Runs a storage call: waits for the rate limiter, retries transient failures."""

    def __init__(
        self,
        *,
        retries: int = 6,
        base_delay: float = 0.1,
        max_delay: float = 10.0,
        limiter: RateLimiter | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.retries = retries
        self.base_delay = base_delay
        self.max_delay = max_delay
        self.limiter = limiter
        self.sleep = sleep

    def call(self, fn: Callable[[], T], what: str) -> T:
        attempt = 0
        while True:
            if self.limiter is not None:
                self.limiter.acquire()
            try:
                return fn()
            except Exception as exc:  # noqa: BLE001 - classified just below, re-raised if not
                if attempt >= self.retries or not is_transient(exc):
                    raise
                delay = random.uniform(0, min(self.max_delay, self.base_delay * 2**attempt))
                logger.info(
                    "transient storage error on %s (%s); retry %d in %.2fs",
                    what,
                    type(exc).__name__,
                    attempt + 1,
                    delay,
                )
                self.sleep(delay)
                attempt += 1
