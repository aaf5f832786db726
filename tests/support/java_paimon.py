"""Apache Paimon (Java) as an independent reader: ``tests/javaverify/Verify.java``.

pypaimon is a lenient reader; whatever paimon-cli writes or leaves behind must also read in
Java. ``JavaPaimon.verify(root)`` runs ``Verify`` (Paimon 0.9.0, through the tests' JVM
toolchain, ``java_toolchain``) and returns its JSON document: snapshot, changelog, schema,
tag and consumer ids, the latest snapshot's partitions and live files, for ``latest``, every
snapshot and every tag the rows and an order-independent checksum (``entries``), plus
``missing_files``, ``errors`` and ``ok`` (see the class comment of ``Verify``).

Tests take the ``java`` fixture (conftest) and carry ``@pytest.mark.java``. Without a JDK or
the jars they skip, saying what is missing and how to get it, unless
``PAIMON_CLI_REQUIRE_JAVA=1`` (set by ``.ci/run``): then a missing Java is a failure, never a
silent skip.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from support import java_toolchain
from support.java_toolchain import REQUIRED, JavaProgramError, unavailable

__all__ = ["REQUIRED", "JavaPaimon", "JavaVerifyError", "unavailable"]

JavaVerifyError = JavaProgramError


class JavaPaimon:
    """Runs ``Verify`` in the tests' warm JVM (about a second for a small table)."""

    def verify(
        self, table: Path | str, *, read: bool = True, branch: str | None = None
    ) -> dict[str, Any]:
        args = [str(table)] + ([] if read else ["--no-read"])
        args += [] if branch is None else [f"--branch={branch}"]
        stdout = java_toolchain.shared().run("paimonclitest.Verify", *args)
        try:
            doc: dict[str, Any] = json.loads(stdout)
        except json.JSONDecodeError as exc:
            raise JavaVerifyError(f"Verify printed no JSON for {table}: {stdout[-2000:]}") from exc
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
