"""One format each in human output (issue 37.11, DECISIONS D19), pinned: one time format
(``2026-01-02 03:04:05+00:00``, milliseconds only where they tell two commits apart), one
duration format (``38 ms``, ``1 h 30 min``), IEC sizes (``8.0 MiB``), plurals (``1 orphan
file``, ``2 branches``), no Python reprs, and prose that wraps at 80 columns with a hanging
indent and never breaks a path inside a name. The commands run over pypaimon-written tables."""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Callable
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest
from rich.cells import cell_len
from support import pypaimon_writer as pw
from support.fixtures import Run

import paimon_cli.output as output
from core.runtime.timeparse import (
    format_duration,
    format_instant,
    format_utc,
    parse_duration,
    parse_instant,
)
from core.runtime.wording import plural
from paimon_cli.layout import wrap_prose
from paimon_cli.output import human_bytes, human_elapsed, listed, partition_text

NOW = 1_780_000_000_000
# Any shown time: it must be the one format, whole.
TIME_START = re.compile(r"\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}")
TIME = re.compile(r"\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}(?:\.\d{3})?[+-]\d{2}:\d{2}")
# What a Python repr, a second style or a lazy plural looks like in a line.
LEAKS = {
    "a dict or list repr": re.compile(r"[\[{]'|'[\]}]|': '"),
    "None": re.compile(r"\bNone\b"),
    "ISO's T...Z": re.compile(r"\d{2}:\d{2}:\d{2}(?:\.\d+)?Z\b"),
    "seconds as 0.01s": re.compile(r"\b\d+\.\d+ ?s\b"),
    "a lower-case size unit": re.compile(r"\b\d+(?:\.\d+)? ?(?:kb|mb|gb)\b", re.IGNORECASE),
    "(s) or (es)": re.compile(r"\w\((?:s|es)\)"),
    "one with a plural": re.compile(
        r"\b1 (?:files|snapshots|orphan files|branches|tags|problems|partitions|manifests|"
        r"names|directories|runs|changelogs)\b"
    ),
}


def test_the_one_time_format_reads_back() -> None:
    tokyo = ZoneInfo("Asia/Tokyo")
    ms = NOW + 92
    assert format_instant(ms, tokyo) == "2026-05-29 05:26:40+09:00"
    assert format_utc(ms) == "2026-05-28 20:26:40+00:00"
    assert format_utc(ms, millis=True) == "2026-05-28 20:26:40.092+00:00"
    assert parse_instant(format_utc(ms, millis=True), now_ms=NOW, zone=tokyo) == ms
    assert parse_instant(format_instant(ms, tokyo), now_ms=NOW, zone=dt.timezone.utc) == NOW


@pytest.mark.parametrize(
    ("ms", "text"),
    [
        (38, "38 ms"),
        (0, "0 s"),
        (1_000, "1 s"),
        (5_400_000, "1 h 30 min"),
        (90_061_001, "1 d 1 h 1 min 1 s 1 ms"),
    ],
)
def test_the_one_duration_format_reads_back(ms: int, text: str) -> None:
    assert format_duration(ms) == text
    assert parse_duration(text) == ms  # what a user copies into --older-than is read back


def test_elapsed_times_use_it() -> None:
    assert human_elapsed(0.0384) == "38 ms"
    assert human_elapsed(2.7) == "2 s"
    assert human_elapsed(65.2) == "1 min 5 s"


def test_sizes_counts_and_values() -> None:
    assert human_bytes(8 * 1024 * 1024) == "8.0 MiB"
    assert human_bytes(128 * 1024**2) == "128.0 MiB" and human_bytes(600) == "600 B"
    assert plural(1, "orphan file") == "1 orphan file"
    assert plural(2, "branch", "branches") == "2 branches"
    assert listed(["p0", "p1"]) == "p0, p1" and listed([]) == "-"
    assert partition_text({"p0": "0", "p1": "1"}) == "p0=0/p1=1"
    assert partition_text({}) == "-"


def test_prose_wraps_with_a_hanging_indent_under_the_first_word_after_the_label() -> None:
    text = "  snapshots 1..6: " + " ".join(["word"] * 30)
    hang, lines = wrap_prose(text, 80)
    assert hang == len("  snapshots 1..6: ")
    shown = [text[b:e] if not n else " " * hang + text[b:e] for n, (b, e) in enumerate(lines)]
    assert len(shown) > 1
    assert all(cell_len(line) <= 80 for line in shown)
    assert all(line.startswith(" " * hang + "word") for line in shown[1:])
    assert " ".join(s.strip() for s in shown).replace("  ", " ") == text.strip().replace("  ", " ")


