"""The Spark engine decides exactly what the local engine decides (differential tests)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from support.fixtures import dev_dependency, java_tables
from support.invariants import assert_no_dangling_references, files_under
from support.lifecycle import apply

from core.errors import SafetyRefusalError
from core.format.model import ManifestRef
from core.ops.expiry.expire_snapshots import ExpireFlags, plan_expire_snapshots
from core.ops.expiry.expire_snapshots_checks import recheck
from core.ops.inspection.check import check_table
from core.ops.orphans.orphan_files import OrphanPlan, RootWatcher, plan_orphan_clean
from core.ops.orphans.orphan_files_spark import SparkOrphanClean
from core.runtime.executors.local import LocalExecutor
from core.runtime.executors.spark import SparkExecutor
from core.runtime.report import ExecutionReport
from core.table.table import open_table

pytestmark = pytest.mark.spark

DAY = 86_400
NOW = 4_000_000_000_000


AGED = int(time.time()) - 3 * DAY  # one instant for every copy, so twins stay identical


def _age_tree(root: Path) -> None:
    t = AGED
    for dirpath, dirs, files in os.walk(root):
        for name in files + dirs:
            os.utime(Path(dirpath) / name, (t, t), follow_symlinks=False)


def _plant(root: Path) -> None:
    bucket = next(root.rglob("bucket-*"))
    for path in (
        bucket / "data-feedface-orphan-0.parquet",
        root / "manifest" / "manifest-ff-0",
        root / "snapshot" / ".snapshot-9.tmp",
        root / "index" / "index-ff-0",
    ):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"orphan")
    (root / "dt=zz-empty" / "bucket-0").mkdir(parents=True, exist_ok=True)


def _prepared_copy(src: Path, dest: Path) -> Path:
    """A copy of ``src`` at ``dest`` with orphans planted and every entry aged."""
    shutil.copytree(src, dest, symlinks=True)
    _plant(dest)
    _age_tree(dest)
    return dest


def _twins(src: Path, tmp_path: Path, *, prepared: bool = True) -> tuple[Path, Path]:
    """Identical copies under ``tmp_path``/local and /spark (``prepared``: see above)."""
    out = []
    for name in ("local", "spark"):
        dest = tmp_path / name / src.parent.name / src.name
        if prepared:
            _prepared_copy(src, dest)
        else:
            shutil.copytree(src, dest, symlinks=True)
        out.append(dest)
    return out[0], out[1]


def _normalised(files: set[str], root: Path) -> set[str]:
    return {f.replace(str(root), "ROOT") for f in files}


def _dirs(root: Path) -> set[str]:
    return {str(Path(d).relative_to(root)) for d, _sub, _files in os.walk(root)}


def _plan_json(plan, root: Path) -> str:
    return json.dumps(plan.to_json(), sort_keys=True).replace(str(root), "ROOT")


ORPHAN_TABLES = [
    "tags_consumers_branches",
    "append_partitioned",
    "awkward_partitions",
    "append_deletion_vectors",
]


def test_spark_tasks_confirm_the_lease_before_deleting(
    spark_executor: SparkExecutor, scenarios, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 33 defect 2 on Spark: the driver confirmed the lease, then the run was taken
    over (it paused past its lease) before its tasks started: every task reads the lease
    file before its first deletion, deletes nothing, and the run stops with lease_lost."""
    import socket

    import core.ops.orphans.orphan_files_spark as spark_orphans
    from core.io.fileio import FileIO
    from core.runtime.lease import (
        DEFAULT_TTL_MS,
        SKEW_GRACE_MS,
        Holder,
        LeaseLostError,
        acquire,
        wall_now,
    )

    _, root = _twins(scenarios["append_partitioned"].root, tmp_path)
    now = int(time.time() * 1000)
    clean = SparkOrphanClean(open_table(str(root)), spark_executor, now - DAY * 1000, now)
    plan = clean.plan()
    assert plan.details.orphan_count >= 4
    before = files_under(root)
    lease = acquire(
        FileIO(), str(root), Holder("delete-orphan-files", "a" * 12, "u", socket.gethostname(), 1)
    )
    later = wall_now() + DEFAULT_TTL_MS + SKEW_GRACE_MS + 1
    taken: list[object] = []
    real_roots = spark_orphans.collect_roots

    def roots_then_takeover(views: Any) -> Any:
        taken.append(
            acquire(
                FileIO(),
                str(root),
                Holder("restore", "b" * 12, "u", "elsewhere", 1),
                now=lambda: later,
            )
        )
        return real_roots(views)

    monkeypatch.setattr(spark_orphans, "collect_roots", roots_then_takeover)
    report = ExecutionReport()
    with pytest.raises(LeaseLostError, match="taken over by restore"):
        clean.apply(plan, report, fence=lease.fence())
    assert taken  # after the driver's own check
    assert files_under(root) == before  # no task deleted anything
    assert any("left untouched: the run lost its lease" in n for n in report.notes)


