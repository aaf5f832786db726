"""Helpers shared by the tests: where the Java fixture corpus is, and a CLI runner."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from paimon_cli.main import app

REPO = Path(__file__).resolve().parents[1]
JAVA_FIXTURES = Path(
    os.environ.get("PAIMON_CLI_FIXTURES", REPO.parent / "shared" / "fixtures" / "java-written")
)


def java_tables() -> list[Path]:
    """Every Java-written table root in the shared corpus (dirs holding schema/)."""
    if not JAVA_FIXTURES.is_dir():
        return []
    return sorted(p.parent for p in JAVA_FIXTURES.glob("*/*.db/*/schema"))


def java_table_params() -> list[Any]:
    tables = java_tables()
    if not tables:
        return [
            pytest.param(
                None,
                marks=pytest.mark.skip(
                    reason=f"shared Java fixture corpus not found at {JAVA_FIXTURES}"
                ),
            )
        ]
    return [pytest.param(t, id=f"{t.parents[1].name}/{t.name}") for t in tables]


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
