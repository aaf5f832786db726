"""Commands against S3 with faults injected by our proxy in front of moto (issue 28): answers
that lie about what the store did, dropped connections, throttling and refusals. After each
sequence the table on S3 is read back from a local copy (pypaimon, the reference checker,
Java where it reads the table)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from functools import partial
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from support import pypaimon_writer as pw
from support.fault_proxy import FaultProxy, Rule, command_of, parent_pid, pid_of_client
from support.fixtures import require_spark
from support.invariants import assert_no_dangling_references
from support.java_paimon import assert_java_ok

from core.io.fileio import FileIO
from core.runtime.clock import SystemClock

pytestmark = pytest.mark.s3


def small_files(wh: Path) -> Path:
    """An append table with six files per partition (compaction.min.file-num is 5)."""
    schema = pa.schema([("id", pa.int64()), ("dt", pa.string()), ("s", pa.string())])
    table = pw.create_table(wh, "db.small", schema, partition_keys=["dt"])
    for c in range(6):
        pw.append(table, [{"id": c * 2 + j, "dt": f"d{j}", "s": f"s{c}"} for j in range(2)])
    return pw.table_root(wh, "db.small")


def upload(s3: Any, local: Path, prefix: str) -> str:
    return s3.upload(local, f"{prefix}/{local.name}")


def read_back(s3: Any, uri: str, dest: Path) -> tuple[Path, list[dict[str, Any]]]:
    """A local copy of the table on S3 (nothing missing) and the rows of its head."""
    root = s3.download(uri, dest / "wh" / "db.db" / uri.rsplit("/", 1)[1])
    assert_no_dangling_references(root)
    return root, pw.read_rows(dest / "wh", f"db.{root.name}")


def snapshot_ids(s3: Any, uri: str) -> list[int]:
    names = s3.files(uri)
    return sorted(int(n.split("-")[1]) for n in names if n.startswith("snapshot/snapshot-"))


# -- 1. an ambiguous create is ours when it holds our content ---------------------------------
SNAPSHOT_PUT = r"/snapshot/snapshot-\d+$"


@pytest.mark.parametrize(
    ("engine", "action"),
    [("local", "error-after"), ("local", "drop-after"), ("spark", "error-after")],
)
def test_compact_whose_snapshot_put_landed_but_was_answered_badly(
    run,
    s3_server,
    faulty_s3,
    faults: FaultProxy,
    s3_prefix,
    tmp_path: Path,
    action,
    engine,
    request,
) -> None:
    """500 after the store kept the conditional PUT (or the connection dropped): the retry
    hears 412 about our own snapshot. The commit is ours: nothing is discarded."""
    if engine == "spark":
        request.getfixturevalue("spark_cli")
    uri = upload(s3_server, small_files(tmp_path / "src"), s3_prefix)
    expected = pw.read_rows(tmp_path / "src", "db.small")  # compaction keeps every row
    before = snapshot_ids(s3_server, uri)
    rule = faults.add(Rule("PUT", SNAPSHOT_PUT, action))
    doc = run.json("compact", uri, "--engine", engine, *faulty_s3.cli_options())
    assert rule.hits == 1
    assert doc["report"]["status"] == "ok" and doc["report"]["attempts"] == 1
    assert snapshot_ids(s3_server, uri) == [*before, before[-1] + 1]
    _root, rows = read_back(s3_server, uri, tmp_path / "back")
    assert rows == expected


@pytest.mark.java
def test_java_reads_a_compaction_committed_through_a_500(
    run, s3_server, faulty_s3, faults: FaultProxy, s3_prefix, tmp_path: Path, java
) -> None:
    uri = upload(s3_server, small_files(tmp_path / "src"), s3_prefix)
    faults.add(Rule("PUT", SNAPSHOT_PUT, "error-after"))
    assert run("compact", uri, *faulty_s3.cli_options()).exit_code == 0
    root, rows = read_back(s3_server, uri, tmp_path / "back")
    doc = java.verify(root)
    assert_java_ok(doc)
    assert doc["entries"]["latest"]["rows"] == len(rows) == 12


def test_expire_partitions_commit_answered_500_is_ours(
    run, s3_server, faulty_s3, faults: FaultProxy, s3_prefix, tmp_path: Path
) -> None:
    dated = pw.dated_partitions(tmp_path / "src", undated=False)  # a success exits 0
    uri = upload(s3_server, dated.root, s3_prefix)
    faults.add(Rule("PUT", SNAPSHOT_PUT, "error-after"))
    args = ["--expiration-time", "1 d", "--max-expires", "2"]
    doc = run.json("expire-partitions", uri, *args, *faulty_s3.cli_options())
    assert doc["report"]["attempts"] == 1
    read_back(s3_server, uri, tmp_path / "back")


def test_remove_unexisting_files_commit_answered_500_is_ours(
    run, s3_server, faulty_s3, faults: FaultProxy, s3_prefix, scenarios, tmp_path: Path
) -> None:
    """The repair's snapshot stored but answered 500: the commit is ours, and its head
    (without the lost files) reads; older snapshots still name them, as Paimon leaves them."""
    s = scenarios["append_partitioned"]
    src = tmp_path / "src" / s.root.parent.name / s.root.name
    shutil.copytree(s.root, src)
    lost = {name for kind, name in pw.delta_entries(s.root.parents[1], s.identifier, 6) if not kind}
    for name in lost:
        (path,) = src.rglob(name)
        path.unlink()
    uri = upload(s3_server, src, s3_prefix)
    before = snapshot_ids(s3_server, uri)
    rule = faults.add(Rule("PUT", SNAPSHOT_PUT, "error-after"))
    doc = run.json("remove-unexisting-files", uri, *faulty_s3.cli_options())
    assert rule.hits == 1
    assert doc["report"]["status"] == "ok" and doc["report"]["attempts"] == 1
    assert snapshot_ids(s3_server, uri) == [*before, before[-1] + 1]
    root = s3_server.download(uri, tmp_path / "back" / "wh" / "db.db" / src.name)
    head = pw.read_rows_at_root(root)
    assert head and len(head) < len(pw.read_rows_at_root(s.root))


def test_tag_create_and_rename_answered_500_are_ours(
    run, s3_server, faulty_s3, faults: FaultProxy, s3_prefix, scenarios, tmp_path: Path
) -> None:
    src = scenarios["append_partitioned"].root
    uri = upload(s3_server, src, s3_prefix)
    opts = faulty_s3.cli_options()
    faults.add(Rule("PUT", r"/tag/tag-release$", "error-after"))
    created = run("create-tag", uri, "release", *opts)
    assert created.exit_code == 0, created.stderr
    faults.add(Rule("PUT", r"/tag/tag-gold$", "drop-after"))
    renamed = run("rename-tag", uri, "release", "gold", *opts)
    assert renamed.exit_code == 0, renamed.stderr
    tags = {n for n in s3_server.files(uri) if n.startswith("tag/")}
    assert "tag/tag-gold" in tags and "tag/tag-release" not in tags
    root, _rows = read_back(s3_server, uri, tmp_path / "back")
    assert pw.read_rows(root.parents[1], "db.append_partitioned", tag="gold")


def test_a_refused_snapshot_put_commits_nothing(
    run, s3_server, faulty_s3, faults: FaultProxy, s3_prefix, tmp_path: Path
) -> None:
    """403 on the snapshot PUT: refused, so the attempt's files are removed again."""
    uri = upload(s3_server, small_files(tmp_path / "src"), s3_prefix)
    before = s3_server.files(uri)
    faults.add(Rule("PUT", SNAPSHOT_PUT, "error", status=403, code="AccessDenied", times=99))
    result = run("compact", uri, *faulty_s3.cli_options())
    assert result.exit_code == 1 and "access denied" in result.stderr.lower()
    assert s3_server.files(uri) == before


