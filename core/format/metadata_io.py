"""Reading Paimon's small JSON metadata files and versioned-name directories."""

from __future__ import annotations

import time
from typing import Any

from core.errors import CorruptMetadataError, StorageError
from core.format.model import load_json
from core.io.fileio import FileInfo, FileIO, join

# A writer may be caught mid-overwrite (consumers, hints): Paimon retries parsing.
_JSON_ATTEMPTS = 3
_JSON_RETRY_S = 0.1


class KindDirectory:
    """Paimon's layout for one kind of metadata under a root: ``<kind>/<kind>-<name>``
    (snapshots, changelogs, tags, consumers, branches)."""

    def __init__(self, fileio: FileIO, root: str, kind: str) -> None:
        self.fileio = fileio
        self.directory = join(root, kind)
        self.prefix = f"{kind}-"

    def path(self, name: str | int) -> str:
        return join(self.directory, f"{self.prefix}{name}")


def read_json(fileio: FileIO, path: str) -> dict[str, Any]:
    """Read a JSON object; FileNotFoundError when absent, CorruptMetadataError when bad."""
    for attempt in range(_JSON_ATTEMPTS):
        try:
            return load_json(fileio.read_text(path), path)
        except (CorruptMetadataError, StorageError) as exc:
            if isinstance(exc, StorageError) and "not UTF-8" not in exc.message:
                raise
            if attempt + 1 == _JSON_ATTEMPTS:
                if isinstance(exc, StorageError):
                    raise CorruptMetadataError(path, "not UTF-8 text") from exc
                raise
            time.sleep(_JSON_RETRY_S)
    raise AssertionError("unreachable")


def list_versioned(fileio: FileIO, directory: str, prefix: str) -> dict[int, FileInfo]:
    """Files named ``<prefix><integer>``; other names (temp files, junk) are ignored."""
    out: dict[int, FileInfo] = {}
    for info in fileio.list_dir(directory):
        if info.is_dir or not info.name.startswith(prefix):
            continue
        suffix = info.name[len(prefix) :]
        if suffix.isdigit():
            out[int(suffix)] = info
    return out


def list_named(fileio: FileIO, directory: str, prefix: str) -> dict[str, FileInfo]:
    """Regular files named ``<prefix><name>`` (tags, consumers); hidden temp files skipped."""
    out: dict[str, FileInfo] = {}
    for info in fileio.list_dir(directory):
        if info.is_dir or info.is_symlink or not info.name.startswith(prefix):
            continue
        name = info.name[len(prefix) :]
        if name and not info.name.startswith(".") and not name.endswith(".tmp"):
            out[name] = info
    return out


def read_hint(fileio: FileIO, directory: str, name: str) -> int | None:
    """EARLIEST/LATEST hint value; unreadable or absent hints count as absent (Paimon)."""
    try:
        text = fileio.read_text(join(directory, name)).strip()
    except (FileNotFoundError, StorageError):
        return None
    return int(text) if text.lstrip("-").isdigit() else None
