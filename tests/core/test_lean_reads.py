"""The lean paths orphan cleaning and expiry take for speed give exactly what the full
paths give: names-only and expiry-only manifest decoding, listings that skip known names,
CPU work in processes."""

from __future__ import annotations

import io
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import fastavro
import pytest
from support import pypaimon_writer as pw
from support.fixtures import java_table_params

import core.io.fileio as fileio
from core.errors import CorruptMetadataError, StorageError
from core.format.manifest import (
    decode_expire_entries,
    decode_manifest,
    decode_manifest_file_names,
)
from core.format.model import UNRECORDED, ExpireFileEntry, ManifestEntry, ManifestFileMeta
from core.io.fileio import DirScan, FileIO
from core.runtime.executors.local import LocalExecutor
from core.table.table import PaimonTable, open_table


def _manifests(table: PaimonTable) -> dict[str, ManifestFileMeta]:
    metas: dict[str, ManifestFileMeta] = {}
    views = [table] + [table.for_branch(b) for b in table.branches.branches()]
    for view in views:
        for snap in view.snapshots.snapshots():
            for list_name in snap.manifest_lists:
                metas.update((m.file_name, m) for m in view.manifest_list(snap, list_name))
    return metas


def _expire_view(entry: ManifestEntry) -> ExpireFileEntry:
    f = entry.file
    return ExpireFileEntry(
        entry.kind,
        entry.partition,
        entry.bucket,
        f.file_name,
        f.file_size,
        f.extra_files,
        f.external_path,
        f.file_source,
    )


def _assert_names_match_full_decode(table: PaimonTable) -> int:
    """Names-only and expiry-only decoding against the full decode of every manifest."""
    checked = 0
    for name, meta in sorted(_manifests(table).items()):
        path = table.paths.manifest_path(name)
        data = Path(path).read_bytes()
        full: list[str] = []
        entries = list(decode_manifest(data, path, expect=meta.expected()))
        for entry in entries:
            full.append(entry.file.file_name)
            full.extend(entry.file.extra_files)
        assert decode_manifest_file_names(data, path, expect=meta.expected()) == full, path
        lean = list(decode_expire_entries(data, path, expect=meta.expected()))
        assert lean == [_expire_view(e) for e in entries], path
        assert all(e.kind is f.kind for e, f in zip(lean, entries, strict=True))
        checked += 1
    return checked


@pytest.mark.parametrize("root", java_table_params())
def test_lean_decoding_matches_full_decoding_java(root: Path) -> None:
    _assert_names_match_full_decode(open_table(str(root)))  # some fixtures have no snapshot


@pytest.mark.parametrize("name", [*pw.BUILDERS, "external_paths"])
def test_lean_decoding_matches_full_decoding_pypaimon(
    scenarios: dict[str, pw.Scenario], name: str
) -> None:
    assert _assert_names_match_full_decode(open_table(str(scenarios[name].root))) > 0


