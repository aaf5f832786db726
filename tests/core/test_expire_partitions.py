"""expire-partitions: Paimon's selection rules and a drop every reader accepts."""

from __future__ import annotations

import datetime as dt
import subprocess
import sys
import time
from pathlib import Path

import pytest
from support import pypaimon_writer as pw
from support.invariants import assert_no_dangling_references, tree_state

from core.errors import InvalidOptionError
from core.ops.expiry.expire_partitions import (
    PartitionExpireFlags,
    apply_partition_expire,
    plan_partition_expire,
)
from core.ops.tags.tags import apply_create_tag, plan_create_tag
from core.retention.partition_time import (
    Formatter,
    PartitionTimeError,
    TimeExtractor,
    fill_pattern,
    parse_default,
)
from core.table.table import open_table

UTC = dt.timezone.utc
# 2024-07-09 10:00 local (UTC here): "7 d" expires everything before 2024-07-02 10:00.
NOW = int(dt.datetime(2024, 7, 9, 10, tzinfo=UTC).timestamp() * 1000)


@pytest.mark.parametrize(
    ("formatter", "text", "expected"),
    [
        ("yyyyMMdd", "20240701", dt.datetime(2024, 7, 1)),
        ("yyyy-MM-dd HH", "2024-07-01 10", dt.datetime(2024, 7, 1, 10)),
        ("yyyy-MM-dd HH:mm", "2024-07-01 10:30", dt.datetime(2024, 7, 1, 10, 30)),
        ("yyyy/MM/dd'T'HH", "2024/07/01T05", dt.datetime(2024, 7, 1, 5)),
        ("yyyyMMddHH", "2024070123", dt.datetime(2024, 7, 1, 23)),
        ("yyyy-MM-dd", "2024-02-30", dt.datetime(2024, 2, 29)),  # SMART clamps the day
        ("dd MMM yyyy", "01 Jul 2024", dt.datetime(2024, 7, 1)),
        ("yyyy-MM-dd[ HH]", "2024-07-01", dt.datetime(2024, 7, 1)),
    ],
)
def test_java_formatters(formatter: str, text: str, expected: dt.datetime) -> None:
    assert Formatter.of(formatter).parse(text) == expected


@pytest.mark.parametrize(
    ("formatter", "text"),
    [("yyyyMMdd", "2024-07-01"), ("yyyyMMdd", "2024070"), ("yyyy-MM", "2024-07")],
)
def test_text_that_does_not_parse(formatter: str, text: str) -> None:
    with pytest.raises(PartitionTimeError):
        Formatter.of(formatter).parse(text)


@pytest.mark.parametrize("formatter", ["yyyy-bb-dd", "yyyy-MM-dd EEE", "yyyy-MM-dd'", "yyyy]"])
def test_unknown_formatters_are_rejected(formatter: str) -> None:
    with pytest.raises(InvalidOptionError):
        Formatter.of(formatter)


def test_default_parser_is_lenient_like_paimon() -> None:
    assert parse_default("2024-7-2 9:00:00") == dt.datetime(2024, 7, 2, 9)
    assert parse_default("2024-07-01") == dt.datetime(2024, 7, 1)
    assert parse_default("2024-13-01") == dt.datetime(2025, 1, 1)  # LENIENT rolls over
    with pytest.raises(PartitionTimeError):
        parse_default("par-1")


def test_pattern_prefers_longer_keys_and_checks_names() -> None:
    assert fill_pattern("$dt1-$dt", ["dt", "dt1"], ["a", "b"]) == "b-a"
    assert fill_pattern("$x $dt", ["dt"], ["2024"]) == "$x 2024"
    with pytest.raises(InvalidOptionError, match="not a partition key"):
        TimeExtractor.of("$dt $hour:00:00", None, ["dt", "hr"])


