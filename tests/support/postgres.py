"""A real PostgreSQL server for the JDBC catalog tests: Debian's package (``apt-get install
postgresql``, as ``.ci/run`` does), a cluster made by ``initdb`` in a temporary directory
and started by ``pg_ctl`` on a free loopback port. As root (CI), the server runs as the
``postgres`` user through ``runuser``: initdb refuses root."""

from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from support.fixtures import missing

USER = "postgres"
DATABASE = "paimon"


def _bin_dir() -> Path | None:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=_version)
    if found:
        return Path(found[-1]).parent
    initdb = shutil.which("initdb")
    return Path(initdb).parent if initdb else None


def _version(path: str) -> float:
    try:
        return float(Path(path).parts[-3])
    except ValueError:
        return 0.0


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class PostgresServer:
    root: Path
    port: int
    bin_dir: Path

    @property
    def jdbc_uri(self) -> str:
        return f"jdbc:postgresql://127.0.0.1:{self.port}/{DATABASE}"

    def _run(self, *args: str) -> None:
        cmd: Sequence[str] = [str(self.bin_dir / args[0]), *args[1:]]
        if os.geteuid() == 0:
            cmd = ["runuser", "-u", USER, "--", *cmd]
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=False)
        if done.returncode != 0:
            raise RuntimeError(f"{' '.join(cmd)} failed: {done.stderr or done.stdout}")

    def start(self) -> None:
        data, sockets = self.root / "data", self.root / "sockets"
        sockets.mkdir(parents=True)
        if os.geteuid() == 0:
            shutil.chown(self.root, USER)
            shutil.chown(sockets, USER)
        self._run("initdb", "-D", str(data), "-A", "trust", "-U", USER, "--no-sync")
        options = f"-p {self.port} -k {sockets} -c listen_addresses=127.0.0.1 -c fsync=off"
        log = self.root / "server.log"
        self._run("pg_ctl", "-D", str(data), "-o", options, "-l", str(log), "-w", "start")
        import psycopg

        with psycopg.connect(
            host="127.0.0.1", port=self.port, user=USER, dbname="postgres", autocommit=True
        ) as conn:
            conn.execute(f"CREATE DATABASE {DATABASE}")

    def stop(self) -> None:
        self._run("pg_ctl", "-D", str(self.root / "data"), "-m", "fast", "-w", "stop")


def start_server(root: Path) -> PostgresServer:
    """A started server, or a skip (a failure in CI) saying what to install."""
    bin_dir = _bin_dir()
    if bin_dir is None:
        missing("needs PostgreSQL's server binaries: apt-get install -y postgresql")
    try:
        import psycopg  # noqa: F401
    except ImportError:
        missing("needs psycopg (the postgres extra): pip install -e '.[dev]'")
    root.mkdir(parents=True, exist_ok=True)
    server = PostgresServer(root, _free_port(), bin_dir)
    server.start()
    return server
