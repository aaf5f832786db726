#!/usr/bin/env python3
"""delete-orphan-files on S3 with 20 ms per request: ours against a bare s3fs script.

Usage: python bench/bench_s3.py [--objects N] [--scale S] [--latency-ms L]
       [--partitions P] [--workdir DIR] [--keep]

Everything runs on loopback. A helper process (this script with ``--serve``) holds a moto
S3 server on ``127.0.0.1`` and, in front of it, a small threaded HTTP reverse proxy that
sleeps L ms (20) before forwarding each request: the clients only talk to the proxy, so
every request costs at least one round trip of a real object store. The proxy counts
requests (``GET /__stats`` answers without delay or forwarding).

The table is ``bench_orphans.build_orphan_table``'s tree with N (100,000) objects: about N/2
table files (``make_big_table``, 500 data files per APPEND snapshot over P partitions) and
N/2 empty orphans over the bucket directories and ``manifest/``, all days old. It is loaded
straight into moto's backend in the helper process (uploading 100,000 objects over HTTP
takes minutes), with each key's LastModified set from the file's mtime. moto answers
ListObjects by scanning every key of the bucket (O(bucket) CPU per page, which a real store
does not spend): the helper patches it with a sorted index (same results), so the injected
latency, not moto's CPU, is what the clients wait for.

(a) baseline, sequential bare s3fs through the proxy: list ``snapshot/``, read every
    snapshot, read and decode (fastavro) every manifest list and manifest they name (each
    once), list ``manifest/``, the table root, every partition and every bucket directory;
(b) ``paimon delete-orphan-files s3://lake/... --older-than '1 d' --dry-run --fs-option
    endpoint_url=<proxy>`` as a subprocess with ``--parallelism 1`` and ``--parallelism 16``;
    both must find every planted orphan;
(c) the same at ``--parallelism 16`` with ``--inventory``: an S3 Inventory report (Parquet,
    one data file) of every object, written into the bucket by the helper, instead of LIST.
Printed: wall times, request counts and CPU seconds (client, and the helper's), ours (p1) /
bare (the same sequential requests; close to 1x expected), p1 / p16 (requests overlap: with
16 threads the wall time should approach the CLI's own CPU time, the floor for one Python
process, instead of the sum of the latencies).
"""

from __future__ import annotations

import argparse
import bisect
import http.client
import json
import os
import resource
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from datetime import datetime, timezone
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from bench_orphans import (
    _orphan_count,
    _walk_files,
    build_orphan_table,
    decode_used_names,
    estimate_bytes,
    paimon_script,
    pick_parent,
)
from make_big_table import scratch_dir

BUCKET = "lake"
PREFIX = "wh/bench.db/big"
OLDER_THAN = "1 d"
INVENTORY = f"s3://{BUCKET}/inventory/2026-01-01T01-00Z/manifest.json"
_HOP = frozenset(
    {
        "connection",
        "keep-alive",
        "proxy-connection",
        "transfer-encoding",
        "te",
        "trailer",
        "upgrade",
        "content-length",
    }
)
_AWS_ENV = {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_DEFAULT_REGION": "us-east-1",
    "AWS_EC2_METADATA_DISABLED": "true",
}


