"""A run whose deletions partly fail says which and why, exits 1 with status "partial",
keeps its journal, and the next run finishes the work."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support.invariants import assert_no_dangling_references

from core.errors import StorageError
from core.io.fileio import FileIO


def test_partial_expiry_then_completed(
    run, scenarios, copy_table, monkeypatch: pytest.MonkeyPatch
) -> None:
    root: Path = copy_table(scenarios["many_commits"].root)
    real_delete = FileIO.delete

    def deny_parquet(self: FileIO, path: str) -> bool:
        if path.endswith(".parquet"):
            raise StorageError(f"cannot delete {path}: Permission denied")
        return real_delete(self, path)

    monkeypatch.setattr(FileIO, "delete", deny_parquet)
    result = run("expire-snapshots", root, "--retain-min", "5", "--older-than", "0 ms", "--json")
    assert result.exit_code == 1
    doc = json.loads(result.stdout)
    assert doc["report"]["status"] == "partial"
    failures = [f for p in doc["report"]["phases"] for f in p["failures"]]
    assert failures and all("Permission denied" in f["error"] for f in failures)
    assert all(f["path"].endswith(".parquet") for f in failures)
    assert list((root / ".paimon-cli" / "journal").iterdir())
    assert_no_dangling_references(root)  # pointers went first: nothing dangles

    human = run("expire-snapshots", root, "--retain-min", "5", "--older-than", "0 ms")
    assert human.exit_code == 1
    assert "Permission denied" in human.stdout and "partial" in human.stdout

    monkeypatch.setattr(FileIO, "delete", real_delete)
    done = run.json("expire-snapshots", root, "--retain-min", "5", "--older-than", "0 ms")
    assert done["report"]["status"] == "ok"
    assert len(done["report"]["resumed_journals"]) >= 1
    assert not (root / ".paimon-cli" / "journal").exists()
    assert not any(Path(f["path"]).exists() for f in failures)
