"""``restore`` is journaled: a restore SIGKILLed mid-way is finished by the next changing
command (any command, or ``restore`` again), re-validated first: a file back at its place
with other content is never overwritten (the journal is discarded, saying why), a file
already moved back (gone from the quarantine) is no error, a move cut halfway completes.
Real processes killed with SIGKILL, on a pypaimon table.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from support.held import Held
from support.invariants import assert_no_dangling_references, assert_rows_intact, copy_scenario
from support.invariants import tree_digests as digests

from core.io.fileio import FileIO
from core.runtime.journal import unfinished_journals
from core.runtime.quarantine import read_record, record_path

EXPIRE = ("--retain-max", "2", "--retain-min", "1")
NOTHING_TO_EXPIRE = ("--retain-max", "100", "--retain-min", "100")
MOVED_BEFORE_KILL = 3


def _paimon(*args: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "paimon_cli", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def _quarantined(root: Path, run_id: str) -> set[Path]:
    return {p for p in (root / ".paimon-cli" / "quarantine" / run_id).rglob("*") if p.is_file()}


def _status(root: Path, run_id: str) -> Any:
    record = read_record(FileIO(), record_path(str(root), run_id))
    return None if record is None else record["status"]


def _killed_restore(
    scenarios: Any, tmp_path: Path, held: list[Held]
) -> tuple[Any, Path, Path, str, dict[str, Any], dict[str, Any]]:
    """A table whose quarantined expiry was being restored when SIGKILL hit, with
    ``MOVED_BEFORE_KILL`` files moved back: (scenario, warehouse, root, run id, the tree
    before the expiry, the restore's journal)."""
    s, wh, root = copy_scenario(scenarios, "many_commits", tmp_path)
    original = digests(root)
    expired = _paimon("expire-snapshots", root, *EXPIRE, "--quarantine", "--json")
    assert expired.returncode == 0, expired.stderr
    run_id = json.loads(expired.stdout)["run_id"]
    before = _quarantined(root, run_id)
    restore = Held(f"move:{MOVED_BEFORE_KILL + 1}", root, "restore", root, "--last")
    held.append(restore)
    restore.wait_for(lambda: len(_quarantined(root, run_id)) == len(before) - MOVED_BEFORE_KILL)
    restore.kill()
    (journal,) = unfinished_journals(FileIO(), str(root))
    assert journal.plan.command == "restore"
    assert journal.plan.details.get("run_id") == run_id
    assert _status(root, run_id) == "quarantined"
    assert_no_dangling_references(root)  # data files back first: at worst orphans
    return s, wh, root, run_id, original, json.loads(Path(journal.path).read_text())


def _pending(journal: dict[str, Any], root: Path, kind: str) -> dict[str, Any]:
    """A move of ``kind`` the killed restore had not made yet."""
    return next(
        a
        for p in journal["phases"]
        for a in p["actions"]
        if a["op"] == "move" and a["kind"] == kind and not Path(a["path"]).exists()
    )


def test_a_sigkilled_restore_is_finished_by_the_next_command(
    scenarios, tmp_path: Path, held: list[Held]
) -> None:
    s, wh, root, run_id, original, journal = _killed_restore(scenarios, tmp_path, held)
    # A move cut between its link and its unlink: the file under both names.
    half = _pending(journal, root, "manifest-list")
    os.link(half["source"], half["path"])
    after = _paimon("expire-snapshots", root, *NOTHING_TO_EXPIRE, "--json")
    assert after.returncode == 0, after.stderr
    report = json.loads(after.stdout)["report"]
    assert len(report["resumed_journals"]) == 1
    restored = [p for p in report["phases"] if p["name"].startswith("restore ")]
    # Files moved back before the kill are gone from the quarantine: no error, absent.
    assert sum(p["already_absent"] for p in restored) == MOVED_BEFORE_KILL
    assert not any(p["failures"] for p in restored)
    # Every file is back; the expiry that found nothing to expire wrote the EARLIEST hint.
    assert (root / "snapshot" / "EARLIEST").read_text() == "1"
    (root / "snapshot" / "EARLIEST").unlink()
    assert digests(root) == original
    assert _status(root, run_id) == "restored"
    assert not (root / ".paimon-cli" / "quarantine" / run_id).exists()
    assert not unfinished_journals(FileIO(), str(root))
    assert_no_dangling_references(root)
    assert_rows_intact(wh, s)


def test_restore_run_again_after_a_kill_finishes_it_and_says_so(
    scenarios, tmp_path: Path, held: list[Held]
) -> None:
    s, wh, root, run_id, original, _ = _killed_restore(scenarios, tmp_path, held)
    again = _paimon("restore", root, "--last", "--json")
    assert again.returncode == 0, again.stderr
    doc = json.loads(again.stdout)
    assert doc["plan"]["notes"] == [f"the interrupted restore of run {run_id} was finished first"]
    # The report is this run's own restore: the journal's moves are not counted again.
    assert doc["report"]["restored"] == 0
    assert digests(root) == original
    assert _status(root, run_id) == "restored"
    assert_rows_intact(wh, s)
    # Nothing is left to restore: a further --last says so.
    last = _paimon("restore", root, "--last")
    assert last.returncode == 1
    assert "has no quarantined run to restore" in last.stderr


@pytest.mark.parametrize("next_command", ["expire-snapshots", "restore"])
def test_a_file_back_with_other_content_is_never_overwritten_on_resume(
    scenarios, tmp_path: Path, held: list[Held], next_command: str
) -> None:
    _, _, root, run_id, _, journal = _killed_restore(scenarios, tmp_path, held)
    taken = _pending(journal, root, "manifest-list")
    Path(taken["path"]).write_bytes(b"another writer's file")
    state = digests(root)
    args = NOTHING_TO_EXPIRE if next_command == "expire-snapshots" else ("--last",)
    after = _paimon(next_command, root, *args)
    # The journal is discarded, saying why; nothing is moved over the other file.
    assert "discarding journal" in after.stderr
    assert f"{taken['path']} exists again with other content" in after.stderr
    assert not unfinished_journals(FileIO(), str(root))
    assert Path(taken["path"]).read_bytes() == b"another writer's file"
    assert Path(taken["source"]).exists()  # the quarantined copy stays
    assert digests(root) == state
    assert _status(root, run_id) == "quarantined"
    if next_command == "restore":
        assert after.returncode == 1  # and the restore itself refuses: a conflict
        assert "refusing to restore run" in after.stderr
    else:
        assert after.returncode == 0, after.stderr
    assert_no_dangling_references(root)
