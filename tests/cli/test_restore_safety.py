"""Issue 22 defects 3, 5 and 6: restore and purge-quarantine on real tables.

restore walks everything the snapshots, tags and changelogs it brings back need against the
table and the run's quarantine before the first move, and refuses, naming what is gone. A
quarantine record is bound to the table it lies in: its paths are stored relative to the
table root and resolved against the table given (a copy restores itself, a renamed table
its new place), its run id must be one paimon-cli makes, and no path it names outside the
table is ever followed, by restore or by purge-quarantine."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from support import pypaimon_writer as pw
from support.invariants import (
    age_tree,
    assert_no_dangling_references,
    assert_rows_intact,
    copy_scenario,
    restore_refused,
    tree_state,
    tree_state_without_runs,
)
from support.invariants import tree_digests as digests
from support.java_paimon import assert_java_ok

from core.table.table import open_table

QUARANTINE = (".paimon-cli", "quarantine")
EXPIRE = ["--retain-max", "5", "--retain-min", "1"]


def _record(root: Path, run_id: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(root.joinpath(*QUARANTINE, f"{run_id}.json").read_text())
    return data


# -- defect 3: restore checks completeness before the first move ---------------------------------
@pytest.mark.java
def test_restore_after_orphan_cleaning_refuses_naming_the_lost_files(
    run: Any, scenarios: dict[str, pw.Scenario], tmp_path: Path, java: Any
) -> None:
    """rollback --quarantine, delete-orphan-files (rightly removes what only the rolled-back
    snapshots used), restore --last: refused, nothing moved; the table reads as before."""
    s, wh, root = copy_scenario(scenarios, "many_commits", tmp_path)
    age_tree(root)
    assert run("rollback", root, "--to-snapshot", "25", "--quarantine").exit_code == 0
    orphans = run.json("delete-orphan-files", root)
    assert orphans["plan"]["details"]["orphan_count"] > 0
    state = tree_state_without_runs(root)

    dry = run("restore", root, "--last", "--dry-run", "--json")
    assert dry.exit_code == 1
    incomplete = json.loads(dry.stdout)["plan"]["incomplete"]
    gone = {p["path"] for p in incomplete}
    assert gone and all(not Path(p).exists() for p in gone)
    assert {p["referenced_by"].split(" (")[0] for p in incomplete} <= {
        f"snapshot {i}" for i in range(26, 31)
    }
    message = restore_refused(run, root, "--last")
    assert "in neither the table nor the run's quarantine" in message
    assert Path(incomplete[0]["path"]).name in message
    assert tree_state_without_runs(root) == state
    assert open_table(str(root)).snapshots.ids() == list(range(1, 26))
    assert_no_dangling_references(root)
    assert_rows_intact(wh, s)
    assert_java_ok(java.verify(root))


def test_restore_after_the_tag_that_held_the_data_went_refuses(
    run: Any, scenarios: dict[str, pw.Scenario], tmp_path: Path
) -> None:
    """expire-snapshots --quarantine while a tag holds old data (kept in the table, not
    quarantined), then a plain delete-tag removes that data: restoring the expired
    snapshots would bring them back without it."""
    s, wh, root = copy_scenario(scenarios, "many_commits", tmp_path)
    assert run("create-tag", root, "old", "--snapshot", "5").exit_code == 0
    assert run("expire-snapshots", root, *EXPIRE, "--quarantine").exit_code == 0
    deleted = run.json("delete-tag", root, "old")
    assert deleted["plan"]["totals"]["by_kind"].get("data", {}).get("files")
    state = tree_state_without_runs(root)
    message = restore_refused(run, root, "--last")
    assert "in neither the table nor the run's quarantine" in message
    assert "(snapshot " in message
    assert tree_state_without_runs(root) == state
    assert open_table(str(root)).snapshots.ids() == list(range(26, 31))
    assert_no_dangling_references(root)
    assert_rows_intact(wh, s)


def test_a_complete_restore_still_goes_ahead(
    run: Any, scenarios: dict[str, pw.Scenario], tmp_path: Path
) -> None:
    s, wh, root = copy_scenario(scenarios, "many_commits", tmp_path)
    before = digests(root)
    assert run("create-tag", root, "old", "--snapshot", "5").exit_code == 0
    assert run("expire-snapshots", root, *EXPIRE, "--quarantine").exit_code == 0
    restored = run.json("restore", root, "--last")
    assert restored["plan"]["incomplete"] == [] and restored["report"]["restored"] > 0
    assert {k: v for k, v in digests(root).items() if "/tag/" not in k} == before
    assert_no_dangling_references(root)
    assert_rows_intact(wh, s)


def test_restore_refuses_when_the_runs_newest_snapshot_is_lost(
    run: Any, scenarios: dict[str, pw.Scenario], tmp_path: Path
) -> None:
    """The newest snapshot a rollback removed is gone from the quarantine: restoring the
    rest would leave LATEST naming a snapshot that is not there."""
    _s, _wh, root = copy_scenario(scenarios, "many_commits", tmp_path)
    doc = run.json("rollback", root, "--to-snapshot", "25", "--quarantine")
    root.joinpath(*QUARANTINE, doc["run_id"], "snapshot", "snapshot-30").unlink()
    state = tree_state_without_runs(root)
    assert "snapshot 30 of this run is in neither" in restore_refused(run, root, "--last")
    assert tree_state_without_runs(root) == state


# -- defect 6: records are bound to the table they lie in ----------------------------------------
def _quarantined(run: Any, root: Path) -> str:
    doc = run.json("expire-snapshots", root, *EXPIRE, "--quarantine")
    run_id: str = doc["run_id"]
    return run_id


def test_restore_and_purge_of_a_copy_act_on_the_copy_only(
    run: Any, scenarios: dict[str, pw.Scenario], tmp_path: Path
) -> None:
    s, wh, a = copy_scenario(scenarios, "many_commits", tmp_path)
    before = digests(a)
    run_id = _quarantined(run, a)
    b = a.parent / "many_commits_copy"
    shutil.copytree(a, b, symlinks=True)
    a_state = tree_state(a)

    restored = run.json("restore", b, "--last")
    assert restored["report"]["restored"] > 0 and restored["report"]["missing"] == 0
    assert all(f["path"].startswith(f"{b}/") for f in restored["plan"]["files"])
    assert {k.split("/", 1)[1]: v for k, v in digests(b).items()} == {
        k.split("/", 1)[1]: v for k, v in before.items()
    }
    assert tree_state(a) == a_state
    assert _record(a, run_id)["status"] == "quarantined"
    assert _record(b, run_id)["status"] == "restored"
    assert_no_dangling_references(b)

    c = a.parent / "many_commits_second_copy"
    shutil.copytree(a, c, symlinks=True)
    assert run("purge-quarantine", c).exit_code == 0
    assert not c.joinpath(*QUARANTINE, run_id).exists()
    assert tree_state(a) == a_state  # A's quarantine is A's undo: untouched
    restored_a = run.json("restore", a, run_id)
    assert restored_a["report"]["restored"] > 0
    assert digests(a) == before
    assert_rows_intact(wh, s)


@pytest.mark.java
@pytest.mark.parametrize("record_format", [2, 1], ids=["relative", "absolute-format-1"])
def test_restore_after_the_table_was_renamed(
    run: Any, scenarios: dict[str, pw.Scenario], tmp_path: Path, java: Any, record_format: int
) -> None:
    """mv A B (a filesystem catalog rename): restore on B brings everything back, also from
    a record of the previous version (absolute paths of A)."""
    s, _wh, a = copy_scenario(scenarios, "many_commits", tmp_path)
    before = digests(a)
    run_id = _quarantined(run, a)
    if record_format == 1:
        _as_format_1(a, run_id)
    b = a.parent / "renamed"
    a.rename(b)
    restored = run.json("restore", b, "--last")
    assert restored["report"]["missing"] == 0 and restored["report"]["restored"] > 0
    assert {k.split("/", 1)[1]: v for k, v in digests(b).items()} == {
        k.split("/", 1)[1]: v for k, v in before.items()
    }
    assert not a.exists()
    assert open_table(str(b)).snapshots.ids() == list(range(1, 31))
    assert_no_dangling_references(b)
    assert_java_ok(java.verify(b))


def _as_format_1(root: Path, run_id: str) -> None:
    """Rewrite a record as the previous version wrote it: absolute paths, recorded roots."""
    path = root.joinpath(*QUARANTINE, f"{run_id}.json")
    record = json.loads(path.read_text())
    for plan in record["plans"]:
        for phase in plan["phases"]:
            for action in phase["actions"]:
                action["path"] = f"{root}/{action['path']}"
    for write in record["writes"]:
        write["path"] = f"{root}/{write['path']}"
    record.update(format=1, roots=[str(root)])
    path.write_text(json.dumps(record))


# -- defect 5: nothing a record says leads outside the table -------------------------------------
@pytest.fixture
def victim(tmp_path: Path) -> Path:
    """A directory beside the warehouse that no command may touch."""
    directory = tmp_path / "victim"
    (directory / "sub").mkdir(parents=True)
    for name in ("a.parquet", "b.txt", "sub/c"):
        (directory / name).write_bytes(b"precious " + name.encode())
    return directory


def _forge(root: Path, name: str, **changes: Any) -> Path:
    """A copy of a real record as ``<name>.json`` with ``changes`` applied."""
    (real,) = root.joinpath(*QUARANTINE).glob("*.json")
    record = json.loads(real.read_text())
    record.update(changes)
    path = root.joinpath(*QUARANTINE, f"{name}.json")
    path.write_text(json.dumps(record))
    return path


@pytest.mark.parametrize("command", ["purge-quarantine", "restore"])
def test_a_run_id_that_is_a_path_is_refused(
    run: Any,
    scenarios: dict[str, pw.Scenario],
    tmp_path: Path,
    victim: Path,
    command: str,
) -> None:
    _s, _wh, root = copy_scenario(scenarios, "many_commits", tmp_path)
    _quarantined(run, root)
    depth = len(root.relative_to(tmp_path).parts) + 2
    forged = "/".join([".."] * depth) + "/victim"
    _forge(root, "forged", run_id=forged, created_ms=1)
    state = tree_state(victim, root)
    args = [forged] if command == "restore" else []
    for extra in (["--dry-run"], []):
        result = run(command, root, *args, *extra)
        assert result.exit_code == 1, result.stdout
        assert "not a paimon-cli run id" in " ".join(result.stderr.split())
    assert tree_state(victim, root) == state


def test_purge_derives_the_quarantine_roots_from_the_table(
    run: Any, scenarios: dict[str, pw.Scenario], tmp_path: Path, victim: Path
) -> None:
    """A record whose ``roots`` name another directory: purge looks only under the table's
    own roots (and deletes the run's quarantine there)."""
    _s, _wh, root = copy_scenario(scenarios, "many_commits", tmp_path)
    run_id = _quarantined(run, root)
    record = _record(root, run_id)
    record["roots"] = [str(victim)]
    (victim / ".paimon-cli" / "quarantine" / run_id).mkdir(parents=True)
    (victim / ".paimon-cli" / "quarantine" / run_id / "x").write_text("precious")
    root.joinpath(*QUARANTINE, f"{run_id}.json").write_text(json.dumps(record))
    state = tree_state(victim)
    dry = json.loads(run("purge-quarantine", root, "--dry-run", "--json").stdout)
    assert dry["totals"]["files"] > 0
    assert run("purge-quarantine", root).exit_code == 0
    assert tree_state(victim) == state
    assert not root.joinpath(*QUARANTINE, run_id).exists()


def test_restore_refuses_a_record_naming_a_path_outside_the_table(
    run: Any, scenarios: dict[str, pw.Scenario], tmp_path: Path, victim: Path
) -> None:
    _s, _wh, root = copy_scenario(scenarios, "many_commits", tmp_path)
    run_id = _quarantined(run, root)
    record = _record(root, run_id)
    record["plans"][0]["phases"][0]["actions"][0]["path"] = str(victim / "a.parquet")
    root.joinpath(*QUARANTINE, f"{run_id}.json").write_text(json.dumps(record))
    victim_state, table_files = tree_state(victim), digests(root)
    message = restore_refused(run, root, run_id)
    assert f"names {victim / 'a.parquet'}, which is not inside" in message
    record["plans"][0]["phases"][0]["actions"][0]["path"] = "../../victim/a.parquet"
    root.joinpath(*QUARANTINE, f"{run_id}.json").write_text(json.dumps(record))
    assert "which is not inside" in restore_refused(run, root, run_id)
    assert tree_state(victim) == victim_state and digests(root) == table_files


def test_purge_never_follows_a_symlinked_quarantine(
    run: Any, scenarios: dict[str, pw.Scenario], tmp_path: Path, victim: Path
) -> None:
    _s, _wh, root = copy_scenario(scenarios, "many_commits", tmp_path)
    run_id = _quarantined(run, root)
    quarantined = root.joinpath(*QUARANTINE, run_id)
    shutil.rmtree(quarantined)
    quarantined.symlink_to(victim, target_is_directory=True)
    state = tree_state(victim)
    for extra in (["--dry-run"], []):
        result = run("purge-quarantine", root, *extra)
        assert result.exit_code == 1 and "refusing to follow" in result.stderr
    assert tree_state(victim) == state


def test_a_journal_naming_a_quarantine_outside_the_table_is_refused(
    run: Any, scenarios: dict[str, pw.Scenario], tmp_path: Path, victim: Path
) -> None:
    """A journal's quarantine run id names directories too: a path there is an error before
    the first move, as a path outside the table in its plan is."""
    _s, _wh, root = copy_scenario(scenarios, "many_commits", tmp_path)
    plan = run.json("expire-snapshots", root, *EXPIRE, "--dry-run")["plan"]
    journal = root / ".paimon-cli" / "journal" / "expire-snapshots-1-0123456789ab.json"
    journal.parent.mkdir(parents=True)
    journal.write_text(json.dumps({**plan, "quarantine_run": f"../../../../../{victim.name}"}))
    state = tree_state(victim, root)
    result = run("delete-orphan-files", root)
    assert result.exit_code == 1
    assert "not a paimon-cli run id" in " ".join(result.stderr.split())
    assert tree_state(victim, root) == state
