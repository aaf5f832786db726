"""Expiry rewrites a LATEST hint that names a snapshot it expires (found by the property
test: a rollback stopped by a writer's commit landing beside its own LATEST write left
LATEST=1 under snapshots 2 and 3; an expiry then removed 1 and 2, and Java, which takes the
hint as the latest whenever the next snapshot is absent, failed to read the table)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from support import pypaimon_writer as pw
from support.invariants import assert_no_dangling_references, copy_scenario
from support.java_paimon import assert_java_ok

from core.table.table import open_table

EXPIRE = ["expire-snapshots", "--retain-max", "3", "--retain-min", "1"]


@pytest.mark.java
def test_a_stale_latest_hint_is_rewritten_before_the_snapshots_after_it_go(
    run: Any, scenarios: dict[str, pw.Scenario], tmp_path: Path, java: Any
) -> None:
    s, wh, root = copy_scenario(scenarios, "many_commits", tmp_path)
    latest = root / "snapshot" / "LATEST"
    latest.write_text("1")  # a writer's hint write that failed long ago
    plan = run.json(*EXPIRE[:1], root, *EXPIRE[1:], "--dry-run")["plan"]
    first = plan["phases"][0]["actions"][0]
    assert (first["op"], first["path"], first["content"]) == ("write", str(latest), "30")
    assert "LATEST hint named snapshot 1" in first["reason"]

    assert run(*EXPIRE[:1], root, *EXPIRE[1:]).exit_code == 0
    assert open_table(str(root)).snapshots.ids() == [28, 29, 30]
    assert latest.read_text() == "30"
    assert pw.read_rows(wh, s.identifier) == pw.sort_rows(s.expected[30])
    assert_no_dangling_references(root)
    assert_java_ok(java.verify(root))


def test_a_current_latest_hint_is_left_alone(
    run: Any, scenarios: dict[str, pw.Scenario], tmp_path: Path
) -> None:
    """As Paimon's expiry: only EARLIEST changes when LATEST names a kept snapshot."""
    _s, _wh, root = copy_scenario(scenarios, "many_commits", tmp_path)
    doc = run.json(*EXPIRE[:1], root, *EXPIRE[1:], "--dry-run")
    hints = [a["path"] for p in doc["plan"]["phases"] for a in p["actions"] if a["kind"] == "hint"]
    assert hints == [str(root / "snapshot" / "EARLIEST")]
    assert json.loads((root / "snapshot" / "LATEST").read_text()) == 30