@pytest.mark.parametrize("name", ORPHAN_TABLES)
def test_orphans_identical_plans_and_final_files(
    spark_executor: SparkExecutor, scenarios, tmp_path: Path, name: str
) -> None:
    local_root, spark_root = _twins(scenarios[name].root, tmp_path)
    now = int(time.time() * 1000)
    cutoff = now - DAY * 1000
    with LocalExecutor(4) as ex:
        table = open_table(str(local_root))
        local_plan = plan_orphan_clean(table, older_than_ms=cutoff, now_ms=now, executor=ex)
        apply(
            table,
            local_plan,
            recheck=lambda _t, p: p,
            executor=ex,
            journal=False,
            before_phase=RootWatcher(table, local_plan, ex).filter,
        )
    clean = SparkOrphanClean(open_table(str(spark_root)), spark_executor, cutoff, now)
    spark_plan = clean.plan()
    assert _plan_json(spark_plan, spark_root) == _plan_json(local_plan, local_root)
    assert spark_plan.details.orphan_count >= 4
    report = clean.apply(spark_plan, ExecutionReport())
    assert report.status == "ok"
    assert _normalised(files_under(spark_root), spark_root) == _normalised(
        files_under(local_root), local_root
    )
    assert _dirs(spark_root) == _dirs(local_root)  # the same empty directories removed
    assert_no_dangling_references(spark_root)


def test_orphans_on_java_fixture_copies(spark_executor: SparkExecutor, tmp_path: Path) -> None:
    tables = [t for t in java_tables() if "branch" in t.name or "dv_index_in_data_no" in t.name]
    assert tables
    for src in tables:
        local_root, spark_root = _twins(src, tmp_path / src.name)
        now = int(time.time() * 1000)
        with LocalExecutor(4) as ex:
            local_plan = plan_orphan_clean(
                open_table(str(local_root)),
                older_than_ms=now - 1000,
                now_ms=now,
                executor=ex,
                allow_recent=True,
            )
        spark_plan = SparkOrphanClean(
            open_table(str(spark_root)), spark_executor, now - 1000, now, allow_recent=True
        ).plan()
        assert _plan_json(spark_plan, spark_root) == _plan_json(local_plan, local_root), src


def test_spark_plan_is_bounded_and_streams_the_rest(
    spark_executor: SparkExecutor, scenarios, tmp_path: Path
) -> None:
    src = scenarios["many_commits"].root
    root = _prepared_copy(src, tmp_path / "spark" / src.parent.name / src.name)
    for i in range(30):
        (root / "manifest" / f"manifest-extra-{i}").write_bytes(b"x")
    _age_tree(root)
    now = int(time.time() * 1000)
    report_file = tmp_path / "orphans.jsonl"
    clean = SparkOrphanClean(open_table(str(root)), spark_executor, now - DAY * 1000, now, sample=5)
    plan = clean.plan(report_file=str(report_file))
    d = plan.details
    assert d.truncated is True and len(d.orphans) == 5
    lines = [json.loads(line) for line in report_file.read_text().splitlines()]
    assert len(lines) == d.orphan_count >= 33
    assert [x["path"] for x in lines[:5]] == [x.path for x in d.orphans]


