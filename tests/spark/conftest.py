"""One local[2] Spark session for all Spark tests (start-up costs seconds)."""

from __future__ import annotations

import importlib.util
import os
import shutil
from collections.abc import Iterator

import pytest

from core.runtime.executors.spark import SparkExecutor


def _why_not() -> str | None:
    if importlib.util.find_spec("pyspark") is None:
        return "pyspark is not installed (pip install 'paimon-cli[spark]')"
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        return "no Java on this machine: Spark tests skipped (CI installs openjdk-17)"
    return None


@pytest.fixture(scope="session")
def spark_executor() -> Iterator[SparkExecutor]:
    reason = _why_not()
    if reason:
        pytest.skip(reason)
    executor = SparkExecutor.start(master="local[2]", parallelism=4)
    executor.owned = False  # shared: tests must not stop it
    yield executor
    executor.spark.stop()
