"""Changelog expiry (issue 13.3): Paimon's ExpireChangelogImpl after snapshot expiry and the
expire_changelogs procedure, on pypaimon-written and Java-written decoupled tables."""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable
from pathlib import Path

import pyarrow as pa
import pytest
from support import pypaimon_writer as pw
from support.invariants import (
    Crash,
    CrashingFileIO,
    assert_no_dangling_references,
    assert_rows_intact,
    copy_scenario,
    tree_state,
)
from support.lifecycle import apply, finish_journals

from core.ops.details.expiry import Sourced
from core.ops.expiry.expire_changelogs import plan_commit_changelog_expiry, plan_expire_changelogs
from core.ops.expiry.expire_changelogs import recheck as cl_recheck
from core.ops.expiry.expire_snapshots import ExpireFlags, plan_expire_snapshots
from core.ops.expiry.expire_snapshots_checks import recheck
from core.retention.changelog_range import ChangelogFlags
from core.runtime.executors.local import LocalExecutor
from core.runtime.report import ExecutionReport
from core.table.table import open_table

NOW = 4_000_000_000_000  # far future: every snapshot is "old"
DAY_MS = 86_400_000
Rows = dict[int, list[pw.Row]]


def _expire(root: Path, now: int, **flags: int) -> dict:
    table = open_table(str(root))
    with LocalExecutor(2) as ex:
        plan = plan_expire_snapshots(table, ExpireFlags(**flags), now_ms=now, executor=ex)
        apply(table, plan, recheck=recheck, executor=ex)
    return plan.details.to_json()


def _writer(wh: Path, producer: str) -> tuple[str, Callable[[int], int], Rows]:
    """Semantics 2.10's table: retain-min 2, snapshot.time-retained (1 ms here, for real
    commit times), changelog.time-retained 1 d: decoupled."""
    options = {
        "snapshot.num-retained.min": "2",
        "snapshot.time-retained": "1 ms",
        "changelog.time-retained": "1 d",
    }
    if producer == "input":
        schema = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string())])
        options.update({"bucket": "1", "changelog-producer": "input"})
        keys: tuple[str, ...] = ("id",)
    else:
        schema = pa.schema([("id", pa.int64()), ("v", pa.string())])
        keys = ()
    ident = f"{pw.DB}.worked_{producer}"
    table = pw.create_table(wh, ident, schema, primary_keys=keys, options=options)
    rows: Rows = {}
    current: dict[int, pw.Row] = {}

    def commit(i: int) -> int:
        new = [{"id": i % 4, "v": f"c{i}"}] if keys else [{"id": i, "v": f"c{i}"}]
        for r in new:
            current[int(r["id"]) if keys else i] = r
        sid = pw.append(table, new)
        rows[sid] = pw.sort_rows(current.values())
        return sid

    return ident, commit, rows


@pytest.mark.parametrize("producer", ["none", "input"])
def test_worked_example_of_semantics_2_10(tmp_path: Path, producer: str) -> None:
    wh = tmp_path / "wh"
    ident, commit, rows = _writer(wh, producer)
    root = pw.table_root(wh, ident)
    for i in range(1, 11):
        assert commit(i) == i
    table = open_table(str(root))
    t = {s.id: s.time_millis for s in table.snapshots.snapshots()}

    # "commit 10": snapshots 1..8 expire into changelog-1..8; none of them is a day old
    d = _expire(root, t[10] + 10)
    assert d["snapshots"] == list(range(1, 9))
    assert d["changelog_expiry"]["changelogs"] == []
    table = open_table(str(root))
    assert table.changelogs.ids() == list(range(1, 9))
    assert table.snapshots.ids() == [9, 10]
    first = table.changelogs.snapshot(1)
    assert_no_dangling_references(root)

    # "commit 11", a day after snapshot 2: 9 expires; changelog-1 only (changelog 2 is
    # exactly at the cut-off, and its own time decides)
    assert commit(11) == 11
    d = _expire(root, t[2] + DAY_MS)
    assert d["snapshots"] == [9]
    assert d["changelog_expiry"]["changelogs"] == [1]
    table = open_table(str(root))
    assert table.changelogs.ids() == list(range(2, 10))
    assert table.changelogs.earliest_hint() == 2
    assert table.snapshots.ids() == [10, 11]
    gone = first.changelog_manifest_list if producer == "input" else first.delta_manifest_list
    assert gone and not (root / "manifest" / gone).exists()
    assert_no_dangling_references(root)
    for sid in (10, 11):
        assert pw.read_rows(wh, ident, snapshot_id=sid) == rows[sid]


