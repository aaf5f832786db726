"""bench/make_big_table.py writes a valid table: pypaimon and core read it alike (no timing)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from support import pypaimon_writer as pw

from core.format.model import FileKind
from core.table.table import open_table

MAKE_BIG_TABLE = Path(__file__).resolve().parents[1] / "bench" / "make_big_table.py"

# 5 snapshots x 3 files over 2 partitions, overwrite every 2nd snapshot:
# s1 (pypaimon) 1 file per partition = 2; s2 overwrites p=1 (-1 +3) = 4; s3 appends 3 = 7
# (p=1, p=0, p=1); s4 overwrites p=0 (-2 +3) = 8; s5 appends 3 = 11.
EXPECTED_LIVE = {1: 2, 2: 4, 3: 7, 4: 8, 5: 11}


def test_generated_table_reads_the_same_in_pypaimon_and_core(tmp_path: Path) -> None:
    proc = subprocess.run(
        [
            sys.executable,
            str(MAKE_BIG_TABLE),
            "--out",
            str(tmp_path),
            "--snapshots",
            "5",
            "--files-per-snapshot",
            "3",
            "--partitions",
            "2",
            "--overwrite-every",
            "2",
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    root = Path(proc.stdout.strip().splitlines()[-1])
    assert root == tmp_path.resolve() / "bench.db" / "big"

    table = open_table(str(root))
    snapshots = table.snapshots.snapshots()
    assert [s.id for s in snapshots] == [1, 2, 3, 4, 5]
    assert [s.commit_kind for s in snapshots] == [
        "APPEND",
        "OVERWRITE",
        "APPEND",
        "OVERWRITE",
        "APPEND",
    ]
    times = [s.time_millis for s in snapshots]
    assert times == sorted(set(times))

    previous = None
    for snap in snapshots:
        live = {e.file.file_name for e in table.live_files(snap)}
        assert len(live) == EXPECTED_LIVE[snap.id]
        assert live == pw.scan_file_names_at_root(root, snapshot_id=snap.id)
        rows = pw.read_rows_at_root(root, snapshot_id=snap.id)
        assert len(rows) == snap.total_record_count

        delta = [
            e
            for m in table.manifest_list(snap, snap.delta_manifest_list)
            for e in table.manifest(m)
        ]
        added = sum(e.file.row_count for e in delta if e.kind is FileKind.ADD)
        deleted = sum(e.file.row_count for e in delta if e.kind is FileKind.DELETE)
        assert snap.delta_record_count == added - deleted
        assert (deleted > 0) == (snap.commit_kind == "OVERWRITE")

        # base = previous base + previous delta, as pypaimon commits without merging
        base = [m.file_name for m in table.manifest_list(snap, snap.base_manifest_list)]
        if previous is None:
            assert base == []
        else:
            assert base == [m.file_name for m in table.data_manifests(previous)]
        previous = snap
