"""delete-orphan-files --inventory on local tables: a file list gives the plan a listing
gives; an inventory older than the cut-off is refused; a file changed after the inventory
is kept by the HEAD right before its deletion. (S3 Inventory reports on moto:
tests/s3/test_s3_inventory.py.)"""

from __future__ import annotations

import csv
import gzip
import json
import os
import time
from pathlib import Path
from typing import Any

import pytest
from support.invariants import (
    DAY,
    age,
    age_tree,
    assert_no_dangling_references,
    assert_rows_intact,
    copy_scenario,
    plant,
)
from support.lifecycle import apply

import core.ops.orphans.orphan_inventory as orphan_inventory
import core.runtime.spill as spill
from core.errors import SafetyRefusalError
from core.ops.orphans.orphan_files import LocalOrphanFiles, OrphanRequest, plan_orphan_clean
from core.runtime.executors.local import LocalExecutor
from core.runtime.operation import Env
from core.runtime.plans import Plan
from core.table.table import PaimonTable, open_table


def _files(root: Path) -> list[Path]:
    return sorted(Path(d) / n for d, _dirs, names in os.walk(root) for n in names)


def _write_list(root: Path, dest: Path, fmt: str) -> Path:
    """Every file of the table as a file list of ``fmt``, taken now."""
    files = _files(root)
    if fmt == "lines":
        dest.write_text("".join(f"{p}\n" for p in files))
    elif fmt == "csv":
        with dest.open("w", newline="") as fh:
            out = csv.writer(fh)
            out.writerow(["path", "size", "last_modified"])
            for p in files:
                st = p.lstat()
                # relative paths are under the table root
                out.writerow([p.relative_to(root), st.st_size, int(st.st_mtime * 1000)])
    else:
        import pyarrow as pa
        import pyarrow.parquet as pq

        stats = [p.lstat() for p in files]
        pq.write_table(
            pa.table(
                {
                    "path": [str(p) for p in files],
                    "size": [s.st_size for s in stats],
                    "last_modified": pa.array(
                        [int(s.st_mtime * 1000) for s in stats], pa.timestamp("ms", tz="UTC")
                    ),
                }
            ),
            dest,
        )
    return dest


def _plan(root: Path, now: int, inventory: Path | None = None) -> Plan[Any]:
    table = open_table(str(root))
    with LocalExecutor(4) as ex:
        return plan_orphan_clean(
            table,
            older_than_ms=now - DAY * 1000,
            now_ms=now,
            executor=ex,
            inventory=str(inventory) if inventory else None,
        )


def _doc(plan: Plan[Any]) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads(json.dumps(plan.to_json()))
    doc["details"].pop("inventory", None)
    return doc


@pytest.mark.parametrize("fmt", ["lines", "csv", "parquet"])
def test_a_file_list_plans_what_the_listing_plans(scenarios, tmp_path: Path, fmt: str) -> None:
    _s, _wh, root = copy_scenario(scenarios, "tags_consumers_branches", tmp_path)
    age_tree(root)
    bucket = next(root.rglob("bucket-*"))
    planted = {
        plant(bucket / "data-feedface-orphan-0.parquet"),
        plant(root / "manifest" / "manifest-feedface-0"),
        plant(root / "snapshot" / ".snapshot-9.0a1b.tmp"),
        plant(root / "branch" / "branch-b1" / "snapshot" / ".LATEST.0a1b.tmp"),
    }
    plant(bucket / "notes.txt")  # never a candidate
    plant(bucket / "nested" / "data-feedface-deeper-0.parquet")  # not where Paimon writes
    plant(bucket / "data-fresh-0.parquet", days=0.1)  # too young
    inventory = _write_list(root, tmp_path / f"list.{fmt}", fmt)
    now = int(time.time() * 1000)
    listed = _plan(root, now)
    from_inventory = _plan(root, now, inventory)
    assert _doc(from_inventory) == _doc(listed)
    assert {o.path for o in from_inventory.details.orphans} == set(map(str, planted))
    assert from_inventory.details.inventory is not None
    assert from_inventory.details.inventory.format == fmt
    assert listed.details.inventory is None


@pytest.mark.parametrize("fmt", ["lines", "csv", "parquet", "csv.gz"])
def test_a_big_inventory_file_is_read_a_chunk_at_a_time(
    scenarios, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fmt: str
) -> None:
    """An inventory file of millions of objects never sits in memory whole: past a chunk,
    a worker hands its candidates over in a spill file, and rows without a time are HEADed
    a chunk at a time. With chunks of 2 every path is taken, and the plan is the listing's."""
    _s, _wh, root = copy_scenario(scenarios, "tags_consumers_branches", tmp_path)
    age_tree(root)
    planted = {
        plant(bucket / f"data-feedface-orphan-{i}.parquet")
        for i, bucket in enumerate(sorted(root.rglob("bucket-*")))
    }
    planted |= {plant(root / "manifest" / f"manifest-feedface-{i}") for i in range(5)}
    inventory = _write_list(root, tmp_path / f"list.{fmt.split('.')[0]}", fmt.split(".")[0])
    if fmt.endswith(".gz"):
        packed = inventory.with_name(inventory.name + ".gz")
        packed.write_bytes(gzip.compress(inventory.read_bytes()))
        inventory = packed
    now = int(time.time() * 1000)
    listed = _plan(root, now)
    spill_dir = tmp_path / "spill"
    spill_dir.mkdir()
    monkeypatch.setenv(spill.SPILL_DIR_ENV, str(spill_dir))
    monkeypatch.setattr(orphan_inventory, "CHUNK", 2)
    from_inventory = _plan(root, now, inventory)
    assert _doc(from_inventory) == _doc(listed)
    assert {o.path for o in from_inventory.details.orphans} == set(map(str, planted))
    assert len(planted) > 2
    leftovers = [p for p in spill_dir.rglob("*") if p.is_file()]
    assert not leftovers  # each spilled file was read and removed


