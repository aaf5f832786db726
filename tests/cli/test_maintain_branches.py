"""maintain on every branch (each with its own options and tags, as Paimon maintains a branch
when it is written), its integrity check step, and its opt-in compaction (data files within
a byte budget, manifests past manifest.merge-min-count). pypaimon tables, read back by
pypaimon and Apache Paimon (Java)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from support import pypaimon_writer as pw
from support.fixtures import JAVA_FIXTURES, Run
from support.invariants import assert_no_dangling_references, files_under

from core.table.table import open_table

SCHEMA = pa.schema([("id", pa.int64()), ("dt", pa.string())])


def _set_branch_options(root: Path, branch: str, options: dict[str, str]) -> None:
    """ALTER TABLE on the branch: its next schema, with ``options`` set (Paimon reads a
    branch's options from its own latest schema)."""
    schemas = root / "branch" / f"branch-{branch}" / "schema"
    latest = max(schemas.glob("schema-*"), key=lambda p: int(p.name.split("-")[1]))
    doc = json.loads(latest.read_text())
    doc["id"] += 1
    doc["options"] = {**doc["options"], **options}
    (schemas / f"schema-{doc['id']}").write_text(json.dumps(doc))


def _branched(wh: Path) -> dict[str, Any]:
    """Main: 4 snapshots, keeps 3; tag t2. Branch b1 from t2 with 4 commits of its own
    (branch snapshots 2..6), whose own schema keeps 2, and a branch tag past its retention."""
    main = pw.create_table(
        wh,
        "db.branched",
        SCHEMA,
        partition_keys=["dt"],
        options={"snapshot.num-retained.max": "3", "snapshot.num-retained.min": "1"},
    )
    rows: dict[str, Any] = {"main": {}, "b1": {}}
    for i in range(4):
        rows["main"][pw.append(main, [{"id": i, "dt": "a"}])] = None
    pw.create_tag(main, "t2", 2)
    branch = pw.create_branch(main, "b1", "t2")
    for i in range(4):
        rows["b1"][pw.append(branch, [{"id": 100 + i, "dt": "b"}])] = None
    pw.create_tag(branch, "old", 3, time_retained="1ms")
    pw.create_tag(branch, "kept", 4)
    root = pw.table_root(wh, "db.branched")
    _set_branch_options(root, "b1", {"snapshot.num-retained.max": "2"})
    return rows


@pytest.fixture(scope="module")
def source(tmp_path_factory: pytest.TempPathFactory) -> Path:
    wh = tmp_path_factory.mktemp("branched") / "wh"
    _branched(wh)
    return wh


def _copy(src: Path, dest: Path) -> Path:
    shutil.copytree(src, dest, symlinks=True)
    return pw.table_root(dest, "db.branched")


def _tree(root: Path) -> set[str]:
    """Relative paths of the table's files (ours under .paimon-cli left out)."""
    return {str(Path(p).relative_to(root)) for p in files_under(root)}


def test_every_branch_is_maintained_with_its_own_options_and_tags(
    run: Run, source: Path, tmp_path: Path
) -> None:
    root = _copy(source, tmp_path / "maintained")
    by_hand = _copy(source, tmp_path / "by-hand")
    doc = run.json("maintain", root)
    (table_doc,) = doc["tables"]
    assert table_doc["status"] == "ok", table_doc
    steps = {(s["branch"], s["step"]): s for s in table_doc["steps"]}
    assert steps[("main", "expire-snapshots")]["status"] == "ok"
    assert steps[("b1", "expire-snapshots")]["status"] == "ok"
    assert steps[("b1", "expire-tags")]["status"] == "ok"
    assert steps[("main", "check")]["status"] == "ok"
    # Main keeps 3 of its snapshots, the branch 2 of its own (its own schema's option).
    table = open_table(str(root))
    assert table.snapshots.ids() == [2, 3, 4]
    b1 = table.for_branch("b1")
    assert b1.snapshots.ids() == [5, 6]
    # Its expired tag is gone; kept and t2 (the tag it was created from, copied) stay.
    assert sorted(b1.tags.names()) == ["kept", "t2"]
    assert table.tags.names() == ["t2"]
    assert table_doc["totals"]["snapshots_expired"] == 1 + 3
    # The single commands, branch by branch, leave the same tree.
    for args in (
        ["expire-tags", by_hand, "--branch", "b1"],
        ["expire-snapshots", by_hand],
        ["expire-snapshots", by_hand, "--branch", "b1"],
    ):
        assert run(*args).exit_code == 0, args
    assert _tree(root) == _tree(by_hand)
    assert_no_dangling_references(root)
    wh = tmp_path / "maintained"
    for sid in b1.snapshots.ids():
        pw.read_rows(wh, "db.branched", snapshot_id=sid, branch="b1")
    pw.read_rows(wh, "db.branched", tag="t2")


def test_a_branch_whose_own_options_are_refused_fails_alone(
    run: Run, source: Path, tmp_path: Path
) -> None:
    root = _copy(source, tmp_path / "wh")
    _set_branch_options(root, "b1", {"snapshot.num-retained.min": "0"})  # refused (D3)
    result = run("maintain", root, "--json", "--orphans")
    assert result.exit_code == 1
    (table_doc,) = json.loads(result.stdout)["tables"]
    steps = {(s["branch"], s["step"]): s for s in table_doc["steps"]}
    assert steps[("main", "expire-snapshots")]["status"] == "ok"  # main is maintained
    assert steps[("b1", "expire-snapshots")]["status"] == "failed"
    assert "retain-min must be at least 1" in steps[("b1", "expire-snapshots")]["error"]["message"]
    assert steps[("b1", "expire-changelogs")]["status"] == "not-run"
    orphans = steps[("main", "delete-orphan-files")]
    assert orphans["status"] == "not-run"
    assert orphans["reason"] == "branch b1: expire-snapshots failed"
    assert open_table(str(root)).snapshots.ids() == [2, 3, 4]


def test_the_check_step_fails_a_table_with_a_missing_file(
    run: Run, source: Path, tmp_path: Path
) -> None:
    root = _copy(source, tmp_path / "wh")
    lost = Path(run.json("inspect", root, "files")["files"][0]["path"])
    lost.unlink()
    metrics = tmp_path / "paimon.prom"
    result = run("maintain", root, "--json", "--metrics-file", metrics)
    assert result.exit_code == 3  # damage, not "failed / could not check"
    (table_doc,) = json.loads(result.stdout)["tables"]
    check = next(s for s in table_doc["steps"] if s["step"] == "check")
    assert check["status"] == "failed"
    assert check["error"]["kind"] == "integrity_problems"
    assert [p["path"] for p in check["document"]["check"]["problems"]] == [str(lost)]
    assert table_doc["totals"]["integrity_problems"] == 1
    assert 'paimon_maintenance_integrity_problems{table="db.branched"} 1' in metrics.read_text()
    # --check-level metadata does not probe data files; --no-check skips the step.
    meta = run.json("maintain", root, "--check-level", "metadata", "--dry-run")
    (meta_table,) = meta["tables"]
    assert meta_table["status"] == "ok"
    assert meta_table["totals"]["integrity_problems"] == 0
    off = run.json("maintain", root, "--no-check", "--dry-run")
    step = next(s for s in off["tables"][0]["steps"] if s["step"] == "check")
    assert (step["status"], step["reason"]) == ("skipped", "--no-check")
    assert run("maintain", root, "--check-level", "some").exit_code == 2


def _small_files(wh: Path) -> Path:
    """Two partitions of six one-row files each, and 14 manifests (one per commit)."""
    table = pw.create_table(
        wh, "db.small", SCHEMA, partition_keys=["dt"], options={"manifest.merge-min-count": "10"}
    )
    for i in range(6):
        pw.append(table, [{"id": i, "dt": "a"}, {"id": 100 + i, "dt": "b"}])
    for i in range(8):
        pw.append(table, [{"id": 200 + i, "dt": "c"}])
    return pw.table_root(wh, "db.small")


def test_compaction_is_opt_in_and_stays_within_its_budget(
    run: Run, java: Any, tmp_path: Path
) -> None:
    from support.java_paimon import assert_java_ok

    wh = tmp_path / "wh"
    root = _small_files(wh)
    rows = pw.read_rows(wh, "db.small")
    plain = run.json("maintain", root, "--dry-run")
    steps = {s["step"]: s for s in plain["tables"][0]["steps"]}
    assert steps["compact"]["reason"] == "not asked (--compact)"
    assert steps["compact-manifests"]["reason"] == "not asked (--compact)"
    # One partition's files are about 6 small files: a budget of one byte takes one task.
    first = run.json("maintain", root, "--compact", "--compact-max-bytes", "1 b")
    steps = {s["step"]: s for s in first["tables"][0]["steps"]}
    details = steps["compact"]["document"]["plan"]["details"]
    assert len(details["tasks"]) == 1
    assert details["deferred"]["tasks"] == 2 and details["deferred"]["max_bytes"] == 1
    assert steps["compact-manifests"]["status"] == "ok"  # 14 manifests >= 10
    assert steps["compact-manifests"]["document"]["plan"]["details"]["changed"] is True
    # The next run compacts the rest; nothing is left after that.
    second = run.json("maintain", root, "--compact")
    details = {s["step"]: s for s in second["tables"][0]["steps"]}["compact"]["document"]
    assert len(details["plan"]["details"]["tasks"]) == 2
    third = run.json("maintain", root, "--compact", "--dry-run")
    details = {s["step"]: s for s in third["tables"][0]["steps"]}["compact"]["document"]
    assert details["plan"]["details"]["tasks"] == []
    assert pw.read_rows(wh, "db.small") == rows
    assert_no_dangling_references(root)
    doc = java.verify(root)
    assert_java_ok(doc)
    assert doc["snapshot_ids"] == open_table(str(root)).snapshots.ids()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--compact-max-bytes", "1 gb"], "needs --compact"),
        (["--compact", "--compact-max-bytes", "lots"], "--compact-max-bytes"),
        (["--compact", "--compact-max-bytes", "0 b"], "must be positive"),
    ],
)
def test_compaction_options_are_checked(
    run: Run, tmp_path: Path, args: list[str], message: str
) -> None:
    result = run("maintain", "*.*", "-w", tmp_path, *args)
    assert result.exit_code == 2
    assert message in result.stderr


