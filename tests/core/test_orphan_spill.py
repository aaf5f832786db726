"""Orphan cleaning past memory (issue 27): with the used names spilled to hash partitions
on local disk and the orphans to sorted runs, the plan is the one memory gives, and a real
run leaves the same table. The thresholds are shrunk so that small real tables spill
(every code path of the big one, at a size tests can afford)."""

from __future__ import annotations

import gc
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from support.invariants import (
    DAY,
    age_tree,
    assert_no_dangling_references,
    assert_rows_intact,
    copy_scenario,
    plant,
    tree_state,
)
from support.java_paimon import JavaPaimon, assert_java_ok
from support.lifecycle import apply
from support.namespaces import IN_ANOTHER_PID_NAMESPACE, unshare_problem

import core.io.fileio as fileio
import core.ops.orphans.orphan_files as orphan_files
import core.ops.orphans.orphan_sets as orphan_sets
import core.runtime.spill as spill
from core.ops.orphans.orphan_files import RootWatcher, plan_orphan_clean
from core.runtime import process_identity as identity
from core.runtime.executors.local import LocalExecutor
from core.runtime.plans import LazyPhases, Plan
from core.runtime.spill import Partitions, RecordFile, SortedRuns, Spill, Spilled
from core.table.table import open_table

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench" / "synth"))
import synth_table as st  # noqa: E402


@pytest.fixture
def spill_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    where = tmp_path / "spill"
    where.mkdir()
    monkeypatch.setenv(spill.SPILL_DIR_ENV, str(where))
    monkeypatch.setattr(orphan_files, "BATCH", 3)  # many phases, as at scale
    return where


def _page_listings(monkeypatch: pytest.MonkeyPatch) -> None:
    """Listings in pages of two entries: every directory's files reach the scan in parts."""
    monkeypatch.setattr(fileio, "LIST_PAGE", 2)


def _spill_everything(monkeypatch: pytest.MonkeyPatch) -> None:
    _page_listings(monkeypatch)
    monkeypatch.setattr(orphan_sets, "IN_MEMORY_NAMES", 0)
    monkeypatch.setattr(orphan_sets, "PARTITION_NAMES", 7)
    monkeypatch.setattr(orphan_sets, "IN_MEMORY_ORPHANS", 2)
    monkeypatch.setattr(spill, "BLOCK", 2)  # blocks do not line up with batches
    monkeypatch.setattr(spill, "RUN", 3)  # several sorted runs to merge


def _plan(root: Path, now: int) -> Plan[Any]:
    table = open_table(str(root))
    with LocalExecutor(4) as ex:
        return plan_orphan_clean(table, older_than_ms=now - DAY * 1000, now_ms=now, executor=ex)


def _doc(plan: Plan[Any]) -> str:
    return json.dumps(plan.to_json(), sort_keys=True)


def _plant_orphans(root: Path) -> list[Path]:
    buckets = sorted(root.rglob("bucket-*"))
    planted = [
        plant(b / f"data-{i:08x}-0000-orphan-{j}.parquet")
        for i, b in enumerate(buckets)
        for j in range(3)
    ]
    planted += [plant(root / "manifest" / f"manifest-{i:08x}-orphan-0") for i in range(4)]
    planted.append(plant(root / "manifest" / "manifest-list-feedface-0"))
    return planted