def _append_table(wh: Path) -> tuple[str, Rows]:
    """Producer none, decoupled: 1-3 append (tag t on 2), 4 overwrites all, 5-8 append."""
    ident = f"{pw.DB}.cl_proc"
    schema = pa.schema([("id", pa.int64()), ("v", pa.string())])
    t = pw.create_table(wh, ident, schema, options={"changelog.time-retained": "7 d"})
    rows: Rows = {}
    current: list[pw.Row] = []
    for i in range(1, 9):
        if i == 4:
            current = [{"id": 400, "v": "ow"}]
            sid = pw.overwrite(t, current)
        else:
            current = [*current, {"id": i, "v": f"c{i}"}]
            sid = pw.append(t, [current[-1]])
        rows[sid] = pw.sort_rows(current)
        if i == 2:
            pw.create_tag(t, "t", 2)
    return ident, rows


def test_expire_changelogs_procedure(run, tmp_path: Path) -> None:
    wh = tmp_path / "wh"
    ident, rows = _append_table(wh)
    root = pw.table_root(wh, ident)
    run.json("expire-snapshots", root, "--retain-min", "2", "--older-than", "0 ms")
    assert open_table(str(root)).changelogs.ids() == list(range(1, 7))

    doc = run.json("expire-changelogs", root)  # the procedure's defaults expire nothing
    assert doc["plan"]["details"]["changelogs"] == []
    assert doc["plan"]["details"]["config"]["retain_max"]["source"] == "default"

    pw.set_consumer(root, "reader", 3)
    doc = run.json("expire-changelogs", root, "--retain-max", "1")
    assert doc["plan"]["details"]["changelogs"] == [1, 2]
    assert doc["plan"]["details"]["stopped_by"] == "consumer"
    (root / "consumer" / "consumer-reader").unlink()

    before = tree_state(root)
    dry = run.json("expire-changelogs", root, "--retain-max", "1", "--dry-run")
    assert tree_state(root) == before
    doc = run.json("expire-changelogs", root, "--retain-max", "1")
    assert doc["plan"]["details"]["changelogs"] == dry["plan"]["details"]["changelogs"] == [3, 4, 5]
    kept = {Path(k["path"]).name for k in doc["plan"]["details"]["kept"]}
    deleted = {
        Path(a["path"]).name
        for p in doc["plan"]["phases"]
        for a in p["actions"]
        if a["kind"] == "data"
    }
    tag_files = pw.scan_file_names(wh, ident, tag="t")
    assert kept >= tag_files  # the tag inside the changelog range keeps its data files
    assert len(deleted) == 1 and not deleted & tag_files  # snapshot 3's file, no tag holds it
    assert open_table(str(root)).changelogs.ids() == [6]
    assert pw.read_rows(wh, ident, tag="t") == rows[2]
    for sid in (7, 8):
        assert pw.read_rows(wh, ident, snapshot_id=sid) == rows[sid]
    assert_no_dangling_references(root)

    doc = run.json("expire-changelogs", root, "--delete-all")
    assert doc["plan"]["details"]["changelogs"] == [6]
    assert open_table(str(root)).changelogs.ids() == []
    assert not (root / "changelog" / "EARLIEST").exists()
    assert not (root / "changelog" / "LATEST").exists()
    assert_no_dangling_references(root)
    assert pw.read_rows(wh, ident, tag="t") == rows[2]


def test_bad_input_is_a_usage_error(run, tmp_path: Path) -> None:
    wh = tmp_path / "wh"
    ident, _ = _append_table(wh)
    root = pw.table_root(wh, ident)
    for args in (
        ["--retain-max", "0"],
        ["--retain-min", "3", "--retain-max", "2"],
        ["--delete-all", "--retain-max", "2"],
        ["--older-than", "soonish"],
    ):
        result = run("expire-changelogs", root, *args)
        assert result.exit_code == 2, (args, result.stdout)
    assert run("expire-changelogs", root, "--delete-all", "--dry-run").exit_code == 0


def test_a_killed_run_leaves_no_dangling_reference_and_is_finished(tmp_path: Path) -> None:
    """Kill the run at several points: every changelog, snapshot and tag still present reads
    only files that exist, and the next run finishes the journal (D2)."""
    wh = tmp_path / "wh"
    ident, rows = _append_table(wh)
    src = pw.table_root(wh, ident)
    with LocalExecutor(2) as ex:
        table = open_table(str(src))
        now = int(time.time() * 1000)  # changelogs are younger than their 7 d retention
        plan = plan_expire_snapshots(
            table, ExpireFlags(retain_min=2, older_than_ms=now), now_ms=now, executor=ex
        )
        apply(table, plan, recheck=recheck, executor=ex)
    assert open_table(str(src)).changelogs.ids() == list(range(1, 7))
    for n in (1, 2, 5, 9, 14):
        root = tmp_path / f"run{n}" / src.parent.name / src.name
        shutil.copytree(src, root)
        flags = ChangelogFlags(retain_max=1)
        with LocalExecutor(2) as ex:
            table = open_table(str(root), fileio=CrashingFileIO(n))
            plan = plan_expire_changelogs(table, flags, now_ms=NOW, executor=ex)
            with pytest.raises(Crash):
                apply(table, plan, recheck=cl_recheck, executor=ex)
            assert_no_dangling_references(root)
            table = open_table(str(root))
            report = ExecutionReport()
            finish_journals(table, executor=ex, report=report)
            assert report.resumed_journals or n == 1  # n == 1: killed writing the journal
            again = plan_expire_changelogs(table, flags, now_ms=NOW, executor=ex)
            apply(table, again, recheck=cl_recheck, executor=ex)
        assert open_table(str(root)).changelogs.ids() == [6], n
        assert_no_dangling_references(root)
        assert pw.read_rows(root.parent.parent, ident, tag="t") == rows[2]
        assert pw.read_rows(root.parent.parent, ident, snapshot_id=8) == rows[8]


