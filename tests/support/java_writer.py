"""Apache Paimon (Java) as a table *writer* for tests: ``tests/javawriter/*.java``.

pypaimon cannot write everything Paimon tables hold in production (deletion vectors on
append tables, compacted primary-key levels, changelog files of the compaction producers).
``JavaWriter.run(warehouse, script)`` builds such tables with Paimon's own Java writer,
compaction and commit: the programs in ``tests/javawriter/`` are built and run by the tests'
JVM toolchain (``java_toolchain``: Paimon 0.9.0, compiled once, one warm JVM) and
``PaimonScript`` runs a JSON script of steps (see its class comment); a step op ``some-op`` it
does not know is ``paimonclitest.SomeOpStep.run(table, step)`` in a file of its own.

pypaimon 2.1 cannot read what Paimon 0.9 writes (its manifests predate ``_VALUE_STATS_COLS``):
tables built here are checked with Java (``java`` fixture, ``JavaWriter.rows``) and our own
``inspect --check``.

Tests take the ``java_writer`` fixture (conftest) and carry ``@pytest.mark.java``; like the
``java`` reader fixture they skip without a JDK or the jars, saying what is missing, and fail
instead when ``PAIMON_CLI_REQUIRE_JAVA=1`` (CI).
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from support import java_toolchain
from support.java_toolchain import JavaProgramError, unavailable

__all__ = ["JavaWriter", "JavaWriterError", "unavailable"]

JavaWriterError = JavaProgramError


class JavaWriter:
    """Runs the programs of ``tests/javawriter`` (``paimonclitest.*``)."""

    def java(self, main_class: str, *args: str) -> str:
        """Run ``main_class`` of tests/javawriter; its stdout, or JavaWriterError."""
        return java_toolchain.shared().run(main_class, *args)

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
