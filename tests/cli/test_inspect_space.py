"""inspect's "where the bytes are": every file on storage in one category, each category's
"freed now" is what its command then frees on the same table, the file-size histogram
agrees with the live files and with compact's own plan, and the picture reads on a pipe."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from support import pypaimon_writer as pw
from support.fixtures import Run
from support.invariants import age_tree, plant


def _copy(s: pw.Scenario, wh: Path) -> Path:
    root = wh / s.root.parent.name / s.root.name
    shutil.copytree(s.root, root, symlinks=True)
    return root


def _space(run: Run, root: Path) -> dict[str, dict[str, Any]]:
    doc = run.json("inspect", root)
    space = doc["summary"]["space"]
    assert space["bytes"] == doc["summary"]["storage"]["bytes"]
    assert sum(c["bytes"] for c in space["categories"]) == space["bytes"]
    assert sum(c["files"] for c in space["categories"]) == space["files"]
    return {c["name"]: c for c in space["categories"]}


def _deleted_bytes(doc: dict[str, Any], kinds: set[str] | None = None) -> int:
    """What a run deleted, measured on disk before it ran (its plan's delete actions)."""
    return sum(
        a["size_on_disk"]
        for phase in doc["plan"]["phases"]
        for a in phase["actions"]
        if a["op"] == "delete" and (kinds is None or a["kind"] in kinds)
    )


def _with_sizes(doc: dict[str, Any]) -> dict[str, Any]:
    for phase in doc["plan"]["phases"]:
        for a in phase["actions"]:
            path = Path(a["path"])
            a["size_on_disk"] = path.stat().st_size if path.is_file() else 0
    return doc


def test_snapshots_freed_now_is_what_expire_snapshots_frees(
    run: Run, scenarios: dict[str, pw.Scenario], tmp_path: Path
) -> None:
    root = _copy(scenarios["many_commits"], tmp_path)
    schema = root / "schema" / "schema-0"
    data = json.loads(schema.read_text())
    data["options"].update({"snapshot.num-retained.max": "5", "snapshot.num-retained.min": "1"})
    schema.write_text(json.dumps(data))
    space = _space(run, root)
    assert space["live"]["bytes"] > 0 and space["snapshots"]["bytes"] > 0
    freed_now = space["snapshots"]["reclaimable_bytes"]
    assert 0 < freed_now <= space["snapshots"]["bytes"]
    plan = _with_sizes(run.json("expire-snapshots", root, "--dry-run"))
    # snapshot JSON files and hints are metadata, not counted as snapshots' data
    data_kinds = {"data", "extra", "manifest", "manifest-list", "index-manifest", "index"}
    assert _deleted_bytes(plan, data_kinds) == freed_now
    assert run("expire-snapshots", root).exit_code == 0
    after = _space(run, root)
    assert after["snapshots"]["reclaimable_bytes"] == 0


def test_branch_and_orphan_bytes_are_what_cleaning_frees(
    run: Run, scenarios: dict[str, pw.Scenario], tmp_path: Path
) -> None:
    root = _copy(scenarios["tags_consumers_branches"], tmp_path)
    age_tree(root)
    orphan = plant(root / "bucket-0" / "data-orphan-0.parquet", content=b"x" * 1234)
    space = _space(run, root)
    assert space["orphans"]["bytes"] == 1234 == space["orphans"]["reclaimable_bytes"]
    assert space["branches"]["command"] == "delete-branch"
    branch_only = space["branches"]["bytes"]
    assert branch_only > 0
    cleaned = _with_sizes(run.json("delete-orphan-files", root, "--dry-run"))
    assert _deleted_bytes(cleaned) == 1234 and orphan.exists()
    assert run("delete-branch", root, "b1").exit_code == 0
    age_tree(root)
    branch_files = _with_sizes(run.json("delete-orphan-files", root, "--dry-run"))
    # b1's own data files and manifests, plus the planted orphan (the branch's JSON, which
    # counts as metadata, went with delete-branch)
    assert _deleted_bytes(branch_files) == branch_only + 1234


def test_file_sizes_agree_with_live_files_and_compact(
    run: Run, scenarios: dict[str, pw.Scenario], tmp_path: Path
) -> None:
    root = _copy(scenarios["append_partitioned"], tmp_path)
    doc = run.json("inspect", root)
    sizes = doc["summary"]["file_sizes"]
    assert [c["label"] for c in sizes["size_classes"]][0] == "<1M"
    parts = sizes["partitions"]
    assert sum(p["files"] for p in parts) == doc["summary"]["live"]["files"]
    assert all(sum(p["histogram"]) == p["files"] for p in parts)
    compact = run.json("compact", root, "--dry-run")["plan"]["details"]
    assert sum(p["compact"]["files"] for p in parts) == compact["files_before"]
    assert (
        sum(p["compact"]["files_after_estimate"] for p in parts) == compact["files_after_estimate"]
    )
    assert sizes["compact_refused"] is None


def test_the_picture_on_a_pipe_and_without_storage(
    run: Run, scenarios: dict[str, pw.Scenario], tmp_path: Path
) -> None:
    root = _copy(scenarios["tags_consumers_branches"], tmp_path)
    out = run("inspect", root).stdout
    assert "\x1b[" not in out  # no colour codes when stdout is not a terminal
    assert "where the bytes are" in out and "only other branches" in out
    assert "delete-branch, then delete-orphan-files" in out
    assert "compact would rewrite" in out
    bars = [line for line in out.splitlines() if "█" in line or "░" in line]
    assert bars and all(len(line) <= 80 for line in bars)
    skipped = run.json("inspect", root, "--skip-storage")["summary"]
    assert skipped["space"] is None and skipped["file_sizes"] is not None
