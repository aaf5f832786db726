"""Commands against S3 with faults injected by our proxy in front of moto (issue 28): answers
that lie about what the store did, dropped connections, throttling and refusals. After each
sequence the table on S3 is read back from a local copy (pypaimon, the reference checker,
Java where it reads the table)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pypaimon_writer as pw
import pytest
from invariants import assert_no_dangling_references
from java_paimon import assert_java_ok
from s3.fault_proxy import FaultProxy, Rule

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


@pytest.mark.parametrize("action", ["error-after", "drop-after"])
@pytest.mark.parametrize("engine", ["local", "spark"])
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