# -- 3. a key the store refuses inside a batch delete is a failure ------------------------------
def plant_orphans(s3: Any, uri: str, where: dict[str, int]) -> dict[str, int]:
    """``{bucket directory: count}`` orphan data files ``data-0ddba11-orphan-<j>-<i>`` (``j``:
    the directory's place in ``where``); their sizes by key relative to the table."""
    bucket = uri.removeprefix("s3://")
    files = {
        f"{d}/data-0ddba11-orphan-{j}-{i:04d}.parquet": b"orphan" * (i + 1)
        for j, (d, n) in enumerate(where.items())
        for i in range(n)
    }
    s3.fs().pipe({f"{bucket}/{k}": v for k, v in files.items()})
    return {k: len(v) for k, v in files.items()}


def deny_deletes(faults: FaultProxy, pattern: str) -> None:
    """A bucket policy denying s3:DeleteObject under ``pattern``: per-key errors inside
    DeleteObjects answers (batches), 403 to single DELETEs (Spark's orphan deletion)."""
    faults.add(
        Rule("POST", r"\?delete", "refuse-keys", keys=pattern, code="AccessDenied", times=99)
    )
    faults.add(Rule("DELETE", pattern, "error", status=403, code="AccessDenied", times=99))


ORPHAN_ARGS = ["--older-than", "0 ms", "--allow-recent"]


