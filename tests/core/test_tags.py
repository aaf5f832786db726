"""Tags: Java-shaped files, Paimon's create/delete/expire rules, and only-tag files freed."""

from __future__ import annotations

import datetime as dt
import json
import shutil
from pathlib import Path

import pytest
from support import pypaimon_writer as pw
from support.invariants import (
    assert_no_dangling_references,
    assert_rows_intact,
    files_under,
    tree_state,
)
from support.lifecycle import apply

from core.errors import InvalidOptionError
from core.ops.expiry.expire_snapshots import ExpireFlags, plan_expire_snapshots
from core.ops.expiry.expire_snapshots_checks import recheck as expire_recheck
from core.ops.tags.tags import (
    TagError,
    apply_create_tag,
    filter_for_resume,
    java_duration_seconds,
    java_local_datetime,
    plan_create_tag,
    plan_delete_tags,
    rename_tag,
    select_expired_tags,
)
from core.runtime.executors.local import LocalExecutor
from core.table.table import open_table

NOW = 4_000_000_000_000


def copy(scenarios, name: str, tmp_path: Path) -> tuple[pw.Scenario, Path, Path]:
    s = scenarios[name]
    wh = tmp_path / "wh"
    root = wh / s.root.parent.name / s.root.name
    shutil.copytree(s.root, root, symlinks=True)
    return s, wh, root


def create(root: Path, name: str, **kw: object) -> None:
    table = open_table(str(root))
    plan = plan_create_tag(
        table,
        name,
        snapshot_id=kw.get("snapshot_id"),  # type: ignore[arg-type]
        time_retained_ms=kw.get("time_retained_ms"),  # type: ignore[arg-type]
        replace_existing=bool(kw.get("replace", False)),
        now_local=dt.datetime(2026, 11, 21, 20, 45, 31, 578883),
        now_ms=NOW,
    )
    apply_create_tag(table, plan)


def test_java_time_encodings() -> None:
    assert java_local_datetime(dt.datetime(2026, 11, 21, 20, 45)) == [2026, 11, 21, 20, 45]
    assert java_local_datetime(dt.datetime(2026, 11, 21, 20, 45, 31, 578883)) == [
        2026, 11, 21, 20, 45, 31, 578883000,
    ]  # fmt: skip
    assert java_duration_seconds(86_400_000) == "86400.000000000"
    assert java_duration_seconds(1) == "0.001000000"


def test_create_tag_reads_like_its_snapshot(scenarios, tmp_path: Path) -> None:
    s, wh, root = copy(scenarios, "many_commits", tmp_path)
    create(root, "plain", snapshot_id=3)
    create(root, "kept", time_retained_ms=86_400_000)
    plain = json.loads((root / "tag" / "tag-plain").read_text())
    snap = json.loads((root / "snapshot" / "snapshot-3").read_text())
    assert plain == snap  # no retention: exactly the snapshot fields
    text = (root / "tag" / "tag-kept").read_text()
    assert '"tagCreateTime" : [ 2026, 11, 21, 20, 45, 31, 578883000 ]' in text
    assert '"tagTimeRetained" : 86400.000000000' in text
    assert pw.read_rows(wh, s.identifier, tag="plain") == s.expected[3]
    assert pw.read_rows(wh, s.identifier, tag="kept") == s.expected[max(s.expected)]
    tag = pw.open_table(wh, s.identifier).tag_manager().get("kept")
    assert tag is not None
    assert open_table(str(root)).tags.tag("kept").time_retained_ms == 86_400_000


def test_create_tag_errors_write_nothing(scenarios, tmp_path: Path) -> None:
    s, wh, root = copy(scenarios, "append_partitioned", tmp_path)
    before = tree_state(root)
    with pytest.raises(TagError, match="already exists"):
        create(root, "mid")
    with pytest.raises(InvalidOptionError, match="'/'"):
        create(root, "a/b")
    with pytest.raises(TagError, match="does not exist"):
        create(root, "x", snapshot_id=99)
    assert tree_state(root) == before
    create(root, "mid", snapshot_id=5, replace=True)
    assert open_table(str(root)).tags.tag("mid").snapshot.id == 5


def test_tag_on_expired_snapshot_is_refused(scenarios, tmp_path: Path) -> None:
    s, wh, root = copy(scenarios, "many_commits", tmp_path)
    table = open_table(str(root))
    with LocalExecutor(2) as ex:
        plan = plan_expire_snapshots(table, ExpireFlags(retain_min=5), now_ms=NOW, executor=ex)
        apply(table, plan, recheck=expire_recheck, executor=ex)
    before = tree_state(root)
    with pytest.raises(TagError, match="expired"):
        create(root, "late", snapshot_id=2)
    assert tree_state(root) == before


