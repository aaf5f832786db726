"""The pypaimon test-table factory writes real tables that read back as expected."""

from __future__ import annotations

import datetime as dt
import decimal
import json
import subprocess
import sys
from pathlib import Path

import pytest
from support import pypaimon_writer as pw
from support.fixtures import JAVA_FIXTURES, REPO


def _all_files(*roots: Path) -> dict[str, Path]:
    return {p.name: p for r in roots if r.exists() for p in r.rglob("*") if p.is_file()}


def check_scenario(sc: pw.Scenario, *extra_roots: Path) -> None:
    """Generic invariants every builder must satisfy."""
    assert sc.root == pw.table_root(sc.warehouse, sc.identifier)
    assert sc.snapshot_ids == list(range(1, len(sc.snapshot_ids) + 1))
    snapshot_dir = sc.root / "snapshot"
    for sid in sc.snapshot_ids:
        assert (snapshot_dir / f"snapshot-{sid}").is_file()
    assert (snapshot_dir / "LATEST").read_text() == str(sc.snapshot_ids[-1])
    assert not (snapshot_dir / "EARLIEST").exists()  # pypaimon never writes it

    files = _all_files(sc.root, *extra_roots)
    for sid, rows in sc.expected.items():
        assert pw.read_rows(sc.warehouse, sc.identifier, snapshot_id=sid) == rows, sid
        names = pw.scan_file_names(sc.warehouse, sc.identifier, snapshot_id=sid)
        assert names <= files.keys()
        assert bool(names) == bool(rows)
    assert pw.read_rows(sc.warehouse, sc.identifier) == sc.expected[sc.snapshot_ids[-1]]

    assert sc.tags == sorted(sc.tag_snapshots)
    for tag in sc.tags:
        assert (sc.root / "tag" / f"tag-{tag}").is_file()
        assert pw.read_rows(sc.warehouse, sc.identifier, tag=tag) == sc.rows_at_tag(tag)

    for consumer_id, next_snapshot in sc.consumers.items():
        content = json.loads((sc.root / "consumer" / f"consumer-{consumer_id}").read_text())
        assert content == {"nextSnapshot": next_snapshot}

    for branch, rows in sc.branch_expected.items():
        assert (sc.root / "branch" / f"branch-{branch}").is_dir()
        assert pw.read_rows(sc.warehouse, sc.identifier, branch=branch) == rows


@pytest.mark.parametrize("name", sorted(pw.BUILDERS))
def test_builder_reads_back(tmp_path: Path, name: str) -> None:
    sc = pw.BUILDERS[name](tmp_path)
    check_scenario(sc)
    assert sc.notes


def test_external_paths(tmp_path: Path) -> None:
    ext = tmp_path / "ext"
    sc = pw.external_paths(tmp_path / "wh", ext)
    check_scenario(sc, ext)
    assert sc.snapshot_ids == [1, 2, 3, 4, 5]
    assert not list(sc.root.rglob("*.parquet"))
    table = pw.open_table(sc.warehouse, sc.identifier)
    splits = table.new_read_builder().new_scan().plan().splits()
    ext_paths = [f.external_path for s in splits for f in s.files]
    assert ext_paths and all(p.startswith(f"file:{ext}/p") for p in ext_paths)
    on_disk = {p.name for p in ext.rglob("*.parquet")}
    assert len(on_disk) == 5
    # pypaimon starts its round-robin at a random root: five files may all land in one.
    assert set() < {p.name for p in ext.iterdir()} <= {"p1", "p2"}
    assert [r["id"] for r in pw.read_rows(sc.warehouse, sc.identifier)] == [2, 4, 99]


def test_append_partitioned(tmp_path: Path) -> None:
    sc = pw.append_partitioned(tmp_path, commits=6)
    assert (sc.snapshot_ids, sc.tag_snapshots, sc.consumers) == (
        [1, 2, 3, 4, 5, 6],
        {"mid": 3},
        {"reader": 4},
    )
    assert sc.partition_keys == ("dt", "hr") and sc.primary_keys == ()
    assert [len(sc.expected[s]) for s in sc.snapshot_ids] == [3, 6, 9, 12, 10, 13]
    in_partition = [r for r in sc.expected[5] if (r["dt"], r["hr"]) == ("2024-01-01", 0)]
    assert [r["v"] for r in in_partition] == ["ow0", "ow1"]

    entries = pw.delta_entries(sc.warehouse, sc.identifier, 5)
    deleted = {n for kind, n in entries if kind == pw.DELETE}
    added = {n for kind, n in entries if kind == pw.ADD}
    before = pw.scan_file_names(sc.warehouse, sc.identifier, snapshot_id=4)
    after = pw.scan_file_names(sc.warehouse, sc.identifier, snapshot_id=5)
    assert deleted and deleted <= before and not deleted & after
    assert after == (before - deleted) | added
    commit_kind = json.loads((sc.root / "snapshot" / "snapshot-5").read_text())["commitKind"]
    assert commit_kind == "OVERWRITE"
    assert (sc.root / "dt=2024-01-01" / "hr=0" / "bucket-0").is_dir()


