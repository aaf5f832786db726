"""delete-orphan-files on real tables: exactly the old unreferenced files in Paimon-shaped
places go; live data, foreign files, fresh files and symlink targets stay."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from collections.abc import Set as AbstractSet
from pathlib import Path

import pytest
from support import pypaimon_writer as pw
from support.fixtures import JAVA_FIXTURES, java_table_params
from support.invariants import (
    DAY,
    age_tree,
    assert_no_dangling_references,
    assert_rows_intact,
    copy_scenario,
    plant,
    tree_state,
)
from support.lifecycle import apply

import core.io.fileio as fileio_module
from core.errors import InvalidOptionError, SafetyRefusalError, StorageError
from core.io.fileio import DirScan, FileInfo, FileIO
from core.ops.orphans.orphan_files import RootWatcher, plan_orphan_clean
from core.runtime.executors.local import LocalExecutor
from core.table.table import open_table


def clean(
    root: Path,
    *,
    older_than_days: float = 1,
    fileio: FileIO | None = None,
    allow_recent: bool = False,
    dry_run: bool = False,
    external_exclusive: bool = False,
):
    table = open_table(str(root), fileio=fileio or FileIO())
    now = int(time.time() * 1000)
    with LocalExecutor(4) as ex:
        plan = plan_orphan_clean(
            table,
            older_than_ms=now - int(older_than_days * DAY * 1000),
            now_ms=now,
            executor=ex,
            allow_recent=allow_recent,
            external_exclusive=external_exclusive,
        )
        report = None
        if not dry_run:
            report = apply_watched(table, plan, ex, RootWatcher(table, plan, ex).filter)
    return plan, report


def apply_watched(table, plan, ex: LocalExecutor, before_phase):
    """Apply as the CLI does: no journal, roots re-checked by ``before_phase``."""
    return apply(
        table, plan, recheck=lambda _t, p: p, executor=ex, journal=False, before_phase=before_phase
    )


def test_plants_of_every_kind(scenarios, tmp_path: Path) -> None:
    s, wh, root = copy_scenario(scenarios, "tags_consumers_branches", tmp_path)
    age_tree(root)  # every real file is old too: only references may protect them
    outside = plant(tmp_path / "outside" / "precious.txt")
    must_go = [
        plant(root / "bucket-0" / "data-11111111-uncommitted-0.parquet"),
        plant(root / "bucket-0" / "data-11111111-uncommitted-0.parquet.index"),
        plant(root / "manifest" / "manifest-deadbeef-0"),
        plant(root / "manifest" / "manifest-list-deadbeef-0"),
        plant(root / "manifest" / "index-manifest-deadbeef-0"),
        plant(root / "manifest" / ".manifest-x.0a1b.tmp"),
        plant(root / "index" / "index-deadbeef-0"),
        plant(root / "statistics" / "stat-deadbeef-0"),
        plant(root / "snapshot" / ".snapshot-99.abc.tmp"),
        plant(root / "changelog" / ".changelog-7.0a1b.tmp"),
        plant(root / "branch" / "branch-b1" / "snapshot" / ".LATEST.0a1b.tmp"),
    ]
    must_stay = [
        plant(root / "bucket-0" / "data-fresh-0.parquet", days=0.1),  # younger than cut-off
        # not Paimon-shaped names, or not where Paimon writes them (issue 12 defect 7)
        plant(root / "snapshot" / "junk"),
        plant(root / "branch" / "branch-b1" / "snapshot" / "junk"),
        plant(root / "changelog" / "leftover.tmp"),
        plant(root / "bucket-0" / "notes.txt"),
        plant(root / "bucket-0" / "_SUCCESS"),
        plant(root / "manifest" / "README.md"),
        plant(root / "index" / "_SUCCESS"),
        plant(root / "data-at-the-root-0.parquet"),
        plant(root / "README.md"),
        plant(root / "_SUCCESS"),
        plant(root / "README"),
        plant(root / "data_splits" / "split-0"),
        plant(root / "branch" / "branch-b1" / "notes.txt"),
        plant(root / "schema" / "schema-notes"),
        plant(root / "tag" / "tag-success-file" / "t2_SUCCESS"),
        plant(root / "consumer" / "consumer-ghost"),
        plant(root / "service" / "service-1"),
        plant(
            root / "snapshot" / "snapshot-999999",  # stale snapshot files count as roots
            content=(root / "snapshot" / "snapshot-1")
            .read_bytes()
            .replace(b'"id": 1,', b'"id": 999999,'),
        ),
    ]
    link = root / "bucket-0" / "data-link.parquet"
    link.symlink_to(outside)
    plan, report = clean(root)
    assert report is not None and report.status == "ok"
    assert sorted(o.path for o in plan.details.orphans) == sorted(map(str, must_go))
    for p in must_go:
        assert not p.exists(), p
    for p in must_stay:
        assert p.exists(), p
    assert link.is_symlink() and outside.read_bytes() == b"orphan"
    (root / "snapshot" / "snapshot-999999").unlink()
    assert_no_dangling_references(root)
    assert_rows_intact(wh, s)
    for sid in s.branch_snapshot_ids["b1"]:
        assert pw.read_rows(wh, s.identifier, branch="b1", snapshot_id=sid)


@pytest.mark.parametrize(
    "name",
    [
        "append_partitioned",
        "pk_table",
        "awkward_partitions",
        "append_deletion_vectors",
        "path_directory",
    ],
)
def test_nothing_referenced_is_ever_a_candidate(scenarios, tmp_path: Path, name: str) -> None:
    s, wh, root = copy_scenario(scenarios, name, tmp_path)
    age_tree(root)
    orphan = plant(next(root.rglob("bucket-*")) / "data-00000000-orphan-0.parquet")
    plan, _ = clean(root)
    assert [o.path for o in plan.details.orphans] == [str(orphan)]
    assert_no_dangling_references(root)
    assert_rows_intact(wh, s)


def test_external_paths_are_cleaned_too(scenarios, tmp_path: Path) -> None:
    s = scenarios["external_paths"]
    table = open_table(str(s.root))
    ext_root = Path(table.paths.external_roots[0])
    orphan = plant(ext_root / "dt=a" / "bucket-0" / "data-00000000-orphan-ext-0.parquet")
    before = tree_state(ext_root.parent)
    try:
        plan, _ = clean(s.root, dry_run=True, external_exclusive=True)
        assert [o.path for o in plan.details.orphans] == [str(orphan)]
        assert plan.details.orphans[0].kind == "external"
        assert plan.details.external_roots_skipped == ()
        # by default another table may share the root: nothing there is a candidate
        plan, _ = clean(s.root, dry_run=True)
        assert list(plan.details.orphans) == []
        assert plan.details.external_roots_skipped == tuple(table.paths.external_roots)
    finally:
        orphan.unlink()
    assert tree_state(ext_root.parent) == {k: v for k, v in before.items() if k != str(orphan)}


def _external_roots_inside_corpus(root: Path) -> bool:
    """A table declaring an external path elsewhere would have that place listed for real."""
    roots = open_table(str(root)).paths.external_roots
    return all(Path(p).is_relative_to(JAVA_FIXTURES) for p in roots)


@pytest.mark.parametrize("root", java_table_params(_external_roots_inside_corpus))
def test_java_fixture_copies(root: Path, tmp_path: Path) -> None:
    dest = tmp_path / root.parent.name / root.name
    shutil.copytree(root, dest)
    age_tree(dest)
    bucket = next(dest.rglob("bucket-*"), None)
    planted = [plant(dest / "manifest" / "manifest-feedface-0")]
    if bucket is not None:
        planted.append(plant(bucket / "data-feedface-orphan-0.orc"))
    foreign = {
        p
        for p in tree_state(dest)
        if not any(
            part
            in (
                "manifest",
                "snapshot",
                "schema",
                "tag",
                "index",
                "statistics",
                "branch",
                "consumer",
                "changelog",
            )
            or part.startswith(("bucket-",))
            for part in Path(p).relative_to(dest).parts
        )
    }
    plan, report = clean(dest)
    found = {o.path for o in plan.details.orphans}
    assert set(map(str, planted)) <= found
    # The corpus also holds genuinely unreferenced files (e.g. paimon-cpp test artifacts):
    # Paimon deletes them too. None of them may be something a root references.
    for extra in found - set(map(str, planted)):
        assert "/bucket-" in extra or "/manifest/" in extra or "/index/" in extra, extra
    assert report is not None and report.status == "ok"
    for path in foreign:
        assert Path(path).exists(), path  # README, data_splits/, commit_messages/ stay
    assert_no_dangling_references(dest)


def test_dry_run_changes_nothing(scenarios, tmp_path: Path) -> None:
    _s, _wh, root = copy_scenario(scenarios, "append_partitioned", tmp_path)
    plant(root / "manifest" / "manifest-deadbeef-0")
    before = tree_state(root)
    plan, _ = clean(root, dry_run=True)
    assert len(plan.details.orphans) == 1
    assert tree_state(root) == before


def test_recent_cutoff_needs_allow_recent(scenarios, tmp_path: Path) -> None:
    _s, _wh, root = copy_scenario(scenarios, "append_partitioned", tmp_path)
    with pytest.raises(InvalidOptionError, match="less than one hour"):
        clean(root, older_than_days=0.01)
    clean(root, older_than_days=0.01, allow_recent=True)


class FlakyFileIO(FileIO):
    """Fails (or lists empty) for one directory or one file."""

    def __init__(self, target: str, *, mode: str) -> None:
        super().__init__()
        self.target, self.mode = target, mode

    def list_dir(self, path: str) -> list[FileInfo]:
        if path.endswith(self.target):
            if self.mode == "fail":
                raise StorageError(f"injected listing failure for {path}")
            if self.mode == "empty":
                return []
        return super().list_dir(path)

    def scan_dir_pages(
        self, path: str, *, known: AbstractSet[str] = frozenset()
    ) -> Iterator[DirScan]:
        pages = super().scan_dir_pages(path, known=known)
        if not path.endswith(self.target):
            return pages
        if self.mode == "fail":
            raise StorageError(f"injected listing failure for {path}")
        if self.mode == "empty":
            return iter([DirScan([], [], [])])
        if self.mode == "midway":  # a page came, then the listing failed
            return self._fail_after_first(path, pages)
        return pages

    @staticmethod
    def _fail_after_first(path: str, pages: Iterator[DirScan]) -> Iterator[DirScan]:
        yield next(pages)
        raise StorageError(f"injected listing failure for {path} after its first page")

    def read_bytes(self, path: str) -> bytes:
        if self.mode == "read" and path.rpartition("/")[2].startswith(self.target):
            raise StorageError(f"injected read failure for {path}")
        return super().read_bytes(path)


@pytest.mark.parametrize(
    ("target", "mode"),
    [
        ("/bucket-0", "fail"),
        ("/bucket-0", "midway"),
        ("/manifest", "fail"),
        ("/snapshot", "fail"),
        ("/snapshot", "empty"),
        ("/manifest", "empty"),
        ("manifest-", "read"),
    ],
)
def test_faults_abort_before_any_deletion(
    scenarios, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, target: str, mode: str
) -> None:
    _s, _wh, root = copy_scenario(scenarios, "tags_consumers_branches", tmp_path)
    age_tree(root)
    if mode == "midway":
        monkeypatch.setattr(fileio_module, "LIST_PAGE", 1)  # bucket-0 lists in many pages
    plant(root / "bucket-0" / "data-feedface-orphan-0.parquet")
    plant(root / "manifest" / "manifest-feedface-0")
    before = tree_state(root)
    with pytest.raises((StorageError, SafetyRefusalError)):
        clean(root, fileio=FlakyFileIO(target, mode=mode))
    assert tree_state(root) == before


def test_writer_committing_while_cleaning(scenarios, tmp_path: Path) -> None:
    s, wh, root = copy_scenario(scenarios, "many_commits", tmp_path)
    writer = subprocess.Popen(
        [
            sys.executable,
            str(Path(__file__).parents[1] / "support" / "writer_loop.py"),
            str(wh),
            s.identifier,
            "8",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).parents[1])},
    )
    rounds = 0
    try:
        while writer.poll() is None:
            clean(root, older_than_days=2 / DAY, allow_recent=True)  # cut-off: 2 s ago
            rounds += 1
    finally:
        out, err = writer.communicate(timeout=60)
    assert writer.returncode == 0, err.decode()
    assert int(out) > 5 and rounds > 3
    assert_no_dangling_references(root)
    table = open_table(str(root))
    for sid in table.snapshots.ids()[-5:]:
        pw.read_rows(wh, s.identifier, snapshot_id=sid)


# -- roots committed after planning (the RootWatcher) -----------------------------------------
def _hide_latest_snapshot(root: Path) -> tuple[Path, bytes, int]:
    """Take the latest snapshot away, as if it had not been committed yet."""
    snapshot_dir = root / "snapshot"
    latest = max(int(p.name.split("-")[1]) for p in snapshot_dir.glob("snapshot-*"))
    path = snapshot_dir / f"snapshot-{latest}"
    content = path.read_bytes()
    path.unlink()
    (snapshot_dir / "LATEST").write_text(str(latest - 1))
    return path, content, latest


def _commit_again(hidden: tuple[Path, bytes, int]) -> None:
    path, content, latest = hidden
    path.write_bytes(content)
    (path.parent / "LATEST").write_text(str(latest))


def _plan_now(root: Path, ex: LocalExecutor):
    table = open_table(str(root))
    now = int(time.time() * 1000)
    return table, plan_orphan_clean(table, older_than_ms=now - DAY * 1000, now_ms=now, executor=ex)


def test_snapshot_committed_after_planning_keeps_its_files(scenarios, tmp_path: Path) -> None:
    s, wh, root = copy_scenario(scenarios, "many_commits", tmp_path)
    age_tree(root)
    hidden = _hide_latest_snapshot(root)
    with LocalExecutor(4) as ex:
        table, plan = _plan_now(root, ex)
        planned = {o.path for o in plan.details.orphans}
        # The hidden snapshot's own files look like orphans to the plan...
        assert any("/bucket-0/" in p for p in planned) and any("/manifest/" in p for p in planned)
        _commit_again(hidden)  # ...until it is committed, right after planning
        watcher = RootWatcher(table, plan, ex)
        report = apply_watched(table, plan, ex, watcher.filter)
    assert not report.failed
    assert watcher.dropped and set(watcher.dropped) <= planned
    assert any("became referenced" in n for n in report.notes)
    assert_no_dangling_references(root)
    assert_rows_intact(wh, s)


def test_roots_are_reread_between_batches(
    scenarios, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A root committed while batches run is seen before the next batch (interval 0)."""
    import core.ops.orphans.orphan_files as orphan_files

    monkeypatch.setattr(orphan_files, "BATCH", 1)  # one orphan per batch
    s, wh, root = copy_scenario(scenarios, "many_commits", tmp_path)
    age_tree(root)
    first = plant(root / "bucket-0" / "data-!planted-0.parquet")  # sorts before every orphan
    hidden = _hide_latest_snapshot(root)
    with LocalExecutor(4) as ex:
        table, plan = _plan_now(root, ex)
        assert plan.phases[0].actions[0].path == str(first)
        watcher = RootWatcher(table, plan, ex, interval_s=0.0)
        seen: list[str] = []

        def before(phase):
            if len(seen) == 1:
                _commit_again(hidden)  # lands after the first batch
            seen.append(phase.name)
            return watcher.filter(phase)

        apply_watched(table, plan, ex, before)
    assert not first.exists()
    assert watcher.rereads == len([p for p in plan.phases if p.name != "empty-directories"])
    assert watcher.dropped
    assert_no_dangling_references(root)
    assert_rows_intact(wh, s)


