"""Progress when nobody watches: periodic one-line progress on stderr, never on stdout."""

from __future__ import annotations

import pytest

from paimon_cli.progress import LogProgress


def test_periodic_lines_for_long_phases(capsys: pytest.CaptureFixture[str]) -> None:
    now = [0.0]
    progress = LogProgress(periodic=True, interval=10, clock=lambda: now[0])
    progress.start("deleting", 100)
    for _ in range(30):
        now[0] += 1
        progress.advance()
    progress.finish()
    err = capsys.readouterr()
    assert err.out == ""
    lines = err.err.splitlines()
    assert lines == [
        "progress: deleting: 10/100 in progress, 10 s",
        "progress: deleting: 20/100 in progress, 20 s",
        "progress: deleting: 30/100 in progress, 30 s",
        "progress: deleting: 30/100 done, 30 s",
    ]


def test_short_phases_stay_quiet(capsys: pytest.CaptureFixture[str]) -> None:
    progress = LogProgress(periodic=True, clock=lambda: 0.0)
    progress.start("listing")
    progress.advance(5)
    progress.finish()
    assert capsys.readouterr().err == ""


def test_json_output_has_no_progress(run, scenarios) -> None:
    result = run("inspect", scenarios["many_commits"].root, "--check", "--json")
    assert result.stdout.lstrip().startswith("{") and "progress:" not in result.stdout
