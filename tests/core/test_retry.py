"""Transient storage errors are retried with backoff; permanent ones are not; an unreachable
store is retried for a bounded time, said once, then a storage_access error."""

from __future__ import annotations

import errno
import socket
import ssl
from collections.abc import Callable
from typing import Any

import pytest

from core.errors import StorageAccessError
from core.io import retry
from core.io.retry import RateLimiter, Retrier, is_transient


class ClientError(Exception):
    def __init__(self, code: str, status: int) -> None:
        super().__init__(f"An error occurred ({code})")
        self.response = {"Error": {"Code": code}, "ResponseMetadata": {"HTTPStatusCode": status}}


@pytest.mark.parametrize(
    "exc",
    [
        ClientError("SlowDown", 503),
        ClientError("Throttling", 400),
        ClientError("InternalError", 500),
        ClientError("TooManyRequests", 429),
        ConnectionResetError(),
        TimeoutError(),
        OSError(errno.ETIMEDOUT, "timed out"),
        OSError("Please reduce your request rate."),
    ],
)
def test_transient(exc: Exception) -> None:
    assert is_transient(exc)


@pytest.mark.parametrize(
    "exc",
    [
        ClientError("AccessDenied", 403),
        ClientError("NoSuchKey", 404),
        FileNotFoundError("x"),
        PermissionError("denied"),
        ValueError("bad request"),
    ],
)
def test_permanent(exc: Exception) -> None:
    assert not is_transient(exc)


def test_transient_cause_is_found() -> None:
    try:
        try:
            raise ClientError("SlowDown", 503)
        except ClientError as inner:
            raise OSError("wrapped") from inner
    except OSError as outer:
        assert is_transient(outer)


def test_retrier_retries_then_succeeds_with_growing_backoff() -> None:
    delays: list[float] = []
    calls = iter([ClientError("SlowDown", 503), ConnectionResetError(), "ok"])

    def flaky() -> str:
        item = next(calls)
        if isinstance(item, Exception):
            raise item
        return item

    assert Retrier(retries=5, base_delay=0.1, sleep=delays.append).call(flaky, "k") == "ok"
    assert len(delays) == 2 and all(0 <= d <= 0.1 * 2**i for i, d in enumerate(delays))


def test_retrier_gives_up_and_never_retries_permanent_errors() -> None:
    delays: list[float] = []
    r = Retrier(retries=3, sleep=delays.append)
    with pytest.raises(ClientError):
        r.call(lambda: (_ for _ in ()).throw(ClientError("SlowDown", 503)), "k")
    assert len(delays) == 3
    delays.clear()
    with pytest.raises(PermissionError):
        r.call(lambda: (_ for _ in ()).throw(PermissionError("no")), "k")
    assert delays == []


def test_rate_limiter_spaces_requests(monkeypatch: pytest.MonkeyPatch) -> None:
    clock = [100.0]
    slept: list[float] = []
    monkeypatch.setattr(retry.time, "monotonic", lambda: clock[0])
    monkeypatch.setattr(retry.time, "sleep", lambda s: slept.append(s))
    limiter = RateLimiter(4.0)  # one request every 0.25 s
    for _ in range(5):
        limiter.acquire()
    assert slept == pytest.approx([0.25, 0.5, 0.75, 1.0])


# -- an unreachable store -------------------------------------------------------------------
EndpointConnectionError = type("EndpointConnectionError", (Exception,), {})


class _Clock:
    """A fake monotonic clock: each attempt costs ``attempt_s``, sleeps advance it too."""

    def __init__(self, attempt_s: float) -> None:
        self.now = 0.0
        self.attempt_s = attempt_s
        self.attempts = 0

    def sleep(self, seconds: float) -> None:
        self.now += seconds

    def failing(self, exc: Exception) -> Callable[[], str]:
        def attempt() -> str:
            self.attempts += 1
            self.now += self.attempt_s
            raise exc

        return attempt


def _retrier(clock: _Clock, **kwargs: Any) -> Retrier:
    return Retrier(
        retries=100,
        sleep=clock.sleep,
        clock=lambda: clock.now,
        unreachable_hint=lambda path, tls: f"hint for {path} tls={tls}",
        **kwargs,
    )


@pytest.mark.parametrize(
    "exc",
    [
        EndpointConnectionError("Could not connect to the endpoint URL"),
        ConnectionRefusedError(errno.ECONNREFUSED, "refused"),
        socket.gaierror(-2, "Name or service not known"),
        ssl.SSLError(1, "WRONG_VERSION_NUMBER"),
    ],
)
def test_unreachable(exc: Exception) -> None:
    assert retry.is_unreachable(exc) and retry.is_network_failure(exc)


def test_lost_connections_are_network_failures_but_a_broken_pipe_is_not() -> None:
    assert retry.is_network_failure(TimeoutError()) and retry.is_network_failure(
        ConnectionResetError()
    )
    assert not retry.is_unreachable(ConnectionResetError())
    assert not retry.is_network_failure(BrokenPipeError())  # stdout closed by `| head`
    assert not retry.is_network_failure(PermissionError())


def test_an_unreachable_store_is_retried_within_the_budget_then_storage_access(
    caplog: pytest.LogCaptureFixture,
) -> None:
    clock = _Clock(attempt_s=2.0)
    r = _retrier(clock)
    with pytest.raises(StorageAccessError) as info:
        r.call(clock.failing(EndpointConnectionError("no route")), "s3://b/t")
    # No attempt starts once the budget is spent: at most budget + one attempt in all.
    assert clock.now <= retry.UNREACHABLE_BUDGET_S + 2.0 + r.max_delay
    assert clock.attempts >= 3
    assert info.value.kind == "storage_access"
    assert info.value.message.startswith("cannot reach the storage for s3://b/t (")
    assert info.value.hint == "hint for s3://b/t tls=False"
    warnings = [rec for rec in caplog.records if rec.levelname == "WARNING"]
    assert len(warnings) == 1 and "retrying for up to 12 s" in warnings[0].getMessage()
    with pytest.raises(StorageAccessError):  # said once per run, not once per call
        r.call(clock.failing(EndpointConnectionError("no route")), "s3://b/t2")
    assert len([rec for rec in caplog.records if rec.levelname == "WARNING"]) == 1


def test_a_slow_unreachable_store_is_still_retried_once() -> None:
    clock = _Clock(attempt_s=30.0)  # one attempt longer than the whole budget
    with pytest.raises(StorageAccessError) as info:
        _retrier(clock).call(clock.failing(ssl.SSLError(1, "WRONG_VERSION_NUMBER")), "s3://b/t")
    assert clock.attempts == 2
    assert info.value.message.startswith("TLS handshake failed for s3://b/t (2 attempts in")
    assert info.value.hint == "hint for s3://b/t tls=True"


def test_an_unreachable_retry_after_a_lost_connection_keeps_the_original_error() -> None:
    """A dropped connection may have delivered a write: when a later attempt cannot even
    connect, the failure stays what it was (the write's outcome is unknown), not a clean
    'unreachable'."""
    clock = _Clock(attempt_s=5.0)
    failures = iter([ConnectionResetError("reset")])

    def attempt() -> str:
        clock.now += clock.attempt_s
        raise next(failures, EndpointConnectionError("no route"))

    with pytest.raises(EndpointConnectionError):
        _retrier(clock).call(attempt, "s3://b/t")
