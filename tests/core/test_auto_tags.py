"""Automatic tags: Paimon's TagPeriodHandler names and TagAutoCreation's choices, on
pypaimon-written tables whose commit times are rewritten (never slept for)."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from zoneinfo import ZoneInfo

import pyarrow as pa
import pytest
from support import pypaimon_writer as pw
from support.invariants import set_snapshot_times

from core.errors import InvalidOptionError
from core.format.options import TableOptions
from core.ops.tags.auto_tags import apply_auto_tags, plan_auto_tags
from core.ops.tags.tags import is_auto_tag
from core.retention.tag_period import period_handler
from core.table.table import open_table

UTC = dt.timezone.utc
D1 = dt.datetime(2026, 3, 10, tzinfo=UTC)
NOW = int((D1 + dt.timedelta(days=30)).timestamp() * 1000)
HOUR = 3_600_000


def at(days: float, hours: float = 0) -> int:
    """Epoch ms of D1 + days + hours (UTC)."""
    return int((D1 + dt.timedelta(days=days, hours=hours)).timestamp() * 1000)


def handler(**options: str):  # type: ignore[no-untyped-def]
    return period_handler(TableOptions(options))


# -- TagPeriodHandler ------------------------------------------------------------------------
def test_daily_names_parse_strictly_and_only_before_the_first_space() -> None:
    h = handler()
    assert h.time_to_tag(dt.datetime(2026, 3, 10)) == "2026-03-10"
    assert h.is_auto_tag("2026-03-10")
    assert h.is_auto_tag("2026-03-10 anything")  # Java parses tag.split(" ")[0]
    assert not h.is_auto_tag("2026-3-10")  # fixed width
    assert not h.is_auto_tag("2026-02-30")  # STRICT: no such day
    assert not h.is_auto_tag("release-1")
    plain = handler(**{"tag.period-formatter": "without_dashes"})
    assert plain.time_to_tag(dt.datetime(2026, 3, 10)) == "20260310"
    assert not plain.is_auto_tag("2026-03-10")


@pytest.mark.parametrize(
    ("options", "name"),
    [
        ({"tag.creation-period": "hourly"}, "2026-03-10 07"),
        (
            {"tag.creation-period": "hourly", "tag.period-formatter": "without_dashes"},
            "20260310 07",
        ),
        (
            {
                "tag.creation-period": "hourly",
                "tag.period-formatter": "without_dashes_and_spaces",
            },
            "2026031007",
        ),
        # Paimon names two-hour tags with dashes whatever the formatter says.
        (
            {"tag.creation-period": "two-hours", "tag.period-formatter": "without_dashes"},
            "2026-03-10 07",
        ),
        ({"tag.creation-period-duration": "15 min"}, "202603100700"),
    ],
)
def test_period_names(options: dict[str, str], name: str) -> None:
    h = handler(**options)
    assert h.time_to_tag(dt.datetime(2026, 3, 10, 7)) == name
    assert h.tag_to_time(name) == dt.datetime(2026, 3, 10, 7)


def test_normalize_to_previous_tag_is_the_period_before() -> None:
    assert handler().normalize_to_previous_tag(dt.datetime(2026, 3, 10, 14, 30)) == dt.datetime(
        2026, 3, 9
    )
    two = handler(**{"tag.creation-period": "two-hours"})
    assert two.normalize_to_previous_tag(dt.datetime(2026, 3, 10, 7, 59)) == dt.datetime(
        2026, 3, 10, 4
    )


def test_delay_of_a_whole_period_is_refused() -> None:
    with pytest.raises(InvalidOptionError, match="tag.creation-delay"):
        handler().validate_delay(86_400_000)
    handler().validate_delay(86_400_000 - 1)
    with pytest.raises(InvalidOptionError, match="tag.creation-period"):
        handler(**{"tag.creation-period": "weekly"})


# -- TagAutoCreation on real tables ----------------------------------------------------------
def auto_table(
    tmp_path: Path, times: list[int], **options: str
) -> tuple[Path, Path, dict[int, list[dict[str, object]]]]:
    """An append table with one snapshot per entry of ``times`` (commit time rewritten)."""
    wh = tmp_path / "wh"
    opts = {"sink.process-time-zone": "UTC", **options}
    schema = pa.schema([("id", pa.int64())])
    table = pw.create_table(wh, "db.auto", schema, options=opts)
    rows: dict[int, list[dict[str, object]]] = {}
    for i in range(len(times)):
        sid = pw.append(table, [{"id": i}])
        rows[sid] = [{"id": k} for k in range(i + 1)]
    root = pw.table_root(wh, "db.auto")
    set_snapshot_times(root, dict(zip(sorted(rows), times, strict=True)))
    return wh, root, rows


def run_auto(root: Path) -> list[str]:
    table = open_table(str(root))
    planned = plan_auto_tags(table, now_ms=NOW, zone=UTC)
    assert planned.delete_first == ()
    return apply_auto_tags(table, planned.plan)


def tag_snapshots(root: Path) -> dict[str, int]:
    return {t.name: t.snapshot.id for t in open_table(str(root)).tags.tags()}


TIMES = [at(0, 10), at(0, 20), at(1, 1), at(1, 5), at(3, 0.5), at(3, 2)]


def test_process_time_daily_tags_the_closed_periods(tmp_path: Path) -> None:
    wh, root, rows = auto_table(tmp_path, TIMES, **{"tag.automatic-creation": "process-time"})
    created = run_auto(root)
    # First snapshot: no progress yet, so the period before its own is tagged at once;
    # then a tag each time a snapshot reaches the end of the next period (TagAutoCreation).
    expected = {"2026-03-09": 1, "2026-03-10": 3, "2026-03-12": 5}
    assert tag_snapshots(root) == expected
    assert sorted(created) == sorted(expected)
    for name, sid in expected.items():
        assert pw.read_rows(wh, "db.auto", tag=name) == pw.sort_rows(rows[sid])
    assert run_auto(root) == []  # progress is restored from the newest automatic tag


def test_creation_delay_and_automatic_completion(tmp_path: Path) -> None:
    _, root, _ = auto_table(
        tmp_path,
        TIMES,
        **{"tag.automatic-creation": "process-time", "tag.creation-delay": "2 h"},
    )
    run_auto(root)
    # 2026-03-11 01:00 minus 2 h has not reached the end of 03-10; 05:00 has.
    assert tag_snapshots(root) == {"2026-03-09": 1, "2026-03-10": 4, "2026-03-12": 5}
    _, root2, _ = auto_table(
        tmp_path / "completion",
        TIMES,
        **{"tag.automatic-creation": "process-time", "tag.automatic-completion": "true"},
    )
    run_auto(root2)
    # Completion names the tag after the next period instead of skipping to the newest.
    assert tag_snapshots(root2) == {
        "2026-03-09": 1,
        "2026-03-10": 3,
        "2026-03-11": 5,
        "2026-03-12": 6,
    }


def test_progress_continues_from_an_existing_automatic_tag(tmp_path: Path) -> None:
    wh, root, _ = auto_table(tmp_path, TIMES, **{"tag.automatic-creation": "process-time"})
    pw.create_tag(pw.open_table(wh, "db.auto"), "2026-03-10", 2)
    pw.create_tag(pw.open_table(wh, "db.auto"), "manual", 4)  # not automatic: ignored
    run_auto(root)
    # From snapshot 3 on, the next tag is 03-11, due once a snapshot reaches 03-12 00:00.
    assert tag_snapshots(root) == {"2026-03-10": 2, "manual": 4, "2026-03-12": 5}


def test_tag_default_time_retained_is_written_as_java_does(tmp_path: Path) -> None:
    _, root, _ = auto_table(
        tmp_path,
        TIMES[:1],
        **{"tag.automatic-creation": "process-time", "tag.default-time-retained": "2 d"},
    )
    run_auto(root)
    data = json.loads((root / "tag" / "tag-2026-03-09").read_text())
    assert data["tagTimeRetained"] == 172800.0
    assert data["tagCreateTime"][:3] == [2026, 4, 9]  # now (NOW) on the local wall clock
    tag = open_table(str(root)).tags.tag("2026-03-09")
    assert tag.time_retained_ms == 2 * 86_400_000


def test_watermark_mode_uses_the_watermark_and_skips_snapshots_without(tmp_path: Path) -> None:
    _, root, _ = auto_table(tmp_path, TIMES, **{"tag.automatic-creation": "watermark"})
    # Only snapshots 4 and 6 carry a watermark (the commit times say nothing in this mode).
    set_snapshot_times(root, {4: TIMES[3], 6: TIMES[5]}, watermarks={4: at(5, 3), 6: at(7, 1)})
    run_auto(root)
    assert tag_snapshots(root) == {"2026-03-14": 4, "2026-03-16": 6}


def test_batch_mode_tags_the_latest_snapshot_and_moves_the_tag(tmp_path: Path) -> None:
    wh, root, _ = auto_table(tmp_path, TIMES[:2], **{"tag.automatic-creation": "batch"})
    run_auto(root)
    assert tag_snapshots(root) == {"batch-write-2026-03-10": 2}
    assert run_auto(root) == []  # already on the latest snapshot
    pw.append(pw.open_table(wh, "db.auto"), [{"id": 99}])
    set_snapshot_times(root, {3: at(0, 23)})
    planned = plan_auto_tags(open_table(str(root)), now_ms=NOW, zone=UTC)
    assert planned.delete_first == ("batch-write-2026-03-10",)
    assert [r.snapshot_id for r in planned.plan.details.tags] == [3]


def test_no_automatic_creation_plans_nothing(tmp_path: Path) -> None:
    _, root, _ = auto_table(tmp_path, TIMES[:2])
    planned = plan_auto_tags(open_table(str(root)), now_ms=NOW, zone=UTC)
    assert planned.plan.empty
    assert planned.plan.details.mode == "none"


def test_expire_tags_counts_the_same_automatic_tags(tmp_path: Path) -> None:
    _, root, _ = auto_table(
        tmp_path,
        TIMES[:1],
        **{"tag.automatic-creation": "process-time", "tag.creation-period": "hourly"},
    )
    table = open_table(str(root))
    assert is_auto_tag("2026-03-10 07", table)
    assert not is_auto_tag("2026-03-10", table)


# -- the machine's zone when sink.process-time-zone is unset (issue 33, defect 3) ----------
def _zoned_table(tmp_path: Path, name: str, times: list[int], **options: str) -> Path:
    wh = tmp_path / name
    table = pw.create_table(wh, "db.auto", pa.schema([("id", pa.int64())]), options=options)
    for i in range(len(times)):
        pw.append(table, [{"id": i}])
    root = pw.table_root(wh, "db.auto")
    set_snapshot_times(root, dict(enumerate(times, start=1)))
    return root


# Around midnight in Sydney in June (+10:00): 23:30 on the 6th and 00:30 on the 7th. Read
# with January's +11:00 both fell on the 7th.
SYDNEY_JUNE = [
    int(dt.datetime.fromisoformat(t).timestamp() * 1000)
    for t in (
        "2026-06-05T12:00:00+00:00",
        "2026-06-06T13:30:00+00:00",
        "2026-06-06T14:30:00+00:00",
        "2026-06-07T13:59:59.999+00:00",
        "2026-06-07T14:00:00+00:00",
    )
]


@pytest.mark.parametrize("mode", ["process-time", "batch"])
def test_days_follow_the_machine_zone_with_its_rules(
    tmp_path: Path, local_zone: object, mode: str
) -> None:
    """TZ=Australia/Sydney and no sink.process-time-zone: the tags are those of a table
    whose option names Sydney, and a snapshot at 23:30 local is on its own day."""
    local_zone("Australia/Sydney")  # type: ignore[operator]
    machine = _zoned_table(tmp_path, "machine", SYDNEY_JUNE, **{"tag.automatic-creation": mode})
    named = _zoned_table(
        tmp_path,
        "named",
        SYDNEY_JUNE,
        **{"tag.automatic-creation": mode, "sink.process-time-zone": "Australia/Sydney"},
    )
    sydney = ZoneInfo("Australia/Sydney")

    def planned(root: Path) -> list[tuple[str, int]]:
        plan = plan_auto_tags(open_table(str(root)), now_ms=NOW, zone=sydney).plan
        return [(t.tag, t.snapshot_id) for t in plan.details.tags]

    got = planned(machine)
    assert got == planned(named)
    if mode == "batch":
        assert got == [("batch-write-2026-06-08", 5)]  # 14:00Z on the 7th: 00:00 on the 8th
    else:
        # 23:30 on the 6th closes the 5th; 00:30 on the 7th the 6th; 23:59:59.999 on the
        # 7th is still the 7th, its last millisecond; 00:00 on the 8th closes it
        assert got == [("2026-06-04", 1), ("2026-06-05", 2), ("2026-06-06", 3), ("2026-06-07", 5)]