@pytest.mark.parametrize("name", ["many_commits", "append_partitioned"])
def test_expire_identical_plans_and_final_files(
    spark_executor: SparkExecutor, scenarios, tmp_path: Path, name: str
) -> None:
    roots = _twins(scenarios[name].root, tmp_path, prepared=False)
    plans = []
    for root, ex in ((roots[0], LocalExecutor(4)), (roots[1], spark_executor)):
        table = open_table(str(root))
        plan = plan_expire_snapshots(table, ExpireFlags(retain_min=3), now_ms=NOW, executor=ex)
        apply(table, plan, recheck=recheck, executor=ex)
        plans.append(_plan_json(plan, root))
    assert plans[0] == plans[1]
    assert _normalised(files_under(roots[0]), roots[0]) == _normalised(
        files_under(roots[1]), roots[1]
    )
    assert_no_dangling_references(roots[1])


def test_check_identical(spark_executor: SparkExecutor, scenarios, copy_table) -> None:
    root = copy_table(scenarios["append_partitioned"].root)
    victim = next(root.rglob("*.parquet"))
    victim.unlink()
    local = check_table(open_table(str(root)), executor=LocalExecutor(2))
    remote = check_table(open_table(str(root)), executor=spark_executor)
    assert local == remote


def test_engine_errors_come_back_typed(
    spark_executor: SparkExecutor, scenarios, copy_table
) -> None:
    from core.errors import CorruptMetadataError

    root = copy_table(scenarios["many_commits"].root)
    manifest = sorted((root / "manifest").glob("manifest-[0-9a-f]*"))[0]
    manifest.write_bytes(b"garbage")
    ref = ManifestRef(manifest.name, len(b"garbage"), 1)
    with pytest.raises(CorruptMetadataError) as info:
        spark_executor.map(lambda r: list(open_table(str(root)).manifest(r)), [ref])
    assert info.value.path.endswith(manifest.name)


def _cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "paimon_cli", *args],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )


def test_cli_spark_connect_dry_run(
    spark_executor: SparkExecutor, scenarios, tmp_path: Path
) -> None:
    """Spark Connect (DataFrame operations only) gives the same plan as the local engine."""
    dev_dependency("grpc", "pyspark[connect] (grpcio, for Spark Connect)")
    src = scenarios["append_partitioned"].root
    root = _prepared_copy(src, tmp_path / "spark" / src.parent.name / src.name)
    local = _cli("delete-orphan-files", str(root), "--dry-run", "--json")
    remote = _cli(
        "delete-orphan-files",
        str(root),
        "--dry-run",
        "--json",
        "--engine",
        "spark",
        "--spark-remote",
        "local[2]",
    )
    assert remote.returncode == 0, remote.stderr[-2000:]
    a, b = json.loads(local.stdout)["plan"], json.loads(remote.stdout)["plan"]
    for plan in (a, b):
        plan.pop("created_ms")
        plan["details"].pop("now_ms")
        plan["details"].pop("older_than_ms")
        plan["details"].pop("older_than")
        for o in plan["details"]["orphans"]:
            o.pop("age_ms")
    assert a == b


def test_cli_without_java_says_what_to_install(tmp_path: Path, scenarios) -> None:
    env = {k: v for k, v in os.environ.items() if k != "JAVA_HOME"}
    env["PATH"] = str(Path(sys.executable).parent)  # no java on this PATH
    result = _cli(
        "inspect", str(scenarios["many_commits"].root), "--check", "--engine", "spark", env=env
    )
    assert result.returncode == 1
    assert "needs Java" in result.stderr and "openjdk-17" in result.stderr
    assert "Traceback" not in result.stderr