def _orphan_run(run: Any, uri: str, s3: Any, engine: str) -> Any:
    time.sleep(1.1)  # object stores keep the upload time: let the cut-off pass it
    return run(
        "delete-orphan-files", uri, *ORPHAN_ARGS, "--engine", engine, "--json", *s3.cli_options()
    )


@pytest.mark.parametrize("engine", ["local", "spark"])
def test_refused_orphan_deletions_are_failures(
    run,
    s3_server,
    faulty_s3,
    faults: FaultProxy,
    s3_prefix,
    scenarios,
    tmp_path: Path,
    engine,
    request,
) -> None:
    if engine == "spark":
        request.getfixturevalue("spark_cli")
    uri = upload(s3_server, scenarios["append_partitioned"].root, s3_prefix)
    live = s3_server.files(uri)
    buckets = sorted({n.rsplit("/", 1)[0] for n in live if "/bucket-" in n})
    orphans = plant_orphans(s3_server, uri, {buckets[0]: 6, buckets[1]: 2})
    deny_deletes(faults, r"orphan-0-")  # keys appear URL-encoded in paths: no "=" here
    refused = {k for k in orphans if k.startswith(buckets[0] + "/")}
    result = _orphan_run(run, uri, faulty_s3, engine)
    assert result.exit_code == 1, result.stderr
    report = json.loads(result.stdout)["report"]
    assert report["status"] == "partial"
    failures = [f for ph in report["phases"] for f in ph["failures"]]
    assert {f["path"].removeprefix(uri + "/") for f in failures} == refused
    assert all("AccessDenied" in f["error"] for f in failures)
    done = sum(ph["done"] for ph in report["phases"] if ph["name"].startswith("orphan"))
    assert done == len(orphans) - len(refused)
    assert s3_server.files(uri) == live | refused
    if engine == "local":
        record = run.json("inspect", uri, "runs", *s3_server.cli_options())["runs"][0]
        assert record["status"] == "partial"
        assert record["totals"]["bytes"] == sum(v for k, v in orphans.items() if k not in refused)
    if engine == "local":  # the policy is lifted: a rerun deletes the rest
        faults.clear()
        again = _orphan_run(run, uri, faulty_s3, engine)
        assert again.exit_code == 0, again.stderr
        assert s3_server.files(uri) == live


@pytest.mark.parametrize("engine", ["local", "spark"])
def test_refused_expiry_deletions_keep_the_journal(
    run,
    s3_server,
    faulty_s3,
    faults: FaultProxy,
    s3_prefix,
    scenarios,
    tmp_path: Path,
    engine,
    request,
) -> None:
    """Expiry's data phase in batches (on Spark, batches sent by the executors): the keys a
    bucket policy refuses are failures, the journal stays and a rerun finishes it."""
    if engine == "spark":
        request.getfixturevalue("spark_cli")
    src = scenarios["many_commits"].root
    local = tmp_path / "local" / src.name
    shutil.copytree(src, local)
    args = ["--retain-min", "5", "--older-than", "0 ms"]
    assert run("expire-snapshots", local, *args).exit_code == 0
    uri = upload(s3_server, src, s3_prefix)
    deny_deletes(faults, r"/data-[^/]*$")
    result = run(
        "expire-snapshots", uri, *args, "--engine", engine, "--json", *faulty_s3.cli_options()
    )
    assert result.exit_code == 1, result.stderr
    report = json.loads(result.stdout)["report"]
    assert report["status"] == "partial"
    failed = [f["path"] for ph in report["phases"] for f in ph["failures"]]
    assert failed and all("/data-" in p for p in failed)
    assert all(p.removeprefix(uri + "/") in s3_server.files(uri) for p in failed)
    journals = s3_server.fs().find(uri.removeprefix("s3://") + "/.paimon-cli/journal")
    assert journals, "the journal stays for the next run"
    read_back(s3_server, uri, tmp_path / "partial")  # nothing dangling meanwhile
    faults.clear()
    again = run.json("expire-snapshots", uri, *args, "--engine", engine, *faulty_s3.cli_options())
    assert again["report"]["status"] == "ok" and again["report"]["resumed_journals"]
    assert s3_server.files(uri) == {
        str(p.relative_to(local))
        for p in local.rglob("*")
        if p.is_file() and ".paimon-cli" not in p.parts
    }


