"""An S3 endpoint on loopback (moto's server mode), started and stopped by the tests."""

from __future__ import annotations

import logging
import os
import socket
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from support.fault_proxy import FaultProxy
from support.fixtures import dev_dependency
from support.rest_catalog_server import RestCatalogServer, start_s3_catalog


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@dataclass(frozen=True)
class S3:
    endpoint: str
    bucket: str

    @property
    def fs_options(self) -> dict[str, str]:
        return {"endpoint_url": self.endpoint}

    def cli_options(self) -> list[str]:
        # Credentials as options too, as a cluster's workers need them: the shared Spark
        # session's Python workers started before this server set its environment.
        return [
            "--fs-option",
            f"endpoint_url={self.endpoint}",
            "--fs-option",
            "key=testing",
            "--fs-option",
            "secret=testing",
        ]

    def fs(self):  # type: ignore[no-untyped-def]
        import s3fs

        return s3fs.S3FileSystem(
            endpoint_url=self.endpoint, use_listings_cache=False, skip_instance_cache=True
        )

    def upload(self, local: Path, key: str) -> str:
        """Copy a local table directory to s3://bucket/key; returns the table URI."""
        fs = self.fs()
        for dirpath, _dirs, files in os.walk(local):
            for name in files:
                src = Path(dirpath) / name
                rel = src.relative_to(local).as_posix()
                fs.pipe_file(f"{self.bucket}/{key}/{rel}", src.read_bytes())
        return f"s3://{self.bucket}/{key}"

    def download(self, uri: str, dest: Path) -> Path:
        fs = self.fs()
        prefix = uri.removeprefix("s3://")
        for path in fs.find(prefix):
            target = dest / path[len(prefix) + 1 :]
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(fs.cat_file(path))
        return dest

    def files(self, uri: str) -> set[str]:
        prefix = uri.removeprefix("s3://")
        found = (p[len(prefix) + 1 :] for p in self.fs().find(prefix))
        return {p for p in found if not p.startswith(".paimon-cli/")}  # ours, not table data


@pytest.fixture(scope="session")
def s3_server() -> Iterator[S3]:
    dev_dependency("moto", "moto[server]")
    dev_dependency("s3fs")
    from moto.server import ThreadedMotoServer

    saved = {
        k: os.environ.get(k)
        for k in (
            "AWS_ACCESS_KEY_ID",
            "AWS_SECRET_ACCESS_KEY",
            "AWS_DEFAULT_REGION",
            "AWS_EC2_METADATA_DISABLED",
        )
    }
    os.environ.update(
        {
            "AWS_ACCESS_KEY_ID": "testing",
            "AWS_SECRET_ACCESS_KEY": "testing",
            "AWS_DEFAULT_REGION": "us-east-1",
            "AWS_EC2_METADATA_DISABLED": "true",
        }
    )
    port = _free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    s3 = S3(f"http://127.0.0.1:{port}", "lake")
    s3.fs().mkdir(s3.bucket)
    try:
        yield s3
    finally:
        server.stop()
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


@pytest.fixture(scope="session")
def fault_proxy(s3_server: S3) -> Iterator[FaultProxy]:
    """One fault-injecting proxy in front of the session's moto server."""
    # moto's request log would land among the CLI's messages of in-process runs
    logging.getLogger("werkzeug").setLevel(logging.WARNING)
    proxy = FaultProxy(s3_server.endpoint).start()
    try:
        yield proxy
    finally:
        proxy.stop()


@pytest.fixture
def faults(fault_proxy: FaultProxy) -> Iterator[FaultProxy]:
    """The proxy with no rules and an empty log, cleared again after the test."""
    fault_proxy.clear()
    yield fault_proxy
    fault_proxy.clear()


@pytest.fixture
def faulty_s3(s3_server: S3, faults: FaultProxy) -> S3:
    """The session's bucket, reached through the fault proxy."""
    return S3(faults.endpoint, s3_server.bucket)


@pytest.fixture
def s3_prefix() -> str:
    return f"wh-{uuid.uuid4().hex[:8]}/db.db"


@pytest.fixture
def rest_catalog(s3_server: S3) -> Iterator[RestCatalogServer]:
    """A REST catalog server of the test's own, its tables on moto under a fresh prefix,
    their data reached only with the credentials it vends (through its gate)."""
    logging.getLogger("werkzeug").setLevel(logging.WARNING)
    server, gate = start_s3_catalog(
        moto_endpoint=s3_server.endpoint,
        bucket=s3_server.bucket,
        prefix=f"rest-{uuid.uuid4().hex[:8]}",
    )
    try:
        yield server
    finally:
        server.stop()
        gate.stop()
