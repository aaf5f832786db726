"""Invariants checked after destructive tests: not counts, but truths."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from core.errors import StorageError
from core.io.fileio import FileIO
from core.ops.inspection.check import check_table
from core.retention.references import collect_references
from core.runtime.clock import now_ms
from core.runtime.executors.local import LocalExecutor
from core.table.scan import ManifestCache, full_live_set
from core.table.table import PaimonTable, open_table
from support import pypaimon_writer as pw

DAY = 86_400


# -- preparing copies of real tables ---------------------------------------------------------
def copy_scenario(
    scenarios: dict[str, pw.Scenario], name: str, tmp_path: Path
) -> tuple[pw.Scenario, Path, Path]:
    """A writable copy of a pypaimon scenario: (scenario, warehouse, table root)."""
    s = scenarios[name]
    wh = tmp_path / "wh"
    root = wh / s.root.parent.name / s.root.name
    shutil.copytree(s.root, root, symlinks=True)
    return s, wh, root


def age(path: Path, days: float = 3) -> None:
    """Last modified ``days`` before the run's now (``PAIMON_CLI_NOW`` when a test pins it:
    a file aged by the wall clock would lie in the pinned now's future)."""
    t = now_ms() / 1000 - days * DAY
    os.utime(path, (t, t), follow_symlinks=False)


def age_tree(root: Path, days: float = 3) -> None:
    """Every file and directory below ``root`` last modified ``days`` ago."""
    for dirpath, dirs, files in os.walk(root):
        for name in files + dirs:
            age(Path(dirpath) / name, days)


