"""The tests' one JVM toolchain: Apache Paimon 0.9.0 (Java) programs built from this repository.

The Java sources are the table writer (``tests/javawriter/``: ``PaimonScript``, ``DumpRows``,
``DumpChangelog``, steps), the reader that verifies tables (``tests/javaverify/``:
``Verify``) and the warm JVM that serves them (``tests/javaserve/``: ``Serve``). They are
compiled together once, against:

- the Paimon 0.9.0 jar bundled in the pypaimon 0.2.0 sdist (``pip download`` once, then
  cached in ``$PAIMON_JAVA_CACHE``, default ``~/.cache/paimon-java``);
- the Hadoop client and slf4j jars of the installed ``pyspark`` (a test dependency).

The classes are cached under the same directory by a hash of the sources and jars, so a
change to any ``.java`` file recompiles on the next run. ``Toolchain.run(program, *args)``
runs a program's ``run(String[])`` in one warm JVM per test process (``Serve``: a JVM start
costs seconds, a warm call a fraction of that); ``PAIMON_JAVA_WARM=0`` starts a JVM per call
instead (its ``main``).

``unavailable()`` says what is missing and how to get it; the ``java`` and ``java_writer``
fixtures skip with that reason, or fail when ``PAIMON_CLI_REQUIRE_JAVA=1`` (``.ci/run``).
"""

from __future__ import annotations

import atexit
import functools
import hashlib
import json
import os
import queue
import shutil
import subprocess
import sys
import tarfile
import tempfile
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import IO, Any

TESTS = Path(__file__).resolve().parents[1]
SOURCE_DIRS = (TESTS / "javawriter", TESTS / "javaverify", TESTS / "javaserve")
CACHE = Path(os.environ.get("PAIMON_JAVA_CACHE", Path.home() / ".cache" / "paimon-java"))
REQUIRED = os.environ.get("PAIMON_CLI_REQUIRE_JAVA") == "1"
WARM = os.environ.get("PAIMON_JAVA_WARM", "1") != "0"

PAIMON_JAR = "paimon-python-java-bridge-0.9.0.jar"
PAIMON_SDIST = "pypaimon==0.2.0"
# Prefixes of the pyspark jars Paimon 0.9 needs beside its own (Hadoop's FileSystem API).
PYSPARK_JARS = ("hadoop-client-api-", "hadoop-client-runtime-", "slf4j-api-")
JDK_HINT = "apt-get install openjdk-17-jdk-headless (or any JDK 11+ with java and javac on PATH)"
JVM_FLAGS = (
    # The C1 compiler only: over a test session's calls C2's compile threads cost more CPU
    # than they save (about half the CPU time of full tiered compilation here).
    "-XX:TieredStopAtLevel=1",
    "-XX:+UseSerialGC",
    "-Xss4m",
    # Paimon 0.9 sizes some pools by CPU count; tiny machines can stall.
    "-XX:ActiveProcessorCount=8",
)
TIMEOUT = 900.0


class JavaProgramError(AssertionError):
    """A Java program failed (its stderr is in the message) or could not be run."""


class JavaUnavailable(Exception):
    """Something the toolchain needs is missing on this machine (the message says what)."""


def _pyspark_jars() -> list[Path]:
    try:
        import pyspark
    except ImportError as exc:
        raise JavaUnavailable(
            "needs pyspark for its Hadoop client jars: pip install -e '.[dev]'"
        ) from exc
    jar_dir = Path(pyspark.__file__).parent / "jars"
    found = []
    for prefix in PYSPARK_JARS:
        matches = sorted(jar_dir.glob(f"{prefix}[0-9]*.jar"))
        if not matches:
            raise JavaUnavailable(
                f"needs {prefix}*.jar in {jar_dir} (pyspark without its jars?): "
                "pip install --force-reinstall 'pyspark[connect]>=3.5'"
            )
        found.append(matches[-1])
    return found


def _paimon_jar() -> Path:
    """The Paimon 0.9.0 jar, taken once from the pypaimon 0.2.0 sdist that bundles it."""
    jar = CACHE / "jars" / PAIMON_JAR
    if jar.is_file() and jar.stat().st_size > 0:
        return jar
    jar.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=jar.parent) as work:
        cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:"]
        cmd += ["--disable-pip-version-check", "-q", "-d", work, PAIMON_SDIST]
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600, check=False)
        sdists = list(Path(work).glob("pypaimon-*.tar.gz"))
        if proc.returncode != 0 or not sdists:
            raise JavaUnavailable(
                f"needs the Paimon 0.9.0 jar, from the {PAIMON_SDIST} sdist, but "
                f"`pip download {PAIMON_SDIST}` failed ({proc.stderr.strip()[-300:]}): run the "
                f"tests once with access to PyPI, or put {PAIMON_JAR} in {jar.parent}"
            )
        with tarfile.open(sdists[0]) as sdist:
            members = [m for m in sdist.getmembers() if m.name.endswith("/" + PAIMON_JAR)]
            source = sdist.extractfile(members[0]) if members else None
            if source is None:
                raise JavaUnavailable(f"{sdists[0].name} holds no {PAIMON_JAR}")
            part = Path(work) / PAIMON_JAR
            with source, part.open("wb") as out:
                shutil.copyfileobj(source, out)
        part.replace(jar)  # atomic: a concurrent run sees the whole jar or none
    return jar


