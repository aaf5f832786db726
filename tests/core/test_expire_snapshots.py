"""expire-snapshots end to end on pypaimon-written tables: Paimon's result, safely reached."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import fastavro
import pytest
from support import pypaimon_writer as pw
from support.invariants import (
    Crash,
    CrashingFileIO,
    assert_no_dangling_references,
    assert_rows_intact,
    copy_scenario,
    files_under,
    referenced_paths,
    tree_state,
)
from support.lifecycle import apply, finish_journals

from core.errors import CorruptMetadataError, SafetyRefusalError, StorageError
from core.io.fileio import FileIO
from core.ops.expiry.expire_snapshots import ExpireFlags, plan_expire_snapshots
from core.ops.expiry.expire_snapshots_checks import recheck
from core.runtime.executors.local import LocalExecutor
from core.runtime.report import ExecutionReport
from core.table.table import open_table

NOW = 4_000_000_000_000  # far future: every snapshot is "old"


def expire(root: Path, *, fileio: FileIO | None = None, now: int = NOW, **flags: int):
    table = open_table(str(root), fileio=fileio or FileIO())
    with LocalExecutor(4) as ex:
        report = ExecutionReport()
        finish_journals(table, executor=ex, report=report)
        plan = plan_expire_snapshots(table, ExpireFlags(**flags), now_ms=now, executor=ex)
        apply(table, plan, recheck=recheck, executor=ex, report=report)
    return plan, report


def oracle_deletions(root: Path, end: int) -> set[str]:
    """Files referenced by snapshots below `end` and by no retained snapshot or tag."""
    table = open_table(str(root))
    snaps = table.snapshots.snapshots()
    old = referenced_paths(table, [s for s in snaps if s.id < end])
    kept = referenced_paths(
        table, [s for s in snaps if s.id >= end] + [t.snapshot for t in table.tags.tags()]
    )
    return old - kept


def test_overwrite_files_are_deleted_exactly(scenarios, tmp_path: Path) -> None:
    s, wh, root = copy_scenario(scenarios, "many_commits", tmp_path)
    before = files_under(root)
    expected = oracle_deletions(root, 26)
    plan, report = expire(root, retain_min=5)
    assert plan.details.snapshots == tuple(range(1, 26))
    assert report.status == "ok"
    gone = before - files_under(root)
    snapshot_files = {str(root / "snapshot" / f"snapshot-{i}") for i in range(1, 26)}
    assert gone == expected | snapshot_files
    assert any(p.endswith(".parquet") for p in gone)  # files the overwrite removed
    assert_no_dangling_references(root)
    assert_rows_intact(wh, s)
    assert (root / "snapshot" / "EARLIEST").read_text() == "26"
    assert not (root / ".paimon-cli").exists()


def test_tags_and_consumers_protect(scenarios, tmp_path: Path) -> None:
    s, wh, root = copy_scenario(scenarios, "append_partitioned", tmp_path)
    plan, _ = expire(root, retain_min=1)
    # consumer 'reader' needs snapshot 4; tag 'mid' keeps snapshot 3's files
    assert plan.details.snapshots == (1, 2, 3)
    assert plan.details.blocking_consumer == "reader"
    assert_no_dangling_references(root)
    assert_rows_intact(wh, s)
    (root / "consumer" / "consumer-reader").unlink()
    plan, _ = expire(root, retain_min=1)
    assert plan.details.snapshots == (4, 5)
    assert plan.details.kept_by_tag, "the overwrite at 5 removed files tag 'mid' still needs"
    assert_no_dangling_references(root)
    assert_rows_intact(wh, s)


def test_max_deletes_over_several_runs(scenarios, tmp_path: Path) -> None:
    s, wh, root = copy_scenario(scenarios, "many_commits", tmp_path)
    runs = []
    for _ in range(4):
        plan, _ = expire(root, retain_min=3, max_deletes=10)
        runs.append(list(plan.details.snapshots))
    assert runs == [list(range(1, 11)), list(range(11, 21)), list(range(21, 28)), []]
    assert_rows_intact(wh, s)


def test_changelog_files_go_with_their_snapshot(scenarios, tmp_path: Path) -> None:
    s, wh, root = copy_scenario(scenarios, "pk_table", tmp_path)
    (root / "consumer" / "consumer-cdc").unlink()
    (root / "tag" / "tag-mid").unlink()
    plan, _ = expire(root, retain_min=2)
    kinds = {a.kind for p in plan.phases for a in p.actions}
    assert "changelog" in kinds
    assert_no_dangling_references(root)
    assert_rows_intact(wh, s)


def test_decoupled_changelog_keeps_changelog_json(scenarios, tmp_path: Path) -> None:
    s, wh, root = copy_scenario(scenarios, "pk_table", tmp_path)
    (root / "consumer" / "consumer-cdc").unlink()
    # changelog.num-retained.min 100: the changelog expiry that follows keeps them all
    dynamic = {"changelog.time-retained": "1 d", "changelog.num-retained.min": "100"}
    table = open_table(str(root), dynamic_options=dynamic)
    with LocalExecutor(2) as ex:
        plan = plan_expire_snapshots(table, ExpireFlags(retain_min=2), now_ms=NOW, executor=ex)
        apply(table, plan, recheck=recheck, executor=ex)
    assert plan.details.config.changelog_decoupled is True
    expired = list(plan.details.snapshots)
    for sid in expired:
        assert json.loads((root / "changelog" / f"changelog-{sid}").read_text())["id"] == sid
    assert "changelog" not in {a.kind for p in plan.phases for a in p.actions}
    assert_no_dangling_references(root)  # long-lived changelogs are roots of the check too
    assert_rows_intact(wh, s)


def test_deletion_vector_index_files(scenarios, tmp_path: Path) -> None:
    s, wh, root = copy_scenario(scenarios, "append_deletion_vectors", tmp_path)
    plan, _ = expire(root, retain_min=1)
    assert plan.details.snapshots == (1, 2, 3)
    assert {"index", "index-manifest"} <= {a.kind for p in plan.phases for a in p.actions}
    assert_no_dangling_references(root)
    assert_rows_intact(wh, s)


def test_branch_files_survive_main_expiry(scenarios, tmp_path: Path) -> None:
    s, wh, root = copy_scenario(scenarios, "tags_consumers_branches", tmp_path)
    for consumer in (root / "consumer").iterdir():
        consumer.unlink()
    for tag in (root / "tag").iterdir():
        tag.unlink()  # without main's tags only the branch can protect its files
    expire(root, retain_min=1)
    assert_no_dangling_references(root)
    for sid in s.branch_snapshot_ids["b1"]:
        assert pw.read_rows(wh, s.identifier, branch="b1", snapshot_id=sid)


def test_expire_on_a_branch(scenarios, tmp_path: Path) -> None:
    s, wh, root = copy_scenario(scenarios, "tags_consumers_branches", tmp_path)
    table = open_table(str(root), branch="b1")
    with LocalExecutor(2) as ex:
        plan = plan_expire_snapshots(table, ExpireFlags(retain_min=1), now_ms=NOW, executor=ex)
        apply(table, plan, recheck=recheck, executor=ex)
    assert plan.details.blocking_consumer == "on-branch"
    assert_no_dangling_references(root)
    assert_rows_intact(wh, s)
    assert pw.read_rows(wh, s.identifier, branch="b1") == pw.sort_rows(s.branch_expected["b1"])


def test_dry_run_changes_nothing(run, scenarios, tmp_path: Path) -> None:
    _s, _wh, root = copy_scenario(scenarios, "many_commits", tmp_path)
    before = tree_state(root)
    result = run(
        "expire-snapshots", root, "--retain-min", "1", "--older-than", "0 ms", "--dry-run", "--json"
    )
    assert result.exit_code == 0, result.stderr
    doc = json.loads(result.stdout)
    assert doc["dry_run"] is True and doc["report"] is None
    assert doc["plan"]["totals"]["files"] > 0
    assert tree_state(root) == before


def _final_state(scenarios, tmp_path: Path) -> set[str]:
    _s, _wh, root = copy_scenario(scenarios, "many_commits", tmp_path / "reference")
    expire(root, retain_min=14)
    return {p.replace(str(root), "ROOT") for p in files_under(root)}


@pytest.mark.parametrize(
    ("crash", "stride"), [(True, 1), (False, 3)], ids=["process-dies", "storage-error"]
)
def test_interrupted_at_every_operation_converges(
    scenarios, tmp_path: Path, crash: bool, stride: int
) -> None:
    reference = _final_state(scenarios, tmp_path)
    n = 1
    while True:
        s, wh, root = copy_scenario(scenarios, "many_commits", tmp_path / f"run{n}")
        fio = CrashingFileIO(n, crash=crash)
        died_at = None
        try:
            _plan, report = expire(root, fileio=fio, retain_min=14)
            if report.failed:
                died_at = report.phases[-1].failures[0][0]
        except (Crash, StorageError) as exc:
            died_at = str(exc)
        if fio.count < n:
            break  # the run finished before the Nth operation: every point was covered
        assert_no_dangling_references(root)
        if died_at is not None and "/.paimon-cli" not in died_at:
            assert (root / ".paimon-cli" / "journal").exists(), died_at
        _plan, report = expire(root, retain_min=14)
        assert report.status == "ok"
        assert {p.replace(str(root), "ROOT") for p in files_under(root)} == reference, n
        if n % 10 == 0:
            assert_rows_intact(wh, s)
        shutil.rmtree(tmp_path / f"run{n}")
        n += stride
    assert n > 40  # the run really has that many mutating operations


def test_two_processes_at_once(scenarios, tmp_path: Path) -> None:
    reference = _final_state(scenarios, tmp_path)
    _s, _wh, root = copy_scenario(scenarios, "many_commits", tmp_path / "race")
    cmd = [
        sys.executable,
        "-m",
        "paimon_cli",
        "expire-snapshots",
        str(root),
        "--retain-min",
        "14",
        "--older-than",
        "0 ms",
        "--json",
        # the table lease serialises them: the second waits, then finds less to do
        "--wait-lease",
        "2m",
    ]
    procs = [
        subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE) for _ in range(2)
    ]
    for proc in procs:
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err.decode()
        assert json.loads(out)["report"]["status"] == "ok"
    assert {p.replace(str(root), "ROOT") for p in files_under(root)} == reference


# -- hostile metadata: clear error, nothing deleted ----------------------------------------------
def _rewrite_delta_entry(root: Path, snapshot_id: int, **file_fields: object) -> None:
    snap = json.loads((root / "snapshot" / f"snapshot-{snapshot_id}").read_text())
    with open(root / "manifest" / snap["deltaManifestList"], "rb") as fh:
        metas = list(fastavro.reader(fh))
    manifest = root / "manifest" / metas[0]["_FILE_NAME"]
    with open(manifest, "rb") as fh:
        reader = fastavro.reader(fh)
        schema, rows = reader.writer_schema, list(reader)
    for row in rows:
        if row["_KIND"] == 1:  # the DELETE entries: exactly what expiry would act on
            row["_FILE"].update(file_fields)
    with open(manifest, "wb") as fh:
        fastavro.writer(fh, schema, rows, codec="null")


@pytest.mark.parametrize(
    "fields",
    [
        {"_FILE_NAME": "../../x.parquet"},
        {"_EXTERNAL_PATH": "/etc/passwd"},
        {"_EXTERNAL_PATH": "s3://elsewhere/x.parquet"},
    ],
)
def test_manifest_pointing_outside_the_table(scenarios, tmp_path: Path, fields) -> None:
    _s, _wh, root = copy_scenario(scenarios, "many_commits", tmp_path)
    _rewrite_delta_entry(root, 15, **fields)  # the overwrite's DELETE entries
    before = tree_state(root)
    with pytest.raises((CorruptMetadataError, SafetyRefusalError)):
        expire(root, retain_min=5)
    assert tree_state(root) == before


def test_unreadable_snapshot_in_range(run, scenarios, tmp_path: Path) -> None:
    _s, _wh, root = copy_scenario(scenarios, "many_commits", tmp_path)
    (root / "snapshot" / "snapshot-7").write_text("{garbage")
    before = tree_state(root)
    result = run("expire-snapshots", root, "--retain-min", "5", "--older-than", "0 ms")
    assert result.exit_code == 1
    assert "snapshot-7" in result.stderr and "Traceback" not in result.stderr
    assert tree_state(root) == before


def test_missing_manifest_is_a_clear_error(run, scenarios, tmp_path: Path) -> None:
    _s, _wh, root = copy_scenario(scenarios, "many_commits", tmp_path)
    snap = json.loads((root / "snapshot" / "snapshot-15").read_text())
    with open(root / "manifest" / snap["deltaManifestList"], "rb") as fh:
        manifest = next(iter(fastavro.reader(fh)))["_FILE_NAME"]
    (root / "manifest" / manifest).unlink()
    before = tree_state(root)
    result = run("expire-snapshots", root, "--retain-min", "5", "--older-than", "0 ms")
    assert result.exit_code == 1
    assert manifest in result.stderr and "nothing was deleted" in result.stderr
    assert "Traceback" not in result.stderr
    assert tree_state(root) == before


class _CountingFileIO(FileIO):
    """Counts reads by path (the planner's reads; nothing is deleted)."""

    def __init__(self) -> None:
        super().__init__()
        self.reads: dict[str, int] = {}

    def read_bytes(self, path: str) -> bytes:
        self.reads[path] = self.reads.get(path, 0) + 1
        return super().read_bytes(path)


def test_plan_reads_each_expiring_manifest_list_once(scenarios, tmp_path: Path) -> None:
    """The delta walk hands the delta lists it read to step 3 (issue 27: 1,990 lists were
    read twice on a 2,000-snapshot table); the plan is the same either way."""
    _s, _wh, root = copy_scenario(scenarios, "many_commits", tmp_path)
    fileio = _CountingFileIO()
    table = open_table(str(root), fileio=fileio)
    with LocalExecutor(4) as ex:
        plan = plan_expire_snapshots(table, ExpireFlags(retain_min=5), now_ms=NOW, executor=ex)
    assert plan.details.snapshots == tuple(range(1, 26))
    for snap in table.snapshots.snapshots():
        if snap.id < 26:
            for name in (snap.base_manifest_list, snap.delta_manifest_list):
                assert fileio.reads[table.paths.manifest_path(name)] == 1, (snap.id, name)
    removed = {a.path for p in plan.phases for a in p.actions if a.op == "delete"}
    assert removed - {str(root / "snapshot" / f"snapshot-{i}") for i in range(1, 26)} == (
        oracle_deletions(root, 26)
    )
