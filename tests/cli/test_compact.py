"""paimon compact: options, dry run, JSON, refusals and exit codes."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pytest
from support import pypaimon_writer as pw
from support.fixtures import Run
from support.invariants import tree_state


@pytest.fixture
def small_files(tmp_path: Path) -> Path:
    schema = pa.schema([("id", pa.int64()), ("dt", pa.string()), ("s", pa.string())])
    table = pw.create_table(tmp_path, "db.small", schema, partition_keys=["dt"])
    for c in range(6):
        pw.append(
            table, [{"id": c * 2 + j, "dt": f"d{j}", "s": None if j else "x"} for j in range(2)]
        )
    return pw.table_root(tmp_path, "db.small")


def test_dry_run_plans_and_changes_nothing(run: Run, small_files: Path) -> None:
    state = tree_state(small_files)
    result = run("compact", small_files, "--dry-run")
    assert result.exit_code == 0, result.stderr
    assert "12 files" in result.stdout and "about 2 files" in result.stdout
    quiet = run("compact", small_files, "--dry-run", "-q")
    assert len(quiet.stdout.splitlines()) == 12
    doc = run.json("compact", small_files, "--dry-run", "--partition", "dt=d0")
    assert doc["dry_run"] is True and doc["report"] is None
    assert [t["partition"] for t in doc["plan"]["details"]["tasks"]] == [{"dt": "d0"}]
    assert tree_state(small_files) == state


def test_json_run_commits_and_pypaimon_reads_it(run: Run, small_files: Path) -> None:
    before = pw.read_rows_at_root(small_files)
    doc = run.json("compact", small_files, "--target-file-size", "64 mb")
    report = doc["report"]
    assert report["status"] == "ok" and report["files_before"] == 12
    assert report["files_after"] == 2 and report["rows_after"] == report["rows_before"] == 12
    assert doc["plan"]["details"]["config"]["target-file-size"]["source"] == "flag"
    assert pw.read_rows_at_root(small_files) == before
    check = run("inspect", small_files, "--check")
    assert check.exit_code == 0, check.stdout + check.stderr
    again = run("compact", small_files)
    assert again.exit_code == 0 and "nothing to compact" in again.stdout


@pytest.mark.parametrize(
    ("args", "phrase"),
    [
        (["--partition", "nope=1"], "not a partition key"),
        (["--partition", "dt"], "not key=value"),
        (["--compact-strategy", "major"], "unknown strategy"),
        (["--target-file-size", "lots"], "invalid size"),
    ],
)
def test_bad_input_is_a_usage_error(
    run: Run, small_files: Path, args: list[str], phrase: str
) -> None:
    state = tree_state(small_files)
    result = run("compact", small_files, *args)
    assert result.exit_code == 2
    assert phrase in result.stderr
    assert tree_state(small_files) == state


def _partial_update_table(tmp_path: Path) -> Path:
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string())])
    table = pw.create_table(
        tmp_path,
        "db.pu",
        schema,
        primary_keys=["id"],
        options={"bucket": "1", "merge-engine": "partial-update"},
    )
    pw.append(table, [{"id": 1, "v": "a"}, {"id": 2, "v": None}])
    pw.append(table, [{"id": 1, "v": None}, {"id": 2, "v": "b"}])
    return pw.table_root(tmp_path, "db.pu")


def test_unsupported_aggregate_function_is_refused(run: Run, tmp_path: Path) -> None:
    root = _partial_update_table(tmp_path)
    state = tree_state(root)
    result = run(
        "compact",
        root,
        "--json",
        "--options",
        "merge-engine=aggregation,fields.v.aggregate-function=theta_sketch",
    )
    assert result.exit_code == 1 and result.stdout == ""
    error = json.loads(result.stderr)["error"]
    assert error["kind"] == "unsupported_table"
    assert "fields.v.aggregate-function=theta_sketch" in error["message"]
    assert tree_state(root) == state


def test_partial_update_dry_run_names_the_engine_then_compacts(run: Run, tmp_path: Path) -> None:
    root = _partial_update_table(tmp_path)
    before = pw.read_rows_at_root(root)
    assert before == [{"id": 1, "v": "a"}, {"id": 2, "v": "b"}]
    dry = run("compact", root, "--dry-run")
    assert dry.exit_code == 0 and "merge engine partial-update" in dry.stdout
    doc = json.loads(run("compact", root, "--dry-run", "--json").stdout)
    assert doc["plan"]["details"]["merge"]["engine"] == "partial-update"
    assert run("compact", root).exit_code == 0
    assert pw.read_rows_at_root(root) == before


def test_merge_function_failure_is_a_clear_error(run: Run, tmp_path: Path) -> None:
    schema = pa.schema(
        [pa.field("id", pa.int64(), nullable=False), ("v", pa.int32()), ("rk", pa.string())]
    )
    table = pw.create_table(
        tmp_path,
        "db.agg",
        schema,
        primary_keys=["id"],
        options={"bucket": "1", "rowkind.field": "rk"},
    )
    pw.append(table, [{"id": 1, "v": 2**31 - 1, "rk": "+I"}])
    pw.append(table, [{"id": 1, "v": 1, "rk": "+I"}])
    root = pw.table_root(tmp_path, "db.agg")
    state = tree_state(root)
    result = run(
        "compact", root, "--options", "merge-engine=aggregation,fields.v.aggregate-function=sum"
    )
    assert result.exit_code == 1
    assert "int overflow" in result.stderr and "Traceback" not in result.stderr
    assert tree_state(root) == state


def test_row_tracking_dv_table_is_refused(run: Run, scenarios: dict[str, pw.Scenario]) -> None:
    # pypaimon writes append vectors only with data evolution / row tracking, which stays
    # refused (append tables with plain vectors: tests/java/test_compact_append_dv.py).
    root = scenarios["append_deletion_vectors"].root
    state = tree_state(root)
    result = run("compact", root)
    assert result.exit_code == 1
    assert "row-tracking.enabled=true" in result.stderr
    assert "deletion-vectors" not in result.stderr
    assert tree_state(root) == state


def test_vector_index_files_outside_the_table_are_refused(run: Run, small_files: Path) -> None:
    """New vector index files would go to global-index.external-path, which paimon-cli does
    not write: refused before anything is written."""
    state = tree_state(small_files)
    result = run(
        "compact",
        small_files,
        "--json",
        "--options",
        "deletion-vectors.enabled=true,global-index.external-path=/elsewhere/index",
    )
    assert result.exit_code == 1 and result.stdout == ""
    error = json.loads(result.stderr)["error"]
    assert error["kind"] == "unsupported_table"
    assert "global-index.external-path=/elsewhere/index" in error["message"]
    assert tree_state(small_files) == state
