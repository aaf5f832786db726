"""Issue 12 defect 6: a tag created while expire-snapshots deletes never ends up pointing at
deleted files: the run's re-check before each phase keeps the new tag's files, and
create-tag checks after writing that its snapshot and manifest lists still exist."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from support import pypaimon_writer as pw
from support.invariants import assert_no_dangling_references, assert_rows_intact, copy_scenario
from support.java_paimon import assert_java_ok

from core.io import fileio as fileio_module
from core.ops.tags.tags import TagError, apply_create_tag, plan_create_tag
from core.table.table import open_table

REAL_FILEIO = fileio_module.FileIO


class HookedFileIO(REAL_FILEIO):  # type: ignore[misc, valid-type]
    """Runs ``hook`` once, right after the first deletion of a path ending in ``after``."""

    def __init__(self, after: str, hook: Callable[[], None], *a: Any, **kw: Any) -> None:
        super().__init__(*a, **kw)
        self.after = after
        self.hook: Callable[[], None] | None = hook

    def delete(self, path: str) -> bool:
        done: bool = super().delete(path)
        if self.hook is not None and path.endswith(self.after):
            hook, self.hook = self.hook, None
            hook()
        return done


@pytest.mark.java
@pytest.mark.parametrize("branch", [False, True], ids=["tag", "tag-and-branch"])
def test_tag_created_mid_run_keeps_its_files(
    run: Any,
    scenarios: dict[str, pw.Scenario],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    java: Any,
    branch: bool,
) -> None:
    """A writer tags snapshot 14 (which this run expires) while the run is deleting
    snapshot files: the tag's manifests and data files stay, its rows read back."""
    s, wh, root = copy_scenario(scenarios, "many_commits", tmp_path)

    def tag_it() -> None:
        pw.create_tag(pw.open_table(wh, s.identifier), "mid", 14)
        if branch:
            pw.create_branch(pw.open_table(wh, s.identifier), "b1", from_tag="mid")

    monkeypatch.setattr(
        fileio_module,
        "FileIO",
        lambda *a, **kw: HookedFileIO("/snapshot/snapshot-1", tag_it, *a, **kw),
    )
    doc = run.json("expire-snapshots", root, "--retain-max", "5", "--retain-min", "1")
    monkeypatch.undo()
    assert open_table(str(root)).snapshots.ids() == list(range(26, 31))
    assert any("tag main/mid" in n for n in doc["report"]["notes"])
    assert pw.read_rows(wh, s.identifier, tag="mid") == pw.sort_rows(s.expected[14])
    assert_rows_intact(wh, s)
    assert_no_dangling_references(root)
    assert_java_ok(java.verify(root))


def _plan_tag(root: Path, sid: int) -> Any:
    now = 1_700_000_000_000
    return plan_create_tag(
        open_table(str(root)),
        "late",
        snapshot_id=sid,
        time_retained_ms=None,
        replace_existing=False,
        now_local=dt.datetime(2023, 11, 14),
        now_ms=now,
    )


class ExpiresBeforeWrite(REAL_FILEIO):  # type: ignore[misc, valid-type]
    """An expiry deletes ``victim`` between create-tag's checks and its write."""

    def __init__(self, victim: Path) -> None:
        super().__init__()
        self.victim = victim

    def write_if_absent(self, path: str, data: bytes) -> bool:
        self.victim.unlink(missing_ok=True)
        done: bool = super().write_if_absent(path, data)
        return done


@pytest.mark.parametrize("gone", ["snapshot", "manifest-list"])
def test_create_tag_removes_its_tag_when_the_snapshot_went_meanwhile(
    scenarios: dict[str, pw.Scenario], tmp_path: Path, gone: str
) -> None:
    """create-tag read snapshot 3, then an expiry deleted it (pointers first) before the
    tag was written: the tag is removed again and the command fails."""
    _s, _wh, root = copy_scenario(scenarios, "many_commits", tmp_path)
    plan = _plan_tag(root, 3)
    snap = open_table(str(root)).snapshots.snapshot(3)
    victim = (
        root / "snapshot" / "snapshot-3"
        if gone == "snapshot"
        else root / "manifest" / snap.delta_manifest_list
    )
    table = open_table(str(root), fileio=ExpiresBeforeWrite(victim))
    with pytest.raises(TagError, match="the tag was removed again"):
        apply_create_tag(table, plan)
    assert not (root / "tag" / "tag-late").exists()


def test_create_tag_on_a_live_snapshot_still_works(
    run: Any, scenarios: dict[str, pw.Scenario], tmp_path: Path
) -> None:
    s, wh, root = copy_scenario(scenarios, "many_commits", tmp_path)
    assert run("create-tag", root, "ok", "--snapshot", "7").exit_code == 0
    assert pw.read_rows(wh, s.identifier, tag="ok") == pw.sort_rows(s.expected[7])