def test_commit_path_on_the_java_fixture_matches_expire_snapshots(
    java_built: Callable[[str], Path],
) -> None:
    """``plan_commit_changelog_expiry`` (for ``maintain``): the table's own changelog
    settings, as the changelog part of ``expire-snapshots`` computes them."""
    root = java_built("changelog_decoupled")
    table = open_table(str(root))
    now = max(s.time_millis for s in table.snapshots.snapshots()) + 1000
    with LocalExecutor(2) as ex:
        plan = plan_commit_changelog_expiry(table, now_ms=now, executor=ex)
        assert plan.details.part.changelogs == tuple(range(9, 21))  # changelog.num-retained.max 15
        assert plan.details.config.retain_max == Sourced(15, "table")
        apply(table, plan, recheck=cl_recheck, executor=ex)
    assert open_table(str(root)).changelogs.ids() == [21]
    assert_no_dangling_references(root)


def test_changelogs_written_and_expired_in_one_plan_with_a_producer(
    scenarios, tmp_path: Path
) -> None:
    """Producer input: the changelog part runs on what the snapshot part leaves (data lists
    gone), expires the new changelog-1..4 at once and keeps the newest; the tag on
    snapshot 3 reads as before."""
    s, wh, root = copy_scenario(scenarios, "pk_table", tmp_path)
    (root / "consumer" / "consumer-cdc").unlink()
    dynamic = {
        "snapshot.num-retained.min": "1",
        "changelog.num-retained.min": "2",
        "changelog.time-retained": "1 ms",
    }
    table = open_table(str(root), dynamic_options=dynamic)
    with LocalExecutor(2) as ex:
        plan = plan_expire_snapshots(table, ExpireFlags(), now_ms=NOW, executor=ex)
        apply(table, plan, recheck=recheck, executor=ex)
    assert plan.details.snapshots == (1, 2, 3, 4, 5)
    expiry = plan.details.changelog_expiry
    assert expiry is not None and expiry.part.changelogs == (1, 2, 3, 4)
    names = [p.name for p in plan.phases]
    assert names.index("snapshot-files") < names.index("changelog-files") < names.index("manifests")
    after = open_table(str(root))
    assert after.changelogs.ids() == [5]
    assert after.changelogs.earliest_hint() == 5
    assert_no_dangling_references(root)
    assert_rows_intact(wh, s)


def test_inspect_retention_shows_the_changelog_backlog(
    java_built: Callable[[str], Path], run
) -> None:
    """What ``inspect`` predicts is what ``expire-snapshots`` then expires."""
    root = java_built("changelog_decoupled")
    view = run.json("inspect", root, "retention")["retention"]["changelogs"]
    assert view["decoupled"] is True
    assert (view["count"], view["earliest"], view["latest"]) == (13, 9, 21)
    plan = run.json("expire-snapshots", root, "--dry-run")["plan"]["details"]
    assert view["expirable"] == len(plan["changelog_expiry"]["changelogs"]) == 12
    assert view["stopped_by"] == plan["changelog_expiry"]["stopped_by"]


def test_quarantined_run_is_restored(java_built: Callable[[str], Path], run) -> None:
    """``--quarantine`` moves what expire-changelogs deletes; ``restore`` puts it back."""
    root = java_built("changelog_decoupled")
    before = {p: size for p, size in tree_state(root).items() if "/.paimon-cli/" not in p}
    doc = run.json("expire-changelogs", root, "--retain-max", "20", "--quarantine")
    assert doc["plan"]["details"]["changelogs"] == list(range(9, 16))
    assert open_table(str(root)).changelogs.ids() == list(range(16, 22))
    run.json("restore", root, "--last")
    after = {p: size for p, size in tree_state(root).items() if "/.paimon-cli/" not in p}
    assert {p: s[0] for p, s in after.items()} == {p: s[0] for p, s in before.items()}
    assert_no_dangling_references(root)
