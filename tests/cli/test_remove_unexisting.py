"""`paimon remove-unexisting-files` after live files were deleted by hand: one APPEND commit
marks them DELETE (as Paimon's procedure), `inspect --check` is clean again, and pypaimon and
Java read the rest."""

from __future__ import annotations

import errno
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
from support import pypaimon_writer as pw
from support.fixtures import REPO, missing
from support.invariants import assert_no_dangling_references, tree_state
from support.java_paimon import assert_java_ok

from core.errors import StalePlanError
from core.ops.undo.remove_unexisting import apply_remove_unexisting, plan_remove_unexisting
from core.runtime.executors.local import LocalExecutor
from core.table.table import open_table


@pytest.fixture
def broken(scenarios, copy_table) -> tuple[pw.Scenario, Path, Path, dict[str, set[int]]]:
    """append_partitioned with the files snapshot 6 added deleted by hand: (scenario,
    warehouse, root, {file name: ids it held})."""
    s = scenarios["append_partitioned"]
    root: Path = copy_table(s.root)
    wh = root.parents[1]
    added = [name for kind, name in pw.delta_entries(wh, s.identifier, 6) if kind == 0]
    assert len(added) >= 2
    lost: dict[str, set[int]] = {}
    for name in added:
        (path,) = root.rglob(name)
        lost[name] = set(pq.ParquetFile(path).read(columns=["id"]).column("id").to_pylist())
        path.unlink()
    return s, wh, root, lost


@pytest.mark.java
def test_repair_after_files_were_deleted_by_hand(run, broken, java) -> None:
    s, wh, root, lost = broken
    assert run("inspect", root, "--check").exit_code == 3
    state = tree_state(root)
    dry = run.json("remove-unexisting-files", root, "--dry-run")
    files = dry["plan"]["details"]["files"]
    assert sorted(Path(f["path"]).name for f in files) == sorted(lost)
    assert all(f["rows"] == len(lost[Path(f["path"]).name]) for f in files)
    assert dry["plan"]["details"]["rows"] == sum(len(v) for v in lost.values())
    assert tree_state(root) == state

    doc = run.json("remove-unexisting-files", root)
    assert doc["report"]["snapshot_id"] == 7 and doc["report"]["files_marked_delete"] == len(lost)
    snap = open_table(str(root)).snapshots.snapshot(7)
    assert snap.commit_kind == "APPEND" and snap.commit_identifier == 2**63 - 1
    # Snapshot 7 reads; the older snapshots still name the lost files until they expire.
    (root / "consumer" / "consumer-reader").unlink()
    assert run("expire-snapshots", root, "--retain-max", "1", "--retain-min", "1").exit_code == 0
    assert run("inspect", root, "--check").exit_code == 0
    assert_no_dangling_references(root)
    gone = set().union(*lost.values())
    want = pw.sort_rows(r for r in s.expected[6] if r["id"] not in gone)
    assert pw.read_rows(wh, s.identifier) == want
    doc = java.verify(root)
    assert_java_ok(doc)
    assert doc["entries"]["latest"]["rows"] == len(want)
    again = run.json("remove-unexisting-files", root)
    assert again["report"] is None and again["plan"]["details"]["files"] == []


def test_partition_filter(run, broken) -> None:
    _, _, root, lost = broken
    doc = run.json("remove-unexisting-files", root, "--partition", "dt=2024-01-02,hr=1")
    fixed = {Path(f["path"]).name for f in doc["plan"]["details"]["files"]}
    assert fixed and fixed < set(lost)
    assert all(
        f["partition"] == {"dt": "2024-01-02", "hr": "1"} for f in doc["plan"]["details"]["files"]
    )
    rest = run.json("remove-unexisting-files", root, "--dry-run")
    assert {Path(f["path"]).name for f in rest["plan"]["details"]["files"]} == set(lost) - fixed