def _plan(root: Path, **flags: object):
    table = open_table(str(root))
    return table, plan_partition_expire(
        table,
        PartitionExpireFlags(**flags),
        now_ms=NOW,
        zone=UTC,  # type: ignore[arg-type]
    )


def _latest_rows(s: pw.Scenario) -> list[dict[str, object]]:
    return s.expected[max(s.expected)]


def test_values_time_drops_old_partitions(dated) -> None:
    wh, s = dated
    table = open_table(str(s.root))
    plan = plan_partition_expire(table, PartitionExpireFlags("7 d"), now_ms=NOW, zone=UTC)
    got = [p.path for p in plan.details.partitions]
    # dt=2024-07-02 00:00 < 2024-07-02 10:00: expired; 'a,b' shares dt=2024-07-01
    assert got == [
        "dt=2024-07-01/hr=00",
        "dt=2024-07-01/hr=11",
        "dt=2024-07-01/hr=a,b",
        "dt=2024-07-02/hr=00",
        "dt=2024-07-02/hr=11",
    ]
    # not a date: kept, and the plan says which and why
    assert [p.partition for p in plan.details.skipped] == [{"dt": "par-1", "hr": "00"}]
    first = plan.details.partitions[0]
    assert (first.files, first.rows) == (2, 2) and first.bytes > 0
    before_tag = pw.read_rows(wh, s.identifier, tag="before")
    result = apply_partition_expire(table, plan)
    assert result is not None and result.snapshot is not None
    snap = result.snapshot
    assert snap.id == 4 and snap.commit_kind == "OVERWRITE"
    expected = [r for r in _latest_rows(s) if r["dt"] not in ("2024-07-01", "2024-07-02")]
    assert pw.read_rows(wh, s.identifier) == expected
    assert snap.total_record_count == len(expected)
    assert snap.delta_record_count == len(expected) - len(_latest_rows(s))
    assert pw.read_rows(wh, s.identifier, tag="before") == before_tag
    assert pw.read_rows(wh, s.identifier, snapshot_id=3) == _latest_rows(s)
    kinds = pw.delta_entries(wh, s.identifier, 4)
    assert {k for k, _ in kinds} == {pw.DELETE} and len(kinds) == 9
    assert_no_dangling_references(s.root)
    # Nothing left to expire: a second run plans nothing.
    _, again = _plan(s.root, expiration_time="7 d")
    assert again.details.partitions == () and again.empty


def test_pattern_over_two_columns_with_comma_value(dated) -> None:
    wh, s = dated
    table, plan = _plan(
        s.root, expiration_time="8 d", timestamp_pattern="$dt $hr:00:00", max_expires=10
    )
    # threshold 2024-07-01 10:00: hr=00 expires, hr=11 does not; 'a,b' does not parse
    assert [p.partition for p in plan.details.partitions] == [{"dt": "2024-07-01", "hr": "00"}]
    skipped = {tuple(p.partition.values()) for p in plan.details.skipped}
    assert ("2024-07-01", "a,b") in skipped
    apply_partition_expire(table, plan)
    rows = pw.read_rows(wh, s.identifier)
    assert [r for r in rows if r["hr"] == "a,b"] == [{"id": 900, "dt": "2024-07-01", "hr": "a,b"}]
    assert not [r for r in rows if (r["dt"], r["hr"]) == ("2024-07-01", "00")]


def test_formatter_mismatch_expires_nothing_and_writes_nothing(dated) -> None:
    _, s = dated
    before = tree_state(s.root)
    table, plan = _plan(s.root, expiration_time="1 d", timestamp_formatter="yyyyMMdd")
    assert plan.details.partitions == () and len(plan.details.skipped) == 12
    assert apply_partition_expire(table, plan) is None
    assert tree_state(s.root) == before


def test_max_expires_keeps_string_order(dated) -> None:
    _, s = dated
    _, plan = _plan(s.root, expiration_time="7 d", max_expires=2)
    assert [p.path for p in plan.details.partitions] == [
        "dt=2024-07-01/hr=00",
        "dt=2024-07-01/hr=11",
    ]
    assert plan.details.capped == 3