@pytest.mark.parametrize(
    "name", ["tags_consumers_branches", "append_partitioned", "pk_table", "append_deletion_vectors"]
)
def test_spilled_plan_is_the_in_memory_plan(
    scenarios,
    java: JavaPaimon,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    spill_dir: Path,
    name: str,
) -> None:
    s, wh, root = copy_scenario(scenarios, name, tmp_path)
    age_tree(root)
    planted = _plant_orphans(root)
    outside = plant(tmp_path / "outside" / "precious.parquet")
    (root / "manifest" / "manifest-link-0").symlink_to(outside)  # never followed nor removed
    fresh = plant(root / "manifest" / "manifest-fresh-0", days=0.1)
    now = int(time.time() * 1000)
    in_memory = _plan(root, now)
    assert not isinstance(in_memory.phases, LazyPhases)
    assert not list(spill_dir.iterdir())  # small tables never touch local disk
    _page_listings(monkeypatch)
    assert _doc(_plan(root, now)) == _doc(in_memory)

    _spill_everything(monkeypatch)
    spilled = _plan(root, now)
    assert isinstance(spilled.phases, LazyPhases)
    assert list(spill_dir.iterdir())  # the partitions and runs really went to disk
    assert _doc(spilled) == _doc(in_memory)
    assert spilled.details.used_names == in_memory.details.used_names > 0
    assert sorted(o.path for o in spilled.details.orphans) == sorted(map(str, planted))

    before = tree_state(root)
    with LocalExecutor(4) as ex:
        table = open_table(str(root))
        report = apply(
            table,
            spilled,
            recheck=lambda _t, p: p,
            executor=ex,
            journal=False,
            before_phase=RootWatcher(table, spilled, ex).filter,
        )
    assert report.status == "ok"
    after = tree_state(root)
    assert set(before) - set(after) == set(map(str, planted))
    assert outside.exists() and fresh.exists()
    assert_no_dangling_references(root)
    assert_rows_intact(wh, s)
    assert_java_ok(java.verify(root))  # Apache Paimon reads every snapshot and tag left
    del spilled
    gc.collect()
    assert not list(spill_dir.iterdir())  # the spill directory goes with the plan


def test_spilled_plan_on_external_paths(
    scenarios, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, spill_dir: Path
) -> None:
    _s, _wh, root = copy_scenario(scenarios, "external_paths", tmp_path)
    age_tree(root)
    _plant_orphans(root)
    now = int(time.time() * 1000)
    table = open_table(str(root))

    def plan() -> Plan[Any]:
        with LocalExecutor(2) as ex:
            return plan_orphan_clean(
                table,
                older_than_ms=now - DAY * 1000,
                now_ms=now,
                executor=ex,
                external_exclusive=True,
            )

    in_memory = plan()
    _spill_everything(monkeypatch)
    assert _doc(plan()) == _doc(in_memory)


def test_spilled_plan_on_the_synthetic_table(
    run: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, spill_dir: Path
) -> None:
    """synth:// is not local disk: every listed file comes with its size and time, and
    the manifest lists of the latest snapshot must still be seen in the listing."""
    spec = st.Spec(
        snapshots=9,
        partitions=3,
        buckets=2,
        base_files=5,
        files_per_commit=3,
        compact_every=4,
        compact_files=2,
        manifest_entries=4,
        orphans=23,
        manifest_orphans=5,
        tags=(3,),
        end_s=st._default_end_s(),
    )
    st.register()
    st.forget()
    args = [a for k, v in spec.options().items() for a in ("--fs-option", f"{k}={v}")]
    cutoff = str((spec.end_s - 3600) * 1000)

    def dry_run() -> dict[str, Any]:
        result = run(
            "delete-orphan-files", f"synth://{spec.root}", *args, "--older-than", cutoff,
            "--dry-run", "--json",
        )  # fmt: skip
        assert result.exit_code == 0, result.stderr
        doc: dict[str, Any] = json.loads(result.stdout)
        for key in ("run_id", "seconds"):
            doc.pop(key, None)
        doc["plan"].pop("created_ms")
        doc["plan"]["details"].pop("now_ms")
        for row in doc["plan"]["details"]["orphans"]:
            row.pop("age_ms")
        return doc

    try:
        in_memory = dry_run()
        _page_listings(monkeypatch)
        assert dry_run() == in_memory
        _spill_everything(monkeypatch)
        spilled = dry_run()
    finally:
        st.forget()
    assert spilled == in_memory
    assert in_memory["plan"]["details"]["orphan_count"] == spec.orphans + spec.manifest_orphans


# -- the spill files themselves ----------------------------------------------------------------


