"""Issue 12 defect 7: orphan cleaning only considers Paimon-shaped names in Paimon-shaped
places, at every depth including the root of an unpartitioned table without buckets."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from support import pypaimon_writer as pw
from support.invariants import age_tree, assert_no_dangling_references, copy_scenario, plant

FOREIGN = ("README.md", "_SUCCESS", "notes.txt", "data-orphan-0.parquet")


def _plant_foreign(directory: Path) -> list[Path]:
    """Files a person or another tool put there; the last one even has a data file's name,
    but Paimon never writes data files outside bucket directories."""
    return [plant(directory / name) for name in FOREIGN]


def test_root_of_an_unpartitioned_table_without_buckets(run: Any, tmp_path: Path) -> None:
    wh = tmp_path / "wh"
    schema = pa.schema([("id", pa.int64())])
    table = pw.create_table(wh, "db.fresh", schema)  # no commit yet: no bucket directory
    root = pw.root_of(table)
    age_tree(root)
    foreign = _plant_foreign(root)
    doc = run.json("delete-orphan-files", root)
    assert doc["plan"]["details"]["orphans"] == []
    for path in foreign:
        assert path.exists(), path


@pytest.mark.parametrize("scenario", ["path_directory", "append_partitioned"])
def test_partition_levels_and_data_roots(
    run: Any, scenarios: dict[str, pw.Scenario], tmp_path: Path, scenario: str
) -> None:
    """Table root, data root and every partition level keep foreign files; a bucket
    directory's Paimon-shaped orphan goes."""
    _s, _wh, root = copy_scenario(scenarios, scenario, tmp_path)
    age_tree(root)
    bucket = next(root.rglob("bucket-0"))
    places = {root, bucket.parent}
    places.update(p for p in bucket.parents if root in p.parents)
    foreign = [f for place in places if place != bucket for f in _plant_foreign(place)]
    orphan = plant(bucket / "data-11111111-orphan-0.parquet")
    kept_in_bucket = [plant(bucket / "_SUCCESS"), plant(bucket / "README.md")]
    doc = run.json("delete-orphan-files", root)
    assert [o["path"] for o in doc["plan"]["details"]["orphans"]] == [str(orphan)]
    assert not orphan.exists()
    for path in foreign + kept_in_bucket:
        assert path.exists(), path
    assert_no_dangling_references(root)


def test_partition_directory_without_buckets(
    run: Any, scenarios: dict[str, pw.Scenario], tmp_path: Path
) -> None:
    """A partition directory holding only foreign files (no bucket below) keeps them."""
    _s, _wh, root = copy_scenario(scenarios, "append_partitioned", tmp_path)
    age_tree(root)
    lonely = root / "dt=1999-01-01" / "hr=0"
    foreign = _plant_foreign(lonely)
    doc = run.json("delete-orphan-files", root)
    assert doc["plan"]["details"]["orphans"] == []
    for path in foreign:
        assert path.exists(), path