def _small_files_on_a_branch(wh: Path) -> Path:
    """Main: six one-row files in partition a (one compaction task). Branch b1 from tag t2
    (main's first two files) with six commits of its own, a file in b and one in c each
    (two more tasks). Main has 6 data manifests and b1 8, both at least their
    manifest.merge-min-count of 6."""
    table = pw.create_table(
        wh, "db.forked", SCHEMA, partition_keys=["dt"], options={"manifest.merge-min-count": "6"}
    )
    for i in range(6):
        pw.append(table, [{"id": i, "dt": "a"}])
    pw.create_tag(table, "t2", 2)
    branch = pw.create_branch(table, "b1", "t2")
    for i in range(6):
        pw.append(branch, [{"id": 100 + i, "dt": "b"}, {"id": 200 + i, "dt": "c"}])
    return pw.table_root(wh, "db.forked")


def _compact_steps(doc: dict[str, Any]) -> dict[tuple[str, str], dict[str, Any]]:
    (table_doc,) = doc["tables"]
    assert table_doc["status"] == "ok", table_doc
    return {(s["branch"], s["step"]): s for s in table_doc["steps"] if "compact" in s["step"]}


def _tasks(step: dict[str, Any]) -> list[str]:
    """The partitions a compact step compacted, in plan order."""
    return [t["partition"]["dt"] for t in step["document"]["plan"]["details"]["tasks"]]