# -- the helper process: moto + latency proxy ------------------------------------------------
def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _patch_moto_listing() -> None:
    """ListObjects from a sorted index of key names (moto scans the whole bucket per page)."""
    from moto.s3.models import FakeDeleteMarker, S3Backend

    original_list = S3Backend.list_objects
    index: dict[int, tuple[int, list[str]]] = {}

    def names_of(bucket: Any) -> list[str]:
        cached = index.get(id(bucket))
        if cached is None or cached[0] != len(bucket.keys):
            cached = (len(bucket.keys), sorted(bucket.keys.keys()))
            index[id(bucket)] = cached
        return cached[1]

    def list_objects(
        self: Any,
        bucket: Any,
        prefix: str | None,
        delimiter: str | None,
        marker: str | None,
        max_keys: int | None,
    ) -> Any:
        if marker or max_keys is not None:
            return original_list(self, bucket, prefix, delimiter, marker, max_keys)
        prefix = prefix or ""
        names = names_of(bucket)
        keys: list[Any] = []
        folders: dict[str, None] = {}
        for i in range(bisect.bisect_left(names, prefix), len(names)):
            name = names[i]
            if not name.startswith(prefix):
                break
            rest = name[len(prefix) :]
            if delimiter and delimiter in rest:
                folders[f"{prefix}{rest.split(delimiter, 1)[0]}{delimiter}"] = None
                continue
            key = bucket.keys.get(name)
            if key is not None and not isinstance(key, FakeDeleteMarker):
                keys.append(key)
        return keys, sorted(folders), False, None

    def invalidating(method: Any) -> Any:
        def wrapper(self: Any, *args: Any, **kwargs: Any) -> Any:
            index.clear()
            return method(self, *args, **kwargs)

        return wrapper

    S3Backend.list_objects = list_objects  # type: ignore[method-assign]
    for name in ("put_object", "delete_object", "delete_objects", "copy_object"):
        setattr(S3Backend, name, invalidating(getattr(S3Backend, name)))

    # Half of moto's CPU per listed key goes to re-parsing its own ISO timestamp strings
    # with dateutil; ISO-8601 in UTC parses with the standard library (same result).
    from moto.core.serialize import TimestampSerializer

    original_convert = TimestampSerializer._convert_timestamp_to_str

    def convert(self: Any, value: Any, timestamp_format: str) -> Any:
        if isinstance(value, str) and value.endswith("Z") and "T" in value:
            try:
                parsed = datetime.fromisoformat(value[:-1]).replace(tzinfo=timezone.utc)
            except ValueError:
                pass
            else:
                return getattr(self, f"_timestamp_{timestamp_format.lower()}")(parsed)
        return original_convert(self, value, timestamp_format)

    TimestampSerializer._convert_timestamp_to_str = convert  # type: ignore[method-assign]

    # The other half goes to moto's generic, shape-driven XML serializer (~0.1 ms per key, so
    # ~100 ms of server CPU per 1,000-key page under one GIL): ListObjectsV2 results are
    # rendered directly, in the same element order and text as moto's output.
    from moto.s3.responses import S3Response

    original_serialized = S3Response.serialized

    def serialized(self: Any, action_result: Any) -> Any:
        if self.data.get("Action") == "ListObjectsV2":
            body = _list_v2_xml(action_result.result)
            if body is not None:
                return 200, {"Content-Type": "application/xml"}, body
        return original_serialized(self, action_result)

    S3Response.serialized = serialized  # type: ignore[method-assign]


_CONTENT_KEYS = ("Key", "LastModified", "ETag", "Size", "StorageClass")


def _list_v2_xml(r: Any) -> str | None:
    """moto's ListObjectsV2 XML for plain results; None (use moto's serializer) otherwise."""
    from xml.sax.saxutils import escape

    if not isinstance(r, dict):
        return None
    parts = [
        '<?xml version="1.0" encoding="utf-8"?>\n'
        '<ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/">'
        f"<IsTruncated>{'true' if r['IsTruncated'] else 'false'}</IsTruncated>"
    ]
    for c in r.get("Contents", []):
        if tuple(c) != _CONTENT_KEYS:
            return None  # owner, checksums: not needed here
        parts.append(
            f"<Contents><Key>{escape(c['Key'])}</Key>"
            f"<LastModified>{escape(c['LastModified'])}</LastModified>"
            f"<ETag>{escape(c['ETag'])}</ETag><Size>{int(c['Size'])}</Size>"
            f"<StorageClass>{escape(c['StorageClass'])}</StorageClass></Contents>"
        )
    parts.append(f"<Name>{escape(r['Name'])}</Name><Prefix>{escape(r.get('Prefix', ''))}</Prefix>")
    if "Delimiter" in r:
        parts.append(f"<Delimiter>{escape(r['Delimiter'])}</Delimiter>")
    parts.append(f"<MaxKeys>{int(r['MaxKeys'])}</MaxKeys>")
    for cp in r.get("CommonPrefixes", []):
        parts.append(f"<CommonPrefixes><Prefix>{escape(cp['Prefix'])}</Prefix></CommonPrefixes>")
    for name in ("EncodingType", "KeyCount", "NextContinuationToken", "StartAfter"):
        if name in r:
            parts.append(f"<{name}>{escape(str(r[name]))}</{name}>")
    parts.append("</ListBucketResult>")
    return "".join(parts)