def test_nothing_missing_and_bad_input(run, scenarios, copy_table) -> None:
    root = copy_table(scenarios["append_partitioned"].root)
    state = tree_state(root)
    doc = run.json("remove-unexisting-files", root)
    assert doc["plan"]["details"]["files"] == [] and doc["report"] is None
    bad = run("remove-unexisting-files", root, "--partition", "nokey=1")
    assert bad.exit_code == 2 and "not a partition key" in bad.stderr
    assert run("remove-unexisting-files", root, "--partition", "novalue").exit_code == 2
    runs = root / ".paimon-cli" / "runs"
    assert {p for p in tree_state(root) if not p.startswith(str(runs))} == set(state)


# -- issue 22 defect 4: unreadable is not missing ------------------------------------------------
PARTITION = ("dt=2024-01-02", "hr=1")


def _snapshots(root: Path) -> list[int]:
    return open_table(str(root)).snapshots.ids()


@pytest.fixture
def shared_copy(scenarios) -> Iterator[Path]:
    """append_partitioned in a directory another user can reach (pytest's tmp is 0700)."""
    base = Path(tempfile.mkdtemp(prefix="paimon-cli-perm-"))
    base.chmod(0o755)
    root = base / "wh" / "db.db" / "append_partitioned"
    shutil.copytree(scenarios["append_partitioned"].root, root, symlinks=True)
    yield root
    for dirpath, dirs, _files in os.walk(base):
        for name in dirs:
            os.chmod(os.path.join(dirpath, name), 0o755)
    shutil.rmtree(base)


def _as_service_user(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """The command as an unprivileged user owning the table (root ignores chmod 000)."""
    if os.geteuid() != 0:
        cmd = [sys.executable, "-m", "paimon_cli", *args]
    else:
        setpriv = shutil.which("setpriv")
        if setpriv is None:
            missing(
                "run as root needs setpriv to drop to a user chmod denies: "
                "apt-get install util-linux"
            )
        uid = 65534  # nobody
        for dirpath, dirs, files in os.walk(root.parents[1]):
            for name in [".", *dirs, *files]:
                os.chown(os.path.join(dirpath, name), uid, uid, follow_symlinks=False)
        cmd = [setpriv, f"--reuid={uid}", f"--regid={uid}", "--clear-groups"]
        cmd += [sys.executable, "-m", "paimon_cli", *args]
    env = {**os.environ, "HOME": str(root.parents[2])}
    return subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=REPO, check=False)


def test_unreadable_partition_stops_the_run_and_commits_nothing(shared_copy: Path) -> None:
    """chmod 000 on a partition directory (the service user cannot look inside): exit 1,
    no snapshot; the same table repaired later when it is readable again finds nothing."""
    root = shared_copy
    partition = root.joinpath(*PARTITION)
    state = tree_state(root)
    partition.chmod(0)
    try:
        for args in (["--dry-run"], []):
            result = _as_service_user(root, "remove-unexisting-files", str(root), *args)
            assert result.returncode == 1, result.stdout + result.stderr
            assert "Permission denied" in result.stderr and "Traceback" not in result.stderr
        orphans = _as_service_user(root, "delete-orphan-files", str(root))
        assert orphans.returncode == 1 and "Permission denied" in orphans.stderr
        check = _as_service_user(root, "inspect", str(root), "--check", "--json")
        assert check.returncode == 1 and "Permission denied" in check.stderr
    finally:
        partition.chmod(0o755)
    assert _snapshots(root) == list(range(1, 7))
    runs = str(root / ".paimon-cli")
    assert {p: v for p, v in tree_state(root).items() if not p.startswith(runs)} == state
    assert_no_dangling_references(root)