def test_delete_tag_frees_only_its_files(scenarios, tmp_path: Path) -> None:
    s, wh, root = copy(scenarios, "append_partitioned", tmp_path)
    (root / "consumer" / "consumer-reader").unlink()
    table = open_table(str(root))
    with LocalExecutor(2) as ex:
        plan = plan_expire_snapshots(table, ExpireFlags(retain_min=1), now_ms=NOW, executor=ex)
        apply(table, plan, recheck=expire_recheck, executor=ex)
        kept_by_tag = {k.path for k in plan.details.kept_by_tag}
        assert kept_by_tag, "the overwrite removed files tag 'mid' still holds"
        before = files_under(root)
        table = open_table(str(root))
        plan = plan_delete_tags(table, ["mid"], executor=ex, now_ms=NOW)
        apply(table, plan, recheck=filter_for_resume, executor=ex)
    gone = before - files_under(root)
    assert str(root / "tag" / "tag-mid") in gone
    assert kept_by_tag <= gone
    assert_no_dangling_references(root)
    assert pw.read_rows(wh, s.identifier) == s.expected[max(s.expected)]


def test_delete_tag_with_live_snapshot_removes_only_the_tag(scenarios, tmp_path: Path) -> None:
    s, wh, root = copy(scenarios, "append_partitioned", tmp_path)
    before = files_under(root)
    table = open_table(str(root))
    with LocalExecutor(2) as ex:
        plan = plan_delete_tags(table, ["mid", "nope"], executor=ex, now_ms=NOW)
        assert plan.details.missing == ("nope",)
        apply(table, plan, recheck=filter_for_resume, executor=ex)
    assert before - files_under(root) == {str(root / "tag" / "tag-mid")}
    assert_rows_intact(wh, s)


def test_branch_from_tag_needs_force(scenarios, tmp_path: Path) -> None:
    s, wh, root = copy(scenarios, "tags_consumers_branches", tmp_path)
    table = open_table(str(root))
    with LocalExecutor(2) as ex:
        with pytest.raises(TagError, match="#6272"):
            plan_delete_tags(table, ["t4"], executor=ex, now_ms=NOW)
        plan = plan_delete_tags(table, ["t4"], executor=ex, now_ms=NOW, force=True)
        apply(table, plan, recheck=filter_for_resume, executor=ex)
    assert "t4" not in open_table(str(root)).tags.names()
    assert pw.read_rows(wh, s.identifier, branch="b1") == s.branch_expected["b1"]
    assert_no_dangling_references(root)


def test_expire_tags_by_retention_and_older_than(scenarios, tmp_path: Path) -> None:
    s, wh, root = copy(scenarios, "tags_consumers_branches", tmp_path)
    table = open_table(str(root))
    now = dt.datetime.now()
    utc = dt.timezone.utc
    chosen = select_expired_tags(table, now_local=now, older_than_local=None, zone=utc)
    assert [e.name for e in chosen] == ["t6"]  # 1 ms retention; t4 keeps 1 d; t2 has none
    later = now + dt.timedelta(days=2)
    chosen = select_expired_tags(table, now_local=later, older_than_local=None, zone=utc)
    assert [e.name for e in chosen] == ["t4", "t6"]
    chosen = select_expired_tags(
        table, now_local=now, older_than_local=later, zone=dt.datetime.now().astimezone().tzinfo
    )
    assert [e.name for e in chosen] == ["t2", "t4", "t6"]


def test_num_retained_max_trims_auto_tags(scenarios, tmp_path: Path) -> None:
    s, wh, root = copy(scenarios, "many_commits", tmp_path)
    for i, name in enumerate(("2024-07-01", "2024-07-02", "2024-07-03", "manual"), start=1):
        create(root, name, snapshot_id=i + 20)
    table = open_table(
        str(root),
        dynamic_options={"tag.automatic-creation": "process-time", "tag.num-retained-max": "2"},
    )
    chosen = select_expired_tags(
        table, now_local=dt.datetime.now(), older_than_local=None, zone=dt.timezone.utc
    )
    assert [e.name for e in chosen] == ["2024-07-01"]


def test_rename_tag(scenarios, tmp_path: Path) -> None:
    s, wh, root = copy(scenarios, "append_partitioned", tmp_path)
    table = open_table(str(root))
    rename_tag(table, "mid", "middle")
    assert open_table(str(root)).tags.names() == ["middle"]
    assert pw.read_rows(wh, s.identifier, tag="middle") == s.rows_at_tag("mid")
    with pytest.raises(TagError, match="does not exist"):
        rename_tag(table, "mid", "x")