def test_pk_table_merged_view(tmp_path: Path) -> None:
    sc = pw.pk_table(tmp_path, commits=6)
    assert sc.primary_keys == ("dt", "id")
    latest = sc.expected[6]
    # 12 inserted, ids 3,3,4,4,5 deleted across the two days
    assert len(latest) == 12 - 5
    by_key = {(r["dt"], r["id"]): r for r in latest}
    assert by_key[("2024-01-01", 0)]["v"] == "v6" and by_key[("2024-01-02", 0)]["v"] == "v5"
    assert ("2024-01-01", 5) not in by_key and ("2024-01-02", 5) in by_key
    snapshot = json.loads((sc.root / "snapshot" / "snapshot-6").read_text())
    assert snapshot["totalRecordCount"] > len(latest)  # raw rows, not merged
    assert snapshot["changelogManifestList"]
    assert list(sc.root.rglob("changelog-*.parquet"))
    assert {p.name for p in sc.root.iterdir()} >= {"dt=2024-01-01", "dt=2024-01-02"}
    assert {p.name for p in (sc.root / "dt=2024-01-01").iterdir()} == {"bucket-0", "bucket-1"}


def test_awkward_partitions(tmp_path: Path) -> None:
    sc = pw.awkward_partitions(tmp_path)
    dirs = {p.name for p in sc.root.iterdir()}
    assert {
        "region=__DEFAULT_PARTITION__",
        "region=a%2Fb",
        "region=k%3Dv",
        "region=c%3Ad",
        "region=zürich",
        "region=東京",
        "region=with space",
        "region=100%25",
    } <= dirs
    rows = pw.read_rows(sc.warehouse, sc.identifier)
    assert len(rows) == 2 * len(pw.AWKWARD_VALUES)
    regions = [r["region"] for r in rows if r["city"] == "c"]
    assert None in regions and "" in regions and "  " in regions
    assert [r["id"] for r in rows if r["region"] == "zürich"] == [999]
    tagged = pw.read_rows(sc.warehouse, sc.identifier, tag="awk")
    assert [r["id"] for r in tagged if r["region"] == "zürich"] == [4]


@pytest.mark.parametrize(("legacy", "date_dir"), [(True, "d=19724"), (False, "d=2024-01-02")])
def test_typed_partitions(tmp_path: Path, legacy: bool, date_dir: str) -> None:
    sc = pw.typed_partitions(tmp_path, legacy_name=legacy)
    check_scenario(sc)
    assert len(sc.partition_keys) == 8
    assert (sc.root / date_dir).is_dir()
    assert (sc.root / "d=__DEFAULT_PARTITION__").is_dir()
    rows = pw.read_rows(sc.warehouse, sc.identifier)
    assert [r["id"] for r in rows] == [2, 3, 4, 5]  # id 1 replaced by the overwrite
    assert all(v is None for k, v in rows[1].items() if k != "id")
    assert rows[3]["dec"] == decimal.Decimal("12.34") and rows[3]["d"] == dt.date(2024, 1, 2)


def test_tags_consumers_branches(tmp_path: Path) -> None:
    sc = pw.tags_consumers_branches(tmp_path)
    assert sc.tag_snapshots == {"t2": 2, "t4": 4, "t6": 6}
    assert sc.consumers == {"slow": 3, "fast": 7}
    assert sc.branches == ["b1", "empty"]
    assert sc.branch_snapshot_ids == {"b1": [4, 5, 6], "empty": []}
    plain = json.loads((sc.root / "tag" / "tag-t2").read_text())
    retained = json.loads((sc.root / "tag" / "tag-t4").read_text())
    assert "tagTimeRetained" not in plain and plain["id"] == 2
    assert retained["tagTimeRetained"] == 86400.0 and len(retained["tagCreateTime"]) == 7

    b1 = sc.root / "branch" / "branch-b1"
    assert sorted(p.name for p in (b1 / "snapshot").iterdir()) == [
        "LATEST",
        "snapshot-4",
        "snapshot-5",
        "snapshot-6",
    ]
    assert (b1 / "tag" / "tag-t4").is_file() and (b1 / "schema" / "schema-0").is_file()
    assert json.loads((b1 / "consumer" / "consumer-on-branch").read_text()) == {"nextSnapshot": 5}
    assert not (sc.root / "branch" / "branch-empty" / "snapshot").exists()
    assert len(sc.branch_expected["b1"]) == 8 + 2
    assert pw.read_rows(sc.warehouse, sc.identifier, branch="b1", snapshot_id=4) == sc.expected[4]
    assert pw.read_rows(sc.warehouse, sc.identifier, branch="b1", tag="t4") == sc.expected[4]
    # branch data files live in the shared table-root bucket directory
    branch_only = pw.scan_file_names(sc.warehouse, sc.identifier, branch="b1") - pw.scan_file_names(
        sc.warehouse, sc.identifier
    )
    assert len(branch_only) == 2 and all((sc.root / "bucket-0" / n).is_file() for n in branch_only)