def test_a_path_folds_only_after_a_slash() -> None:
    path = "/warehouse/" + "/".join(f"directory-number-{i}" for i in range(8)) + "/table"
    text = f"compact (dry run) {path}"
    hang, lines = wrap_prose(text, 60)
    pieces = [text[b:e] for b, e in lines]
    assert "".join(p if n == 0 else p for n, p in enumerate(pieces)).replace(" ", "") == (
        text.replace(" ", "")
    )
    for piece in pieces[:-1]:
        assert piece.endswith("/") or piece.endswith("run)"), pieces
    assert all(cell_len(p) + (hang if n else 0) <= 60 for n, p in enumerate(pieces))


@pytest.fixture(scope="module")
def tables(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    wh = tmp_path_factory.mktemp("formats")
    append = pw.append_partitioned(wh, commits=6).root
    pk = pw.pk_table(wh, commits=6).root
    (append / "manifest" / "manifest-orphan-0").write_bytes(b"junk")
    return {"append": append, "pk": pk}


def _commands(t: dict[str, Path]) -> list[tuple[object, ...]]:
    a, pk = t["append"], t["pk"]
    views = ["summary", "retention", "snapshots", "files", "manifests", "partitions", "tags"]
    views += ["consumers", "branches", "options", "schema", "runs"]
    return [
        *[("inspect", a, v) for v in views],
        ("inspect", pk, "schema"),
        ("inspect", a, "--check"),
        ("expire-snapshots", a, "--dry-run", "--retain-min", "1", "--retain-max", "2"),
        ("expire-snapshots", pk, "--dry-run", "--retain-min", "1", "--older-than", "0 s"),
        ("delete-orphan-files", a, "--dry-run", "--older-than", "0 s", "--allow-recent"),
        ("compact", pk, "--dry-run"),
        ("compact", a, "--dry-run"),
        ("expire-tags", a, "--dry-run"),
        ("expire-changelogs", pk, "--dry-run"),
        ("maintain", a, "--dry-run"),
        ("rollback", a, "--to-snapshot", "3", "--dry-run"),
        ("create-tag", a, "t1", "--dry-run"),
        ("expire-partitions", a, "--dry-run", "--expiration-time", "1 d"),
    ]


def _leaks(text: str) -> list[str]:
    found = [f"{what}: {m.group(0)!r}" for what, rx in LEAKS.items() for m in rx.finditer(text)]
    whole = {m.start() for m in TIME.finditer(text)}
    found += [
        f"time: {text[m.start() : m.start() + 32]!r}"
        for m in TIME_START.finditer(text)
        if m.start() not in whole
    ]
    return found


def test_no_second_format_and_no_repr_in_any_human_output(
    run: Run, tables: dict[str, Path]
) -> None:
    for args in _commands(tables):
        result = run(*args)
        assert result.exit_code in (0, 3), (args, result.stdout, result.stderr)
        leaks = _leaks(result.stdout + result.stderr)
        assert not leaks, (args, leaks, result.stdout)


@pytest.fixture
def eighty(run: Run, monkeypatch: pytest.MonkeyPatch) -> Callable[..., str]:
    monkeypatch.setattr(output, "terminal_width", lambda: 80)

    def show(*args: object) -> str:
        result = run(*args, env={"COLUMNS": "80"})
        assert result.exit_code == 0, result.stderr
        return result.stdout

    return show


def test_the_stopping_reason_wraps_under_its_first_word(
    eighty: Callable[..., str], tables: dict[str, Path]
) -> None:
    text = eighty(
        "expire-snapshots", tables["append"], "--dry-run", "--retain-min", "1", "--retain-max", "2"
    )
    lines = text.splitlines()
    assert all(cell_len(line) <= 80 for line in lines), text
    first = next(n for n, line in enumerate(lines) if line.startswith("  snapshots "))
    hang = lines[first].index(": ") + 2
    assert lines[first + 1].startswith(" " * hang) and lines[first + 1][hang] != " ", text
    assert "(Paimon's rule)" in " ".join(lines[first : first + 6])
