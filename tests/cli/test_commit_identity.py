"""Issue 22 defects 1 and 7: a commit that reuses an id, or lands while a rollback runs.

Every journal records which commit each snapshot, changelog and tag file it deletes holds
(``SnapshotIdentity``); a resume that finds another commit under one of those names, or a
snapshot newer than the journal knew, is discarded with the reason, never finished. A
rollback a writer committed into fails (exit 1) and names the commit and its base. The
writers are pypaimon, committing from a file-operation hook at the exact moment."""

from __future__ import annotations

import contextlib
import dataclasses
import json
from collections.abc import Callable
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
REAL_FILEIO = fileio_module.FileIO
WRITER_ROW = {"id": 1000, "v": "acknowledged"}


class HookedFileIO(REAL_FILEIO):  # type: ignore[misc, valid-type]
    """Runs ``hook`` once, right after the first write or delete of a path ending in
    ``after``: a writer committing at exactly that moment."""

    def __init__(self, after: str, hook: Callable[[], None], *a: Any, **kw: Any) -> None:
        super().__init__(*a, **kw)
        self.after = after
        self.hook: Callable[[], None] | None = hook

    def _fire(self, path: str) -> None:
        if self.hook is not None and path.endswith(self.after):
            hook, self.hook = self.hook, None
            hook()

    def write_bytes(self, path: str, data: bytes) -> None:
        super().write_bytes(path, data)
        self._fire(path)

    def delete(self, path: str) -> bool:
        done: bool = super().delete(path)
        self._fire(path)
        return done


def _ten_commits(tmp_path: Path) -> tuple[pw.Scenario, Path, Path]:
    wh = tmp_path / "wh"
    s = pw.many_commits(wh, 10)
    return s, wh, s.root


def _journals(root: Path, command: str) -> list[Path]:
    return sorted(root.joinpath(*JOURNAL).glob(f"{command}-*.json"))


def _kill_at(monkeypatch: pytest.MonkeyPatch, n: int, run: Any, *args: Any) -> None:
    """Run a command that dies at its ``n``-th mutating storage operation."""
    monkeypatch.setattr(fileio_module, "FileIO", lambda *_a, **_k: CrashingFileIO(n))
    with contextlib.suppress(Crash):
        run(*args)
    monkeypatch.undo()


def _writer_commits(wh: Path, s: pw.Scenario) -> int:
    return pw.append(pw.open_table(wh, s.identifier), [WRITER_ROW])


def _until(s: pw.Scenario, last: int) -> pw.Scenario:
    """The scenario's expected rows of snapshots up to ``last`` (later ids were reused)."""
    return dataclasses.replace(s, expected={k: v for k, v in s.expected.items() if k <= last})


@pytest.mark.java
def test_finishing_a_rollback_never_deletes_a_commit_that_reused_an_id(
    run: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, java: Any
) -> None:
    """Killed after LATEST=7 and snapshot-10 went; a writer commits a new snapshot-10 (on 9):
    the next command discards the rollback's journal instead of deleting 10, 9, 8."""
    s, wh, root = _ten_commits(tmp_path)
    # 1 journal, 2 LATEST, 3 snapshot-10, 4 snapshot-9: dies before removing snapshot-9
    _kill_at(monkeypatch, 4, run, "rollback", root, "--to-snapshot", "7")
    assert (root / "snapshot" / "LATEST").read_text() == "7"
    assert open_table(str(root)).snapshots.ids() == list(range(1, 10))
    assert len(_journals(root, "rollback")) == 1

    assert _writer_commits(wh, s) == 10
    written = pw.read_rows(wh, s.identifier)
    assert WRITER_ROW in written

    doc = run.json("expire-snapshots", root)
    (discarded,) = doc["report"]["discarded_journals"]
    assert "snapshot 10 was replaced by another commit" in discarded["reason"]
    assert doc["report"]["resumed_journals"] == []
    assert not _journals(root, "rollback")
    assert open_table(str(root)).snapshots.ids() == list(range(1, 11))
    assert pw.read_rows(wh, s.identifier) == written
    assert_rows_intact(wh, _until(s, 9))
    assert_no_dangling_references(root)
    assert_java_ok(java.verify(root))