def test_path_directory(tmp_path: Path) -> None:
    sc = pw.path_directory(tmp_path)
    names = pw.scan_file_names(sc.warehouse, sc.identifier)
    assert names and all((sc.root / "data").rglob(n) for n in names)
    assert {p.parent.parent.parent.name for p in sc.root.rglob("*.parquet")} == {"data"}
    assert [r["id"] for r in pw.read_rows(sc.warehouse, sc.identifier)] == [1, 3, 99]


def test_unpartitioned_pk(tmp_path: Path) -> None:
    sc = pw.unpartitioned_pk_dv(tmp_path)
    rows = pw.read_rows(sc.warehouse, sc.identifier)
    assert [(r["id"], r["v"]) for r in rows] == [(0, "b"), (1, "b"), (3, "a"), (4, "a"), (5, "c")]
    assert len(pw.read_rows(sc.warehouse, sc.identifier, snapshot_id=2)) == 5


def test_append_deletion_vectors(tmp_path: Path) -> None:
    sc = pw.append_deletion_vectors(tmp_path)
    assert [len(sc.expected[s]) for s in sc.snapshot_ids] == [5, 8, 7, 6]
    assert len(list((sc.root / "index").iterdir())) == 2
    snapshot = json.loads((sc.root / "snapshot" / "snapshot-4").read_text())
    assert snapshot["indexManifest"].startswith("index-manifest-")
    assert (sc.root / "manifest" / snapshot["indexManifest"]).is_file()
    # deletes do not rewrite data files
    assert pw.scan_file_names(sc.warehouse, sc.identifier, snapshot_id=2) == pw.scan_file_names(
        sc.warehouse, sc.identifier
    )


def test_many_commits(tmp_path: Path) -> None:
    sc = pw.many_commits(tmp_path, n=30)
    assert len(sc.snapshot_ids) == 30
    assert len(sc.expected[14]) == 14 and len(sc.expected[15]) == 1 and len(sc.expected[30]) == 16
    assert any(kind == pw.DELETE for kind, _ in pw.delta_entries(sc.warehouse, sc.identifier, 15))


def test_drop_partitions_and_truncate(tmp_path: Path) -> None:
    sc = pw.append_partitioned(tmp_path, commits=4)
    table = pw.open_table(sc.warehouse, sc.identifier)
    sid = pw.drop_partitions(table, [{"dt": "2024-01-02", "hr": 1}])
    assert sid == 5
    rows = pw.read_rows(sc.warehouse, sc.identifier)
    assert rows and all((r["dt"], r["hr"]) != ("2024-01-02", 1) for r in rows)
    assert len(rows) < len(sc.expected[4])
    assert pw.truncate(table) == 6
    assert pw.read_rows(sc.warehouse, sc.identifier) == []
    assert pw.read_rows(sc.warehouse, sc.identifier, tag="mid") == sc.rows_at_tag("mid")


def test_scan_at_root_matches_catalog(tmp_path: Path) -> None:
    sc = pw.append_partitioned(tmp_path)
    for sid in sc.snapshot_ids:
        assert pw.scan_file_names_at_root(sc.root, snapshot_id=sid) == pw.scan_file_names(
            sc.warehouse, sc.identifier, snapshot_id=sid
        )
    assert pw.read_rows_at_root(sc.root, tag="mid") == sc.rows_at_tag("mid")


def test_scan_java_written_avro_fixture() -> None:
    name = "append_with_multiple_ts_precision_and_timezone"
    root = JAVA_FIXTURES / "avro" / f"{name}.db" / name
    names = pw.scan_file_names_at_root(root)
    assert names == pw.scan_file_names(JAVA_FIXTURES / "avro", f"{name}.{name}")
    assert names and all(list(root.rglob(n)) for n in names)


def test_make_sample_table_script(tmp_path: Path) -> None:
    script = REPO / "scripts" / "make_sample_table.py"
    for _ in range(2):  # rerunning recreates the table
        out = subprocess.run(
            [sys.executable, str(script), str(tmp_path)], capture_output=True, text=True, check=True
        )
        root = Path(out.stdout.strip())
        assert out.stdout.count("\n") == 1 and root == tmp_path / "demo.db" / "orders"
        assert len(list((root / "snapshot").glob("snapshot-*"))) == 12
    assert sorted(p.name for p in (root / "tag").iterdir()) == ["tag-v10", "tag-v3"]
    assert len(pw.read_rows(tmp_path, "demo.orders", tag="v3")) == 9
    assert pw.read_rows(tmp_path, "demo.orders", snapshot_id=8) != pw.read_rows(
        tmp_path, "demo.orders", snapshot_id=7
    )
