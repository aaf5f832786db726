"""paimon maintain: one run over a warehouse of pypaimon-written tables leaves each table as
the single commands with the table's own options would (compared on copies)."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest
from support import pypaimon_writer as pw
from support.fixtures import Run, dev_dependency
from support.invariants import (
    assert_no_dangling_references,
    files_under,
    plant,
    tree_state,
)
from support.lifecycle import apply
from support.maintain_tables import build_warehouse, now_ms

from core.io.fileio import FileIO
from core.ops.expiry.consumer_expire import plan_consumer_expire
from core.ops.expiry.consumer_expire import recheck as consumer_recheck
from core.ops.tags.auto_tags import apply_auto_tags, plan_auto_tags
from core.runtime.executors.local import LocalExecutor
from core.runtime.runs import read_records
from core.runtime.timeparse import resolve_zone
from core.table.table import open_table


@pytest.fixture(scope="module")
def source(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    wh = tmp_path_factory.mktemp("maintain-src") / "wh"
    return wh, build_warehouse(wh)


def copy_warehouse(src: Path, dest: Path) -> Path:
    shutil.copytree(src, dest, symlinks=True)
    return dest


def single_commands(run: Run, wh: Path, name: str) -> None:
    """What an operator would run by hand for this table, driven by its options."""
    root = pw.table_root(wh, f"db.{name}")
    table = open_table(str(root))
    opts = table.options
    if opts.get("tag.automatic-creation"):  # no single command: the core step itself
        planned = plan_auto_tags(table, now_ms=now_ms(), zone=resolve_zone(None))
        apply_auto_tags(table, planned.plan)
    if table.tags.names():
        assert run("expire-tags", root).exit_code == 0
    if opts.get("partition.expiration-time"):
        assert run("expire-partitions", root).exit_code == 0
    if opts.get("consumer.expiration-time"):
        plan = plan_consumer_expire(table, now_ms=now_ms())
        with LocalExecutor(1) as ex:
            apply(table, plan, recheck=consumer_recheck, executor=ex, journal=False)
    assert run("expire-snapshots", root).exit_code == 0


def comparable(root: Path) -> tuple[set[str], int]:
    """Relative paths of everything but manifests (commits name them with fresh UUIDs),
    plus how many manifests there are."""
    names = {str(Path(p).relative_to(root)) for p in files_under(root)}
    manifests = {n for n in names if n.startswith("manifest/")}
    return names - manifests, len(manifests)


def test_one_run_equals_the_single_commands_and_everything_reads(
    run: Run, source: tuple[Path, dict[str, Any]], tmp_path: Path
) -> None:
    src, expected = source
    wh = copy_warehouse(src, tmp_path / "maintained")
    by_hand = copy_warehouse(src, tmp_path / "by-hand")
    result = run("maintain", "*.*", "--warehouse", wh, "--json")
    assert result.exit_code == 0, result.stderr
    doc = json.loads(result.stdout)
    for name in expected:
        single_commands(run, by_hand, name)
    statuses = {t["name"]: t["status"] for t in doc["tables"]}
    assert statuses == {f"db.{n}": "ok" for n in expected}
    for name, rows in expected.items():
        a, b = pw.table_root(wh, f"db.{name}"), pw.table_root(by_hand, f"db.{name}")
        assert comparable(a) == comparable(b), name
        table = open_table(str(a))
        for sid in table.snapshots.ids():
            got = pw.read_rows(wh, f"db.{name}", snapshot_id=sid)
            if name != "partitions" or sid in rows:
                assert got == pw.sort_rows(rows[sid]), (name, sid)
        for tag in table.tags.tags():
            pw.read_rows(wh, f"db.{name}", tag=tag.name)
        assert_no_dangling_references(a)
        assert run("inspect", a, "--check").exit_code == 0
    # What each table's options asked for happened.
    steps = {t["name"]: {s["step"]: s for s in t["steps"]} for t in doc["tables"]}
    assert steps["db.by_count"]["expire-snapshots"]["document"]["plan"]["details"]["snapshots"] == [
        1,
        2,
        3,
    ]
    assert open_table(str(pw.table_root(wh, "db.by_time"))).snapshots.ids() == [4, 5, 6]
    assert sorted(open_table(str(pw.table_root(wh, "db.tagged"))).tags.names()) == [
        "keep",
        "long",
    ]
    auto = open_table(str(pw.table_root(wh, "db.auto")))
    assert [t.snapshot.id for t in auto.tags.tags()] == [4, 5]
    assert steps["db.auto"]["auto-tags"]["document"]["report"]["status"] == "ok"
    assert (pw.table_root(wh, "db.consumers") / "consumer" / "consumer-alive").exists()
    assert not (pw.table_root(wh, "db.consumers") / "consumer" / "consumer-dead").exists()
    assert open_table(str(pw.table_root(wh, "db.consumers"))).snapshots.ids() == [4, 5, 6]
    # Decoupled: snapshots 1..3 moved to changelog-1..3; changelog.num-retained.max 3 then
    # expires changelogs 1 and 2 (the newest long-lived changelog always stays).
    assert open_table(str(pw.table_root(wh, "db.decoupled"))).changelogs.ids() == [3]
    changelogs = steps["db.decoupled"]["expire-changelogs"]
    assert changelogs["status"] == "ok"
    assert "within expire-snapshots" in changelogs["reason"]
    decoupled = next(t for t in doc["tables"] if t["name"] == "db.decoupled")
    assert decoupled["totals"]["changelogs_expired"] == 2
    parts = steps["db.partitions"]["expire-partitions"]["document"]
    assert parts["report"]["status"] == "ok" and parts["plan"]["details"]["partitions"]
    plain = steps["db.plain"]
    assert [s for s, v in plain.items() if v["status"] != "skipped"] == [
        "expire-snapshots",
        "check",
    ]
    assert plain["check"]["document"]["check"]["ok"] is True
    assert open_table(str(pw.table_root(wh, "db.plain"))).snapshots.ids() == [1, 2, 3]
    assert doc["summary"] == {
        "tables": len(expected),
        "maintained": len(expected),
        "failed": 0,
        "skipped": 0,
    }


def test_dry_run_changes_nothing_and_shows_every_step(
    run: Run, source: tuple[Path, dict[str, Any]], tmp_path: Path
) -> None:
    src, expected = source
    wh = copy_warehouse(src, tmp_path / "wh")
    plant(pw.table_root(wh, "db.plain") / "bucket-0" / "data-orphan.parquet")
    before = tree_state(wh)
    result = run("maintain", "*.*", "-w", wh, "--dry-run", "--orphans")
    assert result.exit_code == 0, result.stderr
    assert tree_state(wh) == before
    assert "dry run" in result.stdout
    for name in expected:
        assert f"db.{name}" in result.stdout
    doc = run.json("maintain", "*.*", "-w", wh, "--dry-run", "--orphans")
    assert tree_state(wh) == before
    plain = next(t for t in doc["tables"] if t["name"] == "db.plain")
    orphans = next(s for s in plain["steps"] if s["step"] == "delete-orphan-files")
    assert orphans["document"]["plan"]["details"]["orphan_count"] == 1
    assert orphans["document"]["dry_run"] is True
    auto = next(t for t in doc["tables"] if t["name"] == "db.auto")
    planned = next(s for s in auto["steps"] if s["step"] == "auto-tags")
    assert len(planned["document"]["plan"]["details"]["tags"]) == 5


def test_a_broken_table_fails_alone_and_stops_its_later_steps(
    run: Run, source: tuple[Path, dict[str, Any]], tmp_path: Path
) -> None:
    src, _ = source
    wh = copy_warehouse(src, tmp_path / "wh")
    broken = pw.table_root(wh, "db.by_count")
    (broken / "snapshot" / "snapshot-2").write_text("{ not json")
    before = files_under(broken)
    orphan = plant(pw.table_root(wh, "db.plain") / "bucket-0" / "data-orphan.parquet")
    result = run("maintain", "*.*", "-w", wh, "--orphans", "--json")
    assert result.exit_code == 3
    doc = json.loads(result.stdout)
    status = {t["name"]: t["status"] for t in doc["tables"]}
    assert status.pop("db.by_count") == "failed"
    assert set(status.values()) == {"ok"}
    bad = {s["step"]: s for s in next(t for t in doc["tables"] if t["status"] == "failed")["steps"]}
    assert bad["expire-snapshots"]["status"] == "failed"
    assert bad["expire-snapshots"]["error"]["kind"] == "corrupt_metadata"
    assert bad["delete-orphan-files"]["status"] == "not-run"  # never after a failed expiry
    # The check runs whatever failed before it (it changes nothing) and names the damage.
    assert bad["check"]["status"] == "failed"
    problems = bad["check"]["document"]["check"]["problems"]
    assert [p["path"] for p in problems] == [str(broken / "snapshot" / "snapshot-2")]
    assert files_under(broken) == before
    assert not orphan.exists()  # the other tables were maintained, orphans included
    assert open_table(str(pw.table_root(wh, "db.tagged"))).snapshots.ids() == [5]
    human = run("maintain", "*.*", "-w", wh)
    assert human.exit_code == 3  # the check found damage: it outranks the failed step
    assert "failed" in human.stdout and "db.by_count" in human.stdout
    # -q (cron): nothing on stdout, a short summary of what failed on stderr.
    quiet = run("maintain", "*.*", "-w", wh, "-q")
    assert quiet.exit_code == 3
    assert quiet.stdout == ""
    lines = quiet.stderr.splitlines()
    # The run's id and when it started, and each failed table with its run record's id.
    (record,) = [r for r in read_records(FileIO(), str(broken)) if r["status"] != "ok"][-1:]
    assert re.fullmatch(
        rf"paimon maintain run {record['run_id']} started "
        r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d[+-]\d\d:\d\d",
        lines[0],
    ), lines
    assert lines[1] == f"paimon maintain: 1 of {len(doc['tables'])} tables failed"
    table = f"db.by_count (run {record['run_id']})"
    assert lines[2].startswith(f"  {table}: expire-snapshots failed: corrupt metadata ")
    assert lines[3].startswith(f"  {table}: check failed: 1 integrity problems: "), lines
    assert "snapshot-2 is unreadable" in lines[3]
    assert len(lines) == 4


def test_quiet_prints_nothing_on_success_and_paths_on_a_dry_run(
    run: Run, source: tuple[Path, dict[str, Any]], tmp_path: Path
) -> None:
    src, _ = source
    wh = copy_warehouse(src, tmp_path / "wh")
    planned = run.json("maintain", "*.*", "-w", wh, "--dry-run")
    paths = [
        a["path"]
        for t in planned["tables"]
        for s in t["steps"]
        if s["document"] is not None and s["status"] == "ok" and "plan" in s["document"]
        for phase in s["document"]["plan"]["phases"]
        for a in phase["actions"]
        if a["op"] == "delete"
    ]
    assert paths
    dry = run("maintain", "*.*", "-w", wh, "--dry-run", "-q")
    assert dry.exit_code == 0, dry.stderr
    assert dry.stdout.splitlines() == paths
    done = run("maintain", "*.*", "-w", wh, "-q")
    assert done.exit_code == 0
    assert (done.stdout, done.stderr) == ("", "")
    assert open_table(str(pw.table_root(wh, "db.by_count"))).snapshots.ids() == [4, 5, 6]


def test_max_duration_starts_no_table_after_the_budget(
    run: Run, source: tuple[Path, dict[str, Any]], tmp_path: Path
) -> None:
    src, expected = source
    wh = copy_warehouse(src, tmp_path / "wh")
    doc = run.json("maintain", "*.*", "-w", wh, "--max-duration", "0 ms", "--dry-run")
    assert doc["tables"] == []
    assert [s["table"] for s in doc["skipped"]] == sorted(
        str(pw.table_root(wh, f"db.{n}")) for n in expected
    )
    assert doc["summary"]["skipped"] == len(expected)


def test_parallel_tables_give_the_same_result(
    run: Run, source: tuple[Path, dict[str, Any]], tmp_path: Path
) -> None:
    src, _ = source
    one = copy_warehouse(src, tmp_path / "one")
    four = copy_warehouse(src, tmp_path / "four")
    assert run("maintain", "*.*", "-w", one).exit_code == 0
    assert run("maintain", "*.*", "-w", four, "--parallel-tables", "4").exit_code == 0
    for db_table in sorted((one / "db.db").iterdir()):
        other = four / "db.db" / db_table.name
        assert comparable(db_table) == comparable(other), db_table.name


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--orphans-older-than", "3 d"], "needs --orphans"),
        (["--orphans", "--orphans-older-than", "10m"], "--orphans-older-than"),
        (["--max-duration", "soon"], "--max-duration"),
        (["--parallel-tables", "0"], "--parallel-tables"),
    ],
)
def test_bad_options_are_usage_errors(
    run: Run, tmp_path: Path, args: list[str], message: str
) -> None:
    result = run("maintain", "*.*", "-w", tmp_path, *args)
    assert result.exit_code == 2
    assert message in result.stderr


def test_a_single_table_by_location(run: Run, source: Any, tmp_path: Path) -> None:
    src, _ = source
    wh = copy_warehouse(src, tmp_path / "wh")
    root = pw.table_root(wh, "db.by_count")
    doc = run.json("maintain", root)
    assert [t["table"] for t in doc["tables"]] == [str(root)]
    assert open_table(str(root)).snapshots.ids() == [4, 5, 6]


def read_metrics(path: Path) -> dict[str, dict[tuple[tuple[str, str], ...], float]]:
    parser = dev_dependency("prometheus_client.parser", "prometheus_client")
    out: dict[str, dict[tuple[tuple[str, str], ...], float]] = {}
    for family in parser.text_string_to_metric_families(path.read_text()):
        for s in family.samples:
            out.setdefault(s.name, {})[tuple(sorted(s.labels.items()))] = s.value
    return out


def test_metrics_file_carries_every_family_with_the_right_values(
    run: Run, source: tuple[Path, dict[str, Any]], tmp_path: Path
) -> None:
    src, expected = source
    wh = copy_warehouse(src, tmp_path / "wh")
    (pw.table_root(wh, "db.by_time") / "snapshot" / "snapshot-3").write_text("{ not json")
    prom = tmp_path / "paimon.prom"
    before = now_ms() / 1000
    result = run("maintain", "*.*", "-w", wh, "--metrics-file", prom, "--json")
    assert result.exit_code == 3  # the check finds the corrupt snapshot: damage
    doc = json.loads(result.stdout)
    m = read_metrics(prom)

    def one(name: str, table: str, **labels: str) -> float:
        return m[name][tuple(sorted({"table": table, **labels}.items()))]

    for t in doc["tables"]:
        name = t["name"]
        ok = t["status"] == "ok"
        assert one("paimon_maintenance_success", name) == (1 if ok else 0)
        assert one("paimon_maintenance_duration_seconds", name) >= 0
        assert (
            one("paimon_maintenance_snapshots_expired", name) == (t["totals"]["snapshots_expired"])
        )
        if ok:
            assert one("paimon_maintenance_last_success_timestamp_seconds", name) >= before
            table = open_table(t["table"])
            assert one("paimon_table_snapshots", name) == len(table.snapshots.ids())
            earliest = table.snapshots.snapshot(table.snapshots.ids()[0])
            age_s = one("paimon_table_oldest_snapshot_age_seconds", name)
            assert abs(age_s - (now_ms() - earliest.time_millis) / 1000) < 600
            assert one("paimon_table_live_bytes", name) > 0
        for s in t["steps"]:
            if s["status"] in ("ok", "failed"):
                report = (s["document"] or {}).get("report") or {}
                plan = (s["document"] or {}).get("plan") or {"phases": []}
                writes = {
                    p["name"]: sum(a["op"] != "delete" for a in p["actions"])
                    for p in plan["phases"]
                }
                done = sum(p["done"] - writes.get(p["name"], 0) for p in report.get("phases", []))
                assert one("paimon_maintenance_files_deleted", name, step=s["step"]) == done
    # Never succeeded: 0 (a staleness alert fires rather than seeing no series).
    assert one("paimon_maintenance_last_success_timestamp_seconds", "db.by_time") == 0
    # Only expire-snapshots deletes in by_count: the metric is what left the directory.
    src_root, root = pw.table_root(src, "db.by_count"), pw.table_root(wh, "db.by_count")
    gone = {str(Path(p).relative_to(src_root)) for p in files_under(src_root)} - {
        str(Path(p).relative_to(root)) for p in files_under(root)
    }
    assert one("paimon_maintenance_files_deleted", "db.by_count", step="expire-snapshots") == len(
        gone
    )
    assert len(gone) > 3
    assert "paimon_table_total_bytes" not in m  # maintain does not list storage

    # A later run of one table keeps the others' series; inspect adds total bytes.
    last = one("paimon_maintenance_last_success_timestamp_seconds", "db.plain")
    assert run("maintain", "db.by_count", "-w", wh, "--metrics-file", prom).exit_code == 0
    assert run("inspect", pw.table_root(wh, "db.plain"), "--metrics-file", prom).exit_code == 0
    m = read_metrics(prom)
    assert one("paimon_maintenance_last_success_timestamp_seconds", "db.plain") == last
    assert one("paimon_maintenance_success", "db.by_time") == 0
    plain_root = pw.table_root(wh, "db.plain")
    assert one("paimon_table_total_bytes", "db.plain") == sum(
        # .paimon-cli/ (run records) is ours, not table data
        p.stat().st_size
        for p in plain_root.rglob("*")
        if p.is_file() and ".paimon-cli" not in p.parts
    )
    assert set(m) >= {
        "paimon_maintenance_success",
        "paimon_maintenance_last_success_timestamp_seconds",
        "paimon_maintenance_duration_seconds",
        "paimon_maintenance_files_deleted",
        "paimon_maintenance_bytes_deleted",
        "paimon_maintenance_snapshots_expired",
        "paimon_table_snapshots",
        "paimon_table_oldest_snapshot_age_seconds",
        "paimon_table_live_bytes",
        "paimon_table_total_bytes",
    }
    assert len(expected) == len({dict(k)["table"] for k in m["paimon_maintenance_success"]})


def test_metrics_file_options_are_checked(run: Run, tmp_path: Path) -> None:
    dry = run("maintain", "*.*", "-w", tmp_path, "--dry-run", "--metrics-file", tmp_path / "m")
    assert dry.exit_code == 2 and "--metrics-file" in dry.stderr
    # --check writes the integrity gauges (tests/cli/test_check_gate.py); other views none.
    view = run("inspect", tmp_path, "files", "--metrics-file", tmp_path / "m")
    assert view.exit_code == 2 and "--metrics-file" in view.stderr


@pytest.mark.java
def test_apache_paimon_reads_every_maintained_table(
    run: Run, java: Any, source: tuple[Path, dict[str, Any]], tmp_path: Path
) -> None:
    """Tags we created, partition drops we committed, changelog-N files we wrote."""
    from support.java_paimon import assert_java_ok

    src, _ = source
    wh = copy_warehouse(src, tmp_path / "wh")
    assert run("maintain", "*.*", "-w", wh).exit_code == 0
    for name in ("auto", "partitions", "decoupled"):
        root = pw.table_root(wh, f"db.{name}")
        doc = java.verify(root)
        assert_java_ok(doc)
        table = open_table(str(root))
        assert doc["snapshot_ids"] == table.snapshots.ids()
        assert sorted(doc["tags"]) == sorted(table.tags.names())


def test_a_warehouse_that_does_not_exist_is_named(run: Run, tmp_path: Path) -> None:
    missing = tmp_path / "no-such-wh"
    result = run("maintain", "*.*", "-w", missing)
    assert result.exit_code == 1
    assert f"warehouse {missing} does not exist" in result.stderr
    empty = tmp_path / "empty-wh"
    empty.mkdir()
    result = run("maintain", "*.*", "-w", empty)
    assert result.exit_code == 1
    assert f"no table in {empty} matches '*.*'" in result.stderr
