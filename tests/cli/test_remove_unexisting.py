"""`paimon remove-unexisting-files` after live files were deleted by hand: one APPEND commit
marks them DELETE (as Paimon's procedure), `inspect --check` is clean again, and pypaimon and
Java read the rest."""

from __future__ import annotations

from pathlib import Path

import pyarrow.parquet as pq
import pypaimon_writer as pw
import pytest
from invariants import assert_no_dangling_references, tree_state
from java_paimon import assert_java_ok

from core.table.table import open_table


@pytest.fixture
def broken(scenarios, copy_table) -> tuple[pw.Scenario, Path, Path, dict[str, set[int]]]:
    """append_partitioned with the files snapshot 6 added deleted by hand: (scenario,
    warehouse, root, {file name: ids it held})."""
    s = scenarios["append_partitioned"]
    root: Path = copy_table(s.root)
    wh = root.parents[1]
    added = [name for kind, name in pw.delta_entries(wh, s.identifier, 6) if kind == 0]
    assert len(added) >= 2
    lost: dict[str, set[int]] = {}
    for name in added:
        (path,) = root.rglob(name)
        lost[name] = set(pq.ParquetFile(path).read(columns=["id"]).column("id").to_pylist())
        path.unlink()
    return s, wh, root, lost


@pytest.mark.java
def test_repair_after_files_were_deleted_by_hand(run, broken, java) -> None:
    s, wh, root, lost = broken
    assert run("inspect", root, "--check").exit_code == 1
    state = tree_state(root)
    dry = run.json("remove-unexisting-files", root, "--dry-run")
    files = dry["plan"]["details"]["files"]
    assert sorted(Path(f["path"]).name for f in files) == sorted(lost)
    assert all(f["rows"] == len(lost[Path(f["path"]).name]) for f in files)
    assert dry["plan"]["details"]["rows"] == sum(len(v) for v in lost.values())
    assert tree_state(root) == state

    doc = run.json("remove-unexisting-files", root)
    assert doc["report"]["snapshot_id"] == 7 and doc["report"]["files_marked_delete"] == len(lost)
    snap = open_table(str(root)).snapshots.snapshot(7)
    assert snap.commit_kind == "APPEND" and snap.commit_identifier == 2**63 - 1
    # Snapshot 7 reads; the older snapshots still name the lost files until they expire.
    (root / "consumer" / "consumer-reader").unlink()
    assert run("expire-snapshots", root, "--retain-max", "1", "--retain-min", "1").exit_code == 0
    assert run("inspect", root, "--check").exit_code == 0
    assert_no_dangling_references(root)
    gone = set().union(*lost.values())
    want = pw.sort_rows(r for r in s.expected[6] if r["id"] not in gone)
    assert pw.read_rows(wh, s.identifier) == want
    doc = java.verify(root)
    assert_java_ok(doc)
    assert doc["entries"]["latest"]["rows"] == len(want)
    again = run.json("remove-unexisting-files", root)
    assert again["report"] is None and again["plan"]["details"]["files"] == []


def test_partition_filter(run, broken) -> None:
    _, _, root, lost = broken
    doc = run.json("remove-unexisting-files", root, "--partition", "dt=2024-01-02,hr=1")
    fixed = {Path(f["path"]).name for f in doc["plan"]["details"]["files"]}
    assert fixed and fixed < set(lost)
    assert all(
        f["partition"] == {"dt": "2024-01-02", "hr": "1"} for f in doc["plan"]["details"]["files"]
    )
    rest = run.json("remove-unexisting-files", root, "--dry-run")
    assert {Path(f["path"]).name for f in rest["plan"]["details"]["files"]} == set(lost) - fixed


def test_nothing_missing_and_bad_input(run, scenarios, copy_table) -> None:
    root = copy_table(scenarios["append_partitioned"].root)
    state = tree_state(root)
    doc = run.json("remove-unexisting-files", root)
    assert doc["plan"]["details"]["files"] == [] and doc["report"] is None
    bad = run("remove-unexisting-files", root, "--partition", "nokey=1")
    assert bad.exit_code == 2 and "not a partition key" in bad.stderr
    assert run("remove-unexisting-files", root, "--partition", "novalue").exit_code == 2
    runs = root / ".paimon-cli" / "runs"
    assert {p for p in tree_state(root) if not p.startswith(str(runs))} == set(state)