def test_orphans_on_decoupled_changelogs_with_a_producer(
    spark_executor: SparkExecutor, java_built, tmp_path: Path
) -> None:
    """Changelogs whose base and delta lists Paimon deleted by design (issue 13.2)."""
    local_root, spark_root = _twins(java_built("changelog_decoupled"), tmp_path)
    now = int(time.time() * 1000)
    with LocalExecutor(4) as ex:
        local_plan = plan_orphan_clean(
            open_table(str(local_root)), older_than_ms=now - DAY * 1000, now_ms=now, executor=ex
        )
    spark_plan = SparkOrphanClean(
        open_table(str(spark_root)), spark_executor, now - DAY * 1000, now
    ).plan()
    assert _plan_json(spark_plan, spark_root) == _plan_json(local_plan, local_root)
    planted = {"data-feedface-orphan-0.parquet", "manifest-ff-0", "index-ff-0", ".snapshot-9.tmp"}
    deleted = {Path(a.path).name for p in local_plan.phases for a in p.actions if a.op == "delete"}
    assert deleted == planted  # the planted orphans, nothing live


def test_cli_keeps_spark_log_lines_off_stderr(spark_executor: SparkExecutor, scenarios) -> None:
    """A local Spark JVM starts quiet: no log4j banner or WARN lines among our messages,
    nor the JVM's announcement of JAVA_TOOL_OPTIONS (set for memory limits in many
    containers): a quiet run from cron prints nothing."""
    result = _cli(
        "inspect",
        str(scenarios["append_partitioned"].root),
        "--engine",
        "spark",
        "--spark-master",
        "local[1]",
        env={**os.environ, "JAVA_TOOL_OPTIONS": "-XX:+UseSerialGC"},
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert "log4j" not in result.stderr and "Setting default log level" not in result.stderr
    assert not [line for line in result.stderr.splitlines() if " WARN " in line]
    # The JVM's notice at every start of Spark 4 (issue 25.6) is filtered out too.
    assert "incubator modules" not in result.stderr
    assert "Picked up" not in result.stderr


def _contents(root: Path) -> dict[str, bytes]:
    """Every file of the table but ours (.paimon-cli), with its bytes."""
    return {
        str(p.relative_to(root)): p.read_bytes()
        for p in root.rglob("*")
        if p.is_file() and ".paimon-cli" not in p.parts
    }


def test_cli_quarantine_moves_and_restore_gives_the_files_back(
    spark_executor: SparkExecutor, scenarios, tmp_path: Path
) -> None:
    """--quarantine on Spark: the executors move the orphans into the run's quarantine
    (the same files a local run deletes), and restore puts every one of them back."""
    src = scenarios["append_partitioned"].root
    local_root, root = _twins(src, tmp_path)
    before = _contents(root)
    local = _cli("delete-orphan-files", str(local_root), "--json")
    assert local.returncode == 0, local.stderr[-2000:]
    result = _cli(
        "delete-orphan-files",
        str(root),
        "--engine",
        "spark",
        "--spark-master",
        "local[2]",
        "--quarantine",
        "--json",
    )
    assert result.returncode == 0, result.stderr[-2000:]
    doc = json.loads(result.stdout)
    assert doc["report"]["status"] == "ok"
    assert _contents(root) == _contents(local_root) != before
    quarantined = root / ".paimon-cli" / "quarantine" / doc["run_id"]
    moved = {str(p.relative_to(quarantined)) for p in quarantined.rglob("*") if p.is_file()}
    assert moved == set(before) - set(_contents(root))
    assert len(moved) == 4  # every planted file, nothing live
    assert_no_dangling_references(root)

    restored = _cli("restore", str(root), doc["run_id"], "--json")
    assert restored.returncode == 0, restored.stderr[-2000:]
    assert json.loads(restored.stdout)["report"]["restored"] == len(moved)
    assert _contents(root) == before
    assert not quarantined.exists()


def test_the_jvm_stderr_filter_drops_only_the_start_up_notices(capfd) -> None:  # type: ignore[no-untyped-def]
    import io

    from core.runtime.executors.spark import _forward_stderr

    jvm = io.BytesIO(
        b"Picked up JAVA_TOOL_OPTIONS: -XX:MaxRAMPercentage=75\n"
        b"NOTE: Picked up JDK_JAVA_OPTIONS: -Xss2m\n"
        b"WARNING: Using incubator modules: jdk.incubator.vector\n"
        b"Exception in thread main: something real\n"
        b"Caused by: Picked up JAVA_TOOL_OPTIONS: is not at the start\n"
    )
    _forward_stderr(jvm)
    err = capfd.readouterr().err
    assert err == (
        "Exception in thread main: something real\n"
        "Caused by: Picked up JAVA_TOOL_OPTIONS: is not at the start\n"
    )


def _file_list(root: Path, dest: Path) -> Path:
    """Every file of the table as a CSV file list (path, size, last_modified), taken now."""
    lines = ["path,size,last_modified"]
    for d, _dirs, names in os.walk(root):
        for n in names:
            st = (Path(d) / n).lstat()
            lines.append(f"{Path(d) / n},{st.st_size},{int(st.st_mtime * 1000)}")
    dest.write_text("\n".join(lines) + "\n")
    return dest


def _inventory_twins(
    spark_executor: SparkExecutor,
    scenarios: Any,
    tmp_path: Path,
    make_list: Callable[[Path, Path], Path],
    suffix: str,
) -> tuple[SparkOrphanClean, OrphanPlan, Path]:
    """Twin copies planned from a list of their own files, locally and on Spark: the Spark
    clean, its plan and root, after checking the plan equals the local one (the two lists'
    own times aside)."""
    local_root, spark_root = _twins(scenarios["append_partitioned"].root, tmp_path)
    now = int(time.time() * 1000)
    cutoff = now - DAY * 1000
    with LocalExecutor(4) as ex:
        local_plan = plan_orphan_clean(
            open_table(str(local_root)),
            older_than_ms=cutoff,
            now_ms=now,
            executor=ex,
            inventory=str(make_list(local_root, tmp_path / f"local.{suffix}")),
        )
    inventory = str(make_list(spark_root, tmp_path / f"spark.{suffix}"))
    clean = SparkOrphanClean(
        open_table(str(spark_root)), spark_executor, cutoff, now, inventory=inventory
    )
    spark_plan = clean.plan()

    def drop_inventory(p: OrphanPlan) -> OrphanPlan:
        return replace(p, details=replace(p.details, inventory=None))

    assert _plan_json(drop_inventory(spark_plan), spark_root) == _plan_json(
        drop_inventory(local_plan), local_root
    )
    assert len(spark_plan.details.orphans) >= 4
    return clean, spark_plan, spark_root


def test_orphans_from_an_inventory_identical_and_headed(
    spark_executor: SparkExecutor, scenarios, tmp_path: Path
) -> None:
    """--inventory on Spark: the plan the local engine makes from the same list; a file
    rewritten after planning is kept by the HEAD on the executor."""
    clean, spark_plan, spark_root = _inventory_twins(
        spark_executor, scenarios, tmp_path, _file_list, "csv"
    )
    assert spark_plan.details.inventory is not None
    assert spark_plan.details.inventory.format == "csv"
    orphans = [o.path for o in spark_plan.details.orphans]
    rewritten = Path(orphans[0])
    rewritten.write_bytes(b"a writer's file of the same name")
    report = clean.apply(spark_plan, ExecutionReport())
    assert report.status == "ok"
    assert rewritten.exists()
    assert not any(Path(p).exists() for p in orphans[1:])
    assert any("since the inventory" in n for n in report.notes)
    assert_no_dangling_references(spark_root)


def _plain_list(root: Path, dest: Path) -> Path:
    """Every file of the table as a plain list of paths: no sizes, no times."""
    paths = [str(Path(d) / n) for d, _dirs, names in os.walk(root) for n in names]
    dest.write_text("\n".join(paths) + "\n")
    return dest


def test_orphans_from_a_plain_list_identical_to_local(
    spark_executor: SparkExecutor, scenarios, tmp_path: Path
) -> None:
    """A plain list of paths on Spark: its rows carry no time, so the unused ones are
    HEADed after the used names left them (not every listed file), and the plan is the
    one the local engine makes from the same kind of list."""
    clean, spark_plan, spark_root = _inventory_twins(
        spark_executor, scenarios, tmp_path, _plain_list, "txt"
    )
    report = clean.apply(spark_plan, ExecutionReport())
    assert report.status == "ok"
    assert not any(Path(o.path).exists() for o in spark_plan.details.orphans)
    assert_no_dangling_references(spark_root)


def test_a_plain_list_missing_the_latest_manifest_lists_is_refused_on_spark(
    spark_executor: SparkExecutor, scenarios, tmp_path: Path
) -> None:
    """The latest manifest lists are used names, so their rows never reach a HEAD: the
    completeness check reads them among the rows without a time. A list without them is
    refused, with one that has them the plan goes ahead."""
    _local, root = _twins(scenarios["append_partitioned"].root, tmp_path)
    now = int(time.time() * 1000)
    complete = _plain_list(root, tmp_path / "all.txt")
    partial_list = tmp_path / "partial.txt"
    partial_list.write_text(
        "".join(line + "\n" for line in complete.read_text().split() if "manifest-list" not in line)
    )
    clean = SparkOrphanClean(
        open_table(str(root)), spark_executor, now - DAY * 1000, now, inventory=str(partial_list)
    )
    with pytest.raises(SafetyRefusalError, match="listing is unreliable"):
        clean.plan()
    whole = SparkOrphanClean(
        open_table(str(root)), spark_executor, now - DAY * 1000, now, inventory=str(complete)
    )
    assert whole.plan().details.orphans


def test_the_shipped_package_is_the_whole_engine(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """Executors import ``core`` from the zip the driver ships: the whole package, marked
    as paimon-cli's engine (it once held only ``core/runtime`` under the name ``core``)."""
    import subprocess
    import sys
    import zipfile

    from core.runtime.executors.spark import _package_zip

    shipped = tmp_path / "paimon_cli_core.zip"
    shipped.write_bytes(_package_zip())
    names = set(zipfile.ZipFile(shipped).namelist())
    assert {"core/__init__.py", "core/io/fileio.py", "core/runtime/executors/spark.py"} <= names
    probe = (
        "import sys; sys.path.insert(0, sys.argv[1]); import core, core.io.fileio; "
        "assert core.__file__.startswith(sys.argv[1]), core.__file__; "
        "assert core.PAIMON_CLI_ENGINE is True"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe, str(shipped)], capture_output=True, text=True, cwd=tmp_path
    )
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize(
    ("master", "cores"),
    [
        ("local", 1),
        ("local[3]", 3),
        ("local[2,2]", 2),
        ("local[ 4 , 1 ]", 4),
        ("local[*]", os.cpu_count() or 1),
        (None, os.cpu_count() or 1),
        ("local-cluster[2,1,1024]", None),
        ("spark://host:7077", None),
        ("yarn", None),
    ],
)
def test_local_masters_are_read_for_their_cores(master: str | None, cores: int | None) -> None:
    from core.runtime.executors.spark import _local_cores

    assert _local_cores(master) == cores


def test_a_local_session_shuffles_into_two_partitions_a_core(
    spark_executor: SparkExecutor,
) -> None:
    """Not Spark's 200 (made for clusters): the shared local[2,2] session has 4."""
    assert spark_executor.spark.conf.get("spark.sql.shuffle.partitions") == "4"
