"""rollback --to-timestamp and create-tag --from-timestamp: the snapshot Paimon's
rollback_to_timestamp (latest committed at or before) and create_tag_from_timestamp (first
committed at or after, or an earlier tag's) pick, their refusals, and the result read back."""

from __future__ import annotations

import datetime as dt
import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from support import pypaimon_writer as pw
from support.fixtures import Run
from support.invariants import (
    assert_no_dangling_references,
    assert_rows_intact,
    set_snapshot_times,
    tree_state,
)

from core.table.table import open_table

BASE = 1_767_225_600_000  # 2026-01-01T00:00:00Z
HOUR = 3_600_000


def _timed(
    scenarios: dict[str, pw.Scenario], tmp_path: Path, name: str = "append_partitioned"
) -> tuple[pw.Scenario, Path, Path]:
    """A copy whose snapshot N was committed at BASE + N hours (tags copied alike)."""
    s = scenarios[name]
    wh = tmp_path / "wh"
    root = wh / s.root.parent.name / s.root.name
    shutil.copytree(s.root, root, symlinks=True)
    set_snapshot_times(
        root, {sid: BASE + sid * HOUR for sid in open_table(str(root)).snapshots.ids()}
    )
    for tag in (root / "tag").glob("tag-*"):
        data = json.loads(tag.read_text(encoding="utf-8"))
        data["timeMillis"] = BASE + int(data["id"]) * HOUR
        tag.write_text(json.dumps(data), encoding="utf-8")
    return s, wh, root


@pytest.mark.parametrize(
    ("at", "target"),
    [
        (BASE + 4 * HOUR, 4),  # exactly a commit time
        (BASE + 4 * HOUR + 1, 4),  # just after it: still 4
        (BASE + 5 * HOUR - 1, 4),  # just before 5
        (BASE + 99 * HOUR, 6),  # after the latest: nothing to roll back, latest kept
    ],
)
def test_rollback_to_timestamp_keeps_the_latest_at_or_before(
    run: Run, scenarios: dict[str, pw.Scenario], tmp_path: Path, at: int, target: int
) -> None:
    s, wh, root = _timed(scenarios, tmp_path)
    doc = run.json("rollback", root, "--to-timestamp", str(at), "--force")
    d = doc["plan"]["details"]
    assert d["target_snapshot"] == target and d["target_timestamp_ms"] == at
    assert open_table(str(root)).snapshots.ids()[-1] == target
    assert pw.read_rows_at_root(root) == pw.sort_rows(s.expected[target])
    assert_rows_intact(wh, s)
    assert_no_dangling_references(root)


def test_rollback_to_timestamp_reads_local_time_in_the_zone(
    run: Run, scenarios: dict[str, pw.Scenario], tmp_path: Path
) -> None:
    _s, _wh, root = _timed(scenarios, tmp_path)
    # 2026-01-01 03:30 in Berlin (UTC+1) is 02:30Z: snapshot 2 was committed at 02:00Z
    doc = run.json(
        "rollback",
        root,
        "--to-timestamp",
        "2026-01-01 03:30:00",
        "--timezone",
        "Europe/Berlin",
        "--dry-run",
        "--force",
    )
    assert doc["plan"]["details"]["target_snapshot"] == 2
    human = run(
        "rollback",
        root,
        "--to-timestamp",
        "2026-01-01 03:30:00",
        "--timezone",
        "Europe/Berlin",
        "--dry-run",
        "--force",
    )
    assert "at or before 2026-01-01 03:30:00+01:00" in human.stdout


def test_rollback_to_a_time_before_every_snapshot_is_refused(
    run: Run, scenarios: dict[str, pw.Scenario], tmp_path: Path
) -> None:
    _s, _wh, root = _timed(scenarios, tmp_path)
    state = tree_state(root)
    result = run("rollback", root, "--to-timestamp", str(BASE), "--json")
    assert result.exit_code == 1
    error = json.loads(result.stderr)["error"]
    assert error["kind"] == "rollback_error"
    assert "no snapshot" in error["message"] and "earliest, 1" in error["message"]
    assert tree_state(root) == state


