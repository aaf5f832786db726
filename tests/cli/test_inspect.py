"""`paimon inspect`: views, JSON documents, --check, and bad input."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pyarrow as pa
import pytest
from pypaimon.schema.data_types import AtomicType
from pypaimon.schema.schema_change import SchemaChange
from support import pypaimon_writer as pw

from core.table.table import open_table

VIEWS = [
    "summary",
    "snapshots",
    "files",
    "manifests",
    "partitions",
    "tags",
    "consumers",
    "branches",
    "schema",
    "options",
    "retention",
]


@pytest.mark.parametrize("view", VIEWS)
def test_every_view_renders_for_people_and_machines(run, scenarios, view: str) -> None:
    root = scenarios["tags_consumers_branches"].root
    human = run("inspect", root, view)
    assert human.exit_code == 0, human.stderr
    assert human.stdout.strip()
    doc = run.json("inspect", root, view)
    assert doc["command"] == "inspect" and doc["schema_version"] == 1
    assert doc["view"] == view and view in doc
    assert doc["table"] == str(root)


def test_summary_numbers_and_retention(run, scenarios) -> None:
    s = scenarios["append_partitioned"]
    doc = run.json("inspect", s.root)["summary"]
    assert doc["snapshots"] == {"count": 6, "earliest": 1, "latest": 6}
    assert doc["live"]["rows"] == len(s.expected[6])
    assert doc["storage"]["bytes"] >= doc["live"]["bytes"] > 0
    assert [t["name"] for t in doc["tags"]] == ["mid"]
    assert [c["id"] for c in doc["consumers"]] == ["reader"]
    retention = doc["retention"]
    # 6 snapshots < retain-min 10: nothing can go, and the summary says why.
    assert retention["expirable_snapshots"] == 0
    assert retention["stopped_by"] in ("retain-min", "consumer")


def test_files_view_at_tag_and_snapshot(run, scenarios) -> None:
    s = scenarios["tags_consumers_branches"]
    at_tag = run.json("inspect", s.root, "files", "--tag", "t2")["files"]
    at_snap = run.json("inspect", s.root, "files", "--snapshot", "2")["files"]
    assert at_tag == at_snap
    assert {f["name"] for f in at_tag} == pw.scan_file_names(
        s.warehouse, s.identifier, snapshot_id=2
    )


def test_partitions_view_sums(run, scenarios) -> None:
    s = scenarios["append_partitioned"]
    rows = run.json("inspect", s.root, "partitions")["partitions"]
    assert sum(r["rows"] for r in rows) == len(s.expected[6])
    assert all(r["path"].startswith("dt=") for r in rows)


def test_db_table_with_warehouse_and_glob(run, scenarios) -> None:
    s = scenarios["many_commits"]
    doc = run.json("inspect", s.identifier, "--warehouse", s.warehouse, "snapshots")
    assert len(doc["snapshots"]) == 30
    result = run("inspect", "db.*", "--warehouse", s.warehouse, "--json", "--skip-storage")
    assert result.exit_code == 0, result.stderr
    multi = json.loads(result.stdout)
    assert multi["summary"]["failed"] == 0
    assert multi["summary"]["tables"] == len(scenarios)


def test_glob_isolates_a_broken_table(run, scenarios, tmp_path: Path) -> None:
    wh = tmp_path / "wh"
    for name in ("many_commits", "path_directory"):
        shutil.copytree(scenarios[name].root, wh / "db.db" / scenarios[name].root.name)
    (wh / "db.db" / "many_commits" / "snapshot" / "snapshot-30").write_text("{not json")
    result = run("inspect", "db.*", "--warehouse", wh, "--skip-storage")
    assert result.exit_code == 1
    assert "2 tables, 1 failed" in result.stdout
    assert "path_directory" in result.stdout


def test_check_names_a_deleted_data_file(run, scenarios, copy_table) -> None:
    root = copy_table(scenarios["append_partitioned"].root)
    assert run("inspect", root, "--check").exit_code == 0
    victim = next(root.glob("dt=*/hr=*/bucket-0/*.parquet"))
    files = run.json("inspect", root, "files")["files"]
    if victim.name not in {f["name"] for f in files}:
        victim = Path(files[0]["path"])
    victim.unlink()
    result = run("inspect", root, "--check")
    assert result.exit_code == 3
    assert victim.name in result.stdout
    doc = json.loads(run("inspect", root, "--check", "--json").stdout)
    assert doc["check"]["ok"] is False
    assert victim.name in {Path(p["path"]).name for p in doc["check"]["problems"]}
    # -q, a CI gate: the exit status, and the problem paths one per line.
    quiet = run("inspect", root, "--check", "-q")
    assert quiet.exit_code == 3
    assert quiet.stdout.splitlines() == [p["path"] for p in doc["check"]["problems"]]


def test_quiet_inspect_prints_nothing_when_all_is_well(run, scenarios) -> None:
    root = scenarios["append_partitioned"].root
    for args in (["--check"], ["summary"], ["files"]):
        result = run("inspect", root, *args, "-q")
        assert result.exit_code == 0, result.stderr
        assert (result.stdout, result.stderr) == ("", "")


def _evolved(tmp_path: Path) -> Path:
    """One commit, ALTER TABLE ADD COLUMN, one commit (pypaimon): snapshot 1 and its data
    file name schema 0, snapshot 2 schema 1."""
    wh = tmp_path / "wh"
    schema = pa.schema([("id", pa.int64()), ("v", pa.string())])
    table = pw.create_table(wh, "db.evolved", schema)
    pw.append(table, [{"id": 1, "v": "a"}])
    pw.catalog(wh).alter_table("db.evolved", [SchemaChange.add_column("w", AtomicType("STRING"))])
    pw.append(pw.open_table(wh, "db.evolved"), [{"id": 2, "v": "b", "w": "x"}])
    return pw.table_root(wh, "db.evolved")


def test_check_names_a_lost_schema_every_reader_needs(run, tmp_path: Path) -> None:
    """Issue 22 defect 8: without schema-0 no reader opens snapshot 1 (its data file was
    written with it); --check says so and exits 1."""
    root = _evolved(tmp_path)
    assert run("inspect", root, "--check").exit_code == 0
    (root / "schema" / "schema-0").unlink()
    with pytest.raises(AttributeError):  # pypaimon 2.1 trips over the schema it cannot find
        pw.read_rows(tmp_path / "wh", "db.evolved", snapshot_id=1)
    result = run("inspect", root, "--check", "--json")
    assert result.exit_code == 3
    (problem,) = json.loads(result.stdout)["check"]["problems"]
    assert problem["path"] == str(root / "schema" / "schema-0")
    assert (problem["kind"], problem["role"]) == ("missing", "schema")
    assert problem["referenced_by"] == "snapshot 1"
    human = run("inspect", root, "--check")
    assert human.exit_code == 3 and "schema-0" in human.stdout


def test_check_names_a_schema_only_the_data_files_name(run, tmp_path: Path) -> None:
    """Snapshot 1 expired: snapshot 2 names schema 1, but its older data file was written
    with schema 0, which a reader still opens; without it --check fails on snapshot 2."""
    root = _evolved(tmp_path)
    assert run("expire-snapshots", root, "--retain-max", "1", "--retain-min", "1").exit_code == 0
    snapshots = open_table(str(root)).snapshots
    assert snapshots.ids() == [2] and snapshots.snapshot(2).schema_id == 1
    (root / "schema" / "schema-0").unlink()
    with pytest.raises(AttributeError):  # pypaimon 2.1 trips over the schema it cannot find
        pw.read_rows(tmp_path / "wh", "db.evolved", snapshot_id=2)
    result = run("inspect", root, "--check", "--json")
    assert result.exit_code == 3
    (problem,) = json.loads(result.stdout)["check"]["problems"]
    assert problem["path"] == str(root / "schema" / "schema-0")
    assert (problem["kind"], problem["role"]) == ("missing", "schema")
    assert problem["referenced_by"] == "snapshot 2"


def test_check_names_a_corrupt_schema(run, tmp_path: Path) -> None:
    root = _evolved(tmp_path)
    (root / "schema" / "schema-0").write_text("{")
    result = run("inspect", root, "--check", "--json")
    assert result.exit_code == 3, result.stderr
    problems = json.loads(result.stdout)["check"]["problems"]
    assert [(p["path"], p["kind"]) for p in problems] == [
        (str(root / "schema" / "schema-0"), "unreadable")
    ]


# -- bad input: one clear line on stderr, exit 1 (2 for usage), no traceback ---------------------
def _assert_clean_error(result, code: int, phrase: str) -> None:
    assert result.exit_code == code, (result.stdout, result.stderr)
    assert phrase in result.stderr
    assert "Traceback" not in result.stderr and "Traceback" not in result.stdout


def test_missing_path(run, tmp_path: Path) -> None:
    _assert_clean_error(run("inspect", tmp_path / "nope"), 1, "does not exist")


def test_directory_that_is_not_a_table(run, tmp_path: Path) -> None:
    _assert_clean_error(run("inspect", tmp_path), 1, "not a Paimon table")


def test_corrupt_snapshot_json(run, scenarios, copy_table) -> None:
    root = copy_table(scenarios["many_commits"].root)
    (root / "snapshot" / "snapshot-30").write_text('{"version": 3, "id": ')
    _assert_clean_error(run("inspect", root), 1, "snapshot-30")


@pytest.mark.parametrize("damage", ["truncate", "garbage", "empty"])
def test_bad_manifest(run, scenarios, copy_table, damage: str) -> None:
    root = copy_table(scenarios["many_commits"].root)
    manifest = sorted((root / "manifest").glob("manifest-[0-9a-f]*"))[-1]
    data = manifest.read_bytes()
    manifest.write_bytes(
        {"truncate": data[: len(data) // 2], "garbage": b"\x00garbage" * 50, "empty": b""}[damage]
    )
    result = run("inspect", root, "files")
    files_ok = result.exit_code == 0  # the damaged manifest may not be in the latest view
    check = run("inspect", root, "--check", "--json")
    assert check.exit_code == 3
    problems = json.loads(check.stdout)["check"]["problems"]
    assert {Path(p["path"]).name for p in problems} == {manifest.name}
    assert "unreadable" in {p["kind"] for p in problems}
    if not files_ok:
        _assert_clean_error(result, 1, "corrupt metadata")


def test_missing_manifest_list(run, scenarios, copy_table) -> None:
    root = copy_table(scenarios["many_commits"].root)
    snap = json.loads((root / "snapshot" / "snapshot-30").read_text())
    (root / "manifest" / snap["deltaManifestList"]).unlink()
    _assert_clean_error(run("inspect", root, "files"), 1, "manifest list not found")


def test_unknown_option_values(run, scenarios, copy_table) -> None:
    root = copy_table(scenarios["many_commits"].root)
    _assert_clean_error(run("inspect", root, "nonsense-view"), 2, "nonsense-view")
    _assert_clean_error(run("inspect", root, "--parallelism", "0"), 2, "--parallelism")
    _assert_clean_error(run("inspect", root, "--timezone", "Mars/Olympus"), 2, "Mars/Olympus")
    _assert_clean_error(
        run("inspect", root, "files", "--snapshot", "1", "--tag", "x"), 2, "not both"
    )
    _assert_clean_error(run("inspect", "db.t"), 2, "--warehouse")


def test_bad_table_option_value_is_reported(run, scenarios, copy_table) -> None:
    root = copy_table(scenarios["many_commits"].root)
    schema_file = sorted((root / "schema").glob("schema-*"))[-1]
    schema = json.loads(schema_file.read_text())
    schema["options"]["snapshot.time-retained"] = "forever"
    schema_file.write_text(json.dumps(schema))
    doc = run.json("inspect", root)
    assert "snapshot.time-retained" in doc["summary"]["retention_error"]
    _assert_clean_error(run("inspect", root, "retention"), 2, "snapshot.time-retained")


def test_json_error_goes_to_stderr(run, tmp_path: Path) -> None:
    result = run("inspect", tmp_path / "nope", "--json")
    assert result.exit_code == 1
    assert result.stdout == ""
    assert json.loads(result.stderr)["error"]["kind"] == "table_not_found"


def test_debug_shows_traceback(run, tmp_path: Path) -> None:
    result = run("--debug", "inspect", tmp_path / "nope")
    assert result.exit_code == 1
    assert "Traceback" in result.stderr


def test_files_json_creation_time_is_an_instant_like_every_other(run, scenarios) -> None:
    s = scenarios["append_partitioned"]
    files = run.json("inspect", s.root, "files")["files"]
    snaps = run.json("inspect", s.root, "snapshots")["snapshots"]
    first, last = snaps[0]["time"]["epoch_ms"], snaps[-1]["time"]["epoch_ms"]
    for f in files:
        created = f["created"]
        assert set(created) == {"epoch_ms", "utc"} and created["utc"].endswith("Z")
        # pypaimon wrote the wall clock of this machine's zone, which is the default zone.
        assert first - 1000 <= created["epoch_ms"] <= last + 1000
        assert isinstance(f["creation_time"], str)  # the stored wall clock stays (additive)
    # The wall clock is read in --timezone: Tokyo is 9 h ahead of UTC, all year round.
    utc = run.json("inspect", s.root, "files", "--timezone", "UTC")["files"]
    tokyo = run.json("inspect", s.root, "files", "--timezone", "Asia/Tokyo")["files"]
    for a, b in zip(utc, tokyo, strict=True):
        assert a["created"]["epoch_ms"] - b["created"]["epoch_ms"] == 9 * 3600 * 1000