@functools.cache
def unavailable() -> str | None:
    """What is missing to run the tests' Java programs, and how to get it; None when nothing
    is (the jars are then in place)."""
    missing = [tool for tool in ("java", "javac") if shutil.which(tool) is None]
    if missing:
        return f"needs a JDK ({' and '.join(missing)} not on PATH): {JDK_HINT}"
    try:
        _pyspark_jars()
        _paimon_jar()
    except JavaUnavailable as exc:
        return str(exc)
    return None


class Toolchain:
    """The compiled programs and a way to run them; ``shared()`` is the process's one."""

    def __init__(self) -> None:
        reason = unavailable()
        if reason:
            raise JavaUnavailable(reason)
        self.classpath = [_paimon_jar(), *_pyspark_jars()]
        sources = sorted(s for d in SOURCE_DIRS for s in d.glob("*.java"))
        digest = hashlib.sha256()
        for item in [*sources, *self.classpath]:
            digest.update(item.name.encode() + b"\0")
            if item.suffix == ".java":
                digest.update(item.read_bytes())
        self.classes = CACHE / "paimon-cli-tests" / digest.hexdigest()[:16]
        if not (self.classes / ".compiled").is_file():
            self._compile(sources)
        self._server: _Server | None = None
        self._lock = threading.Lock()

    def _compile(self, sources: Sequence[Path]) -> None:
        self.classes.parent.mkdir(parents=True, exist_ok=True)
        work = Path(tempfile.mkdtemp(dir=self.classes.parent, prefix=".build-"))
        cmd = ["javac", "-nowarn", "-encoding", "UTF-8", "-d", str(work)]
        cmd += ["-cp", os.pathsep.join(map(str, self.classpath)), *map(str, sources)]
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600, check=False)
        if proc.returncode != 0:
            shutil.rmtree(work, ignore_errors=True)
            raise JavaProgramError(f"javac failed:\n{proc.stderr[-4000:]}")
        (work / ".compiled").touch()
        try:
            work.rename(self.classes)
        except OSError:  # another process compiled the same sources first
            shutil.rmtree(work, ignore_errors=True)

    def command(self, main_class: str, *args: str) -> list[str]:
        cp = os.pathsep.join(map(str, [*self.classpath, self.classes]))
        return ["java", *JVM_FLAGS, "-cp", cp, main_class, *args]

    def run(self, program: str, *args: str, timeout: float = TIMEOUT) -> str:
        """Run ``program`` (``paimonclitest.Verify``, ...) with ``args``; its stdout, or
        JavaProgramError with its stderr."""
        if not WARM:
            return self._run_cold(program, args, timeout)
        with self._lock:
            if self._server is None or not self._server.alive():
                self._server = _Server(self.command("paimonclitest.Serve"))
            try:
                ok, stdout, stderr = self._server.call(program, args, timeout)
            except JavaProgramError:
                self._server.close()
                self._server = None
                raise
        if not ok:
            raise JavaProgramError(f"{program} {' '.join(args)} failed:\n{stderr[-4000:]}")
        return stdout

    def _run_cold(self, program: str, args: Sequence[str], timeout: float) -> str:
        proc = subprocess.run(
            self.command(program, *args),
            capture_output=True,
            text=True,
            encoding="utf-8",
            timeout=timeout,
            check=False,
        )
        if proc.returncode != 0:
            raise JavaProgramError(
                f"{program} {' '.join(args)} failed (exit {proc.returncode}):\n"
                f"{proc.stderr[-4000:]}"
            )
        return proc.stdout

    def close(self) -> None:
        with self._lock:
            if self._server is not None:
                self._server.close()
                self._server = None


class _Server:
    """One ``paimonclitest.Serve`` JVM: a JSON request line in, a JSON answer line out."""

    def __init__(self, command: list[str]) -> None:
        # The JVM's own diagnostics go to a file, so a full pipe never blocks it.
        self.log: IO[bytes] = tempfile.TemporaryFile()  # noqa: SIM115 - closed by close()
        self.proc = subprocess.Popen(
            command,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.log,
            text=True,
            encoding="utf-8",
            bufsize=1,
        )
        self.answers: queue.Queue[str | None] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.answers.put(line)
        self.answers.put(None)  # the JVM is gone

    def alive(self) -> bool:
        return self.proc.poll() is None

    def call(self, program: str, args: Sequence[str], timeout: float) -> tuple[bool, str, str]:
        assert self.proc.stdin is not None
        try:
            self.proc.stdin.write(json.dumps({"program": program, "args": list(args)}) + "\n")
            self.proc.stdin.flush()
            line = self.answers.get(timeout=timeout)
        except (OSError, queue.Empty) as exc:
            raise JavaProgramError(f"{program}: no answer from the warm JVM ({exc!r})") from exc
        if line is None:
            self.log.seek(0)
            tail = self.log.read().decode("utf-8", "replace")[-4000:]
            raise JavaProgramError(f"{program}: the warm JVM exited:\n{tail}")
        answer: dict[str, Any] = json.loads(line)
        return bool(answer["ok"]), str(answer["stdout"]), str(answer["stderr"])

    def close(self) -> None:
        if self.proc.poll() is None:
            try:
                assert self.proc.stdin is not None
                self.proc.stdin.close()  # Serve exits at the end of its input
                self.proc.wait(timeout=10)
            except (OSError, subprocess.TimeoutExpired):
                self.proc.kill()
                self.proc.wait()
        self.log.close()


@functools.cache
def shared() -> Toolchain:
    """This process's toolchain (compiled on first use; its warm JVM stops at exit)."""
    toolchain = Toolchain()
    atexit.register(toolchain.close)
    return toolchain
