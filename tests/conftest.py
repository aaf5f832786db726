"""Shared fixtures: tables written by real Paimon writers (pypaimon, Java, tests/data/)."""

from __future__ import annotations

import copy
import os
import shutil
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, Phase, settings
from support import hive_metastore as hive_metastore_support
from support import java_paimon, java_toolchain
from support import java_writer as jw
from support import pypaimon_writer as pw
from support.fixtures import (
    JAVA_BUILT,
    MISSING_DATA,
    Run,
    java_built_now_ms,
    missing,
    require_spark,
)
from support.held import Held
from support.hive_metastore import HiveMetastore

from core.runtime.clock import NOW_ENV
from core.runtime.executors.spark import SparkExecutor

# The suite starts dozens of short-lived JVMs (Spark drivers of CLI runs, Java readers and
# writers, the metastore): C1 alone and the serial collector spend a fifth less CPU on them
# than the server defaults, which pay off only in long runs. Set before any JVM starts and
# inherited by every process the tests start; a JAVA_TOOL_OPTIONS of the caller's wins.
os.environ.setdefault("JAVA_TOOL_OPTIONS", "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC")


def pytest_sessionstart(session: pytest.Session) -> None:
    """Every module of core and paimon_cli is imported before any test swaps
    ``core.io.fileio.FileIO`` (a module first imported meanwhile, e.g. one with ``class
    X(FileIO)``, would bind the stand-in for good): test order never matters."""
    from support.interrupts import import_everything

    import_everything()


@pytest.fixture
def run() -> Run:
    return Run()


@pytest.fixture
def local_zone() -> Iterator[Callable[[str | None], None]]:
    """``local_zone("Australia/Sydney")`` makes that this process's zone (``TZ`` and the C
    library's ``tzset``), ``None`` unsets ``TZ``; the machine's own is back afterwards, so
    no test depends on where it runs."""
    before = os.environ.get("TZ")

    def set_zone(name: str | None) -> None:
        if name is None:
            os.environ.pop("TZ", None)
        else:
            os.environ["TZ"] = name
        time.tzset()

    yield set_zone
    set_zone(before)


@pytest.fixture(scope="session")
def warehouse(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("pypaimon-wh")


@pytest.fixture(scope="session")
def scenarios(warehouse: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, pw.Scenario]:
    """Every pypaimon scenario, written once per test session (read-only: copy to mutate)."""
    built = {name: build(warehouse) for name, build in pw.BUILDERS.items()}
    built["external_paths"] = pw.external_paths(warehouse, tmp_path_factory.mktemp("ext"))
    return built


@pytest.fixture
def copy_table(tmp_path: Path) -> Iterator[Callable[[Path], Path]]:
    """Copy a table into this test's warehouse (same db/table names); returns the new root."""

    def copy(root: Path) -> Path:
        dest = tmp_path / "wh" / root.parent.name / root.name
        shutil.copytree(root, dest, symlinks=True)
        return dest

    yield copy


@pytest.fixture
def dated(tmp_path: Path) -> tuple[Path, pw.Scenario]:
    """A fresh dated_partitions table: (warehouse, scenario)."""
    wh = tmp_path / "wh"
    return wh, pw.dated_partitions(wh)


def _require_java() -> None:
    """Skip, saying what is missing and how to get it, when the tests' Java programs cannot
    run here; fail instead when CI requires them (PAIMON_CLI_REQUIRE_JAVA=1)."""
    reason = java_toolchain.unavailable()
    if reason:
        missing(f"Apache Paimon (Java) {reason}")


@pytest.fixture(scope="session")
def java() -> java_paimon.JavaPaimon:
    """Apache Paimon (Java) as an independent reader (tests/javaverify)."""
    _require_java()
    return java_paimon.JavaPaimon()


@pytest.fixture(scope="session")
def java_writer() -> jw.JavaWriter:
    """Apache Paimon (Java) as a table writer (tests/support/java_writer.py, tests/javawriter)."""
    _require_java()
    return jw.JavaWriter()


@pytest.fixture
def java_built(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Callable[[str], Path]:
    """A writable copy of a table of tests/data/java-0.9-built/. The run's clock is pinned
    to an hour after the table's last commit (``PAIMON_CLI_NOW``): the tables carry
    time-based retention (``changelog.time-retained = 7 d``), and a checked-in table must
    not age into other answers."""

    def copy(name: str) -> Path:
        src = JAVA_BUILT / name / "table"
        if not src.is_dir():
            pytest.fail(f"Java-built table {src} {MISSING_DATA}")
        dest = tmp_path / "java-built" / name
        shutil.copytree(src, dest, symlinks=True)
        monkeypatch.setenv(NOW_ENV, str(java_built_now_ms(name)))
        return dest

    return copy


# The stateful property test's longer runs (its CI budget is its own: see the module):
# `pytest --hypothesis-profile long tests/property` (about ten minutes, no shrinking) and
# `--hypothesis-profile nightly` (hours, with shrinking).
settings.register_profile(
    "long",
    max_examples=60,
    stateful_step_count=40,
    deadline=None,
    database=None,
    phases=[Phase.explicit, Phase.generate],
    suppress_health_check=list(HealthCheck),
)
settings.register_profile(
    "nightly",
    max_examples=400,
    stateful_step_count=80,
    deadline=None,
    suppress_health_check=list(HealthCheck),
)


# -- Spark ---------------------------------------------------------------------------------------
@pytest.fixture(scope="session")
def spark_executor() -> Iterator[SparkExecutor]:
    """One local[2] Spark session for all Spark tests (start-up costs seconds); a failed
    task is tried twice (local[N,F]: spark.task.maxFailures 2), as clusters retry tasks."""
    require_spark()
    executor = SparkExecutor.start(master="local[2,2]", parallelism=4)
    executor.owned = False  # shared: tests must not stop it
    yield executor
    executor.spark.stop()


@pytest.fixture
def spark_cli(spark_executor: SparkExecutor, monkeypatch: pytest.MonkeyPatch) -> SparkExecutor:
    """In-process CLI runs with ``--engine spark`` join the shared session instead of
    starting a JVM of their own (and leave it running)."""
    shared = copy.copy(spark_executor)
    shared._tempdir = ""  # the shared session's shipped package stays
    monkeypatch.setattr(SparkExecutor, "start", classmethod(lambda cls, **_kw: shared))
    return shared


@pytest.fixture
def held() -> Iterator[list[Held]]:
    """Real ``paimon`` processes a test starts (``tests/support/held.py``); any still running at
    the end are killed."""
    started: list[Held] = []
    yield started
    for h in started:
        if h.proc.poll() is None:
            h.proc.kill()
            h.proc.communicate()


# -- Hive Metastore ------------------------------------------------------------------------------
@pytest.fixture(scope="session")
def hive_metastore(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HiveMetastore]:
    """One Hive Metastore 2.3 (PySpark's jars, embedded Derby) for the session's Hive tests
    (``tests/support/hive_metastore.py``); stopped at the end."""
    server = hive_metastore_support.start(tmp_path_factory.mktemp("hms"))
    yield server
    server.stop()


@pytest.fixture(scope="session")
def postgres() -> Iterator[object]:
    """A PostgreSQL server of this session (support/postgres.py), stopped at its end."""
    import tempfile

    from support.postgres import start_server

    # Not under pytest's 0700 temporary root: the server runs as the postgres user.
    root = Path(tempfile.mkdtemp(prefix="paimon-cli-pg-"))
    server = start_server(root)
    try:
        yield server
    finally:
        server.stop()
        shutil.rmtree(root, ignore_errors=True)