@pytest.mark.parametrize(
    "code", [errno.EACCES, errno.ESTALE, errno.EIO], ids=["EACCES", "ESTALE", "EIO"]
)
def test_storage_errors_on_a_bucket_are_never_taken_for_missing(
    run, scenarios, copy_table, monkeypatch: pytest.MonkeyPatch, code: int
) -> None:
    """The same through the operating system's answer (as root, chmod cannot deny us)."""
    root = copy_table(scenarios["append_partitioned"].root)
    bucket = str(root.joinpath(*PARTITION, "bucket-0"))
    real_lstat = os.lstat

    def lstat(path: Any, *args: Any, **kwargs: Any) -> os.stat_result:
        if str(path).startswith(bucket + "/"):
            raise OSError(code, os.strerror(code), str(path))
        return real_lstat(path, *args, **kwargs)

    monkeypatch.setattr(os, "lstat", lstat)
    result = run("remove-unexisting-files", root)
    monkeypatch.undo()
    assert result.exit_code == 1
    assert os.strerror(code) in " ".join(result.stderr.split())
    assert _snapshots(root) == list(range(1, 7))


@pytest.mark.java
def test_a_whole_partition_directory_gone_is_refused_until_it_is_there(
    run, scenarios, copy_table, java
) -> None:
    """A partition directory missing while its parent exists looks like an unmounted or
    renamed one: refused; once it exists (empty: really lost), the repair goes ahead."""
    s = scenarios["append_partitioned"]
    root = copy_table(s.root)
    wh = root.parents[1]
    partition = root.joinpath(*PARTITION)
    lost = {p.name for p in partition.rglob("data-*")}
    shutil.rmtree(partition)
    for args in (["--dry-run"], []):
        refused = run("remove-unexisting-files", root, *args)
        assert refused.exit_code == 1
        message = " ".join(refused.stderr.split())
        assert f"refusing to mark the files of {partition} DELETE" in message
        assert "whole directory is missing" in message
    assert _snapshots(root) == list(range(1, 7))

    assert f"mkdir -p {partition / 'bucket-0'}" in message
    (partition / "bucket-0").mkdir(parents=True)
    doc = run.json("remove-unexisting-files", root)
    marked = {Path(f["path"]).name for f in doc["plan"]["details"]["files"]}
    assert marked and marked <= lost
    assert doc["report"]["snapshot_id"] == 7
    latest = pw.read_rows(wh, s.identifier)
    assert latest and all((f"dt={r['dt']}", f"hr={r['hr']}") != PARTITION for r in latest)
    # Older snapshots still name the lost files until they expire.
    (root / "consumer" / "consumer-reader").unlink()
    (root / "tag" / "tag-mid").unlink()
    assert run("expire-snapshots", root, "--retain-max", "1", "--retain-min", "1").exit_code == 0
    assert run("inspect", root, "--check").exit_code == 0
    assert_java_ok(java.verify(root))


def test_a_whole_bucket_directory_gone_is_refused(run, scenarios, copy_table) -> None:
    """The same one level down: the partition directory is there, its bucket is not."""
    root = copy_table(scenarios["append_partitioned"].root)
    bucket = root.joinpath(*PARTITION, "bucket-0")
    shutil.rmtree(bucket)
    state = tree_state(root)
    for args in (["--dry-run"], []):
        refused = run("remove-unexisting-files", root, *args)
        assert refused.exit_code == 1
        message = " ".join(refused.stderr.split())
        assert f"refusing to mark the files of {bucket} DELETE" in message
        assert f"while {bucket.parent} exists" in message
    assert _snapshots(root) == list(range(1, 7))
    runs = str(root / ".paimon-cli")
    assert {p: v for p, v in tree_state(root).items() if not p.startswith(runs)} == state


def test_files_back_before_the_commit_refuse_it(broken) -> None:
    """Re-checked right before committing: a file that is readable again is not deleted."""
    s, _wh, root, lost = broken
    backup = root.parent / "backup"
    shutil.copytree(s.root, backup)
    table = open_table(str(root))
    with LocalExecutor(1) as executor:
        plan = plan_remove_unexisting(table, executor=executor)
    assert len(plan.details.files) == len(lost)
    name = Path(plan.details.files[0].path)
    (original,) = backup.rglob(name.name)
    shutil.copy2(original, name)
    with pytest.raises(StalePlanError, match="exist now"):
        apply_remove_unexisting(table, plan)
    assert _snapshots(root) == list(range(1, 7))