@pytest.mark.parametrize(
    "args",
    [
        ["--to-timestamp", "2026-01-01", "--to-snapshot", "2"],
        ["--to-timestamp", "yesterday"],
    ],
)
def test_rollback_timestamp_usage_errors(
    run: Run, scenarios: dict[str, pw.Scenario], tmp_path: Path, args: list[str]
) -> None:
    _s, _wh, root = _timed(scenarios, tmp_path)
    result = run("rollback", root, *args)
    assert result.exit_code == 2, result.stdout + result.stderr


@pytest.mark.parametrize(
    ("at", "target"),
    [
        (BASE + 3 * HOUR, 3),  # exactly a commit time
        (BASE + 3 * HOUR - 1, 3),  # just before it: the first at or after is 3
        (BASE + 3 * HOUR + 1, 4),
        (BASE, 1),  # before everything: the earliest
    ],
)
def test_create_tag_from_timestamp_takes_the_first_at_or_after(
    run: Run, scenarios: dict[str, pw.Scenario], tmp_path: Path, at: int, target: int
) -> None:
    s, wh, root = _timed(scenarios, tmp_path)
    doc = run.json("create-tag", root, "ft", "--from-timestamp", str(at))
    d = doc["plan"]["details"]
    assert d["snapshot_id"] == target and d["from_timestamp_ms"] == at
    assert pw.read_rows(wh, s.identifier, tag="ft") == pw.sort_rows(s.expected[target])


def test_create_tag_from_timestamp_uses_a_tag_of_an_expired_snapshot(
    run: Run, scenarios: dict[str, pw.Scenario], tmp_path: Path
) -> None:
    """Snapshots 1..3 expired; tag 'mid' keeps snapshot 3: a time before 4 picks the tag's
    snapshot, committed earlier than every snapshot left."""
    s, wh, root = _timed(scenarios, tmp_path)
    expire = run("expire-snapshots", root, "--retain-max", "3", "--retain-min", "1")
    assert expire.exit_code == 0, expire.stderr
    assert open_table(str(root)).snapshots.ids()[0] == 4
    doc = run.json("create-tag", root, "old", "--from-timestamp", str(BASE + 2 * HOUR))
    assert doc["plan"]["details"]["snapshot_id"] == 3
    assert pw.read_rows(wh, s.identifier, tag="old") == pw.sort_rows(s.expected[3])
    assert_no_dangling_references(root)


def test_create_tag_after_every_commit_is_refused(
    run: Run, scenarios: dict[str, pw.Scenario], tmp_path: Path
) -> None:
    _s, _wh, root = _timed(scenarios, tmp_path)
    state = tree_state(root)
    result = run("create-tag", root, "late", "--from-timestamp", str(BASE + 99 * HOUR))
    assert result.exit_code == 1
    assert "no snapshot or tag" in result.stderr
    both = run("create-tag", root, "x", "--from-timestamp", str(BASE), "--snapshot", "2")
    assert both.exit_code == 2 and "--from-timestamp" in both.stderr
    assert tree_state(root) == state


def test_java_reads_the_tag_and_the_rollback(
    run: Run, scenarios: dict[str, pw.Scenario], tmp_path: Path, java: Any
) -> None:
    s, _wh, root = _timed(scenarios, tmp_path)
    assert run("create-tag", root, "ft", "--from-timestamp", str(BASE + 2 * HOUR)).exit_code == 0
    result = run("rollback", root, "--to-timestamp", str(BASE + 5 * HOUR + 5), "--force")
    assert result.exit_code == 0, result.stderr
    doc = java.verify(root)
    assert doc["ok"], doc.get("errors")
    assert doc["latest_snapshot_id"] == 5
    assert doc["entries"]["tag-ft"]["rows"] == len(s.expected[2])
    assert doc["entries"]["latest"]["rows"] == len(s.expected[5])


# -- issue 33, defect 3: a local time is read with the offset of its own date ---------------

# Sydney in June is +10:00 (in January +11:00): snapshot N committed at 22:00Z + N x 15 min
# on 2026-06-06, i.e. 08:00 + N x 15 min on the 7th, Sydney time.
JUNE = int(dt.datetime(2026, 6, 6, 22, tzinfo=dt.timezone.utc).timestamp() * 1000)
QUARTER = 15 * 60_000