def test_update_time_uses_newest_file_creation(dated) -> None:
    _, s = dated
    now = int(dt.datetime.now(UTC).timestamp() * 1000)
    table = open_table(str(s.root))
    zone = dt.datetime.now().astimezone().tzinfo
    assert zone is not None
    young = plan_partition_expire(
        table, PartitionExpireFlags("1 d", strategy="update-time"), now_ms=now, zone=zone
    )
    assert young.details.partitions == ()
    later = now + 2 * 86_400_000
    old = plan_partition_expire(
        table, PartitionExpireFlags("1 d", strategy="update-time"), now_ms=later, zone=zone
    )
    assert len(old.details.partitions) == 12  # every partition, even 'par-1'


def test_bad_options_are_refused(dated) -> None:
    _, s = dated
    with pytest.raises(InvalidOptionError, match="no expiration time"):
        _plan(s.root)
    with pytest.raises(InvalidOptionError, match="not a partition key"):
        _plan(s.root, expiration_time="1 d", timestamp_pattern="$day")
    with pytest.raises(InvalidOptionError, match="unknown strategy"):
        _plan(s.root, expiration_time="1 d", strategy="sometimes")


def test_concurrent_pypaimon_writer_loses_nothing(dated) -> None:
    """A pypaimon writer commits in a loop in another process while we drop partitions
    and create tags: no lost commit, no duplicate snapshot id, every snapshot readable."""
    wh, s = dated
    commits = 25
    script = Path(__file__).resolve().parents[1] / "support" / "partition_writer_loop.py"
    env_path = str(Path(__file__).resolve().parents[1])
    proc = subprocess.Popen(
        [sys.executable, str(script), str(wh), s.identifier, str(commits), "2024-07-09"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={"PYTHONPATH": env_path, "PATH": "/usr/bin:/bin"},
    )
    ours = 0
    try:
        deadline = time.monotonic() + 60
        while open_table(str(s.root)).snapshots.latest_id() == 3:  # writer started
            assert time.monotonic() < deadline and proc.poll() is None, "writer never committed"
            time.sleep(0.01)
        for i, expiration in enumerate(("9 d", "8 d", "7 d", "6 d")):
            table, plan = _plan(s.root, expiration_time=expiration)
            result = apply_partition_expire(table, plan)
            ours += int(result is not None and result.snapshot is not None)
            tag = plan_create_tag(
                table,
                f"t{i}",
                snapshot_id=None,
                time_retained_ms=None,
                replace_existing=False,
                now_local=dt.datetime.now(),
                now_ms=NOW,
            )
            apply_create_tag(open_table(str(s.root)), tag)
    finally:
        out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    table = open_table(str(s.root))
    ids = table.snapshots.ids()
    assert ids == list(range(1, 3 + commits + ours + 1))
    assert ours >= 3
    kinds = [table.snapshots.snapshot(i).commit_kind for i in ids]
    assert kinds.count("OVERWRITE") == ours
    # The writer really raced us: it committed after our first drop.
    assert kinds.index("OVERWRITE") < len(kinds) - 1 - kinds[::-1].index("APPEND")
    rows = pw.read_rows(wh, s.identifier)
    assert {r["id"] for r in rows if r["id"] >= 10_000} == set(range(10_000, 10_000 + commits))
    assert not [r for r in rows if r["dt"] < "2024-07-03"]
    for sid in ids:  # every snapshot reads back
        pw.read_rows(wh, s.identifier, snapshot_id=sid)
    for name in table.tags.names():
        tag = table.tags.tag(name)
        assert pw.read_rows(wh, s.identifier, tag=name) == pw.read_rows(
            wh, s.identifier, snapshot_id=tag.snapshot.id
        )
    assert_no_dangling_references(s.root)