def _load(local: Path, key_prefix: str) -> int:
    """Every file under ``local`` into moto's backend; LastModified from the file's mtime."""
    from moto.core import DEFAULT_ACCOUNT_ID
    from moto.s3.models import s3_backends

    backend = s3_backends[DEFAULT_ACCOUNT_ID]["aws"]
    backend.create_bucket(BUCKET, "us-east-1")
    paths = _walk_files(local)
    rows: list[tuple[str, int, datetime]] = []
    for path in paths:
        with open(path, "rb") as fh:
            data = fh.read()
        rel = path[len(str(local)) + 1 :]
        key = backend.put_object(BUCKET, f"{key_prefix}/{rel}", data)
        mtime = os.lstat(path).st_mtime
        key.last_modified = datetime.fromtimestamp(mtime, timezone.utc).replace(tzinfo=None)
        rows.append((f"{key_prefix}/{rel}", len(data), datetime.fromtimestamp(mtime, timezone.utc)))
    _put_inventory(backend, rows)
    return len(paths)


def _put_inventory(backend: Any, rows: list[tuple[str, int, datetime]]) -> None:
    """An S3 Inventory report (Parquet) of every object, taken now, at INVENTORY."""
    import io

    import pyarrow as pa
    import pyarrow.parquet as pq

    keys, sizes, times = zip(*rows, strict=True)
    out = io.BytesIO()
    table = pa.table(
        {
            "bucket": pa.array([BUCKET] * len(keys)),
            "key": pa.array(keys),
            "size": pa.array(sizes, pa.int64()),
            "last_modified_date": pa.array(times, pa.timestamp("ms", tz="UTC")),
        }
    )
    pq.write_table(table, out)
    data_key = "inventory/data/part-0.parquet"
    backend.put_object(BUCKET, data_key, out.getvalue())
    manifest = {
        "sourceBucket": BUCKET,
        "destinationBucket": f"arn:aws:s3:::{BUCKET}",
        "version": "2016-11-30",
        "creationTimestamp": str(int(time.time() * 1000)),
        "fileFormat": "Parquet",
        "fileSchema": "message s3.inventory { required binary bucket; required binary key; }",
        "files": [{"key": data_key, "size": len(out.getvalue()), "MD5checksum": "-"}],
    }
    backend.put_object(
        BUCKET, INVENTORY.removeprefix(f"s3://{BUCKET}/"), json.dumps(manifest).encode()
    )


class _Stats:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.requests = 0


def _proxy_handler(upstream: int, latency: float, stats: _Stats) -> type[BaseHTTPRequestHandler]:
    local = threading.local()

    class Proxy(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        disable_nagle_algorithm = True  # headers and body go out as two writes

        def log_message(self, *args: Any) -> None:  # quiet
            pass

        def _connection(self) -> http.client.HTTPConnection:
            conn = getattr(local, "conn", None)
            if conn is None:
                conn = http.client.HTTPConnection("127.0.0.1", upstream, timeout=60)
                local.conn = conn
            return conn

        def _send(self, body: bytes | None) -> http.client.HTTPResponse:
            for attempt in range(2):  # one reconnect if the pooled connection went stale
                conn = self._connection()
                try:
                    conn.putrequest(
                        self.command, self.path, skip_host=True, skip_accept_encoding=True
                    )
                    for k, v in self.headers.items():
                        if k.lower() not in _HOP:
                            conn.putheader(k, v)
                    if body is not None:
                        conn.putheader("Content-Length", str(len(body)))
                    conn.endheaders(body)
                    return conn.getresponse()
                except (ConnectionError, http.client.HTTPException):
                    conn.close()
                    local.conn = None
                    if attempt:
                        raise
            raise AssertionError("unreachable")

        def _forward(self) -> None:
            if self.path == "/__stats":
                data = json.dumps({"requests": stats.requests, "cpu": time.process_time()}).encode()
                self.send_response(200)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
                return
            if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
                self.send_error(501, "chunked request bodies are not supported by this proxy")
                return
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else None
            with stats.lock:
                stats.requests += 1
            time.sleep(latency)
            resp = self._send(body)
            data = resp.read()
            if resp.will_close:
                self._connection().close()
                local.conn = None
            self.send_response(resp.status, resp.reason)
            for k, v in resp.getheaders():
                if k.lower() not in _HOP:
                    self.send_header(k, v)
            if self.command == "HEAD":  # the object's size, no body
                self.send_header("Content-Length", resp.getheader("Content-Length") or "0")
            else:
                self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(data)

        do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = _forward

    return Proxy


def serve(local: Path, latency_ms: float) -> None:
    """Helper process: load the tree, serve moto + proxy, print the ports, stop on stdin EOF."""
    os.environ.update(_AWS_ENV)
    import logging

    from moto.server import ThreadedMotoServer
    from werkzeug.serving import WSGIRequestHandler

    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # no line per request
    # werkzeug writes headers and body separately: with Nagle's algorithm and the client's
    # delayed ACK every response would stall ~40 ms on loopback.
    WSGIRequestHandler.disable_nagle_algorithm = True

    _patch_moto_listing()
    moto_port = _free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=moto_port, verbose=False)
    server.start()
    started = time.perf_counter()
    count = _load(local, PREFIX)
    loaded = time.perf_counter() - started
    stats = _Stats()
    proxy = ThreadingHTTPServer(
        ("127.0.0.1", 0), _proxy_handler(moto_port, latency_ms / 1000, stats)
    )
    proxy.daemon_threads = True
    threading.Thread(target=proxy.serve_forever, daemon=True).start()
    print(
        json.dumps({"proxy": proxy.server_address[1], "objects": count, "seconds": loaded}),
        flush=True,
    )
    try:
        sys.stdin.read()  # the benchmark closes our stdin when done (or dies)
    finally:
        proxy.shutdown()
        server.stop()


