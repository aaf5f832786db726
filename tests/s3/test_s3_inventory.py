"""delete-orphan-files --inventory against S3 (moto): S3 Inventory reports in CSV, ORC and
Parquet give the plan LIST gives and delete the same files; an inventory older than the
cut-off is refused; a file rewritten after the inventory was taken is never deleted."""

from __future__ import annotations

import datetime as dt
import gzip
import io
import json
import time
import uuid
from typing import Any
from urllib.parse import quote_plus

import pytest

pytestmark = pytest.mark.s3

FIELDS = ("bucket", "key", "size", "last_modified_date", "is_latest")


def _objects(s3: Any, prefix: str) -> list[tuple[str, int, dt.datetime]]:
    """(key, size, LastModified) of every object under ``prefix`` of the bucket."""
    found = s3.fs().find(f"{s3.bucket}/{prefix}", detail=True)
    return [
        (path.split("/", 1)[1], int(info["size"]), info["LastModified"])
        for path, info in sorted(found.items())
    ]


def _write_inventory(
    s3: Any,
    prefixes: list[str],
    fmt: str,
    *,
    taken_ms: int,
    times: dict[str, dt.datetime] | None = None,
) -> str:
    """An S3 Inventory report of the objects under ``prefixes`` (``times``: LastModified
    to claim instead of the real one, by key); returns the manifest.json URL."""
    rows = [
        (s3.bucket, key, size, (times or {}).get(key, modified), True)
        for prefix in prefixes
        for key, size, modified in _objects(s3, prefix)
    ]
    base = f"inventory/{uuid.uuid4().hex[:8]}"
    halves = [rows[: len(rows) // 2], rows[len(rows) // 2 :]]  # two data files
    keys = []
    for i, part in enumerate(halves):
        key = f"{base}/data/part-{i}.{fmt}" + (".gz" if fmt == "csv" else "")
        s3.fs().pipe_file(f"{s3.bucket}/{key}", _encode(part, fmt))
        keys.append(key)
    manifest = {
        "sourceBucket": s3.bucket,
        "destinationBucket": f"arn:aws:s3:::{s3.bucket}",
        "version": "2016-11-30",
        "creationTimestamp": str(taken_ms),
        "fileFormat": {"csv": "CSV", "orc": "ORC", "parquet": "Parquet"}[fmt],
        "fileSchema": "Bucket, Key, Size, LastModifiedDate, IsLatest",
        "files": [{"key": k, "size": 1, "MD5checksum": "x"} for k in keys],
    }
    manifest_key = f"{base}/2026-01-01T01-00Z/manifest.json"
    s3.fs().pipe_file(f"{s3.bucket}/{manifest_key}", json.dumps(manifest).encode())
    return f"s3://{s3.bucket}/{manifest_key}"


def _encode(rows: list[tuple[Any, ...]], fmt: str) -> bytes:
    if fmt == "csv":
        lines = [
            ",".join(
                f'"{v}"'
                for v in (
                    b,
                    quote_plus(k, safe="/"),
                    s,
                    m.astimezone(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.000Z"),
                    "true",
                )
            )
            for b, k, s, m, _latest in rows
        ]
        return gzip.compress(("\n".join(lines) + "\n").encode())
    import pyarrow as pa

    columns = list(zip(*rows, strict=True)) if rows else [()] * len(FIELDS)
    table = pa.table(
        {
            "bucket": pa.array(columns[0], pa.string()),
            "key": pa.array(columns[1], pa.string()),
            "size": pa.array(columns[2], pa.int64()),
            "last_modified_date": pa.array(columns[3], pa.timestamp("ms", tz="UTC")),
            "is_latest": pa.array(columns[4], pa.bool_()),
        }
    )
    out = io.BytesIO()
    if fmt == "orc":
        from pyarrow import orc

        orc.write_table(table, out)
    else:
        import pyarrow.parquet as pq

        pq.write_table(table, out)
    return out.getvalue()


@pytest.fixture
def planted(s3_server, s3_prefix, scenarios):
    """A table on S3 with orphans (one with a name that needs URL-encoding) and a
    neighbour table, all uploaded before the returned cut-off (epoch ms)."""
    src = scenarios["append_partitioned"].root
    uri = s3_server.upload(src, f"{s3_prefix}/{src.name}")
    other = s3_server.upload(src, f"{s3_prefix}/neighbour")
    prefix = uri.removeprefix(f"s3://{s3_server.bucket}/")
    fs = s3_server.fs()
    bucket_dir = f"{uri.removeprefix('s3://')}/dt=2024-01-01/hr=0/bucket-0"
    orphans = [f"{bucket_dir}/data-orphan-{i:03d}.parquet" for i in range(12)]
    orphans.append(f"{bucket_dir}/data-orphan with space+plus-0.parquet")
    orphans += [f"{uri.removeprefix('s3://')}/manifest/manifest-orphan-{i}" for i in range(3)]
    for path in orphans:
        fs.pipe_file(path, b"orphan")
    fs.pipe_file(f"{uri.removeprefix('s3://')}/README", b"keep me")
    time.sleep(1.1)  # object stores keep the upload time: let the cut-off pass it
    cutoff = int(time.time() * 1000)
    time.sleep(0.1)
    return uri, prefix, other, orphans, cutoff


def _opts(s3: Any, cutoff: int) -> list[str]:
    return [*s3.cli_options(), "--older-than", str(cutoff), "--allow-recent"]


@pytest.mark.parametrize("fmt", ["csv", "orc", "parquet"])
def test_inventory_plans_and_deletes_what_listing_does(run, s3_server, planted, fmt: str) -> None:
    uri, prefix, other, orphans, cutoff = planted
    neighbour = other.removeprefix(f"s3://{s3_server.bucket}/")
    source = _write_inventory(s3_server, [prefix, neighbour], fmt, taken_ms=int(time.time() * 1000))
    opts = _opts(s3_server, cutoff)
    listed = run.json("delete-orphan-files", uri, "--dry-run", *opts)
    dry = run.json("delete-orphan-files", uri, "--dry-run", "--inventory", source, *opts)
    paths = [o["path"] for o in dry["plan"]["details"]["orphans"]]
    assert paths == [o["path"] for o in listed["plan"]["details"]["orphans"]]
    assert sorted(paths) == sorted(f"s3://{p}" for p in orphans)
    assert dry["plan"]["details"]["inventory"]["format"] == f"s3-{fmt}"
    before = s3_server.files(uri)
    doc = run.json("delete-orphan-files", uri, "--inventory", source, *opts)
    assert doc["report"]["status"] == "ok"
    gone = {f"s3://{p}" for p in orphans}
    assert {f"{uri}/{f}" for f in before} - {f"{uri}/{f}" for f in s3_server.files(uri)} == gone
    assert s3_server.files(other) == s3_server.files(uri) - {"README"}  # the neighbour intact


def test_an_inventory_taken_before_the_cutoff_is_refused(run, s3_server, planted) -> None:
    uri, prefix, _other, _orphans, cutoff = planted
    source = _write_inventory(s3_server, [prefix], "csv", taken_ms=cutoff - 60_000)
    before = s3_server.files(uri)
    result = run("delete-orphan-files", uri, "--inventory", source, *_opts(s3_server, cutoff))
    assert result.exit_code == 1
    assert "before the cut-off" in result.stderr
    assert s3_server.files(uri) == before


def test_a_file_rewritten_after_the_inventory_is_never_deleted(run, s3_server, planted) -> None:
    """The inventory says the first orphans are old; they were written again after it (a
    writer reusing the names): the HEAD before each deletion sees them young and keeps
    them. So does a file the inventory claims is old but that never was."""
    uri, prefix, _other, orphans, cutoff = planted
    fs = s3_server.fs()
    fresh = f"{uri.removeprefix('s3://')}/dt=2024-01-01/hr=0/bucket-0/data-fresh-0.parquet"
    time.sleep(1.1)  # LastModified has whole seconds: be a second past the cut-off
    fs.pipe_file(fresh, b"a writer's file")  # after the cut-off, uncommitted
    old = dt.datetime(2020, 1, 1, tzinfo=dt.timezone.utc)
    source = _write_inventory(
        s3_server,
        [prefix],
        "parquet",
        taken_ms=int(time.time() * 1000),
        times={fresh.split("/", 1)[1]: old},  # the inventory lies about its age
    )
    rewritten = orphans[:3]
    for path in rewritten:
        fs.pipe_file(path, b"written again after the inventory")
    doc = run.json("delete-orphan-files", uri, "--inventory", source, *_opts(s3_server, cutoff))
    assert doc["report"]["status"] == "ok"
    assert doc["plan"]["details"]["orphan_count"] == len(orphans) + 1  # as the inventory says
    left = {f"{s3_server.bucket}/{prefix}/{f}" for f in s3_server.files(uri)}
    assert set(rewritten) | {fresh} <= left
    assert not (set(orphans) - set(rewritten)) & left
    assert any("changed after planning" in n for n in doc["report"]["notes"])
