"""Human output a newcomer can read and grep: one time format (with the zone's offset),
one duration format, real sizes, singular/plural, nothing said twice, paths never folded."""

from __future__ import annotations

import datetime as dt
import json
import os
from pathlib import Path
from zoneinfo import ZoneInfo

import pyarrow as pa
import pytest
from support import pypaimon_writer as pw

from core.runtime.wording import plural
from paimon_cli.output import human_duration, human_limit, human_time, human_wall_clock


def test_formats() -> None:
    assert human_duration(3_600_000) == "1 h"
    assert human_duration(5_400_000) == "1 h 30 min"
    assert human_duration(1_992_120_000) == "23 d 1 h 22 min"
    assert human_duration(500) == "500 ms" and human_duration(0) == "0 s"
    assert human_limit(2**31 - 1) == "unlimited" and human_limit(5) == "5"
    assert plural(1, "problem") == "1 problem" and plural(2, "problem") == "2 problems"
    tokyo = ZoneInfo("Asia/Tokyo")
    assert human_time(0, tokyo) == "1970-01-01 09:00:00+09:00"
    assert human_wall_clock("1970-01-01 09:00:00", tokyo) == "1970-01-01 09:00:00+09:00"
    assert human_wall_clock(dt.datetime(1970, 1, 1), dt.timezone.utc) == (
        "1970-01-01 00:00:00+00:00"
    )


@pytest.mark.parametrize("view", ["summary", "snapshots", "consumers", "files", "partitions"])
def test_times_carry_the_table_zone_offset_whatever_tz_says(run, scenarios, view: str) -> None:
    root = scenarios["tags_consumers_branches"].root
    outputs = {
        tz: run("inspect", root, view, "--timezone", "Asia/Kolkata", env={"TZ": tz}).stdout
        for tz in ("UTC", "America/New_York")
    }
    assert outputs["UTC"] == outputs["America/New_York"]
    assert "+05:30" in outputs["UTC"]
    assert "Z\n" not in outputs["UTC"] and "Z " not in outputs["UTC"]


def test_durations_and_limits_read_as_people_write_them(run, scenarios) -> None:
    root = scenarios["append_partitioned"].root
    retention = run("inspect", root, "retention").stdout
    assert "time 1 h," in retention and "retain-max unlimited" in retention
    assert "min," not in retention
    plan = run("expire-snapshots", root, "--retain-min", "1", "--dry-run").stdout
    assert "(time-retained 1 h, default)" in plan and "3600 s" not in plan
    options = run("inspect", root, "options").stdout
    line = next(x for x in options.splitlines() if x.startswith("snapshot.num-retained.max"))
    assert "unlimited" in line and "2147483647" not in options


def test_retain_min_says_how_many_snapshots_it_keeps(run, scenarios) -> None:
    # 6 snapshots, retain-min 10 (Paimon's default): all of them, not "the newest 10".
    text = run("inspect", scenarios["append_partitioned"].root, "retention").stdout
    assert "retain-min 10 keeps all 6 snapshots" in text
    assert "the newest 10" not in text
    assert "would expire now: 0 snapshots," in text


def test_expire_plans_and_reports_show_real_sizes(run, scenarios, copy_table) -> None:
    root = copy_table(scenarios["many_commits"].root)
    args = ["expire-snapshots", root, "--retain-max", "3", "--retain-min", "1"]
    plan = run.json(*args, "--dry-run")["plan"]
    actions = [a for p in plan["phases"] for a in p["actions"] if a["op"] == "delete"]
    metadata = [a for a in actions if a["kind"] in ("snapshot", "manifest-list")]
    assert {a["kind"] for a in metadata} == {"snapshot", "manifest-list"}
    for a in metadata:
        assert a["size"] == os.path.getsize(a["path"]) > 0, a
    human = run(*args, "--dry-run").stdout
    assert not [
        x
        for x in human.splitlines()
        if x.startswith(("snapshot ", "manifest-list ")) and x.rstrip().endswith("-")
    ]
    doc = run.json(*args)
    done = sum(p["bytes"] for p in doc["report"]["phases"])
    assert done == plan["totals"]["bytes"] > 0
    assert all(not os.path.exists(a["path"]) for a in metadata)


