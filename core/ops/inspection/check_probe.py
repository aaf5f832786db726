"""Whether the files a check needs exist with their recorded sizes: one listing per
directory that holds many of them, one stat (a HEAD on object stores) for the others.

A check of a table of thousands of small commits needs thousands of files in a few
directories (``manifest/``, each bucket): a listing answers for up to 1,000 of them per
request where stats take one each. A directory holding few needed files among many others
(an orphan-heavy bucket) would cost more to list, so it is listed only from
``LIST_FROM`` needed files on. The listing is paged and only the needed names are kept.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial
from typing import Any

from core.io.fileio import FileInfo, FileIO
from core.io.locations import basename, parent
from core.runtime.executors.base import Executor

LIST_FROM = 32  # needed files in one directory from which it is listed instead of stat'ed

Item = tuple[str, Any, str]  # (path, recorded size or None, role)
Found = tuple[str, str, str, str]  # (path, kind, role, detail)


def probe_all(
    fileio: FileIO,
    items: Sequence[Item],
    executor: Executor,
    advance: Callable[[int], None],
) -> list[Found]:
    """The problems among ``items`` (missing, or not of their recorded size), by path."""
    by_dir: dict[str, list[Item]] = {}
    for item in items:
        by_dir.setdefault(parent(item[0]), []).append(item)
    listed = [d for d, group in by_dir.items() if len(group) >= LIST_FROM]
    single = [item for d, group in by_dir.items() if len(group) < LIST_FROM for item in group]
    found: list[Found] = []
    for problems in executor.map(
        partial(_listed, fileio, by_dir), listed, on_result=lambda r: advance(r[1])
    ):
        found.extend(problems[0])
    for problem in executor.map(partial(_probe, fileio), single, on_result=lambda _r: advance(1)):
        if problem is not None:
            found.append(problem)
    return sorted(found)


def _listed(
    fileio: FileIO, by_dir: dict[str, list[Item]], directory: str
) -> tuple[list[Found], int]:
    group = by_dir[directory]
    wanted = {basename(path) for path, _size, _role in group}
    seen: dict[str, FileInfo] = {}
    for page in fileio.scan_dir_pages(directory):
        for entry in (*page.files, *page.dirs):
            if entry.name in wanted:
                seen[entry.name] = entry
    out = []
    for item in group:
        info = seen.get(basename(item[0]))
        if info is None or info.is_dir:
            # Not listed (or a directory, listed without its size): asked on its own, so a
            # problem reads exactly as a stat reports it.
            info = fileio.info(item[0])
        problem = _judge(item, info)
        if problem is not None:
            out.append(problem)
    return out, len(group)


def _probe(fileio: FileIO, item: Item) -> Found | None:
    return _judge(item, fileio.info(item[0]))


def _judge(item: Item, info: FileInfo | None) -> Found | None:
    path, size, role = item
    if info is None:
        return path, "missing", role, "file does not exist"
    if size is not None and info.size != size:
        return path, "size-mismatch", role, f"recorded {size} bytes, found {info.size}"
    return None