def test_an_inventory_older_than_the_cutoff_is_refused(scenarios, tmp_path: Path) -> None:
    _s, _wh, root = copy_scenario(scenarios, "append_partitioned", tmp_path)
    age_tree(root)
    inventory = _write_list(root, tmp_path / "list.txt", "lines")
    age(inventory, 2)  # taken two days ago; the cut-off is one day ago
    with pytest.raises(SafetyRefusalError, match="before the cut-off"):
        _plan(root, int(time.time() * 1000), inventory)


def test_an_inventory_missing_the_latest_manifest_lists_is_refused(
    scenarios, tmp_path: Path
) -> None:
    """An inventory of another prefix (or a partial one) lists nothing of the table's
    latest snapshot: it cannot be trusted, as an incomplete listing."""
    _s, _wh, root = copy_scenario(scenarios, "append_partitioned", tmp_path)
    age_tree(root)
    inventory = tmp_path / "list.txt"
    inventory.write_text(f"{root}/bucket-0/data-feedface-0.parquet\n")
    with pytest.raises(SafetyRefusalError, match="listing is unreliable"):
        _plan(root, int(time.time() * 1000), inventory)


def test_files_changed_after_the_inventory_are_kept(scenarios, tmp_path: Path) -> None:
    s, wh, root = copy_scenario(scenarios, "append_partitioned", tmp_path)
    age_tree(root)
    bucket = next(root.rglob("bucket-*"))
    gone = [plant(bucket / f"data-feedface-{i}-0.parquet") for i in range(3)]
    rewritten = plant(bucket / "data-feedface-rewritten-0.parquet")
    grown = plant(bucket / "data-feedface-grown-0.parquet")
    removed = plant(bucket / "data-feedface-removed-0.parquet")
    inventory = _write_list(root, tmp_path / "list.csv", "csv")
    now = int(time.time() * 1000)
    table: PaimonTable = open_table(str(root))
    op = LocalOrphanFiles(OrphanRequest(now - DAY * 1000, inventory=str(inventory)))
    with LocalExecutor(4) as ex:
        env = Env(ex, now)
        plan = op.plan(table, env)
        assert plan.details.orphan_count == 6
        rewritten.write_bytes(b"a writer's new file of the same name")
        age(rewritten, 0)
        grown.write_bytes(b"orphan, and more")
        age(grown, 3)  # old, but not the file the inventory saw
        removed.unlink()
        report = apply(
            table,
            plan,
            recheck=lambda _t, p: p,
            executor=ex,
            journal=False,
            before_phase=op.before_phase(table, plan, env),
        )
    assert report.status == "ok"
    assert not any(p.exists() for p in gone)
    assert rewritten.exists() and grown.exists()
    assert any("changed after planning" in n for n in report.notes)
    assert_no_dangling_references(root)
    assert_rows_intact(wh, s)


@pytest.mark.parametrize(
    ("name", "content"),
    [
        ("list.csv", b"path,size\n\xff\xfe bad,1\n"),  # not UTF-8
        ("list.csv", b"path,size\ndata-1.parquet,many\n"),  # a size that is no number
        ("list.csv.gz", b"\x1f\x8bnot gzip at all"),
        ("list.parquet", b"not parquet at all"),
        ("list.txt", b"\x1f\x8b\x08\x00\x00\x00\x00\x00"),  # gzip cut short
    ],
)
def test_an_unreadable_inventory_file_is_a_clear_error(
    run: Any, scenarios: Any, tmp_path: Path, name: str, content: bytes
) -> None:
    _s, _wh, root = copy_scenario(scenarios, "append_partitioned", tmp_path)
    age_tree(root)
    plant(next(root.rglob("bucket-*")) / "data-feedface-orphan-0.parquet")
    before = _files(root)
    inventory = tmp_path / name
    inventory.write_bytes(content)
    result = run("delete-orphan-files", str(root), "--inventory", str(inventory))
    assert result.exit_code == 1, result.stdout
    message = " ".join(result.stderr.split())
    assert f"corrupt metadata {inventory}: not a readable" in message
    assert "inventory" in message and "Traceback" not in result.stderr
    assert _files(root) == before  # nothing deleted