def test_finishing_a_rollback_refuses_a_snapshot_newer_than_it_knew(
    run: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Killed right after LATEST=7 (nothing removed): a writer commits 11 on 10."""
    s, wh, root = _ten_commits(tmp_path)
    _kill_at(monkeypatch, 3, run, "rollback", root, "--to-snapshot", "7")
    assert open_table(str(root)).snapshots.ids() == list(range(1, 11))
    assert _writer_commits(wh, s) == 11
    doc = run.json("expire-snapshots", root)
    (discarded,) = doc["report"]["discarded_journals"]
    assert discarded["reason"] == (
        "snapshot 11 was committed after the rollback was planned (the latest was 10)"
    )
    assert open_table(str(root)).snapshots.ids() == list(range(1, 12))
    assert WRITER_ROW in pw.read_rows(wh, s.identifier)
    assert_no_dangling_references(root)


def test_an_interrupted_rollback_nobody_raced_is_finished(
    run: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    s, wh, root = _ten_commits(tmp_path)
    _kill_at(monkeypatch, 4, run, "rollback", root, "--to-snapshot", "7")
    doc = run.json("expire-snapshots", root)
    assert len(doc["report"]["resumed_journals"]) == 1
    assert open_table(str(root)).snapshots.ids() == list(range(1, 8))
    assert pw.read_rows(wh, s.identifier) == pw.sort_rows(s.expected[7])


def test_a_journal_without_identities_is_discarded(
    run: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Journals of the previous version told commits apart by id and size: discarded."""
    _s, _wh, root = _ten_commits(tmp_path)
    _kill_at(monkeypatch, 4, run, "rollback", root, "--to-snapshot", "7")
    (path,) = _journals(root, "rollback")
    plan = json.loads(path.read_text())
    for phase in plan["phases"]:
        for action in phase["actions"]:
            action.pop("identity", None)
    path.write_text(json.dumps(plan))
    doc = run.json("expire-snapshots", root)
    (discarded,) = doc["report"]["discarded_journals"]
    assert "older paimon-cli" in discarded["reason"]
    assert open_table(str(root)).snapshots.ids() == list(range(1, 10))


@pytest.mark.java
@pytest.mark.parametrize(
    ("after", "landed", "base"),
    [("/snapshot/LATEST", 11, 10), ("/snapshot/snapshot-10", 10, 9)],
    ids=["after-latest-hint", "after-first-delete"],
)
def test_rollback_a_writer_commits_into_fails_and_names_the_commit(
    run: Any,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    java: Any,
    after: str,
    landed: int,
    base: int,
) -> None:
    """A pypaimon append lands while the rollback removes snapshot files: exit 1, saying
    which commit landed on which base; the writer's commit still reads."""
    s, wh, root = _ten_commits(tmp_path)
    monkeypatch.setattr(
        fileio_module,
        "FileIO",
        lambda *a, **kw: HookedFileIO(after, lambda: _writer_commits(wh, s), *a, **kw),
    )
    result = run("rollback", root, "--to-snapshot", "7")
    monkeypatch.undo()
    assert result.exit_code == 1, result.stdout
    message = " ".join(result.stderr.split())
    assert f"snapshot {landed} by" in message and f"on snapshot {base}" in message
    assert "rollback of" in message and "failed" in message
    table = open_table(str(root))
    # the rollback stopped before a removal that would leave a gap below the commit
    assert table.snapshots.ids() == list(range(1, landed + 1))
    assert WRITER_ROW in pw.read_rows(wh, s.identifier)
    assert_rows_intact(wh, _until(s, 7))
    assert_no_dangling_references(root)
    assert_java_ok(java.verify(root))


def test_rollback_raced_keeps_the_tags_it_had_not_removed_yet(
    run: Any, scenarios: dict[str, pw.Scenario], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The race is seen before the tag files go: the tags on removed snapshots stay."""
    s, wh, root = copy_scenario(scenarios, "tags_consumers_branches", tmp_path)
    tags_before = sorted(open_table(str(root)).tags.names())
    latest = max(s.snapshot_ids)
    monkeypatch.setattr(
        fileio_module,
        "FileIO",
        lambda *a, **kw: HookedFileIO(
            "/snapshot/LATEST",
            lambda: pw.append(pw.open_table(wh, s.identifier), [{"id": 1000, "v": "w"}]),
            *a,
            **kw,
        ),
    )
    result = run("rollback", root, "--to-snapshot", "5", "--force")
    monkeypatch.undo()
    assert result.exit_code == 1
    assert f"snapshot {latest + 1} by" in " ".join(result.stderr.split())
    assert sorted(open_table(str(root)).tags.names()) == tags_before
    assert_no_dangling_references(root)


# -- the same guard on every journal kind -------------------------------------------------------
def test_finishing_a_tag_deletion_never_deletes_a_tag_made_again(
    run: Any, scenarios: dict[str, pw.Scenario], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """delete-tag killed after its journal; someone makes tag t2 again (same snapshot, now
    with a retention): the journal is discarded, the new tag stays and reads."""
    s, wh, root = copy_scenario(scenarios, "tags_consumers_branches", tmp_path)
    _kill_at(monkeypatch, 2, run, "delete-tag", root, "t2")  # 1 journal, 2 the tag file
    assert len(_journals(root, "delete-tag")) == 1
    pw.open_table(wh, s.identifier).delete_tag("t2")
    pw.create_tag(pw.open_table(wh, s.identifier), "t2", 2, "7d")
    recreated = (root / "tag" / "tag-t2").read_text()
    doc = run.json("expire-snapshots", root)
    (discarded,) = doc["report"]["discarded_journals"]
    assert "tag 't2' was replaced by another commit (created again)" in discarded["reason"]
    assert (root / "tag" / "tag-t2").read_text() == recreated
    assert pw.read_rows(wh, s.identifier, tag="t2") == pw.sort_rows(s.expected[2])
    assert_no_dangling_references(root)


def test_finishing_a_changelog_expiry_never_deletes_another_commits_changelog(
    run: Any, java_built: Callable[[str], Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """expire-changelogs killed after its journal; changelog-9 then holds another commit
    (as after a rollback and new commits expiring again): discarded, changelog-9 stays."""
    root = java_built("changelog_decoupled")
    _kill_at(monkeypatch, 2, run, "expire-changelogs", root, "--retain-max", "20")
    (path,) = _journals(root, "expire-changelogs")
    doomed = [
        a["path"]
        for p in json.loads(path.read_text())["phases"]
        for a in p["actions"]
        if a["kind"] == "changelog-json"
    ]
    assert doomed and doomed[0].endswith("/changelog/changelog-9")
    changelog = root / "changelog" / "changelog-9"
    data = json.loads(changelog.read_text())
    data["timeMillis"] += 1
    data["commitUser"] = "another-writer"
    changelog.write_text(json.dumps(data))
    doc = run.json("delete-orphan-files", root)
    (discarded,) = doc["report"]["discarded_journals"]
    assert "changelog 9 was replaced by another commit" in discarded["reason"]
    assert "'another-writer'" in discarded["reason"]
    assert changelog.exists()
    assert open_table(str(root)).changelogs.ids()[0] == 9
    assert_no_dangling_references(root)
