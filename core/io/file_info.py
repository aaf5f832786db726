"""What a listing returns: one file's facts, a directory's entries split by kind, pages."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from datetime import datetime
from typing import Any, NamedTuple, TypeVar

T = TypeVar("T")
K = TypeVar("K")


class FileInfo(NamedTuple):
    # A tuple, not a dataclass: listings build one per file, millions per run.
    path: str
    name: str
    size: int
    mtime_ms: int | None
    is_dir: bool
    is_symlink: bool = False


def file_size(listing: Mapping[K, FileInfo], key: K) -> int | None:
    """The listed size of ``key``'s file (None when it is not listed: gone meanwhile)."""
    info = listing.get(key)
    return None if info is None else info.size


LIST_PAGE = 10_000  # entries a streamed listing holds at a time


def chunked(items: Iterator[T], size: int) -> Iterator[list[T]]:
    """``items`` in lists of ``size`` (the last one may be shorter, or the only one empty)."""
    page: list[T] = []
    for item in items:
        if len(page) == size:
            yield page
            page = []
        page.append(item)
    yield page


class DirScan(NamedTuple):
    """One directory's entries (or a page of them), split for callers that already know
    most file names."""

    files: list[FileInfo]  # regular files and symlinks (``is_symlink``) not in ``known``
    dirs: list[FileInfo]  # directories (never symlinks)
    known: list[str]  # names from ``known`` found here (not stat'ed on local disk)


def mtime_ms(info: Mapping[str, Any]) -> int | None:
    for key in ("mtime", "LastModified", "last_modified", "updated", "modified", "created"):
        value = info.get(key)
        if value is None:
            continue
        if isinstance(value, datetime):
            return int(value.timestamp() * 1000)
        if isinstance(value, (int, float)):
            return int(value * 1000)
        if isinstance(value, str):
            try:
                return int(datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp() * 1000)
            except ValueError:
                continue
    return None
