"""Issue 12 defects 1 and 5: a journal resumed after a rollback, and a too-high EARLIEST hint.

A resumed journal is re-validated at least as strictly as a fresh plan; a journal the table
has moved away from is discarded (with the reason said), never finished."""

from __future__ import annotations

import contextlib
import json
from pathlib import Path
from typing import Any

import pytest
from support import pypaimon_writer as pw
from support.invariants import (
    Crash,
    CrashingFileIO,
    assert_no_dangling_references,
    assert_rows_intact,
    copy_scenario,
)
from support.java_paimon import assert_java_ok

from core.io import fileio as fileio_module
from core.table.table import open_table

JOURNAL = (".paimon-cli", "journal")


def _killed_expiry(run: Any, root: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An expire-snapshots run killed right after writing its journal (before any delete)."""
    monkeypatch.setattr(fileio_module, "FileIO", lambda *_a, **_k: CrashingFileIO(2))
    with contextlib.suppress(Crash):
        run("expire-snapshots", root, "--retain-max", "3", "--retain-min", "1")
    monkeypatch.undo()
    journals = list(root.joinpath(*JOURNAL).glob("expire-snapshots-*.json"))
    assert len(journals) == 1
    assert (root / "snapshot" / "snapshot-1").exists()  # killed before the first deletion
    return journals[0]


def _rows_of_every_snapshot(wh: Path, s: pw.Scenario, root: Path) -> dict[int, Any]:
    return {
        sid: pw.read_rows(wh, s.identifier, snapshot_id=sid)
        for sid in open_table(str(root)).snapshots.ids()
    }


@pytest.mark.java
@pytest.mark.parametrize(
    "later",
    [
        ["expire-snapshots"],
        ["delete-orphan-files"],
        ["expire-snapshots", "--retain-max", "3", "--retain-min", "1"],
    ],
    ids=["expire", "orphans", "expire-aggressive"],
)
def test_journal_after_rollback_is_discarded(
    run: Any,
    scenarios: dict[str, pw.Scenario],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    java: Any,
    later: list[str],
) -> None:
    s, wh, root = copy_scenario(scenarios, "many_commits", tmp_path)
    latest_before = max(s.snapshot_ids)
    _killed_expiry(run, root, monkeypatch)
    pw.open_table(wh, s.identifier).rollback_to(5)
    assert open_table(str(root)).snapshots.ids() == [1, 2, 3, 4, 5]
    before = _rows_of_every_snapshot(wh, s, root)

    doc = run.json(later[0], root, *later[1:])

    discarded = doc["report"]["discarded_journals"]
    assert len(discarded) == 1
    assert discarded[0]["reason"] == (
        f"the table was rolled back from snapshot {latest_before} to 5"
    )
    assert doc["report"]["resumed_journals"] == []
    assert not root.joinpath(*JOURNAL).exists()
    table = open_table(str(root))
    if later == ["expire-snapshots", "--retain-max", "3", "--retain-min", "1"]:
        assert table.snapshots.ids() == [3, 4, 5]  # a fresh plan on the rolled-back table
    else:
        assert table.snapshots.ids() == [1, 2, 3, 4, 5]
    after = _rows_of_every_snapshot(wh, s, root)
    assert after == {sid: before[sid] for sid in after}
    assert_rows_intact(wh, s)
    assert_no_dangling_references(root)
    assert_java_ok(java.verify(root))


def test_discarded_journal_is_said_in_words(
    run: Any, scenarios: dict[str, pw.Scenario], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    s, wh, root = copy_scenario(scenarios, "many_commits", tmp_path)
    _killed_expiry(run, root, monkeypatch)
    pw.open_table(wh, s.identifier).rollback_to(5)
    result = run("expire-snapshots", root)
    assert result.exit_code == 0, result.stderr
    text = " ".join(result.stdout.split())
    assert "discarded, nothing of it is finished: the table was rolled back from snapshot" in text
    assert "planning afresh" in text
    assert "newly protected" not in text


def test_journal_after_rollback_and_rewrite_is_discarded(
    run: Any, scenarios: dict[str, pw.Scenario], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Rolled back to 5, then written again past the old latest: the same ids are other
    snapshots now, and the journal's deletions would hit them."""
    s, wh, root = copy_scenario(scenarios, "many_commits", tmp_path)
    _killed_expiry(run, root, monkeypatch)
    t = pw.open_table(wh, s.identifier)
    t.rollback_to(5)
    for i in range(max(s.snapshot_ids) - 5 + 1):
        pw.append(t, [{"id": 100 + i, "v": f"n{i}"}])
    before = _rows_of_every_snapshot(wh, s, root)
    doc = run.json("delete-orphan-files", root)
    (discarded,) = doc["report"]["discarded_journals"]
    assert "replaced by another commit" in discarded["reason"]
    assert _rows_of_every_snapshot(wh, s, root) == before
    assert_no_dangling_references(root)


def test_killed_journal_without_rollback_is_still_finished(
    run: Any, scenarios: dict[str, pw.Scenario], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    s, wh, root = copy_scenario(scenarios, "many_commits", tmp_path)
    _killed_expiry(run, root, monkeypatch)
    doc = run.json("delete-orphan-files", root)
    assert len(doc["report"]["resumed_journals"]) == 1
    assert doc["report"]["discarded_journals"] == []
    assert open_table(str(root)).snapshots.ids() == [28, 29, 30]
    assert_rows_intact(wh, s)
    assert_no_dangling_references(root)


def test_journal_without_guard_is_discarded(
    run: Any, scenarios: dict[str, pw.Scenario], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Journals of older versions lack the facts a resume checks: discarded, said why."""
    s, wh, root = copy_scenario(scenarios, "many_commits", tmp_path)
    path = _killed_expiry(run, root, monkeypatch)
    plan = json.loads(path.read_text())
    del plan["details"]["journal_guard"]
    path.write_text(json.dumps(plan))
    doc = run.json("expire-snapshots", root)
    (discarded,) = doc["report"]["discarded_journals"]
    assert "older paimon-cli" in discarded["reason"]
    assert open_table(str(root)).snapshots.ids()[0] == 1
    assert_rows_intact(wh, s)


def test_journal_with_new_tag_in_its_range_is_discarded(
    run: Any, scenarios: dict[str, pw.Scenario], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    s, wh, root = copy_scenario(scenarios, "many_commits", tmp_path)
    _killed_expiry(run, root, monkeypatch)
    # Another writer tags snapshot 4 (our create-tag would finish the journal first).
    pw.create_tag(pw.open_table(wh, s.identifier), "late", 4)
    doc = run.json("delete-orphan-files", root)
    (discarded,) = doc["report"]["discarded_journals"]
    assert "tag main/late on snapshot 4 appeared" in discarded["reason"]
    assert pw.read_rows(wh, s.identifier, tag="late") == pw.sort_rows(s.expected[4])
    assert_no_dangling_references(root)


@pytest.mark.java
def test_too_high_earliest_hint_is_not_trusted(
    run: Any, scenarios: dict[str, pw.Scenario], tmp_path: Path, java: Any
) -> None:
    """EARLIEST = 10 while snapshot-1..9 exist: expiry starts at 1, and says so."""
    s, wh, root = copy_scenario(scenarios, "many_commits", tmp_path)
    (root / "snapshot" / "EARLIEST").write_text("10")
    doc = run.json("expire-snapshots", root, "--retain-max", "25", "--retain-min", "1")
    plan = doc["plan"]["details"]
    assert plan["earliest_snapshot"] == 1
    assert plan["snapshots"] == [1, 2, 3, 4, 5]
    assert any("EARLIEST hint says 10" in n for n in plan["notes"])
    assert open_table(str(root)).snapshots.ids() == list(range(6, 31))
    assert_rows_intact(wh, s)
    assert_no_dangling_references(root)
    assert_java_ok(java.verify(root))