def test_transient_key_errors_are_retried_and_applied_500_is_done(
    run, s3_server, faulty_s3, faults: FaultProxy, s3_prefix, scenarios
) -> None:
    """InternalError for some keys of an answer, and a DeleteObjects the store applied but
    answered 500: both end with every orphan deleted and status ok."""
    uri = upload(s3_server, scenarios["append_partitioned"].root, s3_prefix)
    live = s3_server.files(uri)
    bucket_dir = sorted(n.rsplit("/", 1)[0] for n in live if "/bucket-" in n)[0]
    plant_orphans(s3_server, uri, {bucket_dir: 5})
    faults.add(
        Rule("POST", r"\?delete", "refuse-keys", keys="orphan-0-000[0-2]", code="InternalError")
    )
    faults.add(Rule("POST", r"\?delete", "error-after"))
    result = _orphan_run(run, uri, faulty_s3, "local")
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout)["report"]["status"] == "ok"
    assert [r.hits for r in faults.rules] == [1, 1]
    assert s3_server.files(uri) == live


def test_a_batch_applied_but_never_confirmed_is_checked_key_by_key(
    s3_server, faults: FaultProxy
) -> None:
    """Every answer to the batch is a 500 after the store applied it (no client retry left):
    the keys gone count as deleted; a batch refused before applying fails every key."""
    fio = FileIO(
        {"endpoint_url": faults.endpoint, "config_kwargs": {"retries": {"max_attempts": 1}}},  # type: ignore[dict-item]
        retries=1,
    )
    fs = s3_server.fs()
    paths = [f"s3://{s3_server.bucket}/unconfirmed/f{i}" for i in range(4)]
    fs.pipe({p.removeprefix("s3://"): b"x" for p in paths})
    faults.add(Rule("POST", r"\?delete", "error-after", times=99))
    assert fio.delete_many(paths) == {}
    assert not any(fs.exists(p) for p in paths)
    fs.pipe({p.removeprefix("s3://"): b"x" for p in paths})
    faults.clear()
    faults.add(Rule("POST", r"\?delete", "error", times=99))
    failed = fio.delete_many(paths)
    assert sorted(failed) == paths and all(fs.exists(p) for p in paths)


# -- listings: a fault on the second page of a >1,000-key listing -------------------------------
def test_fault_on_the_second_listing_page(
    run, s3_server, faulty_s3, faults: FaultProxy, s3_prefix, scenarios
) -> None:
    """A bucket directory of 1,100 keys lists in two pages: 403 on the second stops the run
    with nothing deleted; 503 SlowDown there is retried and the run deletes every orphan."""
    uri = upload(s3_server, scenarios["append_partitioned"].root, s3_prefix)
    live = s3_server.files(uri)
    bucket_dir = sorted(n.rsplit("/", 1)[0] for n in live if "/bucket-" in n)[0]
    orphans = plant_orphans(s3_server, uri, {bucket_dir: 1100})
    denied = faults.add(
        Rule("GET", r"continuation-token=", "error", status=403, code="AccessDenied")
    )
    result = _orphan_run(run, uri, faulty_s3, "local")
    assert denied.hits == 1
    assert result.exit_code == 1 and "access denied" in result.stderr.lower()
    assert s3_server.files(uri) == live | set(orphans)
    slow = faults.add(Rule("GET", r"continuation-token=", "error", status=503, code="SlowDown"))
    result = _orphan_run(run, uri, faulty_s3, "local")
    assert slow.hits == 1
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout)["plan"]["details"]["orphan_count"] == len(orphans)
    assert s3_server.files(uri) == live


# -- 4. the store's clock decides file ages -----------------------------------------------------
DAY_MS = 86_400_000


def test_the_store_clock_is_its_date_header(s3_server) -> None:
    fio = FileIO(s3_server.fs_options)
    store = fio.store_now_ms(f"s3://{s3_server.bucket}/some/table")
    assert store is not None and "Date header" in store[1]
    assert abs(store[0] - time.time() * 1000) < 5_000


