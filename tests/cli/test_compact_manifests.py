"""paimon compact --manifests: Paimon's compact_manifest on tables pypaimon wrote one
manifest per commit: one COMPACT snapshot of merged manifests, every snapshot and tag reads
as before (pypaimon and Java), a writer's commit made meanwhile is kept, and
expire-snapshots later removes the replaced manifests."""

from __future__ import annotations

import shutil
import signal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from support import pypaimon_writer as pw
from support.fixtures import Run
from support.invariants import (
    SignalAt,
    assert_no_dangling_references,
    assert_rows_intact,
    tree_state,
)
from support.java_paimon import assert_same_rows

import core.ops.compaction.compact_manifests as cm
from core.io import fileio as fileio_module
from core.io.fileio import FileIO
from core.ops.lifecycle import run as run_op
from core.runtime.executors.local import LocalExecutor
from core.table.table import open_table


def _copy(scenario: pw.Scenario, tmp_path: Path) -> tuple[Path, Path]:
    """A copy of a session scenario: (warehouse, table root)."""
    wh = tmp_path / "wh"
    root = wh / scenario.root.parent.name / scenario.root.name
    shutil.copytree(scenario.root, root, symlinks=True)
    return wh, root


def _data_manifests(root: Path, snapshot_id: int | None = None) -> list[Any]:
    table = open_table(str(root))
    snap = (
        table.snapshots.latest() if snapshot_id is None else table.snapshots.snapshot(snapshot_id)
    )
    assert snap is not None
    return table.data_manifests(snap)


def test_dry_run_names_the_merge_and_changes_nothing(
    run: Run, scenarios: dict[str, pw.Scenario], tmp_path: Path
) -> None:
    _wh, root = _copy(scenarios["many_commits"], tmp_path)
    state = tree_state(root)
    doc = run.json("compact", root, "--manifests", "--dry-run")
    d = doc["plan"]["details"]
    assert doc["dry_run"] is True and doc["report"] is None
    assert d["target"] == "manifests" and d["merge"] == "full" and d["changed"] is True
    assert d["manifests_before"] == len(_data_manifests(root)) == 30
    # the overwrite at 15 deleted 14 files: their ADD and DELETE entries cancel
    assert d["entries_before"] == 30 + 14 and d["entries_after"] == 16
    assert d["config"]["manifest.target-file-size"] == {
        "value": 8 * 1024 * 1024,
        "source": "default",
    }
    quiet = run("compact", root, "--manifests", "--dry-run", "-q")
    assert len(quiet.stdout.splitlines()) == 30
    human = run("compact", root, "--manifests", "--dry-run")
    assert "30 data manifests" in human.stdout and "44 entries -> 16" in human.stdout
    assert tree_state(root) == state


def test_merges_one_manifest_per_commit_and_every_reader_agrees(
    run: Run, scenarios: dict[str, pw.Scenario], tmp_path: Path, java: Any
) -> None:
    s = scenarios["append_partitioned"]
    wh, root = _copy(s, tmp_path)
    table = pw.open_table(wh, s.identifier)
    for i in range(12):  # pypaimon never merges: one more manifest per commit
        pw.append(table, [{"id": 100 + i, "dt": "2024-01-02", "hr": i % 3, "v": f"x{i}"}])
    latest = pw.latest_snapshot_id(table)
    assert latest is not None
    expected = pw.read_rows_at_root(root)
    java_before = java.verify(root)
    before = _data_manifests(root)
    assert len(before) >= 18

    doc = run.json("compact", root, "--manifests")
    report = doc["report"]
    assert report["status"] == "ok" and report["snapshot_id"] == latest + 1
    assert report["manifests_before"] == len(before) and report["manifests_after"] == 1
    assert report["entries_after"] == len(
        open_table(str(root)).live_files(open_table(str(root)).snapshots.latest())
    )
    snap = open_table(str(root)).snapshots.latest()
    assert snap is not None and snap.commit_kind == "COMPACT"
    assert snap.delta_record_count == 0 and snap.total_record_count == len(expected)
    after = _data_manifests(root)
    assert len(after) == 1 and after[0].num_deleted_files == 0
    assert pw.read_rows_at_root(root) == expected
    assert_rows_intact(wh, s)
    assert_no_dangling_references(root)
    assert_same_rows(java_before, java.verify(root))  # every snapshot and tag, in Java
    assert java.verify(root)["entries"][f"snapshot-{latest + 1}"]["rows"] == len(expected)

    again = run("compact", root, "--manifests")
    assert again.exit_code == 0 and "nothing to compact" in again.stdout
    assert open_table(str(root)).snapshots.latest_id() == latest + 1

    # The replaced manifests go with the snapshots that use them.
    manifests_before = {m.file_name for m in before}
    shutil.rmtree(root / "consumer")  # the scenario's consumer would keep snapshots from 4 on
    expire = run("expire-snapshots", root, "--retain-max", "1", "--retain-min", "1")
    assert expire.exit_code == 0, expire.stderr
    left = {p.name for p in (root / "manifest").iterdir()}
    tagged = {
        m.file_name
        for tag in open_table(str(root)).tags.tags()
        for m in open_table(str(root)).data_manifests(tag.snapshot)
    }
    assert not (manifests_before - tagged) & left
    assert pw.read_rows_at_root(root) == expected
    assert_no_dangling_references(root)


