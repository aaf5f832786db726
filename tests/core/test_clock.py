"""The run's "now" is injectable (PAIMON_CLI_NOW), so checked-in tables never age."""

from __future__ import annotations

import pytest

from core.errors import InvalidOptionError
from core.runtime.clock import NOW_ENV, SystemClock, now_ms, parse_pinned_now


def test_pinned_now_reads_epoch_millis_and_iso_with_offset(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(NOW_ENV, "1795474908982")
    assert now_ms() == SystemClock().now_ms() == 1795474908982
    # The same instant in two zones, one on each side of the date line.
    sydney = parse_pinned_now("2026-06-07T09:40:00+10:00")
    assert sydney == parse_pinned_now("2026-06-06T23:40:00Z") == 1780789200000


@pytest.mark.parametrize("text", ["2026-06-07 09:40:00", "tomorrow", "12ab"])
def test_a_pinned_now_that_is_no_instant_is_refused(text: str) -> None:
    """A local time would mean another instant in every zone: refused, as is anything else."""
    with pytest.raises(InvalidOptionError, match=NOW_ENV):
        parse_pinned_now(text)


def test_unset_now_is_the_wall_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    import time

    monkeypatch.delenv(NOW_ENV, raising=False)
    before = int(time.time() * 1000)
    assert before <= now_ms() <= int(time.time() * 1000)