@pytest.mark.parametrize(("engine", "skew_days"), [("local", 2), ("local", -1), ("spark", 2)])
def test_a_host_clock_off_the_stores_is_refused(
    run, s3_server, s3_prefix, scenarios, monkeypatch, engine, skew_days, request
) -> None:
    """A host two days ahead would take a writer's upload of a second ago (not committed
    yet) for a two-day-old orphan: refused, naming both clocks, nothing deleted."""
    if engine == "spark":
        request.getfixturevalue("spark_cli")
    uri = upload(s3_server, scenarios["append_partitioned"].root, s3_prefix)
    live = s3_server.files(uri)
    bucket_dir = sorted(n.rsplit("/", 1)[0] for n in live if "/bucket-" in n)[0]
    uploaded = plant_orphans(s3_server, uri, {bucket_dir: 2})  # a writer's, a second ago
    real = SystemClock.now_ms
    monkeypatch.setattr(SystemClock, "now_ms", lambda self: real(self) + skew_days * DAY_MS)
    result = run("delete-orphan-files", uri, "--engine", engine, *s3_server.cli_options())
    monkeypatch.undo()
    assert result.exit_code == 1, result.stdout
    message = " ".join(result.stderr.split())
    assert "this machine's clock" in message and "the store's" in message
    assert ("ahead of" if skew_days > 0 else "behind") in message
    assert "Traceback" not in result.stderr
    assert s3_server.files(uri) == live | set(uploaded)


# -- Spark: a task retried after its worker died, and the JVM killed mid-run -------------------
def _spark_cli(*args: object, timeout: int = 600) -> subprocess.CompletedProcess[str]:
    """A CLI run in a process of its own: its own Spark JVM, which a test may kill."""
    require_spark()
    return subprocess.run(
        [sys.executable, "-m", "paimon_cli", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def _kill(address: tuple[object, ...], *, jvm: bool) -> None:
    """SIGKILL the Python worker that sent the request, or the Spark JVM above it."""
    pid = pid_of_client(address)
    while jvm and pid is not None and "java" not in command_of(pid).split(" ", 1)[0]:
        pid = parent_pid(pid)
    assert pid is not None and pid > 1, address
    os.kill(pid, signal.SIGKILL)


@pytest.mark.spark
def test_spark_retries_a_task_whose_worker_died(
    run, s3_server, faulty_s3, faults: FaultProxy, s3_prefix, scenarios, spark_cli
) -> None:
    """The shared session runs local[2,2] (spark.task.maxFailures 2): the Python worker
    deleting orphans dies right after its first request reached the store; Spark runs the
    task again, which finds that file gone and deletes the rest."""
    uri = upload(s3_server, scenarios["append_partitioned"].root, s3_prefix)
    live = s3_server.files(uri)
    bucket_dir = sorted(n.rsplit("/", 1)[0] for n in live if "/bucket-" in n)[0]
    plant_orphans(s3_server, uri, {bucket_dir: 4})
    rule = faults.add(Rule("DELETE", "orphan-", "call", callback=partial(_kill, jvm=False)))
    result = _orphan_run(run, uri, faulty_s3, "spark")
    assert rule.hits == 1
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout)["report"]["status"] == "ok"
    assert s3_server.files(uri) == live


@pytest.mark.spark
def test_a_spark_jvm_killed_mid_run_fails_cleanly_and_a_rerun_finishes(
    run, s3_server, faulty_s3, faults: FaultProxy, s3_prefix, scenarios, tmp_path: Path
) -> None:
    src = scenarios["many_commits"].root
    local = tmp_path / "local" / src.name
    shutil.copytree(src, local)
    args = ["--retain-min", "5", "--older-than", "0 ms"]
    assert run("expire-snapshots", local, *args).exit_code == 0
    uri = upload(s3_server, src, s3_prefix)
    # The first batch delete an executor sends (after the snapshot files went, on the driver).
    rule = faults.add(Rule("POST", r"\?delete", "call", callback=partial(_kill, jvm=True)))
    result = _spark_cli(
        "expire-snapshots", uri, *args, "--engine", "spark", *faulty_s3.cli_options()
    )
    assert rule.hits == 1
    assert result.returncode == 1, (result.stdout, result.stderr[-3000:])
    assert "Spark" in result.stderr and "Traceback" not in result.stderr
    read_back(s3_server, uri, tmp_path / "killed")  # nothing dangling
    again = run.json("expire-snapshots", uri, *args, *s3_server.cli_options())
    assert again["report"]["status"] == "ok" and again["report"]["resumed_journals"]
    assert s3_server.files(uri) == {
        str(p.relative_to(local))
        for p in local.rglob("*")
        if p.is_file() and ".paimon-cli" not in p.parts
    }
