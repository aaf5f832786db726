"""Exit codes a CI gate can tell apart (issue 37.6): 3 when a check ran and found the table
damaged (`inspect --check`, maintain's check step), 1 when something failed or could not be
checked, damage outranking failure in a run over many tables; --json's error.kind as before.
130 and 143 (interrupts) are in test_signals.py, 141 (closed pipe) in test_closed_pipe.py.
pypaimon tables."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
from support import pypaimon_writer as pw

from paimon_cli.errors import EXIT_DAMAGED, EXIT_FAILURE


def _damaged(run, root: Path) -> Path:
    """Delete a data file every snapshot from the first one on still reads."""
    victim = Path(run.json("inspect", root, "files", "--snapshot", "1")["files"][0]["path"])
    victim.unlink()
    return victim


def test_inspect_check_damage_is_3_and_could_not_check_is_1(run, scenarios, copy_table) -> None:
    healthy = copy_table(scenarios["append_partitioned"].root)
    assert run("inspect", healthy, "--check").exit_code == 0
    damaged = copy_table(scenarios["many_commits"].root)
    _damaged(run, damaged)
    assert run("inspect", damaged, "--check", "-q").exit_code == EXIT_DAMAGED
    # Could not check: the table is not there, or the snapshot asked for is not.
    gone = run("inspect", healthy.parent / "nope", "--check", "--json")
    assert gone.exit_code == EXIT_FAILURE
    assert json.loads(gone.stderr)["error"]["kind"] == "table_not_found"
    absent = run("inspect", healthy, "--check", "--snapshot", "99")
    assert absent.exit_code == EXIT_FAILURE and "snapshot 99 not found" in absent.stderr
    # Over many tables, damage found outranks a table that could not be checked.
    (healthy.parent / "broken").mkdir()
    (healthy.parent / "broken" / "schema").mkdir()  # a table directory with no schema file
    glob = run("inspect", "db.*", "-w", healthy.parents[1], "--check", "--json")
    assert glob.exit_code == EXIT_DAMAGED, glob.stdout
    statuses = {Path(t["table"]).name: t["status"] for t in json.loads(glob.stdout)["tables"]}
    assert statuses[damaged.name] == "failed" and statuses[healthy.name] == "ok"


def test_maintain_damage_is_3_and_a_failed_step_is_1(run, tmp_path: Path) -> None:
    wh = tmp_path / "wh"
    retain = {"snapshot.num-retained.min": "1", "snapshot.num-retained.max": "2"}
    table = pw.create_table(wh, "db.t", pa.schema([("id", pa.int64())]), options=retain)
    for c in range(4):
        pw.append(table, [{"id": c}])
    root = pw.table_root(wh, "db.t")
    assert run("maintain", root, "-q", "--dry-run").exit_code == 0
    (root / "snapshot" / "snapshot-2").write_text("{ not json")
    # The check off: expire-snapshots fails on the corrupt snapshot, nothing was checked.
    failed = run("maintain", root, "-q", "--no-check")
    assert failed.exit_code == EXIT_FAILURE, failed.stderr
    assert "expire-snapshots failed: corrupt metadata" in failed.stderr
    # The check on: it names the damage, and the exit code says damage.
    damaged = run("maintain", root, "-q")
    assert damaged.exit_code == EXIT_DAMAGED, damaged.stderr
    assert "check failed: 1 integrity problems" in damaged.stderr
