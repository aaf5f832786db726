"""Finishing an interrupted expiry that also expired long-lived changelogs never brings them
back (found by the property test, issue 22).

With a decoupled changelog lifecycle, one expire-snapshots plan first writes
``changelog/changelog-N`` for every snapshot it expires (pointers first), and later, in the
same plan, expires the oldest long-lived changelogs with their manifests. Finishing its journal
re-ran the pointer writes: the changelogs the plan had already expired came back, pointing at
manifest lists already deleted (or quarantined), and with ``--quarantine`` every later run
failed moving them again."""

from __future__ import annotations

import contextlib
import itertools
import shutil
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from support import pypaimon_writer as pw
from support.invariants import Crash, CrashingFileIO, assert_no_dangling_references
from support.java_paimon import assert_java_ok

from core.errors import StorageError
from core.io import fileio as fileio_module

IDENT = "db.t"
OPTIONS = {
    "bucket": "1",
    "snapshot.num-retained.min": "2",
    "snapshot.num-retained.max": "3",
    "snapshot.time-retained": "1 ms",
    # decoupled: changelogs outlive their snapshots, then expire by these (time: 1 ms)
    "changelog.num-retained.max": "30",
    "changelog.num-retained.min": "4",
}


def _table(wh: Path) -> Path:
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string())])
    table = pw.create_table(wh, IDENT, schema, primary_keys=("id",), options=OPTIONS)
    for i in range(6):
        pw.append(table, [{"id": i, "v": f"v{i}"}])
    return pw.root_of(table)


def _changelogs(root: Path) -> list[str]:
    return sorted(p.name for p in (root / "changelog").glob("changelog-*"))


def _interrupted(
    run: Any, monkeypatch: pytest.MonkeyPatch, root: Path, n: int, args: list[str], *, kill: bool
) -> int:
    """Runs expire-snapshots failing (or dying) at its n-th mutating operation; returns how
    many it reached."""
    fio = CrashingFileIO(n, crash=kill)
    monkeypatch.setattr(fileio_module, "FileIO", lambda *_a, **_k: fio)
    with contextlib.suppress(Crash, StorageError):
        run("expire-snapshots", root, *args)
    monkeypatch.undo()
    return fio.count


@pytest.mark.parametrize("quarantine", [False, True], ids=["delete", "quarantine"])
def test_interrupted_expiry_never_resurrects_expired_changelogs(
    run: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, quarantine: bool
) -> None:
    args = ["--quarantine"] if quarantine else []
    source = _table(tmp_path / "source")
    reference = tmp_path / "reference"
    shutil.copytree(source, reference)
    assert run("expire-snapshots", reference, *args).exit_code == 0
    expected = _changelogs(reference)
    assert expected  # some changelogs outlive their snapshots...
    assert "changelog-1" not in expected  # ...and the oldest expire in the same plan

    for n in itertools.count(1, 4):
        root = tmp_path / f"run{n}"
        shutil.copytree(source, root)
        if _interrupted(run, monkeypatch, root, n, args, kill=False) < n:
            break  # the run ended before its n-th mutating operation: every point covered
        assert_no_dangling_references(root)
        # the run finishing the journal dies right after its first change: still whole
        _interrupted(run, monkeypatch, root, 2, [], kill=True)
        assert_no_dangling_references(root)
        finished = run("expire-snapshots", root)
        assert finished.exit_code == 0, (n, finished.stdout, finished.stderr)
        assert not list((root / ".paimon-cli" / "journal").glob("*.json")), n
        assert_no_dangling_references(root)
        assert _changelogs(root) == expected, n
        shutil.rmtree(root)
    assert n > 8


class _ManifestsRefused(CrashingFileIO):
    """Refuses every manifest deletion or move: the phase after the changelog expiry's
    own changelog files."""

    def __init__(self) -> None:
        super().__init__(0)

    def delete(self, path: str) -> bool:
        if "/manifest/" in path:
            raise StorageError(f"injected failure on {path}")
        return super().delete(path)

    def move(self, src: str, dst: str, *, replace: bool = False) -> bool:
        if "/manifest/" in src:
            raise StorageError(f"injected failure on {src}")
        return super().move(src, dst, replace=replace)


@pytest.mark.java
def test_finished_quarantined_expiry_reads_in_java(
    run: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, java: Any
) -> None:
    root = _table(tmp_path / "wh")
    monkeypatch.setattr(fileio_module, "FileIO", lambda *_a, **_k: _ManifestsRefused())
    assert run("expire-snapshots", root, "--quarantine").exit_code == 1
    monkeypatch.undo()
    assert run("expire-snapshots", root).exit_code == 0
    assert_no_dangling_references(root)
    assert "changelog-1" not in _changelogs(root)
    assert_java_ok(java.verify(root))