def test_record_file_keeps_fields_and_blocks(
    spill_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(spill, "BLOCK", 4)
    records = [(f"name-{i}", "caf\u00e9", "n\udcffot-utf8", str(i)) for i in range(11)]
    out = RecordFile(Spill(), "t", 4)
    out.extend(records)
    seq = Spilled(out, lambda r: r)
    assert list(seq) == records
    assert [seq[i] for i in (10, 0, 5, -1)] == [records[10], records[0], records[5], records[-1]]
    assert seq[3:9] == records[3:9]
    assert seq.batches() == 3 and seq.batch(2) == records[8:]


def test_sorted_runs_merge_in_order(spill_dir: Path) -> None:
    keys = [f"k{(i * 7919) % 1000:04d}" for i in range(1000)]
    runs = SortedRuns(Spill(), "s", 2, run=64)
    runs.extend((k, str(len(k))) for k in keys)
    merged = runs.finish()
    assert [r[0] for r in merged] == sorted(keys)
    assert len(os.listdir(os.path.dirname(merged.path))) == 1  # runs removed


def test_partitions_put_equal_keys_together(spill_dir: Path) -> None:
    parts = Partitions(Spill(), "p", 5, 2)
    for i in range(200):
        parts.append((f"n{i % 50}", str(i)))
    seen: dict[str, int] = {}
    for index, records in enumerate(parts.finish()):
        for key, _ in records:
            assert seen.setdefault(key, index) == index
    assert len(seen) == 50


def test_a_killed_runs_spill_directory_is_removed_by_the_next_run(tmp_path: Path) -> None:
    """SIGKILL (or the OOM killer) runs no finalizer: the next run removes what the killed
    one spilled, but never a live run's directory, another host's, one of another PID
    namespace or boot sharing this host name and directory (issue 33: its pid means
    nothing here), one named by an older paimon-cli, or a recent one."""
    here = identity.here()
    if not here.known:
        pytest.skip("needs Linux /proc (boot id and PID namespace) to judge a spill directory")
    host, place = spill._host(), here.fingerprint()
    other_ns = identity.Place(here.host, here.boot_id, (here.pid_ns or 0) + 1).fingerprint()
    other_boot = identity.Place(here.host, "another-boot", here.pid_ns).fingerprint()
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()  # a pid whose process is gone
    old = time.time() - 2 * spill.ABANDONED_AFTER_S

    def made(name: str, *, aged: bool = True) -> Path:
        d = tmp_path / name
        d.mkdir()
        (d / "used-1").write_bytes(b"x" * 100)
        if aged:
            os.utime(d, (old, old))
        return d

    killed = made(f"{spill.PREFIX}{host}.{place}.{gone.pid}.abc123")
    live = made(f"{spill.PREFIX}{host}.{place}.{os.getpid()}.def456")
    elsewhere = made(f"{spill.PREFIX}otherhost.{place}.{gone.pid}.ghi789")
    recent = made(f"{spill.PREFIX}{host}.{place}.{gone.pid}.jkl012", aged=False)
    container = made(f"{spill.PREFIX}{host}.{other_ns}.{gone.pid}.mno345")
    clone = made(f"{spill.PREFIX}{host}.{other_boot}.{gone.pid}.pqr678")
    older = made(f"{spill.PREFIX}{host}.{gone.pid}.stu901")
    unrelated = made(f"not-ours.{gone.pid}.x")
    s = Spill(str(tmp_path))
    assert not killed.exists()
    for kept in (live, elsewhere, recent, container, clone, older, unrelated):
        assert kept.exists(), kept.name
    assert Path(s.path).name.startswith(f"{spill.PREFIX}{host}.{place}.{os.getpid()}.")
    s.close()
    assert not Path(s.path).exists()


def test_a_spill_directory_of_a_run_in_another_pid_namespace_is_kept(tmp_path: Path) -> None:
    """A run in its own PID namespace (a container sharing this host name and temporary
    directory) spills; its pid is gone here, yet its directory is never removed."""
    problem = unshare_problem()
    if problem is not None:
        pytest.skip(problem)
    script = (
        "import sys, time; from core.runtime.spill import Spill; "
        f"s = Spill({str(tmp_path)!r}); print(s.path, flush=True); sys.stdin.readline()"
    )
    with subprocess.Popen(
        [*IN_ANOTHER_PID_NAMESPACE, sys.executable, "-c", script],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    ) as inner:
        assert inner.stdout is not None and inner.stdin is not None
        path = inner.stdout.readline().strip()
        assert path, inner.communicate()[1]
        theirs = Path(path)
        inner_pid = int(theirs.name.split(".")[2])
        if Path(f"/proc/{inner_pid}").exists():
            pytest.skip(f"pid {inner_pid} of the namespace is a live process here too")
        old = time.time() - 2 * spill.ABANDONED_AFTER_S
        os.utime(theirs, (old, old))
        Spill(str(tmp_path)).close()
        assert theirs.exists()
        inner.communicate("\n", timeout=60)