def test_reread_interval_bounds_rereads(scenarios, tmp_path: Path) -> None:
    _s, _wh, root = copy_scenario(scenarios, "many_commits", tmp_path)
    age_tree(root)
    for i in range(3):
        plant(root / "bucket-0" / f"data-feedface-{i}-0.parquet")
    with LocalExecutor(2) as ex:
        table, plan = _plan_now(root, ex)
        watcher = RootWatcher(table, plan, ex, interval_s=3600.0)
        phases = [p for p in plan.phases if p.name != "empty-directories"]
        for phase in phases * 3:
            watcher.filter(phase)
    assert watcher.rereads == 1  # right before the first batch; then once per interval


@pytest.mark.parametrize("name", ["tags_consumers_branches", "external_paths"])
def test_worker_process_decoding_plans_the_same(
    scenarios, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    """Big local tables decode roots and manifests in worker processes: same plan."""
    import core.ops.orphans.orphan_roots as orphan_roots

    _s, _wh, root = copy_scenario(scenarios, name, tmp_path)
    age_tree(root)
    plant(root / "manifest" / "manifest-feedface-0")
    threads, _ = clean(root, dry_run=True)
    monkeypatch.setattr(orphan_roots, "PROCESS_MIN_ROOTS", 1)
    monkeypatch.setattr(orphan_roots, "PROCESS_MIN_BYTES", 1)
    table = open_table(str(root))
    now = int(time.time() * 1000)
    with LocalExecutor(4, processes=2) as ex:
        plan = plan_orphan_clean(table, older_than_ms=now - DAY * 1000, now_ms=now, executor=ex)
        assert ex._processes is not None  # the work really went to worker processes
    assert plan.details.used_names == threads.details.used_names > 0
    assert [o.path for o in plan.details.orphans] == [o.path for o in threads.details.orphans]
