"""Helpers shared by the tests: where the Java-written tables are, and a CLI runner."""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any, NoReturn

import pytest
from typer.testing import CliRunner

from paimon_cli.main import app
from support import java_toolchain

REPO = Path(__file__).resolve().parents[2]
# Test data (tests/data/README.md): the paimon-cpp corpus of Java-written tables, and tables
# this project built with Paimon 0.9.0 (Java). Read-only: tests copy a table first.
DATA = REPO / "tests" / "data"
JAVA_FIXTURES = DATA / "java-written"
JAVA_BUILT = DATA / "java-0.9-built"


def java_built_now_ms(name: str) -> int:
    """The instant tests treat as now for a table of tests/data/java-0.9-built/: an hour
    after its last commit (its scenario.json), so its time-based retention answers the same
    on every day the suite runs."""
    scenario = json.loads((JAVA_BUILT / name / "scenario.json").read_text())
    return max(int(s["time_ms"]) for s in scenario["snapshots"]) + 3_600_000


MISSING_DATA = "is missing from this checkout: restore it with `git checkout -- tests/data`"


def missing(reason: str) -> NoReturn:
    """Skip saying what is missing and how to get it; fail instead where every test must
    run (PAIMON_CLI_REQUIRE_JAVA=1, as ``.ci/run`` sets: CI runs with zero skips)."""
    if java_toolchain.REQUIRED:
        pytest.fail(f"PAIMON_CLI_REQUIRE_JAVA=1 (every test runs), but: {reason}", False)
    pytest.skip(reason, allow_module_level=True)


def dev_dependency(module: str, package: str | None = None) -> Any:
    """Import a test dependency (pyproject's ``dev`` extra), or skip saying how to get it."""
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError:
        missing(f"needs {package or module} (a test dependency): pip install -e '.[dev]'")


def require_spark() -> None:
    """Skip, saying what is missing and how to get it, when a local Spark cannot start here;
    fail instead when CI requires it (PAIMON_CLI_REQUIRE_JAVA=1: Spark runs there)."""
    if importlib.util.find_spec("pyspark") is None:
        reason = "needs pyspark (a test dependency): pip install -e '.[dev]'"
    elif shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        reason = f"needs Java (no java on PATH, no JAVA_HOME): {java_toolchain.JDK_HINT}"
    else:
        return
    missing(f"Spark {reason}")


def java_tables() -> list[Path]:
    """Every table root of the Java-written corpus (dirs holding schema/); a checkout
    without it is broken, not a reason to skip."""
    tables = sorted(p.parent for p in JAVA_FIXTURES.glob("*/*.db/*/schema"))
    if not tables:
        raise FileNotFoundError(f"the Java-written corpus {JAVA_FIXTURES} {MISSING_DATA}")
    return tables


def java_table_params(keep: Callable[[Path], bool] = lambda _root: True) -> list[Any]:
    """The corpus tables as test parameters; ``keep`` leaves out, when collecting, the
    tables a test cannot apply to (rather than skipping them every run)."""
    return [pytest.param(t, id=f"{t.parents[1].name}/{t.name}") for t in java_tables() if keep(t)]


class Run:
    """Invoke the Typer app in-process (exit codes, stdout and stderr kept apart)."""

    def __init__(self) -> None:
        self.runner = CliRunner()

    def __call__(self, *args: object, env: dict[str, str] | None = None) -> Any:
        return self.runner.invoke(app, [str(a) for a in args], env=env, catch_exceptions=False)

    def json(self, *args: object) -> dict[str, Any]:
        result = self(*args, "--json")
        assert result.exit_code == 0, result.stderr
        doc: dict[str, Any] = json.loads(result.stdout)
        return doc
