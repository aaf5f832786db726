"""Apache Paimon (Java) as an independent reader: ``../shared/tools/java-paimon``.

pypaimon is a lenient reader; whatever paimon-cli writes or leaves behind must also read in
Java. ``JavaPaimon.verify(root)`` runs ``paimon-java verify`` (Paimon 0.9.0) and returns its
JSON document: for ``latest``, every snapshot and every tag the rows and an order-independent
checksum (``entries``), plus ``missing_files``, ``errors`` and ``ok``.

Tests take the ``java`` fixture (conftest) and carry ``@pytest.mark.java``. Without the tool or
a JDK they skip, saying why, unless ``PAIMON_CLI_REQUIRE_JAVA=1`` (set by ``.ci/run`` when the
tool is present): then a missing Java is a failure, never a silent skip.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from fixtures import REPO

TOOL = Path(
    os.environ.get(
        "PAIMON_JAVA_TOOL", REPO.parent / "shared" / "tools" / "java-paimon" / "paimon-java"
    )
)
JAVA_BUILT = Path(
    os.environ.get("PAIMON_CLI_JAVA_BUILT", REPO.parent / "shared" / "fixtures" / "java-0.9-built")
)
REQUIRED = os.environ.get("PAIMON_CLI_REQUIRE_JAVA") == "1"


def unavailable() -> str | None:
    """Why Java Paimon cannot run here, or None when it can."""
    if not TOOL.is_file():
        return f"java-paimon tool not found at {TOOL}"
    if shutil.which("java") is None:
        return "no `java` on PATH (install openjdk-17-jdk-headless)"
    return None


class JavaVerifyError(AssertionError):
    pass


class JavaPaimon:
    """Runs ``paimon-java verify``; one JVM per call (about 2 s once warm)."""

    def __init__(self, tool: Path = TOOL) -> None:
        self.tool = tool

    def verify(self, table: Path | str, *, read: bool = True) -> dict[str, Any]:
        args = [str(self.tool), "verify", "--table", str(table)]
        if not read:
            args.append("--no-read")
        proc = subprocess.run(args, capture_output=True, text=True, timeout=900, check=False)
        if proc.returncode != 0:
            raise JavaVerifyError(
                f"paimon-java crashed (exit {proc.returncode}) on {table}:\n{proc.stderr[-3000:]}"
            )
        try:
            doc: dict[str, Any] = json.loads(proc.stdout)
        except json.JSONDecodeError as exc:
            raise JavaVerifyError(f"paimon-java printed no JSON: {proc.stdout[-2000:]}") from exc
        return doc


def assert_java_ok(doc: Mapping[str, Any]) -> None:
    """Java read everything it was asked to: no error, no missing file."""
    problems = {
        "errors": doc.get("errors") or {},
        "missing_files": doc.get("missing_files") or [],
    }
    assert doc.get("ok") and not any(problems.values()), json.dumps(problems, indent=1)[:4000]


def entry_keys(doc: Mapping[str, Any]) -> set[str]:
    """``snapshot-N`` and ``tag-NAME`` keys Java read (``latest`` excluded)."""
    return {k for k in (doc.get("entries") or {}) if k != "latest"}


def assert_same_rows(
    before: Mapping[str, Any],
    after: Mapping[str, Any],
    *,
    keys: Iterable[str] | None = None,
) -> None:
    """Every snapshot and tag Java reads after an operation (or ``keys``) has the rows and
    checksum it had before; ``after`` is clean (assert_java_ok)."""
    assert_java_ok(after)
    old, new = before.get("entries") or {}, after.get("entries") or {}
    wanted = set(keys) if keys is not None else entry_keys(after)
    missing = sorted(k for k in wanted if k not in new)
    assert not missing, f"Java no longer reads {missing}"
    changed = {
        k: (old[k], new[k])
        for k in sorted(wanted)
        if k in old and (old[k]["rows"], old[k]["checksum"]) != (new[k]["rows"], new[k]["checksum"])
    }
    assert not changed, f"rows changed in Java: {json.dumps(changed, indent=1)[:3000]}"
