"""Throttling and retries for object-store requests (issue: cron on S3, nobody watching).

Transient failures (HTTP 429/5xx, SlowDown, connection resets, timeouts) are retried with
exponential backoff and full jitter; permanent ones (403, 404, bad requests) are not.

A store that cannot be reached at all (connection refused, DNS, TLS handshake, connect
timeout, proxy) is usually the environment: a wrong endpoint, a network, a certificate. Those
failures are retried for a bounded time (``UNREACHABLE_BUDGET_S``, said once on stderr),
then reported as a ``StorageAccessError`` with a hint, never as an internal error. Nothing
reached the store on such an attempt, so no write can have landed through it.
"""

from __future__ import annotations

import errno
import logging
import random
import socket
import ssl
import threading
import time
from collections.abc import Callable
from typing import TypeVar

from core.errors import StorageAccessError

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


# Connect-phase failures of the storage libraries (botocore, aiohttp, azure, google-auth),
# by class name: the request never reached the store.
_UNREACHABLE_CLASSES = frozenset(
    {
        "EndpointConnectionError",
        "ConnectTimeoutError",
        "ProxyConnectionError",
        "SSLError",
        "SSLCertVerificationError",
        "ClientConnectorError",
        "ClientConnectorDNSError",
        "ClientConnectorSSLError",
        "ClientConnectorCertificateError",
        "ClientProxyConnectionError",
        "ServiceRequestError",
    }
)
_TLS_CLASSES = frozenset(
    {"SSLError", "SSLCertVerificationError", "ClientConnectorSSLError"}
    | {"ClientConnectorCertificateError"}
)
# Seconds a call keeps retrying a store it cannot reach (after at least one retry).
UNREACHABLE_BUDGET_S = 12.0


def _chain(exc: BaseException) -> list[BaseException]:
    """``exc`` and its causes and contexts, without cycles."""
    out: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and all(current is not seen for seen in out):
        out.append(current)
        current = current.__cause__ or current.__context__
    return out


def is_unreachable(exc: BaseException) -> bool:
    """True when the store could not be reached: refused, DNS, TLS, connect timeout, proxy."""
    return any(
        isinstance(e, (ConnectionRefusedError, socket.gaierror, ssl.SSLError))
        or type(e).__name__ in _UNREACHABLE_CLASSES
        for e in _chain(exc)
    )


# A connection that failed after the request may have reached the store: timed out or
# dropped mid-answer (retried as transient first; a write's outcome is then unknown).
_CONNECTION_LOST_CLASSES = frozenset(
    {
        "ReadTimeoutError",
        "ConnectionClosedError",
        "ServerDisconnectedError",
        "ServerTimeoutError",
        "ClientOSError",
        "IncompleteReadError",
        "ServiceResponseError",
    }
)


def is_network_failure(exc: BaseException) -> bool:
    """The store unreachable, or the connection to it lost or timed out: the environment
    (network, endpoint, store health), not a defect of this program."""
    return is_unreachable(exc) or any(
        isinstance(e, (TimeoutError, ConnectionResetError, ConnectionAbortedError))
        or type(e).__name__ in _CONNECTION_LOST_CLASSES
        for e in _chain(exc)
    )


def is_tls_failure(exc: BaseException) -> bool:
    return any(isinstance(e, ssl.SSLError) or type(e).__name__ in _TLS_CLASSES for e in _chain(exc))


def summary(exc: BaseException) -> str:
    """``Type: first line of the message`` (library messages can run to many lines)."""
    lines = str(exc).strip().splitlines()
    text = lines[0] if lines else ""
    return f"{type(exc).__name__}: {text[:300]}" if text else type(exc).__name__


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
    """Runs a storage call: waits for the rate limiter, retries transient failures (up to
    ``retries`` times) and an unreachable store (for ``unreachable_budget`` seconds)."""

    def __init__(
        self,
        *,
        retries: int = 6,
        base_delay: float = 0.1,
        max_delay: float = 10.0,
        limiter: RateLimiter | None = None,
        sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], float] = time.monotonic,
        unreachable_budget: float | None = None,
        unreachable_hint: Callable[[str, bool], str] | None = None,
    ) -> None:
        self.retries = retries
        self.base_delay = base_delay
        self.max_delay = max_delay
        self.limiter = limiter
        self.sleep = sleep
        self.clock = clock
        self.unreachable_budget = (
            UNREACHABLE_BUDGET_S if unreachable_budget is None else unreachable_budget
        )
        # (path, tls failure) -> what to check: the caller knows its store's settings.
        self.unreachable_hint = unreachable_hint
        self._announced = False
        self._lock = threading.Lock()

    def backoff(self, attempt: int) -> float:
        """Seconds to wait before retry ``attempt + 1``: exponential, full jitter."""
        return random.uniform(0, min(self.max_delay, self.base_delay * 2**attempt))

    def call(self, fn: Callable[[], T], what: str) -> T:
        attempt = 0
        start = self.clock()
        only_unreachable = True  # every failure so far happened before reaching the store
        while True:
            if self.limiter is not None:
                self.limiter.acquire()
            try:
                return fn()
            except Exception as exc:  # noqa: BLE001 - classified just below, re-raised if not
                unreachable = is_unreachable(exc)
                only_unreachable = only_unreachable and unreachable
                if not (unreachable or is_transient(exc)):
                    raise
                delay = self.backoff(attempt)
                spent = self.clock() - start + delay
                if attempt >= self.retries or (
                    unreachable and attempt > 0 and spent > self.unreachable_budget
                ):
                    if only_unreachable:
                        tried = f"{attempt + 1} attempts in {self.clock() - start:.0f} s"
                        raise self._unreachable_error(exc, what, tried) from exc
                    raise
                if unreachable:
                    self._announce(exc, what)
                logger.info(
                    "transient storage error on %s (%s); retry %d in %.2fs",
                    what,
                    type(exc).__name__,
                    attempt + 1,
                    delay,
                )
                self.sleep(delay)
                attempt += 1

    def _announce(self, exc: BaseException, what: str) -> None:
        """Say once per run, on stderr, that the store is unreachable and retried."""
        with self._lock:
            if self._announced:
                return
            self._announced = True
        logger.warning(
            "cannot reach the storage for %s (%s); retrying for up to %.0f s",
            what,
            summary(exc),
            self.unreachable_budget,
        )

    def _unreachable_error(self, exc: BaseException, what: str, tried: str) -> StorageAccessError:
        tls = is_tls_failure(exc)
        reason = "TLS handshake failed" if tls else "cannot reach the storage"
        hint = self.unreachable_hint(what, tls) if self.unreachable_hint else None
        return StorageAccessError(f"{reason} for {what} ({tried}): {summary(exc)}", hint=hint)
