"""restore puts a run's snapshots back only into the history they left.

Snapshot files hold no parent: after a rollback a writer's commits reuse the ids that went,
and once those are expired the ids alone no longer show that the table moved on. The
quarantine record keeps the commits next to the removed snapshots (``beside``), and restore
refuses when those are other commits now, or when something was committed above snapshots
that were the newest (found by the property test in CI: a restored rollback put an undone
commit back under a writer's newer one, so time travel and incremental reads between the
two read a history that never was)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from support import pypaimon_writer as pw
from support.invariants import (
    assert_no_dangling_references,
    copy_scenario,
    restore_refused,
    tree_state_without_runs,
)
from support.java_paimon import assert_java_ok

from core.table.table import open_table

QUARANTINE = (".paimon-cli", "quarantine")


def _write(wh: Path, s: pw.Scenario, i: int) -> None:
    pw.append(pw.open_table(wh, s.identifier), [{"id": i, "v": f"w{i}"}])


def _reads(wh: Path, s: pw.Scenario, root: Path) -> dict[int, list[pw.Row]]:
    ids = open_table(str(root)).snapshots.ids()
    return {i: pw.read_rows(wh, s.identifier, snapshot_id=i) for i in ids}


@pytest.mark.java
def test_restore_of_a_rollback_after_the_writers_commits_expired_is_refused(
    run: Any, scenarios: dict[str, pw.Scenario], tmp_path: Path, java: Any
) -> None:
    """rollback --quarantine to 25, a writer commits 26'..31', expiry removes all but 31':
    the ids 26..30 look free and 31 follows them, but 31' was committed on 30', not on 30."""
    s, wh, root = copy_scenario(scenarios, "many_commits", tmp_path)
    assert run("rollback", root, "--to-snapshot", "25", "--quarantine").exit_code == 0
    for i in range(101, 107):
        _write(wh, s, i)
    expired = run("expire-snapshots", root, "--retain-max", "1", "--retain-min", "1")
    assert expired.exit_code == 0, expired.stderr
    assert open_table(str(root)).snapshots.ids() == [31]
    state, rows = tree_state_without_runs(root), _reads(wh, s, root)

    message = restore_refused(run, root, "--last")
    assert "snapshot 31 in" in message and "was committed since the run removed" in message
    assert "snapshots 26..30 (the newest then)" in message
    assert tree_state_without_runs(root) == state
    assert _reads(wh, s, root) == rows
    assert_no_dangling_references(root)
    assert_java_ok(java.verify(root))


def test_restore_refuses_when_the_commit_below_the_run_is_another_now(
    run: Any, scenarios: dict[str, pw.Scenario], tmp_path: Path
) -> None:
    """rollback --quarantine to 25, another engine rolls back to 24 and commits 25': the
    run's 26..30 would follow 25' contiguously by id, but they were made on 25."""
    s, wh, root = copy_scenario(scenarios, "many_commits", tmp_path)
    assert run("rollback", root, "--to-snapshot", "25", "--quarantine").exit_code == 0
    pw.open_table(wh, s.identifier).rollback_to(24)
    _write(wh, s, 101)
    assert open_table(str(root)).snapshots.ids() == list(range(1, 26))
    state = tree_state_without_runs(root)

    message = restore_refused(run, root, "--last")
    assert "snapshot 25 in" in message
    assert "is another commit than the one next to snapshots 26..30" in message
    assert tree_state_without_runs(root) == state


def test_restore_still_goes_ahead_where_the_history_is_the_same(
    run: Any, scenarios: dict[str, pw.Scenario], tmp_path: Path
) -> None:
    """Expiry's neighbour above (the oldest snapshot kept) survives a later rollback to it
    and new commits on it: the expired snapshots are its ancestors still, and come back.
    A rollback with nothing committed since comes back too."""
    s, wh, root = copy_scenario(scenarios, "many_commits", tmp_path)
    rows = _reads(wh, s, root)
    assert run("rollback", root, "--to-snapshot", "28", "--quarantine").exit_code == 0
    assert (
        run.json("restore", root, "--last")["report"]["restored"] == 3
    )  # 2 snapshots, the LATEST hint
    assert _reads(wh, s, root) == rows

    doc = run.json(
        "expire-snapshots", root, "--retain-max", "5", "--retain-min", "1", "--quarantine"
    )
    kept = open_table(str(root)).snapshots.ids()
    assert kept == list(range(26, 31)), doc["plan"]["summary"]
    pw.open_table(wh, s.identifier).rollback_to(26)
    _write(wh, s, 101)
    restored = run.json("restore", root, "--last")
    assert restored["plan"]["conflicts"] == []
    assert open_table(str(root)).snapshots.ids() == list(range(1, 28))
    after = _reads(wh, s, root)
    assert {i: after[i] for i in range(1, 27)} == {i: rows[i] for i in range(1, 27)}
    assert_no_dangling_references(root)


def test_a_record_of_an_earlier_version_restores_as_before(
    run: Any, scenarios: dict[str, pw.Scenario], tmp_path: Path
) -> None:
    """Records written before ``beside`` existed get the id checks they always had."""
    s, wh, root = copy_scenario(scenarios, "many_commits", tmp_path)
    rows = _reads(wh, s, root)
    doc = run.json("rollback", root, "--to-snapshot", "27", "--quarantine")
    record_path = root.joinpath(*QUARANTINE, f"{doc['run_id']}.json")
    record = json.loads(record_path.read_text())
    assert record["beside"] == {
        "snapshot": {"below": record["beside"]["snapshot"]["below"], "above": None}
    }
    assert record["beside"]["snapshot"]["below"]["id"] == 27
    del record["beside"]
    record_path.write_text(json.dumps(record))
    assert (
        run.json("restore", root, "--last")["report"]["restored"] == 4
    )  # 3 snapshots, the LATEST hint
    assert _reads(wh, s, root) == rows
