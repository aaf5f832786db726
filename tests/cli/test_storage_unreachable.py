"""A storage that cannot be reached is an environment problem, said as such (issue 25, bug 2).

Through a real closed port on 127.0.0.1, a host name that does not resolve, a real refused
TLS handshake (a local TCP server that does not speak TLS behind an https endpoint), and
HDFS without its native libraries: exit 1, ``storage_access`` in ``--json``, a hint, a
stderr line announcing the retry, and nothing that calls it a bug. The retry budget is cut
to a second here (the default bound is checked with a fake clock in tests/core/test_retry.py).
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from support.fixtures import REPO, Run, dev_dependency

from core.io import retry

TABLE = "s3://lake/wh/db.db/t"
CREDENTIALS = {"AWS_ACCESS_KEY_ID": "k", "AWS_SECRET_ACCESS_KEY": "s", "AWS_PROFILE": None}


@pytest.fixture(autouse=True)
def short_budget(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(retry, "UNREACHABLE_BUDGET_S", 1.0)


@pytest.fixture
def closed_port() -> int:
    """A port on 127.0.0.1 nothing listens on (bound, then closed: connections are refused)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


@pytest.fixture
def plain_tcp_port() -> Iterator[int]:
    """A local TCP server that answers every connection with plain HTTP, never TLS."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(16)
    server.settimeout(0.2)
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except OSError:
                continue
            with conn:
                conn.settimeout(1)
                try:
                    conn.recv(4096)
                    conn.sendall(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n")
                except OSError:
                    pass

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield server.getsockname()[1]
    stop.set()
    thread.join()
    server.close()


def _inspect(run: Run, endpoint: str, *flags: str) -> Any:
    dev_dependency("s3fs")
    args = ["inspect", TABLE, "--fs-option", f"endpoint_url={endpoint}", *flags]
    return run(*args, env={**CREDENTIALS, "AWS_EC2_METADATA_DISABLED": "true"})


def _json_error(stderr: str) -> dict[str, Any]:
    last = stderr.strip().splitlines()[-1]
    error: dict[str, Any] = json.loads(last)["error"]
    return error


def test_a_closed_port_is_storage_access_after_an_announced_retry(
    run: Run, closed_port: int
) -> None:
    result = _inspect(run, f"http://127.0.0.1:{closed_port}", "--json")
    assert result.exit_code == 1 and result.stdout == ""
    error = _json_error(result.stderr)
    assert error["kind"] == "storage_access"
    assert error["message"].startswith(f"cannot reach the storage for {TABLE}")
    assert "endpoint_url" in error["hint"]
    assert "retrying for up to" in result.stderr and "bug" not in result.stderr

    human = _inspect(run, f"http://127.0.0.1:{closed_port}")
    assert human.exit_code == 1
    assert "Error: cannot reach the storage" in human.stderr and "Hint: check" in human.stderr
    assert "bug" not in human.stderr and "Traceback" not in human.stderr


def test_a_host_name_that_does_not_resolve_is_storage_access_with_a_dns_hint(run: Run) -> None:
    """`.invalid` never resolves (RFC 2606): the resolver answers at once, no network needed."""
    result = _inspect(run, "http://paimon-cli-test.invalid:9000", "--json")
    assert result.exit_code == 1 and result.stdout == ""
    error = _json_error(result.stderr)
    assert error["kind"] == "storage_access"
    assert error["message"].startswith(f"cannot reach the storage for {TABLE}")
    assert "DNS" in error["hint"] and "endpoint_url" in error["hint"]
    assert "retrying for up to" in result.stderr and "bug" not in result.stderr


def test_a_refused_tls_handshake_is_storage_access_with_a_tls_hint(
    run: Run, plain_tcp_port: int
) -> None:
    result = _inspect(run, f"https://127.0.0.1:{plain_tcp_port}", "--json")
    assert result.exit_code == 1
    error = _json_error(result.stderr)
    assert error["kind"] == "storage_access"
    assert error["message"].startswith(f"TLS handshake failed for {TABLE}")
    assert "http://" in error["hint"] and "certificate" in error["hint"]
    assert "retrying for up to" in result.stderr and "bug" not in result.stderr


def test_hdfs_without_its_native_libraries_is_one_line_and_a_hint(tmp_path: Path) -> None:
    """pyarrow's HDFS client loads libjvm and libhdfs; with neither findable its error lists
    every place it looked (about ninety lines): one line and what to set instead."""
    empty = tmp_path / "empty"
    empty.mkdir()
    env = {**os.environ, "JAVA_HOME": str(empty), "HADOOP_HOME": str(empty)}
    env |= {"ARROW_LIBHDFS_DIR": str(empty), "CLASSPATH": ""}
    proc = subprocess.run(
        [sys.executable, "-m", "paimon_cli", "inspect", "hdfs://127.0.0.1:1/wh/t", "--json"],
        capture_output=True,
        text=True,
        env=env,
        cwd=REPO,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 1
    error = _json_error(proc.stderr)
    assert error["kind"] == "storage_access" and "native library" in error["message"]
    assert "JAVA_HOME" in error["hint"] and "bug" not in proc.stderr
    assert "dlopen" not in error["message"]
