"""Transient storage errors are retried with backoff; permanent ones are not."""

from __future__ import annotations

import errno

import pytest

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
