"""Shared fixtures: tables written by real Paimon writers (pypaimon here, Java in shared/)."""

from __future__ import annotations

import copy
import importlib.util
import os
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path

import java_paimon
import java_writer as jw
import pypaimon_writer as pw
import pytest
from fixtures import Run
from hypothesis import HealthCheck, settings

from core.runtime.executors.spark import SparkExecutor


@pytest.fixture
def run() -> Run:
    return Run()


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


def _require_java(reason: str | None) -> None:
    """Skip when Java cannot run here, unless CI requires it (PAIMON_CLI_REQUIRE_JAVA=1)."""
    if reason:
        if java_paimon.REQUIRED:
            pytest.fail(f"PAIMON_CLI_REQUIRE_JAVA=1 but {reason}")
        pytest.skip(reason)


@pytest.fixture(scope="session")
def java() -> java_paimon.JavaPaimon:
    """Apache Paimon (Java) as an independent reader; skips (or fails in CI) without it."""
    _require_java(java_paimon.unavailable())
    return java_paimon.JavaPaimon()


@pytest.fixture(scope="session")
def java_writer() -> jw.JavaWriter:
    """Apache Paimon (Java) as a table writer (tests/java_writer.py); skips (or fails in CI)
    without a JDK or the java-paimon tool."""
    _require_java(jw.unavailable())
    return jw.JavaWriter()


@pytest.fixture
def java_built(tmp_path: Path) -> Callable[[str], Path]:
    """A writable copy (times kept) of a table of ../shared/fixtures/java-0.9-built/."""

    def copy(name: str) -> Path:
        src = java_paimon.JAVA_BUILT / name / "table"
        if not src.is_dir():
            if java_paimon.REQUIRED:
                pytest.fail(f"Java-built fixture {src} not found")
            pytest.skip(f"Java-built fixture {src} not found")
        dest = tmp_path / "java-built" / name
        shutil.copytree(src, dest, symlinks=True)
        return dest

    return copy


# The stateful property test's long run: `pytest --hypothesis-profile nightly tests/property`.
settings.register_profile(
    "nightly",
    max_examples=400,
    stateful_step_count=80,
    deadline=None,
    suppress_health_check=list(HealthCheck),
)


# -- Spark ---------------------------------------------------------------------------------------
def _why_no_spark() -> str | None:
    if importlib.util.find_spec("pyspark") is None:
        return "pyspark is not installed (pip install 'paimon-cli[spark]')"
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        return "no Java on this machine: Spark tests skipped (CI installs openjdk-17)"
    return None


@pytest.fixture(scope="session")
def spark_executor() -> Iterator[SparkExecutor]:
    """One local[2] Spark session for all Spark tests (start-up costs seconds)."""
    reason = _why_no_spark()
    if reason:
        pytest.skip(reason)
    executor = SparkExecutor.start(master="local[2]", parallelism=4)
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