# -- the benchmark ---------------------------------------------------------------------------
class Server:
    def __init__(self, local: Path, latency_ms: float) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, __file__, "--serve", str(local), "--latency-ms", str(latency_ms)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if not line:
            self.stop()
            raise SystemExit("the moto/proxy helper failed to start")
        info = json.loads(line)
        self.endpoint = f"http://127.0.0.1:{info['proxy']}"
        self.objects: int = info["objects"]
        self.load_seconds: float = info["seconds"]

    def stats(self) -> tuple[int, float]:
        """(requests served so far, the helper's CPU seconds so far)"""
        with urllib.request.urlopen(f"{self.endpoint}/__stats", timeout=10) as resp:
            data = json.loads(resp.read())
            return int(data["requests"]), float(data["cpu"])

    def stop(self) -> None:
        if self.proc.poll() is None:
            assert self.proc.stdin is not None
            self.proc.stdin.close()
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.terminate()
                self.proc.wait(timeout=15)


def bare_s3fs(endpoint: str) -> tuple[float, int, int]:
    """Sequential s3fs + fastavro: (seconds, avro records, listed entries)."""
    import s3fs

    fs = s3fs.S3FileSystem(
        endpoint_url=endpoint, use_listings_cache=False, skip_instance_cache=True
    )
    root = f"{BUCKET}/{PREFIX}"
    started = time.perf_counter()
    snaps = fs.ls(f"{root}/snapshot", detail=True, refresh=True)
    listed = len(snaps)
    names = [e["name"] for e in snaps if e["name"].rpartition("/")[2].startswith("snapshot-")]
    _, records = decode_used_names(names, f"{root}/manifest", fs.cat_file)
    listed += len(fs.ls(f"{root}/manifest", detail=True, refresh=True))
    partitions = [
        e["name"]
        for e in fs.ls(root, detail=True, refresh=True)
        if e["type"] == "directory" and "=" in e["name"].rpartition("/")[2]
    ]
    for part in partitions:
        for bucket in fs.ls(part, detail=True, refresh=True):
            listed += 1
            if bucket["type"] == "directory":
                listed += len(fs.ls(bucket["name"], detail=True, refresh=True))
    return time.perf_counter() - started, records, listed


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def ours(endpoint: str, parallelism: int, extra: tuple[str, ...] = ()) -> tuple[float, int, float]:
    """(wall seconds, orphans found, CPU seconds of the CLI process)"""
    cmd = [
        paimon_script(),
        "delete-orphan-files",
        f"s3://{BUCKET}/{PREFIX}",
        "--older-than",
        OLDER_THAN,
        "--dry-run",
        "--fs-option",
        f"endpoint_url={endpoint}",
        "--parallelism",
        str(parallelism),
        *extra,
    ]
    cpu = _children_cpu()
    started = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=1800)
    wall = time.perf_counter() - started
    cpu = _children_cpu() - cpu
    if proc.returncode != 0:
        print(proc.stdout[-3000:], proc.stderr[-3000:], file=sys.stderr)
        raise SystemExit(f"delete-orphan-files failed with exit code {proc.returncode}")
    return wall, _orphan_count(proc.stdout), cpu


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--objects", type=int, default=100_000, help="objects in the table (N)")
    parser.add_argument("--scale", type=float, default=1.0, help="multiply N (0.05: smoke run)")
    parser.add_argument("--latency-ms", type=float, default=20.0, help="added per request")
    parser.add_argument("--partitions", type=int, default=100, help="partitions p=0..P-1")
    parser.add_argument("--workdir", type=Path, help="where to generate (default: tmpfs if room)")
    parser.add_argument("--keep", action="store_true", help="keep the generated local tree")
    parser.add_argument("--serve", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve is not None:
        serve(args.serve, args.latency_ms)
        return 0

    os.environ.update(_AWS_ENV)
    objects = max(1000, round(args.objects * args.scale))
    parent = pick_parent(args.workdir, estimate_bytes(objects, copies=1))
    with scratch_dir(parent, keep=args.keep) as workdir:
        t = build_orphan_table(workdir / "wh", objects, args.partitions)
        server = Server(t.root, args.latency_ms)
        try:
            print(
                f"table: {t.big.snapshots:,} snapshots, {t.table_files:,} table files + "
                f"{len(t.orphans):,} orphans ({t.bucket_dirs} bucket dirs) = "
                f"{server.objects:,} objects, loaded into moto in {server.load_seconds:.1f} s; "
                f"proxy {server.endpoint} adds {args.latency_ms:g} ms per request"
            )
            n0, srv0 = server.stats()
            cpu0 = time.process_time()
            bare_s, records, listed = bare_s3fs(server.endpoint)
            bare_cpu = time.process_time() - cpu0
            n1, srv1 = server.stats()
            bare_n = n1 - n0
            print(
                f"(a) bare s3fs, sequential: {bare_n:,} requests, {records:,} avro records, "
                f"{listed:,} entries listed: {bare_s:.1f} s ({bare_s / bare_n * 1000:.1f} ms per "
                f"request; client CPU {bare_cpu:.1f} s, server CPU {srv1 - srv0:.1f} s)"
            )
            runs: dict[int, tuple[float, int, float]] = {}
            for p in (1, 16):
                n0, srv0 = server.stats()
                wall, found, cpu = ours(server.endpoint, p)
                n1, srv1 = server.stats()
                runs[p] = (wall, found, cpu)
                list16 = n1 - n0
                status = "all" if found == len(t.orphans) else f"MISMATCH: {found:,} of"
                print(
                    f"(b) paimon delete-orphan-files --dry-run --parallelism {p:<2}: "
                    f"{n1 - n0:,} requests, wall {wall:.1f} s (client CPU {cpu:.1f} s, server CPU "
                    f"{srv1 - srv0:.1f} s); finds {status} {len(t.orphans):,} orphans"
                )
            n0, srv0 = server.stats()
            wall, found, cpu = ours(server.endpoint, 16, ("--inventory", INVENTORY))
            n1, srv1 = server.stats()
            runs[0] = (wall, found, cpu)
            status = "all" if found == len(t.orphans) else f"MISMATCH: {found:,} of"
            print(
                f"(c) the same with --inventory (an S3 Inventory report, Parquet) -p 16: "
                f"{n1 - n0:,} requests (LIST mode: {list16:,}), wall {wall:.1f} s (LIST mode: "
                f"{runs[16][0]:.1f} s; client CPU {cpu:.1f} s, server CPU {srv1 - srv0:.1f} s); "
                f"finds {status} {len(t.orphans):,} orphans (a real run adds one HEAD each)"
            )
            p1, p16 = runs[1][0], runs[16][0]
            latency_sum = bare_n * args.latency_ms / 1000
            print(
                f"    ours p1 / bare: {p1 / bare_s:.2f}x   (the same sequential requests plus the "
                "CLI's start-up and safety reads: ~1x expected)"
            )
            print(f"    ours p16 / bare: {p16 / bare_s:.2f}x")
            print(
                f"    p1 / p16: {p1 / p16:.1f}x   (requests overlap: the {latency_sum:.1f} s of "
                f"injected latency the bare script waits for sequentially shrinks to "
                f"~{max(p16 - runs[16][2], 0):.1f} s of wall time above the CLI's own CPU time, "
                "which one Python process (one GIL) cannot spread over cores)"
            )
            if any(r[1] != len(t.orphans) for r in runs.values()):
                return 1
        finally:
            server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
