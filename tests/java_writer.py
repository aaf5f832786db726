"""Apache Paimon (Java) as a table *writer* for tests: ``tests/javawriter/*.java``.

pypaimon cannot write everything Paimon tables hold in production (deletion vectors on
append tables, compacted primary-key levels, changelog files of the compaction producers).
``JavaWriter.run(warehouse, script)`` builds such tables with Paimon's own Java writer,
compaction and commit: the programs in ``tests/javawriter/`` are compiled once against the
Paimon 0.9.0 jar that ``../shared/tools/java-paimon`` caches (its first run downloads it) and
``PaimonScript`` runs a JSON script of steps (see its class comment); a step op ``some-op`` it
does not know is ``paimonclitest.SomeOpStep.run(table, step)`` in a file of its own.

pypaimon 2.1 cannot read what Paimon 0.9 writes (its manifests predate ``_VALUE_STATS_COLS``):
tables built here are checked with Java (``java`` fixture, ``JavaWriter.rows``) and our own
``inspect --check``.

Tests take the ``java_writer`` fixture (conftest) and carry ``@pytest.mark.java``; like the
``java`` reader fixture they skip without a JDK or the tool, and fail instead when
``PAIMON_CLI_REQUIRE_JAVA=1`` (CI).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import java_paimon

SOURCES = Path(__file__).resolve().parent / "javawriter"
CACHE = Path(os.environ.get("PAIMON_JAVA_CACHE", Path.home() / ".cache" / "paimon-java"))
JARS = (
    "paimon-python-java-bridge-0.9.0.jar",
    "hadoop-client-api-3.5.0.jar",
    "hadoop-client-runtime-3.5.0.jar",
    "slf4j-api-2.0.17.jar",
)


class JavaWriterError(AssertionError):
    pass


def unavailable() -> str | None:
    """Why the Java writer cannot run here, or None when it can."""
    reason = java_paimon.unavailable()
    if reason:
        return reason
    if shutil.which("javac") is None:
        return "no `javac` on PATH (install openjdk-17-jdk-headless)"
    return None


def _ensure_jars() -> list[Path]:
    jars = [CACHE / "jars" / name for name in JARS]
    if not all(j.is_file() and j.stat().st_size > 0 for j in jars):
        # The reader tool downloads and caches the jars on its first run (it then prints its
        # usage and exits 2 for the missing sub-command).
        subprocess.run([str(java_paimon.TOOL)], capture_output=True, timeout=900, check=False)
    missing = [str(j) for j in jars if not j.is_file()]
    if missing:
        raise JavaWriterError(f"Paimon jars not found after running {java_paimon.TOOL}: {missing}")
    return jars


class JavaWriter:
    """Compiles ``tests/javawriter`` once (cached by a hash of the sources) and runs it."""

    def __init__(self) -> None:
        self.jars = _ensure_jars()
        sources = sorted(SOURCES.glob("*.java"))
        digest = hashlib.sha256(b"".join(s.read_bytes() for s in sources)).hexdigest()[:16]
        self.classes = CACHE / "paimon-cli-tests" / digest
        if not (self.classes / ".compiled").is_file():
            self._compile(sources)

    def _compile(self, sources: Sequence[Path]) -> None:
        self.classes.parent.mkdir(parents=True, exist_ok=True)
        work = Path(tempfile.mkdtemp(dir=self.classes.parent, prefix=".build-"))
        proc = subprocess.run(
            ["javac", "-nowarn", "-encoding", "UTF-8", "-d", str(work), "-cp", self._libcp()]
            + [str(s) for s in sources],
            capture_output=True,
            text=True,
            timeout=600,
            check=False,
        )
        if proc.returncode != 0:
            shutil.rmtree(work, ignore_errors=True)
            raise JavaWriterError(f"javac failed:\n{proc.stderr[-4000:]}")
        (work / ".compiled").touch()
        try:
            work.rename(self.classes)
        except OSError:  # another process compiled the same sources first
            shutil.rmtree(work, ignore_errors=True)

    def _libcp(self) -> str:
        return os.pathsep.join(str(j) for j in self.jars)

    def java(self, main_class: str, *args: str) -> str:
        """Run ``main_class`` of tests/javawriter; its stdout, or JavaWriterError."""
        cmd = [
            "java",
            "-XX:TieredStopAtLevel=1",
            "-XX:+UseSerialGC",
            "-Xss4m",
            # Paimon 0.9 sizes some pools by CPU count; tiny machines can stall.
            "-XX:ActiveProcessorCount=8",
            "-cp",
            self._libcp() + os.pathsep + str(self.classes),
            main_class,
            *args,
        ]
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=900, check=False)
        if proc.returncode != 0:
            raise JavaWriterError(
                f"{main_class} failed (exit {proc.returncode}):\n{proc.stderr[-4000:]}"
            )
        return proc.stdout

    def run(self, warehouse: Path, script: Mapping[str, Any]) -> Path:
        """Run a PaimonScript; returns the table root ``warehouse/<db>.db/<table>``."""
        warehouse.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(
            "w", suffix=".json", dir=warehouse.parent, delete=False
        ) as fh:
            json.dump(script, fh)
        try:
            self.java("paimonclitest.PaimonScript", str(warehouse), fh.name)
        finally:
            os.unlink(fh.name)
        db = script.get("database", "db")
        return warehouse / f"{db}.db" / script.get("table", "t")

    def rows(self, table: Path, at: str | int | None = None, *, kinds: bool = True) -> list[str]:
        """The rows Java reads (sorted lines: row kind, then tab-separated values) at the
        latest snapshot, a snapshot id, or ``"tag:NAME"``.

        ``kinds=False`` drops the row kind: Paimon 0.9 reports ``+U`` for a key merged at read
        time but ``+I`` for the same record read raw from a single max-level file, so a
        compaction (Paimon's own too) changes kinds, never values.
        """
        args = [str(table)] + ([] if at is None else [str(at)])
        lines = self.java("paimonclitest.DumpRows", *args).splitlines()
        if not kinds:
            lines = sorted(line.split("\t", 1)[1] if "\t" in line else "" for line in lines)
        return lines
