"""Every command against S3 (moto on loopback, through s3fs): same results as local disk."""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

import pytest
from support import pypaimon_writer as pw
from support.invariants import assert_no_dangling_references, files_under

from core.io.fileio import FileIO

pytestmark = pytest.mark.s3


def _local_files(root: Path) -> set[str]:
    return {str(Path(p).relative_to(root)) for p in files_under(root)}


@pytest.fixture
def twin(s3_server, s3_prefix, scenarios, tmp_path: Path):
    """The same table on local disk and on S3."""

    def make(name: str) -> tuple[Path, str]:
        src = scenarios[name].root
        local = tmp_path / "wh" / src.parent.name / src.name
        shutil.copytree(src, local)
        uri = s3_server.upload(src, f"{s3_prefix}/{src.name}")
        return local, uri

    return make


def test_inspect_and_check(run, s3_server, twin) -> None:
    local, uri = twin("append_partitioned")
    opts = s3_server.cli_options()
    a = run.json("inspect", local)["summary"]
    b = run.json("inspect", uri, *opts)["summary"]
    assert a["live"] == b["live"] and a["snapshots"] == b["snapshots"]
    assert a["storage"] == b["storage"]
    check = run.json("inspect", uri, "--check", *opts)["check"]
    assert check["ok"] and check["files_checked"] > 10
    files = run.json("inspect", uri, "files", *opts)["files"]
    assert all(f["path"].startswith(uri) for f in files)


def test_check_names_a_missing_object(run, s3_server, twin) -> None:
    _local, uri = twin("many_commits")
    opts = s3_server.cli_options()
    victim = run.json("inspect", uri, "files", *opts)["files"][0]["path"]
    s3_server.fs().rm_file(victim.removeprefix("s3://"))
    result = run("inspect", uri, "--check", "--json", *opts)
    assert result.exit_code == 3
    assert victim in {p["path"] for p in json.loads(result.stdout)["check"]["problems"]}


def test_expire_snapshots_same_final_files(run, s3_server, twin) -> None:
    local, uri = twin("many_commits")
    args = ["--retain-min", "5", "--older-than", "0 ms", "--json"]
    a = run.json("expire-snapshots", local, *args[:-1])
    b = run.json("expire-snapshots", uri, *args[:-1], *s3_server.cli_options())
    assert a["plan"]["details"]["snapshots"] == b["plan"]["details"]["snapshots"]
    assert b["report"]["status"] == "ok"
    assert s3_server.files(uri) == _local_files(local)
    assert run.json("inspect", uri, "--check", *s3_server.cli_options())["check"]["ok"]


def test_orphans_with_paged_listing(run, s3_server, twin) -> None:
    local, uri = twin("many_commits")
    fs = s3_server.fs()
    bucket_dir = f"{uri.removeprefix('s3://')}/bucket-0"
    for i in range(1100):  # more than one 1,000-key listing page
        fs.pipe_file(f"{bucket_dir}/data-orphan-{i:05d}.parquet", b"x")
    fs.pipe_file(f"{uri.removeprefix('s3://')}/README", b"keep me")
    time.sleep(1.1)  # object stores keep the upload time: let the cut-off pass it
    opts = [*s3_server.cli_options(), "--older-than", "0 ms", "--allow-recent"]
    dry = run.json("delete-orphan-files", uri, "--dry-run", *opts)
    assert dry["plan"]["details"]["orphan_count"] == 1100
    doc = run.json("delete-orphan-files", uri, *opts)
    assert doc["report"]["status"] == "ok"
    done = {p["name"]: p["done"] for p in doc["report"]["phases"]}
    assert sum(v for k, v in done.items() if k.startswith("orphan-files")) == 1100
    assert s3_server.files(uri) == _local_files(local) | {"README"}


def test_commits_use_conditional_create(run, s3_server, twin, tmp_path: Path) -> None:
    _local, uri = twin("append_partitioned")
    opts = s3_server.cli_options()
    tag = run("create-tag", uri, "release", *opts)
    assert tag.exit_code == 0, tag.stderr
    again = run("create-tag", uri, "release", *opts)
    assert again.exit_code == 1 and "exists" in again.stderr
    drop = run(
        "expire-partitions",
        uri,
        "--expiration-time",
        "1 d",
        "--timestamp-formatter",
        "yyyy-MM-dd",
        *opts,
        "--json",
    )
    assert drop.exit_code == 0, drop.stderr
    # Read back with pypaimon from a local copy of what is on S3.
    copy = s3_server.download(uri, tmp_path / "back" / "db.db" / "append_partitioned")
    assert_no_dangling_references(copy)
    rows = pw.read_rows(tmp_path / "back", "db.append_partitioned")
    assert rows == []  # every 2024 partition is older than a day
    assert pw.read_rows(tmp_path / "back", "db.append_partitioned", tag="release")


def test_write_if_absent_is_a_compare_and_swap(s3_server) -> None:
    fio = FileIO(s3_server.fs_options)
    path = f"s3://{s3_server.bucket}/cas/snapshot-1"
    assert fio.write_if_absent(path, b"first") is True
    assert fio.write_if_absent(path, b"second") is False
    assert fio.read_bytes(path) == b"first"


def test_rate_limit_option_is_honoured(run, s3_server, twin) -> None:
    _local, uri = twin("path_directory")
    result = run(
        "inspect", uri, "--check", "--max-requests-per-second", "500", *s3_server.cli_options()
    )
    assert result.exit_code == 0, result.stderr


def test_quarantine_and_restore_on_s3(run, s3_server, twin) -> None:
    """Copy, then delete: the same final files as a plain run, and restore brings all back."""
    local, uri = twin("many_commits")
    before = s3_server.files(uri)
    args = ["--retain-max", "3", "--retain-min", "1"]
    assert run("expire-snapshots", local, *args).exit_code == 0
    doc = run.json("expire-snapshots", uri, *args, "--quarantine", *s3_server.cli_options())
    assert doc["report"]["status"] == "ok"
    assert s3_server.files(uri) == _local_files(local)
    prefix = uri.removeprefix("s3://")
    assert s3_server.fs().find(f"{prefix}/.paimon-cli/quarantine/{doc['run_id']}")
    restored = run.json("restore", uri, "--last", *s3_server.cli_options())
    assert restored["report"]["restored"] > 0
    assert s3_server.files(uri) == before
    assert run.json("inspect", uri, "--check", *s3_server.cli_options())["check"]["ok"]