def test_compaction_covers_every_branch_within_one_budget(
    run: Run, java: Any, tmp_path: Path
) -> None:
    from support.java_paimon import assert_java_ok

    wh = tmp_path / "wh"
    root = _small_files_on_a_branch(wh)
    main_rows = pw.read_rows(wh, "db.forked")
    branch_rows = pw.read_rows(wh, "db.forked", branch="b1")
    main_tags = sorted(open_table(str(root)).tags.names())
    # The budget is the table's over all its branches: main takes it (at least one task).
    first = _compact_steps(run.json("maintain", root, "--compact", "--compact-max-bytes", "1 b"))
    assert _tasks(first[("main", "compact")]) == ["a"]
    assert first[("b1", "compact")]["status"] == "skipped"
    assert (
        first[("b1", "compact")]["reason"] == "--compact-max-bytes used up by the branches before"
    )
    # Manifests are merged on each branch past its own count, whatever the data budget.
    assert first[("main", "compact-manifests")]["document"]["plan"]["details"]["changed"] is True
    assert first[("b1", "compact-manifests")]["document"]["plan"]["details"]["changed"] is True
    # The next run finds main done and compacts one of the branch's partitions, then the other.
    second = _compact_steps(run.json("maintain", root, "--compact", "--compact-max-bytes", "1 b"))
    assert _tasks(second[("main", "compact")]) == []
    assert len(_tasks(second[("b1", "compact")])) == 1
    details = second[("b1", "compact")]["document"]["plan"]["details"]
    assert details["deferred"]["tasks"] == 1
    third = _compact_steps(run.json("maintain", root, "--compact"))
    assert sorted(_tasks(second[("b1", "compact")]) + _tasks(third[("b1", "compact")])) == [
        "b",
        "c",
    ]
    fourth = _compact_steps(run.json("maintain", root, "--compact", "--dry-run"))
    assert _tasks(fourth[("main", "compact")]) == _tasks(fourth[("b1", "compact")]) == []
    # Each branch's commits went to its own snapshot directory; both read as before.
    table = open_table(str(root))
    b1 = table.for_branch("b1")
    for view, files in ((table, 1), (b1, 2 + 1 + 1)):  # b1's two files of a stay (< 5)
        latest = view.snapshots.latest()
        assert latest is not None and latest.commit_kind == "COMPACT"
        assert len(view.live_files(latest)) == files
    assert sorted(table.tags.names()) == main_tags
    assert pw.read_rows(wh, "db.forked") == main_rows
    assert pw.read_rows(wh, "db.forked", branch="b1") == branch_rows
    for sid in b1.snapshots.ids():
        pw.read_rows(wh, "db.forked", snapshot_id=sid, branch="b1")
    assert_no_dangling_references(root)
    for branch, view in (("main", table), ("b1", b1)):
        doc = java.verify(root, branch=None if branch == "main" else branch)
        assert_java_ok(doc)
        assert doc["snapshot_ids"] == view.snapshots.ids()
        assert doc["entries"]["latest"]["rows"] == len(
            main_rows if branch == "main" else branch_rows
        )


