"""`paimon rollback` against Paimon itself: pypaimon's rollback_to on a copy leaves the same
tree (Paimon 1.2+ rules), every remaining snapshot and tag reads as before (pypaimon and
Java), consumers and branches that depend on removed snapshots refuse without --force."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from support import pypaimon_writer as pw
from support.invariants import assert_no_dangling_references, assert_rows_intact, tree_state
from support.java_paimon import assert_same_rows, entry_keys

from core.table.table import open_table


def _tree(root: Path) -> dict[str, Any]:
    """Files outside .paimon-cli/: metadata JSON compared parsed, everything else by bytes."""
    out: dict[str, Any] = {}
    for path in sorted(root.rglob("*")):
        rel = str(path.relative_to(root))
        if path.is_dir() or rel.startswith(".paimon-cli"):
            continue
        data = path.read_bytes()
        try:
            out[rel] = json.loads(data) if path.parent.name in ("snapshot", "tag") else data
        except ValueError:
            out[rel] = data
    return out


def _copies(scenarios, tmp_path: Path, name: str) -> tuple[pw.Scenario, Path, Path, Path]:
    s = scenarios[name]
    ours_wh, theirs_wh = tmp_path / "ours", tmp_path / "theirs"
    ours = ours_wh / s.root.parent.name / s.root.name
    theirs = theirs_wh / s.root.parent.name / s.root.name
    shutil.copytree(s.root, ours, symlinks=True)
    shutil.copytree(s.root, theirs, symlinks=True)
    return s, ours_wh, ours, theirs


@pytest.mark.parametrize(
    ("args", "target", "blocked"),
    [
        (["--to-snapshot", "5"], 5, True),  # consumer fast has read snapshot 6
        (["--to-tag", "t2"], "t2", True),  # ... and branch b1 comes from tag t4
        (["--to-snapshot", "7"], 7, False),
    ],
)
def test_rollback_leaves_what_pypaimon_leaves(
    run, scenarios, tmp_path: Path, args: list[str], target: Any, blocked: bool
) -> None:
    s, wh, ours, theirs = _copies(scenarios, tmp_path, "tags_consumers_branches")
    state = tree_state(ours)
    force = ["--force"] if blocked else []
    if blocked:
        refused = run("rollback", ours, *args)
        assert refused.exit_code == 1 and "consumer 'fast'" in refused.stderr
        assert tree_state(ours) == state
    dry = run.json("rollback", ours, *args, *force, "--dry-run")
    assert tree_state(ours) == state and dry["report"] is None

    doc = run.json("rollback", ours, *args, *force)
    assert doc["report"]["status"] == "ok" and doc["run_id"]
    pw.open_table(tmp_path / "theirs", s.identifier).rollback_to(target)
    assert _tree(ours) == _tree(theirs)
    table = open_table(str(ours))
    tid = doc["plan"]["details"]["target_snapshot"]
    assert table.snapshots.latest_id() == tid == max(table.snapshots.ids())
    assert all(t.snapshot.id <= tid for t in table.tags.tags())
    assert pw.read_rows(wh, s.identifier) == pw.sort_rows(s.expected[tid])
    assert_rows_intact(wh, s)
    assert_no_dangling_references(ours)


def test_branch_created_from_a_removed_tag_refuses(run, scenarios, tmp_path: Path) -> None:
    _, _, ours, _ = _copies(scenarios, tmp_path, "tags_consumers_branches")
    (ours / "consumer" / "consumer-fast").unlink()
    (ours / "consumer" / "consumer-slow").unlink()
    refused = run("rollback", ours, "--to-snapshot", "3")
    assert refused.exit_code == 1 and "branch b1" in refused.stderr and "'t4'" in refused.stderr
    assert run("rollback", ours, "--to-snapshot", "4").exit_code == 0  # t4 stays


def test_rollback_to_a_tag_whose_snapshot_expired(run, scenarios, tmp_path: Path) -> None:
    s, wh, ours, theirs = _copies(scenarios, tmp_path, "many_commits")
    for root in (ours, theirs):
        assert run("create-tag", root, "old", "--snapshot", "3").exit_code == 0
        assert (
            run("expire-snapshots", root, "--retain-max", "5", "--retain-min", "1").exit_code == 0
        )
    assert not (ours / "snapshot" / "snapshot-3").exists()
    doc = run.json("rollback", ours, "--to-snapshot", "3")  # a tag holds it: as Paimon
    d = doc["plan"]["details"]
    assert d["target_tag"] == "old" and d["snapshot_restored_from_tag"]
    pw.open_table(tmp_path / "theirs", s.identifier).rollback_to("old")
    ours_tree, theirs_tree = _tree(ours), _tree(theirs)
    # Java also moves EARLIEST to the restored snapshot (RollbackHelper); pypaimon does not.
    assert ours_tree.pop("snapshot/EARLIEST") == 3
    theirs_tree.pop("snapshot/EARLIEST")
    assert ours_tree == theirs_tree
    table = open_table(str(ours))
    assert table.snapshots.ids() == [3]
    assert pw.read_rows(wh, s.identifier) == pw.sort_rows(s.expected[3])
    assert pw.read_rows(wh, s.identifier, tag="old") == pw.sort_rows(s.expected[3])
    assert_no_dangling_references(ours)


@pytest.mark.java
def test_rollback_to_an_expired_tag_names_no_lost_changelog(
    run, scenarios, tmp_path: Path, java: Any
) -> None:
    """A tag keeps its data, not its changelog: expiring the snapshot deleted the changelog
    manifest list. Paimon writes the tag back as it is (a snapshot naming a deleted file);
    ours names no changelog, so the table is whole (found by the property test, issue 22)."""
    s, wh, ours, theirs = _copies(scenarios, tmp_path, "pk_table")
    for root in (ours, theirs):
        (root / "consumer" / "consumer-cdc").unlink()  # it would keep snapshot 3
        assert (
            run("expire-snapshots", root, "--retain-max", "2", "--retain-min", "1").exit_code == 0
        )
        assert not (root / "snapshot" / "snapshot-3").exists()
    tag = json.loads((ours / "tag" / "tag-mid").read_text())
    assert not (ours / "manifest" / tag["changelogManifestList"]).exists()

    doc = run.json("rollback", ours, "--to-tag", "mid")
    assert any("without its changelog" in n for n in doc["plan"]["details"]["notes"])
    pw.open_table(tmp_path / "theirs", s.identifier).rollback_to("mid")
    ours_snap = json.loads((ours / "snapshot" / "snapshot-3").read_text())
    theirs_snap = json.loads((theirs / "snapshot" / "snapshot-3").read_text())
    changelog = ("changelogManifestList", "changelogManifestListSize", "changelogRecordCount")
    assert not any(k in ours_snap for k in changelog)
    assert {k: v for k, v in theirs_snap.items() if k not in changelog} == ours_snap
    assert run("inspect", ours, "--check").exit_code == 0
    assert run("inspect", theirs, "--check").exit_code == 3  # the deleted changelog list
    assert_no_dangling_references(ours)
    assert pw.read_rows(wh, s.identifier) == pw.sort_rows(s.expected[3])
    doc = java.verify(ours)
    assert doc["ok"], doc


def test_bad_rollback_input(run, scenarios, tmp_path: Path) -> None:
    _, _, ours, _ = _copies(scenarios, tmp_path, "many_commits")
    state = tree_state(ours)
    assert run("rollback", ours).exit_code == 2
    assert run("rollback", ours, "--to-snapshot", "3", "--to-tag", "x").exit_code == 2
    assert run("rollback", ours, "--to-snapshot", "0").exit_code == 2
    gone = run("rollback", ours, "--to-snapshot", "999")
    assert gone.exit_code == 1 and "snapshot 999 does not exist" in gone.stderr
    notag = run("rollback", ours, "--to-tag", "nope", "--json")
    assert notag.exit_code == 1 and json.loads(notag.stderr)["error"]["kind"] == "rollback_error"
    assert tree_state(ours) == state


@pytest.mark.java
def test_rollback_of_a_java_table_with_long_lived_changelogs(
    run, java, java_built: Callable[[str], Path]
) -> None:
    root = java_built("changelog_decoupled")
    before = java.verify(root)
    table = open_table(str(root))
    ids = table.snapshots.ids()
    target = ids[len(ids) // 2]
    changelogs = table.changelogs.ids()
    doc = run.json("rollback", root, "--to-snapshot", str(target))
    d = doc["plan"]["details"]
    assert d["snapshots"] == [i for i in ids if i > target]
    assert d["changelogs"] == [i for i in changelogs if i > target]
    after_table = open_table(str(root))
    assert after_table.snapshots.ids() == [i for i in ids if i <= target]
    remaining = [i for i in changelogs if i <= target]
    assert after_table.changelogs.ids() == remaining
    assert (root / "changelog" / "LATEST").read_text() == str(remaining[-1] if remaining else -1)
    assert (root / "snapshot" / "LATEST").read_text() == str(target)
    after = java.verify(root)
    assert entry_keys(after) == {
        k for k in entry_keys(before) if _id(k) is None or _id(k) <= target
    }
    assert_same_rows(before, after)
    assert after["latest_snapshot_id"] == target


def _id(key: str) -> int | None:
    return int(key.split("-", 1)[1]) if key.startswith("snapshot-") else None
