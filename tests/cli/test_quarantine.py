"""--quarantine, restore and purge-quarantine as users run them, on real tables.

For every deleting command: with --quarantine the table ends as after a plain run (outside
.paimon-cli/), restore brings back a tree identical to before (paths, sizes, contents), and
every snapshot and tag reads as before; restores that would overwrite or leave a gap are
refused, naming the snapshot or tag."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from support import pypaimon_writer as pw
from support.fixtures import java_built_now_ms
from support.invariants import (
    age_tree,
    assert_no_dangling_references,
    assert_rows_intact,
    plant,
    tree_state,
)
from support.invariants import tree_digests as digests

from core.runtime.clock import NOW_ENV
from core.runtime.quarantine import Quarantine
from core.table.table import open_table

DAY_MS = 86_400_000

# name: (scenario, arguments after the table)
COMMANDS: dict[str, tuple[str, list[str]]] = {
    "expire-snapshots": (
        "many_commits",
        ["expire-snapshots", "--retain-max", "3", "--retain-min", "1"],
    ),
    "expire-snapshots-tags": (
        "tags_consumers_branches",
        ["expire-snapshots", "--retain-max", "2", "--retain-min", "1", "--older-than", "0m"],
    ),
    "delete-orphan-files": ("append_partitioned", ["delete-orphan-files"]),
    "delete-tag": ("tags_consumers_branches", ["delete-tag", "t2"]),
    "expire-tags": ("tags_consumers_branches", ["expire-tags"]),
    "rollback": ("tags_consumers_branches", ["rollback", "--to-snapshot", "5", "--force"]),
}


def _prepared(scenarios, tmp_path: Path, name: str, scenario: str) -> tuple[Path, Path]:
    s = scenarios[scenario]
    wh = tmp_path / name / "wh"
    root = wh / s.root.parent.name / s.root.name
    shutil.copytree(s.root, root, symlinks=True)
    age_tree(root)
    for i in range(2):
        plant(root / "manifest" / f"manifest-orphan-{i}", content=b"m" * (i + 1))
    plant(root / "bucket-0" / "data-orphan.parquet", content=b"orphan data")
    return wh, root


@pytest.mark.parametrize("command", list(COMMANDS))
def test_quarantine_equals_plain_run_and_restore_gives_the_tree_back(
    run, scenarios, tmp_path: Path, command: str
) -> None:
    scenario, args = COMMANDS[command]
    s = scenarios[scenario]
    _, plain_root = _prepared(scenarios, tmp_path, "plain", scenario)
    wh, root = _prepared(scenarios, tmp_path, "quarantined", scenario)
    before = digests(root)

    assert run(args[0], plain_root, *args[1:]).exit_code == 0
    doc = run.json(args[0], root, *args[1:], "--quarantine")
    assert doc["report"]["status"] == "ok"
    assert digests(root) == digests(plain_root) != before
    assert_no_dangling_references(root)
    quarantined = root / ".paimon-cli" / "quarantine" / doc["run_id"]
    assert quarantined.is_dir() and any(quarantined.rglob("*"))
    record = json.loads((root / ".paimon-cli" / "quarantine" / f"{doc['run_id']}.json").read_text())
    assert record["status"] == "quarantined" and record["command"] == args[0]

    restored = run.json("restore", root, doc["run_id"])
    assert restored["report"]["restored"] > 0 and restored["plan"]["conflicts"] == []
    assert digests(root) == before
    assert not quarantined.exists()
    assert_no_dangling_references(root)
    assert_rows_intact(wh, s)
    runs = run.json("inspect", root, "runs")["runs"]
    assert [r["command"] for r in runs] == [args[0], "restore"]
    assert runs[0]["quarantine"] is True


def test_environment_variable_turns_quarantine_on(run, scenarios, tmp_path: Path) -> None:
    _, root = _prepared(scenarios, tmp_path, "env", "many_commits")
    before = digests(root)
    result = run(
        "expire-snapshots",
        root,
        "--retain-max",
        "3",
        "--retain-min",
        "1",
        "--json",
        env={"PAIMON_CLI_QUARANTINE": "1"},
    )
    assert result.exit_code == 0, result.stderr
    run_id = json.loads(result.stdout)["run_id"]
    assert (root / ".paimon-cli" / "quarantine" / run_id / "snapshot").is_dir()
    assert run("restore", root, "--last").exit_code == 0
    assert digests(root) == before


def test_dry_run_restore_changes_nothing_and_lists_files(run, scenarios, tmp_path: Path) -> None:
    _, root = _prepared(scenarios, tmp_path, "dry", "many_commits")
    run.json("expire-snapshots", root, "--retain-max", "3", "--retain-min", "1", "--quarantine")
    state = tree_state(root)
    doc = run.json("restore", root, "--last", "--dry-run")
    assert doc["dry_run"] and doc["report"] is None
    assert doc["plan"]["snapshots"] and {f["state"] for f in doc["plan"]["files"]} == {"move"}
    assert tree_state(root) == state


def test_restore_refuses_to_overwrite_a_tag_created_since(run, scenarios, tmp_path: Path) -> None:
    _, root = _prepared(scenarios, tmp_path, "tag", "tags_consumers_branches")
    run.json("delete-tag", root, "t2", "--quarantine")
    assert run("create-tag", root, "t2", "--snapshot", "5").exit_code == 0
    state = tree_state(root)
    refused = run("restore", root, "--last")
    assert refused.exit_code == 1
    assert "tag 't2'" in refused.stderr and "exists again" in refused.stderr
    assert tree_state(root) == state
    dry = run("restore", root, "--last", "--dry-run", "--json")
    assert dry.exit_code == 1 and json.loads(dry.stdout)["plan"]["conflicts"]


def test_restore_refuses_a_gap_in_the_snapshots(run, scenarios, tmp_path: Path) -> None:
    _, root = _prepared(scenarios, tmp_path, "gap", "many_commits")
    first = run.json(
        "expire-snapshots", root, "--retain-max", "20", "--retain-min", "1", "--quarantine"
    )
    run.json("expire-snapshots", root, "--retain-max", "10", "--retain-min", "1")  # for good
    earliest = open_table(str(root)).snapshots.earliest_id()
    state = tree_state(root)
    refused = run("restore", root, first["run_id"])
    assert refused.exit_code == 1
    assert f"snapshot {max(first['plan']['details']['snapshots']) + 1} is gone" in refused.stderr
    assert tree_state(root) == state
    assert open_table(str(root)).snapshots.earliest_id() == earliest


def test_restore_in_the_right_order_across_two_runs(run, scenarios, tmp_path: Path) -> None:
    s = scenarios["many_commits"]
    wh, root = _prepared(scenarios, tmp_path, "two", "many_commits")
    before = digests(root)
    first = run.json(
        "expire-snapshots", root, "--retain-max", "20", "--retain-min", "1", "--quarantine"
    )
    run.json("expire-snapshots", root, "--retain-max", "10", "--retain-min", "1", "--quarantine")
    assert run("restore", root, first["run_id"]).exit_code == 1  # the later run first
    assert run("restore", root, "--last").exit_code == 0
    assert run("restore", root, "--last").exit_code == 0
    assert digests(root) == before
    assert_rows_intact(wh, s)
    assert run("restore", root, "--last").exit_code == 1  # nothing left to restore


def test_bad_restore_input(run, scenarios, tmp_path: Path) -> None:
    _, root = _prepared(scenarios, tmp_path, "bad", "many_commits")
    both = run("restore", root, "abc", "--last")
    assert both.exit_code == 2
    neither = run("restore", root)
    assert neither.exit_code == 2
    unknown = run("restore", root, "nosuchrun")
    assert unknown.exit_code == 1 and "nosuchrun" in unknown.stderr
    assert "Traceback" not in unknown.stderr


def test_purge_quarantine(run, scenarios, tmp_path: Path) -> None:
    _, root = _prepared(scenarios, tmp_path, "purge", "many_commits")
    doc = run.json(
        "expire-snapshots", root, "--retain-max", "3", "--retain-min", "1", "--quarantine"
    )
    after_run = digests(root)
    young = run.json("purge-quarantine", root, "--older-than", "7d")
    assert young["runs"] == []
    state = tree_state(root)
    dry = run.json("purge-quarantine", root, "--dry-run")
    assert [r["run_id"] for r in dry["runs"]] == [doc["run_id"]] and dry["totals"]["files"] > 0
    assert tree_state(root) == state
    purged = run.json("purge-quarantine", root)
    assert purged["report"]["deleted"] == dry["totals"]["files"]
    assert not (root / ".paimon-cli" / "quarantine" / doc["run_id"]).exists()
    assert digests(root) == after_run
    assert run("restore", root, doc["run_id"]).exit_code == 1


def test_external_path_files_are_quarantined_inside_their_own_root(run, tmp_path: Path) -> None:
    wh, ext = tmp_path / "wh", tmp_path / "ext"
    s = pw.external_paths(wh, ext)
    before = digests(s.root, ext)
    assert run("expire-snapshots", s.root, "--retain-max", "1", "--retain-min", "1").exit_code == 0
    middle = digests(s.root, ext)
    doc = run.json("delete-tag", s.root, "before-overwrite", "--quarantine")
    moved = list(ext.glob(f"p*/.paimon-cli/quarantine/{doc['run_id']}/dt=a/bucket-0/*"))
    assert moved, "external data files go to a quarantine inside their external root"
    assert digests(s.root, ext) != middle
    # Orphan cleaning never sees quarantined files (in the table or the external roots).
    orphans = run.json("delete-orphan-files", s.root, "--older-than", "1s", "--allow-recent")
    assert not any(".paimon-cli" in o["path"] for o in orphans["plan"]["details"]["orphans"])
    assert all(p.exists() for p in moved)
    assert run("restore", s.root, "--last").exit_code == 0
    assert digests(s.root, ext) == middle
    assert before  # the expiry itself was a plain run
    assert pw.read_rows(wh, s.identifier, tag="before-overwrite") == pw.sort_rows(s.expected[4])


def test_quarantine_targets() -> None:
    q = Quarantine("r1", ("/wh/t", "s3://b/ext", "/wh/t-ext"))
    assert q.target("/wh/t/bucket-0/f") == "/wh/t/.paimon-cli/quarantine/r1/bucket-0/f"
    assert q.target("/wh/t-ext/dt=a/f") == "/wh/t-ext/.paimon-cli/quarantine/r1/dt=a/f"
    assert q.target("s3://b/ext/x/f") == "s3://b/ext/.paimon-cli/quarantine/r1/x/f"
    with pytest.raises(Exception, match="outside"):
        q.target("/elsewhere/f")


@pytest.mark.parametrize("age_days", [0, 8, 400])
def test_restore_is_exact_whatever_the_changelog_expiry_took(
    run, java_built: Callable[[str], Path], monkeypatch: pytest.MonkeyPatch, age_days: int
) -> None:
    """A decoupled expiry publishes changelog-N for the snapshots it expires; once the
    changelogs are past ``changelog.time-retained`` (7 d) its changelog expiry removes some
    of those again in the same run. Restore gives back the tree as it was before the run
    either way: files the run created and removed itself stay absent."""
    root = java_built("changelog_decoupled")
    monkeypatch.setenv(NOW_ENV, str(java_built_now_ms("changelog_decoupled") + age_days * DAY_MS))
    before = digests(root)
    doc = run.json(
        "expire-snapshots", root, "--retain-max", "2", "--retain-min", "1",
        "--older-than", "0m", "--quarantine",
    )  # fmt: skip
    assert doc["plan"]["details"]["snapshots"]
    details = doc["plan"]["details"]
    took_its_own = set(details["changelog_expiry"]["changelogs"]) & set(details["snapshots"])
    assert bool(took_its_own) == (age_days > 7)
    assert run("restore", root, "--last").exit_code == 0
    assert digests(root) == before
    assert_no_dangling_references(root)


@pytest.mark.java
def test_java_reads_every_restored_snapshot_and_tag(
    run, java, java_built: Callable[[str], Path]
) -> None:
    root = java_built("changelog_decoupled")
    before_java = java.verify(root)
    before = digests(root)
    doc = run.json(
        "expire-snapshots",
        root,
        "--retain-max",
        "2",
        "--retain-min",
        "1",
        "--older-than",
        "0m",
        "--quarantine",
    )
    assert doc["plan"]["details"]["snapshots"]
    assert run("restore", root, "--last").exit_code == 0
    assert digests(root) == before
    from support.java_paimon import assert_same_rows, entry_keys

    after = java.verify(root)
    assert entry_keys(after) == entry_keys(before_java)
    assert_same_rows(before_java, after)


def test_maintain_quarantines_every_step_and_restore_undoes_it(run, tmp_path: Path) -> None:
    """maintain's deleting steps go through the same executor: one run record and one
    quarantine per table; restoring it gives the table back."""
    from support.maintain_tables import build_warehouse

    plain_wh = tmp_path / "plain" / "wh"
    build_warehouse(plain_wh)
    wh = tmp_path / "quarantined" / "wh"
    shutil.copytree(plain_wh, wh, symlinks=True)
    root = pw.table_root(wh, "db.by_count")
    plain_root = pw.table_root(plain_wh, "db.by_count")
    before = digests(root)
    assert run("maintain", plain_root).exit_code == 0
    doc = run.json("maintain", root, "--quarantine")
    (table_doc,) = doc["tables"]
    assert table_doc["status"] == "ok" and table_doc["run_id"]
    assert digests(root) == digests(plain_root) != before
    runs = run.json("inspect", root, "runs")["runs"]
    assert [(r["command"], r["run_id"], r["quarantine"]) for r in runs] == [
        ("maintain", table_doc["run_id"], True)
    ]
    assert runs[0]["totals"]["files"] > 0
    assert run("restore", root, table_doc["run_id"]).exit_code == 0
    assert digests(root) == before
    assert_no_dangling_references(root)