def test_primary_key_and_deletion_vector_tables(
    run: Run, scenarios: dict[str, pw.Scenario], tmp_path: Path
) -> None:
    for name in ("pk_table", "unpartitioned_pk_dv"):
        s = scenarios[name]
        wh, root = _copy(s, tmp_path / name)
        expected = pw.read_rows_at_root(root)
        index_before = open_table(str(root)).snapshots.latest().index_manifest  # type: ignore[union-attr]
        doc = run.json("compact", root, "--manifests")
        assert doc["report"]["status"] == "ok", name
        latest = open_table(str(root)).snapshots.latest()
        assert latest is not None and latest.index_manifest == index_before
        assert pw.read_rows_at_root(root) == expected
        assert_rows_intact(wh, s)
        assert_no_dangling_references(root)


class _RacingFileIO(FileIO):
    """Lets a writer commit the moment before our snapshot is created."""

    def __init__(self, snapshot_path: str, writer: Any) -> None:
        super().__init__()
        self.snapshot_path = snapshot_path
        self.writer = writer

    def write_if_absent(self, path: str, data: bytes) -> bool:
        if path == self.snapshot_path and self.writer is not None:
            writer, self.writer = self.writer, None
            pw.append(writer, [{"id": 999, "v": "writer"}])
        return super().write_if_absent(path, data)


def test_a_writer_committing_meanwhile_is_kept(
    scenarios: dict[str, pw.Scenario], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A writer takes our snapshot id while we publish: the commit merges the writer's
    snapshot again and lands on top of it; the writer's row stays."""
    s = scenarios["many_commits"]
    wh, root = _copy(s, tmp_path)
    merged_on: list[int] = []
    real = cm.merge_snapshot

    def recording(table: Any, snapshot: Any) -> Any:
        merged_on.append(snapshot.id)
        return real(table, snapshot)

    monkeypatch.setattr(cm, "merge_snapshot", recording)
    fileio = _RacingFileIO(str(root / "snapshot" / "snapshot-31"), pw.open_table(wh, s.identifier))
    table = open_table(str(root), fileio=fileio)
    with LocalExecutor(1) as ex:
        outcome = run_op(cm.CompactManifests(), table, executor=ex)
    assert outcome.result is not None and outcome.result.commit is not None
    assert merged_on == [30, 31]  # planned on 30, merged again on the writer's 31
    snap = open_table(str(root)).snapshots.latest()
    assert snap is not None and snap.id == 32 and snap.commit_kind == "COMPACT"
    assert outcome.result.commit.attempts == 2
    rows = pw.read_rows_at_root(root)
    assert {"id": 999, "v": "writer"} in rows and len(rows) == 17
    assert len(_data_manifests(root)) == 1
    assert_no_dangling_references(root)


def test_partition_statistics_keep_manifests_far_from_deletes(run: Run, tmp_path: Path) -> None:
    """Full compaction reads only manifests whose partition range may hold a deleted file's
    partition: with a tiny target every manifest is big enough to stay, so only the
    overwrite's manifest and those holding the overwritten files are rewritten."""
    schema = pa.schema([("id", pa.int64()), ("p", pa.int32())])
    table = pw.create_table(tmp_path, "db.parts", schema, partition_keys=["p"])
    for p in range(6):
        pw.append(table, [{"id": p, "p": p}])
    pw.overwrite(table, [{"id": 100, "p": 2}], {"p": 2})
    root = pw.table_root(tmp_path, "db.parts")
    expected = pw.read_rows_at_root(root)
    doc = run.json("compact", root, "--manifests", "--options", "manifest.target-file-size=1 b")
    d = doc["plan"]["details"]
    actions = [m["action"] for m in d["manifests"]]
    # commits 1..6 add p=0..5; commit 7 deletes p=2's file and adds the new one
    assert actions == ["kept", "kept", "rewritten", "kept", "kept", "kept", "rewritten"]
    assert d["entries_after"] == 6
    assert pw.read_rows_at_root(root) == expected
    assert_no_dangling_references(root)


@pytest.mark.parametrize(
    ("args", "phrase"),
    [
        (["--partition", "dt=x"], "does not apply with --manifests"),
        (["--compact-strategy", "full"], "does not apply with --manifests"),
        (["--target-file-size", "1 mb"], "does not apply with --manifests"),
    ],
)
def test_data_file_options_are_usage_errors(
    run: Run, scenarios: dict[str, pw.Scenario], tmp_path: Path, args: list[str], phrase: str
) -> None:
    _wh, root = _copy(scenarios["many_commits"], tmp_path)
    result = run("compact", root, "--manifests", *args)
    assert result.exit_code == 2 and phrase in result.stderr


def test_a_signal_while_publishing_leaves_the_commit_whole(
    run: Run,
    scenarios: dict[str, pw.Scenario],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _wh, root = _copy(scenarios["many_commits"], tmp_path)
    expected = pw.read_rows_at_root(root)
    fio = SignalAt(signal.SIGINT, marker="/snapshot/snapshot-31")
    monkeypatch.setattr(fileio_module, "FileIO", lambda *_a, **_k: fio)
    result = run("compact", root, "--manifests")
    monkeypatch.undo()
    assert fio.sent and result.exit_code == 130 and "interrupted by SIGINT" in result.stderr
    latest = open_table(str(root)).snapshots.latest()
    assert latest is not None and latest.id == 31 and latest.commit_kind == "COMPACT"
    assert len(_data_manifests(root)) == 1  # the commit stands whole
    assert pw.read_rows_at_root(root) == expected
    assert_no_dangling_references(root)