def _sydney_june(scenarios: dict[str, pw.Scenario], tmp_path: Path) -> tuple[pw.Scenario, Path]:
    s, _wh, root = _timed(scenarios, tmp_path)
    set_snapshot_times(root, {sid: JUNE + sid * QUARTER for sid in range(1, 7)})
    return s, root


def test_rollback_reads_a_june_time_in_sydney_as_plus_ten(
    run: Run, scenarios: dict[str, pw.Scenario], tmp_path: Path, local_zone: Any
) -> None:
    """TZ=Australia/Sydney, no --timezone: 09:20 on 7 June is 23:20Z (+10:00), so snapshot
    5 (23:15Z) stays and only 6 goes; read as January's +11:00 it was 22:20Z and 2..6 went."""
    local_zone("Australia/Sydney")
    s, root = _sydney_june(scenarios, tmp_path)
    human = run("rollback", root, "--to-timestamp", "2026-06-07 09:20:00", "--force", "--dry-run")
    assert human.exit_code == 0, human.stderr
    assert "at or before 2026-06-07 09:20:00+10:00" in human.stdout
    doc = run.json("rollback", root, "--to-timestamp", "2026-06-07 09:20:00", "--force")
    d = doc["plan"]["details"]
    assert d["target_snapshot"] == 5 and d["target_timestamp_ms"] == JUNE + 5 * QUARTER + 5 * 60_000
    assert open_table(str(root)).snapshots.ids() == [1, 2, 3, 4, 5]
    assert pw.read_rows_at_root(root) == pw.sort_rows(s.expected[5])
    assert_no_dangling_references(root)


def test_create_tag_and_inspect_read_and_show_june_in_sydney(
    run: Run, scenarios: dict[str, pw.Scenario], tmp_path: Path, local_zone: Any
) -> None:
    local_zone("Australia/Sydney")
    s, root = _sydney_june(scenarios, tmp_path)
    # 08:50 local is 22:50Z: the first snapshot at or after it is 4 (23:00Z)
    doc = run.json("create-tag", root, "june", "--from-timestamp", "2026-06-07 08:50:00")
    assert doc["plan"]["details"]["snapshot_id"] == 4
    assert pw.read_rows_at_root(root, tag="june") == pw.sort_rows(s.expected[4])
    shown = run("inspect", root, "snapshots")
    assert shown.exit_code == 0, shown.stderr
    assert "2026-06-07 09:00:00+10:00" in shown.stdout  # snapshot 4
    assert "+11:00" not in shown.stdout


@pytest.mark.parametrize(
    ("day", "wall", "offset", "expired"),
    [
        # Berlin winter, +01:00: 03:30 is 02:30Z, snapshot 2 (02:00Z) is older than it
        ("2026-01-01", "2026-01-01 03:30:00", 1, [1]),
        ("2026-01-01", "2026-01-01 04:30:00", 1, [1, 2]),
        # Berlin summer, +02:00: 04:30 is 02:30Z
        ("2026-07-01", "2026-07-01 04:30:00", 2, [1]),
        ("2026-07-01", "2026-07-01 03:30:00", 2, []),
    ],
)
def test_older_than_reads_a_time_in_berlin_with_the_offset_of_its_season(
    run: Run,
    scenarios: dict[str, pw.Scenario],
    tmp_path: Path,
    local_zone: Any,
    day: str,
    wall: str,
    offset: int,
    expired: list[int],
) -> None:
    """Snapshot N at N o'clock UTC on ``day``; a snapshot expires once its successor is
    older than the cut-off. Read with the other season's offset, one more or one fewer
    would expire (whichever half of the year the test runs in, one case catches it)."""
    local_zone("Europe/Berlin")
    _s, _wh, root = _timed(scenarios, tmp_path)
    midnight = int(dt.datetime.fromisoformat(f"{day}T00:00:00+00:00").timestamp() * 1000)
    set_snapshot_times(root, {sid: midnight + sid * HOUR for sid in range(1, 7)})
    doc = run.json("expire-snapshots", root, "--older-than", wall, "--retain-min", "1", "--dry-run")
    d = doc["plan"]["details"]
    zone = dt.timezone(dt.timedelta(hours=offset))
    assert d["config"]["older_than_ms"] == int(
        dt.datetime.fromisoformat(wall).replace(tzinfo=zone).timestamp() * 1000
    )
    assert d["snapshots"] == expired