def test_compact_on_a_table_it_cannot_write_is_a_skip_and_the_rest_runs(
    run: Run, tmp_path: Path
) -> None:
    """A Java-written table with ORC manifests (paimon-cli writes Avro only): maintain
    --compact skips both compaction steps with the reason instead of failing the table
    every run, and the other steps still run (issue 37.2); compact itself refuses it
    before it reads or rewrites anything."""
    src = JAVA_FIXTURES / "orc" / "append_09.db" / "append_09"
    root = tmp_path / "wh" / "append_09.db" / "append_09"
    shutil.copytree(src, root)
    doc = run.json("maintain", root, "--compact")
    (table,) = doc["tables"]
    assert table["status"] == "ok"
    steps = {s["step"]: s for s in table["steps"] if s["branch"] == "main"}
    for name in ("compact", "compact-manifests"):
        assert steps[name]["status"] == "skipped"
        assert "manifest.format=orc" in steps[name]["reason"]
    assert steps["expire-snapshots"]["status"] == "ok"
    assert steps["check"]["status"] == "ok"
    quiet = run("maintain", root, "--compact", "-q")
    assert (quiet.exit_code, quiet.stdout, quiet.stderr) == (0, "", "")
    before = files_under(root)
    single = run("compact", root, "--json")
    assert single.exit_code == 1
    assert json.loads(single.stderr)["error"]["kind"] == "safety_refusal"
    assert files_under(root) == before
