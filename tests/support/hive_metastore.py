"""A real Hive Metastore 2.3 for the Hive catalog tests, from the jars PySpark ships.

One JVM per test session (``hive_metastore`` fixture in ``tests/conftest.py``): a
``hive-site.xml`` on the classpath points it at an embedded Derby in a temporary directory
(schema created on first use, no schema verification), the transaction tables the lock
calls need are created first (``hms/HmsMain.java``, run as a single-file source program),
and the metastore listens on a free port found on 127.0.0.1 (Hive 2.3 has no bind-host
setting: it listens on every interface; tests talk to 127.0.0.1 only). Stopped at the end
of the session. On an idle machine it answers within about 15 s; a loaded one takes
longer, hence the generous start timeout.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from xml.sax.saxutils import escape

from support import java_toolchain
from support.fixtures import missing

HERE = Path(__file__).resolve().parent
MAIN = HERE / "hms" / "HmsMain.java"
START_TIMEOUT_S = 420.0
# log4j2 otherwise asks for a context selector class PySpark does not ship.
LOG4J = "-Dlog4j2.contextSelector=org.apache.logging.log4j.core.selector.BasicContextSelector"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def pyspark_jars() -> Path | None:
    try:
        import pyspark
    except ImportError:
        return None
    jars = Path(pyspark.__file__).parent / "jars"
    return jars if any(jars.glob("hive-metastore-*.jar")) else None


def unavailable() -> str | None:
    """What is missing to start the metastore, and how to get it."""
    if shutil.which("java") is None:
        return f"needs Java (no java on PATH): {java_toolchain.JDK_HINT}"
    if pyspark_jars() is None:
        return "needs pyspark's Hive jars (a test dependency): pip install -e '.[dev]'"
    try:
        import thriftpy2  # noqa: F401
    except ImportError:
        return "needs thriftpy2 (the hive extra): pip install -e '.[dev]'"
    return None


def _site_xml(root: Path) -> str:
    settings = {
        "javax.jdo.option.ConnectionURL": f"jdbc:derby:;databaseName={root / 'db'};create=true",
        "javax.jdo.option.ConnectionDriverName": "org.apache.derby.jdbc.EmbeddedDriver",
        "datanucleus.schema.autoCreateAll": "true",
        "hive.metastore.schema.verification": "false",
        "hive.metastore.warehouse.dir": (root / "warehouse").as_uri(),
        # The lock calls go through the metastore's transaction handler.
        "hive.txn.manager": "org.apache.hadoop.hive.ql.lockmgr.DbTxnManager",
        "hive.support.concurrency": "true",
        "hive.compactor.initiator.on": "false",
        # BoneCP (Hive's default pool) is not among PySpark's jars; DBCP is.
        "datanucleus.connectionPoolingType": "DBCP",
        "hive.metastore.event.db.notification.api.auth": "false",
    }
    props = "\n".join(
        f"  <property><name>{escape(k)}</name><value>{escape(v)}</value></property>"
        for k, v in settings.items()
    )
    return f'<?xml version="1.0"?>\n<configuration>\n{props}\n</configuration>\n'


@dataclass
class HiveMetastore:
    root: Path
    port: int
    proc: subprocess.Popen[bytes] | None = None

    @property
    def uri(self) -> str:
        return f"thrift://127.0.0.1:{self.port}"

    def start(self) -> None:
        jars = pyspark_jars()
        assert jars is not None
        conf = self.root / "conf"
        conf.mkdir(parents=True)
        (conf / "hive-site.xml").write_text(_site_xml(self.root), encoding="utf-8")
        log = (self.root / "metastore.log").open("wb")
        cmd = [
            "java",
            "-Xmx512m",
            "-XX:TieredStopAtLevel=1",
            "-XX:+UseSerialGC",
            LOG4J,
            f"-Dderby.stream.error.file={self.root / 'derby.log'}",
            # Hive's own log goes beside the metastore, not to /tmp/<user>/hive.log.
            f"-Dhive.log.dir={self.root}",
            "-cp",
            f"{conf}{os.pathsep}{jars}/*",
            str(MAIN),
            "-p",
            str(self.port),
        ]
        self.proc = subprocess.Popen(
            cmd, cwd=self.root, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL
        )
        log.close()
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"the Hive Metastore exited at start:\n{self._log_tail()}")
            if self._answers():
                return
            time.sleep(0.5)
        self.stop()
        raise RuntimeError(
            f"the Hive Metastore did not listen within {START_TIMEOUT_S:.0f} s:\n{self._log_tail()}"
        )

    def _answers(self) -> bool:
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=1):
                return True
        except OSError:
            return False

    def _log_tail(self) -> str:
        path = self.root / "metastore.log"
        lines = path.read_text(errors="replace").splitlines() if path.exists() else []
        return "\n".join(lines[-30:])

    def stop(self) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.terminate()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def start(root: Path) -> HiveMetastore:
    """A started metastore under ``root``; skips (or fails where CI requires it) when it
    cannot run here."""
    reason = unavailable()
    if reason:
        missing(f"Hive Metastore {reason}")
    server = HiveMetastore(root, _free_port())
    server.start()
    return server