# -- issue 33, defect 5: snapshots committed in the same millisecond ------------------------


def _tied(
    scenarios: dict[str, pw.Scenario], tmp_path: Path, tied: range
) -> tuple[pw.Scenario, Path]:
    """Snapshot N at BASE + N hours, except those of ``tied``, all at the first one's time
    (an APPEND and its COMPACT, or two writers, in one millisecond)."""
    s, _wh, root = _timed(scenarios, tmp_path)
    set_snapshot_times(root, dict.fromkeys(tied, BASE + tied[0] * HOUR))
    for tag in (root / "tag").glob("tag-*"):  # a tag holds its snapshot's copy
        data = json.loads(tag.read_text(encoding="utf-8"))
        if int(data["id"]) in tied:
            data["timeMillis"] = BASE + tied[0] * HOUR
            tag.write_text(json.dumps(data), encoding="utf-8")
    return s, root


@pytest.mark.parametrize(
    ("tied", "at", "target"),
    [
        (range(3, 5), BASE + 3 * HOUR, 4),  # the case: 3 and 4 at TIME, 4 stays
        (range(2, 6), BASE + 2 * HOUR, 5),  # four in one millisecond: the last stays
        (range(2, 6), BASE + 2 * HOUR - 1, 1),
        (range(1, 7), BASE + HOUR, 6),  # all of them: nothing to roll back
    ],
)
def test_rollback_keeps_every_snapshot_committed_at_the_time(
    run: Run,
    scenarios: dict[str, pw.Scenario],
    tmp_path: Path,
    tied: range,
    at: int,
    target: int,
) -> None:
    s, root = _tied(scenarios, tmp_path, tied)
    doc = run.json("rollback", root, "--to-timestamp", str(at), "--force")
    assert doc["plan"]["details"]["target_snapshot"] == target
    assert open_table(str(root)).snapshots.ids()[-1] == target
    assert pw.read_rows_at_root(root) == pw.sort_rows(s.expected[target])
    assert_no_dangling_references(root)


@pytest.mark.parametrize(
    ("tied", "at", "target"),
    [
        (range(3, 5), BASE + 3 * HOUR, 3),  # the mirror case: the first of the two
        (range(2, 6), BASE + 2 * HOUR, 2),
        (range(2, 6), BASE + 2 * HOUR + 1, 6),
        (range(1, 7), BASE + HOUR, 1),
    ],
)
def test_create_tag_takes_the_first_snapshot_committed_at_the_time(
    run: Run,
    scenarios: dict[str, pw.Scenario],
    tmp_path: Path,
    tied: range,
    at: int,
    target: int,
) -> None:
    s, root = _tied(scenarios, tmp_path, tied)
    doc = run.json("create-tag", root, "at", "--from-timestamp", str(at))
    assert doc["plan"]["details"]["snapshot_id"] == target
    assert pw.read_rows_at_root(root, tag="at") == pw.sort_rows(s.expected[target])


def test_java_reads_the_tag_and_the_rollback_of_tied_snapshots(
    run: Run, scenarios: dict[str, pw.Scenario], tmp_path: Path, java: Any
) -> None:
    """Snapshots 3 and 4 in one millisecond: the tag on the first, the rollback keeping the
    second, and Apache Paimon reads both back."""
    s, root = _tied(scenarios, tmp_path, range(3, 5))
    at = str(BASE + 3 * HOUR)
    assert run("create-tag", root, "first", "--from-timestamp", at).exit_code == 0
    result = run("rollback", root, "--to-timestamp", at, "--force")
    assert result.exit_code == 0, result.stderr
    doc = java.verify(root)
    assert doc["ok"], doc.get("errors")
    assert doc["latest_snapshot_id"] == 4
    assert doc["entries"]["tag-first"]["rows"] == len(s.expected[3])
    assert doc["entries"]["latest"]["rows"] == len(s.expected[4])