def test_delete_tag_typo_fails_and_deletes_nothing(run, scenarios, copy_table) -> None:
    from support.invariants import tree_state

    root = copy_table(scenarios["tags_consumers_branches"].root)
    before = tree_state(root)
    tags = sorted(p.name.removeprefix("tag-") for p in (root / "tag").iterdir())
    typo = tags[0] + "x"
    result = run("delete-tag", root, f"{tags[0]},{typo}")
    assert result.exit_code == 1, result.stdout
    assert f"tag {typo!r} does not exist" in result.stderr
    assert f"did you mean {tags[0]!r}?" in result.stderr
    assert tree_state(root) == before
    as_json = run("delete-tag", root, typo, "--json")
    assert as_json.exit_code == 1 and as_json.stdout == ""
    assert json.loads(as_json.stderr)["error"]["kind"] == "tag_error"


def test_a_bare_relative_name_is_a_path_when_it_is_one(
    run, scenarios, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = scenarios["append_partitioned"].root
    monkeypatch.chdir(root.parent)
    doc = run.json("inspect", root.name)
    assert doc["table"] == str(root)
    # A name that is no directory here is still an error, in our words.
    missing = run("inspect", "no_such_table")
    assert missing.exit_code == 2 and "neither a table location nor DB.TABLE" in missing.stderr


def test_paths_are_never_folded_in_pipes(run, scenarios) -> None:
    root = scenarios["path_directory"].root
    files = run.json("inspect", root, "files")["files"]
    lines = run("inspect", root, "files").stdout.splitlines()
    for f in files:
        rel = f["path"].removeprefix(f"{root}/")
        assert any(rel in line for line in lines), rel


def test_create_tag_shows_no_empty_totals(run, scenarios, copy_table) -> None:
    root = copy_table(scenarios["append_partitioned"].root)
    out = run("create-tag", root, "release").stdout
    assert "create tag release on snapshot" in out
    assert "total" not in out and "0 B" not in out


def test_nothing_to_do_is_said_once(run, tmp_path: Path) -> None:
    pw.create_table(tmp_path / "wh", "db.empty", pa.schema([("id", pa.int64())]))
    root = pw.table_root(tmp_path / "wh", "db.empty")
    out = run("expire-snapshots", root, "--retain-min", "1").stdout
    assert out.count("nothing to do") == 1 and "no snapshots" in out


def test_one_problem_is_one_problem(run, scenarios, copy_table) -> None:
    root = copy_table(scenarios["append_partitioned"].root)
    victim = run.json("inspect", root, "files")["files"][0]["path"]
    os.unlink(victim)
    result = run("inspect", root, "--check")
    assert result.exit_code == 3
    assert "1 problem among" in result.stdout and "problems" not in result.stdout


def test_warnings_on_stderr_are_never_folded(capsys: pytest.CaptureFixture[str]) -> None:
    from paimon_cli.output import Mode, Output

    path = "s3://lake/wh/db.db/orders/" + "/".join(["dt=2024-07-01"] * 20) + "/data-0.parquet"
    Output(Mode.HUMAN).warn(f"partition kept: {path}")
    assert any(path in line for line in capsys.readouterr().err.splitlines())


def test_wording_counts_and_durations(run, scenarios, copy_table) -> None:
    """Issue 25.6: "1 file", not "1 files"; "nothing to do" once; a partial run says how
    long it took before what comes next ("finishes it in 7 ms" read as a promise)."""
    import io

    from core.runtime.report import ExecutionReport, PhaseReport
    from paimon_cli.output import Mode, Output
    from paimon_cli.render.plans import render_report

    root = copy_table(scenarios["many_commits"].root)
    changelogs = run("expire-changelogs", root).stdout
    assert changelogs.count("nothing to do") == 1, changelogs
    compacted = run("compact", root, "--dry-run").stdout
    assert "-> about 1 file (" in compacted and "1 files" not in compacted, compacted
    out = Output(Mode.HUMAN, no_color=True)
    buffer = io.StringIO()
    out.console.file = buffer
    failed = PhaseReport("data-files", done=3, failures=[("/t/x", "permission denied")])
    render_report(ExecutionReport(phases=[failed], seconds=0.007), out)
    text = buffer.getvalue()
    assert "partial in 7 ms: the journal stays and the next run finishes it" in text, text
    render_report(ExecutionReport(phases=[PhaseReport("data-files", done=1)], seconds=2.5), out)
    assert "done in 2 s" in buffer.getvalue()