def test_lean_decoding_refuses_what_full_decoding_refuses(
    scenarios: dict[str, pw.Scenario],
) -> None:
    table = open_table(str(scenarios["append_partitioned"].root))
    path = table.paths.manifest_path(sorted(_manifests(table))[0])
    data = Path(path).read_bytes()
    with pytest.raises(CorruptMetadataError):
        decode_manifest_file_names(data[: len(data) // 2], path, expect=UNRECORDED)
    with pytest.raises(CorruptMetadataError):
        decode_manifest_file_names(b"", path, expect=UNRECORDED)
    with pytest.raises(CorruptMetadataError):
        list(decode_expire_entries(data[: len(data) // 2], path, expect=UNRECORDED))
    reader = fastavro.reader(io.BytesIO(data))
    rows = list(reader)
    rows[0]["_FILE"]["_FILE_NAME"] = "../../outside.parquet"
    out = io.BytesIO()
    fastavro.writer(out, fastavro.parse_schema(reader.writer_schema), rows)
    evil = out.getvalue()
    with pytest.raises(CorruptMetadataError, match="not a plain file name"):
        list(decode_manifest(evil, path, expect=UNRECORDED))
    with pytest.raises(CorruptMetadataError, match="not a plain file name"):
        decode_manifest_file_names(evil, path, expect=UNRECORDED)
    with pytest.raises(CorruptMetadataError, match="not a plain file name"):
        list(decode_expire_entries(evil, path, expect=UNRECORDED))
    rows = list(fastavro.reader(io.BytesIO(data)))
    rows[0]["_KIND"] = 2
    rows[-1]["_FILE"]["_EXTRA_FILES"] = ["sub/extra"]
    for broken, why in ((rows[:1], "unknown _KIND 2"), (rows[-1:], "not a plain file name")):
        out = io.BytesIO()
        fastavro.writer(out, fastavro.parse_schema(reader.writer_schema), broken)
        for decode in (decode_manifest, decode_expire_entries):
            with pytest.raises(CorruptMetadataError, match=why):
                list(decode(out.getvalue(), path, expect=UNRECORDED))


# -- FileIO.scan_dir_pages ------------------------------------------------------------------
def _scan(path: Path, known: set[str] = set()) -> DirScan:  # noqa: B006 - never mutated
    """Every page of a directory's scan, as one."""
    whole = DirScan([], [], [])
    for page in FileIO().scan_dir_pages(str(path), known=known):
        for part, more in zip(whole, page, strict=True):
            part.extend(more)  # type: ignore[attr-defined]
    return whole


def test_scan_dir_splits_known_names_files_and_dirs(tmp_path: Path) -> None:
    (tmp_path / "known-1").write_bytes(b"k")
    (tmp_path / "other").write_bytes(b"12345")
    (tmp_path / "sub").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "other")
    (tmp_path / "dirlink").symlink_to(tmp_path / "sub")
    scan = _scan(tmp_path, known={"known-1", "sub"})
    assert scan.known == ["known-1"]
    assert [d.name for d in scan.dirs] == ["sub"]  # a directory is listed even if "known"
    files = {f.name: f for f in scan.files}
    assert set(files) == {"other", "link", "dirlink"}
    assert files["other"].size == 5 and files["other"].mtime_ms is not None
    assert files["link"].is_symlink and files["dirlink"].is_symlink  # never followed
    assert not any(f.is_dir for f in scan.files)
    full = {f.name for f in FileIO().list_dir(str(tmp_path))}
    assert full == {"known-1", "other", "sub", "link", "dirlink"}


def test_scan_dir_missing_is_empty_and_errors_raise(tmp_path: Path) -> None:
    assert _scan(tmp_path / "absent") == ([], [], [])
    (tmp_path / "file").write_bytes(b"x")
    with pytest.raises(StorageError, match="not a directory"):
        _scan(tmp_path / "file")
    if os.geteuid() != 0:
        locked = tmp_path / "locked"
        locked.mkdir(mode=0)
        try:
            with pytest.raises(StorageError, match="cannot list"):
                _scan(locked)
        finally:
            locked.chmod(0o755)


def test_listings_come_in_pages_that_add_up_to_the_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A directory of millions of files is never held whole: pages of at most LIST_PAGE
    entries, which together are exactly the directory."""
    names = {f"data-{i}" for i in range(11)} | {"known-0", "known-1"}
    for name in names:
        (tmp_path / name).write_bytes(b"x")
    for i in range(3):
        (tmp_path / f"bucket-{i}").mkdir()
    monkeypatch.setattr(fileio, "LIST_PAGE", 4)
    pages = list(FileIO().scan_dir_pages(str(tmp_path), known={"known-0", "known-1"}))
    assert len(pages) == 4 and all(sum(map(len, p)) <= 4 for p in pages)
    scan = _scan(tmp_path, known={"known-0", "known-1"})
    assert sorted(scan.known) == ["known-0", "known-1"]
    assert {f.name for f in scan.files} == names - {"known-0", "known-1"}
    assert sorted(d.name for d in scan.dirs) == ["bucket-0", "bucket-1", "bucket-2"]
    listed = list(FileIO().list_dir_pages(str(tmp_path)))
    assert [len(p) for p in listed] == [4, 4, 4, 4]
    assert {i.name for p in listed for i in p} == names | {f"bucket-{i}" for i in range(3)}


# -- LocalExecutor.map, work=cpu -----------------------------------------------------------
def _square_or_fail(x: int) -> int:
    if x < 0:
        raise CorruptMetadataError(f"item {x}", "negative")
    return x * x


def test_map_work_cpu_in_processes_keeps_order_and_errors() -> None:
    with LocalExecutor(4, processes=2) as ex:
        seen: list[int] = []
        assert ex.map(_square_or_fail, range(20), on_result=seen.append, work="cpu") == [
            x * x for x in range(20)
        ]
        assert seen == [x * x for x in range(20)]
        assert ex._processes is not None  # really ran in worker processes
        with pytest.raises(CorruptMetadataError, match="item -3"):
            ex.map(_square_or_fail, [1, 2, -3, 4], work="cpu")


def test_map_work_cpu_falls_back_to_threads(monkeypatch: pytest.MonkeyPatch) -> None:
    import concurrent.futures

    def unusable(*_a: object, **_k: object) -> None:
        raise OSError("no sem_open here")

    monkeypatch.setattr("core.runtime.executors.local.ProcessPoolExecutor", unusable)
    with LocalExecutor(4, processes=2) as ex:
        assert ex.map(_square_or_fail, range(5), work="cpu") == [0, 1, 4, 9, 16]
        assert ex._processes_unusable
    assert concurrent.futures  # the real pool class is untouched outside this test


def test_map_work_cpu_single_cpu_or_parallelism_one_stays_in_process() -> None:
    with LocalExecutor(1, processes=8) as ex:
        assert ex.processes == 1
        assert ex.map(_square_or_fail, range(3), work="cpu") == [0, 1, 4]
        assert ex._processes is None


def test_map_work_local_inline_by_default_threads_when_asked() -> None:
    import threading

    def thread_name(_x: int) -> str:
        return threading.current_thread().name

    with LocalExecutor() as default:
        seen: list[str] = []
        assert default.map(thread_name, range(4), on_result=seen.append, work="local") == seen
        assert set(seen) == {threading.current_thread().name} and default._pool is None
    with LocalExecutor(4) as asked:
        names = asked.map(thread_name, range(4), work="local")
        assert all(n.startswith("paimon-io") for n in names)


def test_a_remote_directory_is_found_non_empty_from_its_first_page(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Orphan cleaning tries to remove each directory it deleted orphans from; on an object
    store, one page of a listing tells that a directory is not empty (it listed all of a
    500,000-file bucket directory, 200 times at 100M files, issue 27)."""
    import fsspec
    from fsspec.implementations.memory import MemoryFileSystem

    asked: list[int] = []

    class PagedMemory(MemoryFileSystem):  # type: ignore[misc]
        protocol = "pagedmem"

        def ls_pages(self, path: str, size: int) -> Iterator[list[dict[str, Any]]]:
            entries = self.ls(path, detail=True)
            for start in range(0, len(entries), size):
                asked.append(start)
                yield entries[start : start + size]

    fsspec.register_implementation("pagedmem", PagedMemory, clobber=True)
    monkeypatch.setattr(fileio, "LIST_PAGE", 2)
    fio = FileIO()
    for i in range(7):
        fio.write_bytes(f"pagedmem://t/bucket-0/data-{i}.parquet", b"x")
    assert not fio.delete_empty_dir("pagedmem://t/bucket-0")
    assert asked == [0]  # one page of four, and the directory stays
    assert len(fio.list_dir("pagedmem://t/bucket-0")) == 7