def plant(path: Path, days: float = 3, content: bytes = b"orphan") -> Path:
    """A file nothing references, ``days`` old."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(content)
    age(path, days)
    return path


LEASE_PARTS = (".paimon-cli", "lease")


def _is_lease(dirpath: str) -> bool:
    return Path(dirpath).parts[-2:] == LEASE_PARTS


def tree_state(*roots: Path) -> dict[str, tuple[int, int]]:
    """Every file under the roots with size and mtime (ns): a dry run must not change it.
    The table lease is left out: every real run takes and releases it, one that refuses
    too (tests/core/test_lease.py checks it)."""
    out = {}
    for root in roots:
        for dirpath, _dirs, files in os.walk(root):
            if _is_lease(dirpath):
                continue
            for name in files:
                st = os.lstat(os.path.join(dirpath, name))
                out[os.path.join(dirpath, name)] = (st.st_size, st.st_mtime_ns)
    return out


def restore_refused(run: Any, root: Path, *args: str) -> str:
    """``paimon restore ROOT ARGS`` exits 1: its error, on one line."""
    result = run("restore", root, *args)
    assert result.exit_code == 1, result.stdout
    return " ".join(result.stderr.split())


def tree_state_without_runs(root: Path) -> dict[str, tuple[int, int]]:
    """``tree_state`` without the run history: every real run adds its record there, one
    that refuses too."""
    runs = str(root / ".paimon-cli" / "runs")
    return {p: v for p, v in tree_state(root).items() if not p.startswith(runs)}


def tree_digests(*roots: Path) -> dict[str, tuple[int, str]]:
    """Every file outside .paimon-cli/, relative to its root: size and content digest."""
    out = {}
    for root in roots:
        for dirpath, dirs, files in os.walk(root):
            dirs[:] = [d for d in dirs if d != ".paimon-cli"]
            for name in files:
                p = Path(dirpath) / name
                out[f"{root.name}/{p.relative_to(root)}"] = (
                    p.stat().st_size,
                    hashlib.sha256(p.read_bytes()).hexdigest(),
                )
    return out


def files_under(root: Path) -> set[str]:
    return {p for p in tree_state(root) if "/.paimon-cli/" not in p}


def assert_no_dangling_references(root: Path) -> None:
    """Every snapshot, tag and changelog present references only files that exist."""
    with LocalExecutor(4) as ex:
        report = check_table(open_table(str(root)), executor=ex)
    assert report.problems == (), report.problems[:5]


def assert_rows_intact(warehouse: Path, scenario: pw.Scenario) -> None:
    """Every snapshot still present and every tag reads back in pypaimon as before."""
    root = pw.table_root(warehouse, scenario.identifier)
    table = open_table(str(root))
    for sid in table.snapshots.ids():
        if sid in scenario.expected:
            got = pw.read_rows(warehouse, scenario.identifier, snapshot_id=sid)
            assert got == pw.sort_rows(scenario.expected[sid]), f"snapshot {sid}"
    present = set(table.tags.names())
    for tag in scenario.tags:
        if tag in scenario.tag_snapshots and tag in present:
            got = pw.read_rows(warehouse, scenario.identifier, tag=tag)
            assert got == pw.sort_rows(scenario.expected[scenario.tag_snapshots[tag]]), tag


def referenced_paths(table: PaimonTable, snapshots: Iterable[Any]) -> set[str]:
    """All files the given snapshot-shaped roots reference (oracle for expected deletions)."""
    out: set[str] = set()
    with LocalExecutor(2) as ex:
        cache = ManifestCache(table, ex)
        for snap in snapshots:
            live = full_live_set(table, snap, cache)
            collect_references(table, snap, live, lambda p, _s, _r: out.add(p))
    return out


class Crash(BaseException):
    """Simulated process death: not an error the tool may catch."""


class CrashingFileIO(FileIO):
    """Dies on the Nth mutating storage operation (write or delete): before it (``crash``:
    process death, else a storage error), or after it with an error answer (``applied``:
    the store did it and still answered 500, a dropped connection, a timeout)."""

    def __init__(self, fail_at: int, *, crash: bool = True, applied: bool = False) -> None:
        super().__init__()
        self.fail_at = fail_at
        self.crash = crash
        self.applied = applied
        self.count = 0

    def _tick(self, path: str) -> bool:
        """True when this operation is the one to fail after it was applied. The table
        lease's files are not counted: N is the Nth change of the command's own work."""
        if _is_lease(os.path.dirname(path)):
            return False
        self.count += 1
        if self.count != self.fail_at:
            return False
        if self.applied:
            return True
        if self.crash:
            raise Crash(path)
        raise StorageError(f"injected failure on {path}")

    def _answer(self, after: bool, path: str) -> None:
        if after:
            raise StorageError(f"injected error answer after {path} was applied")

    def write_bytes(self, path: str, data: bytes) -> None:
        after = self._tick(path)
        super().write_bytes(path, data)
        self._answer(after, path)

    def write_if_absent(self, path: str, data: bytes) -> bool:
        after = self._tick(path)
        created = super().write_if_absent(path, data)
        self._answer(after, path)
        return created

    def delete(self, path: str) -> bool:
        after = self._tick(path)
        deleted = super().delete(path)
        self._answer(after, path)
        return deleted

    def delete_empty_dir(self, path: str) -> bool:
        after = self._tick(path)
        removed = super().delete_empty_dir(path)
        self._answer(after, path)
        return removed

    def move(self, src: str, dst: str, *, replace: bool = False) -> bool:
        after = self._tick(src)
        moved = super().move(src, dst, replace=replace)
        self._answer(after, src)
        return moved


class SignalAt(FileIO):
    """Sends ``signum`` to this process right before the ``at``-th delete (or right
    before the first create of a ``marker`` file)."""

    def __init__(self, signum: int, *, at: int = 0, marker: str = "") -> None:
        super().__init__()
        self.signum = signum
        self.at = at
        self.marker = marker
        self.deletes = 0
        self.sent = False

    def _send(self) -> None:
        if not self.sent:
            self.sent = True
            os.kill(os.getpid(), self.signum)

    def delete(self, path: str) -> bool:
        self.deletes += 1
        if self.at and self.deletes == self.at:
            self._send()
        return super().delete(path)

    def write_if_absent(self, path: str, data: bytes) -> bool:
        if self.marker and self.marker in path:
            self._send()
        return super().write_if_absent(path, data)


# -- time travel for time-dependent tests (never sleep) ---------------------------------------
def set_snapshot_times(
    root: Path, times_ms: dict[int, int], *, watermarks: dict[int, int] | None = None
) -> None:
    """Rewrite ``timeMillis`` (and ``watermark``) in ``snapshot/snapshot-N`` as if the
    snapshots had been committed then; tags copied from a snapshot keep their own copy."""
    for sid, ms in times_ms.items():
        path = root / "snapshot" / f"snapshot-{sid}"
        data = json.loads(path.read_text(encoding="utf-8"))
        data["timeMillis"] = ms
        if watermarks and sid in watermarks:
            data["watermark"] = watermarks[sid]
        path.write_text(json.dumps(data), encoding="utf-8")


def assert_rust_reads_intact(wh: Any, table: Any) -> None:
    """Every snapshot still present and every tag still present reads back in pypaimon-rust
    (time travel: ``VERSION AS OF``) as right after it was written; nothing is dangling.

    ``wh`` is a ``rust_writer.RustWarehouse`` holding a copy of the ``rust_writer.RustTable``
    ``table``."""
    root = wh.table_root(table.name)
    present = open_table(str(root))
    for sid in present.snapshots.ids():
        if sid in table.snapshots:
            assert wh.read(table.name, version=sid) == table.snapshots[sid], f"snapshot {sid}"
    for tag in present.tags.names():
        if tag in table.tags:
            assert wh.read(table.name, version=tag) == table.tags[tag][1], f"tag {tag}"
    assert_no_dangling_references(root)
