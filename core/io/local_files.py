"""Local disk, without fsspec: listing by ``os.scandir``, moves by hard link, writes through
a temp file beside the target. ``FileIO`` calls these for local paths (the hot paths of
orphan cleaning and expiry on local tables)."""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import uuid
from collections.abc import Iterator
from collections.abc import Set as AbstractSet

from core.errors import StorageError
from core.io.file_info import DirScan, FileInfo
from core.io.locations import basename, join, parent


@contextlib.contextmanager
def open_scandir(path: str) -> Iterator[Iterator[os.DirEntry[str]]]:
    try:
        it = os.scandir(path)
    except FileNotFoundError:
        yield iter(())
        return
    except NotADirectoryError as exc:
        raise StorageError(f"not a directory: {path}") from exc
    except OSError as exc:
        raise StorageError(f"cannot list {path}: {exc.strerror or exc}") from exc
    with it:
        yield it


def scan_local(path: str) -> Iterator[FileInfo]:
    with open_scandir(path) as it:
        for entry in it:
            try:
                st = entry.stat(follow_symlinks=False)
            except FileNotFoundError:
                continue
            except OSError as exc:
                raise StorageError(f"cannot stat {entry.path}: {exc.strerror or exc}") from exc
            is_link = stat.S_ISLNK(st.st_mode)
            yield FileInfo(
                entry.path,
                entry.name,
                st.st_size,
                int(st.st_mtime * 1000),
                stat.S_ISDIR(st.st_mode),
                is_link,
            )


def local_dir_pages(path: str, known: AbstractSet[str], page: int) -> Iterator[DirScan]:
    """``FileIO.scan_dir_pages`` on local disk: ``os.scandir``, whose d_type answers
    without a stat, and no ``lstat`` of a name in ``known``; at most ``page`` entries a
    page (FileIO decides the size, so one setting governs every listing)."""
    scan = DirScan([], [], [])
    held = 0
    with open_scandir(path) as it:
        for entry in it:
            if held == page:
                yield scan
                scan, held = DirScan([], [], []), 0
            held += 1
            name = entry.name
            try:
                # d_type answers without a stat on every common local filesystem
                if entry.is_dir(follow_symlinks=False):
                    st = entry.stat(follow_symlinks=False)
                    scan.dirs.append(FileInfo(entry.path, name, 0, int(st.st_mtime * 1000), True))
                    continue
                if name in known:
                    scan.known.append(name)
                    continue
                st = entry.stat(follow_symlinks=False)
            except FileNotFoundError:
                continue  # removed while listing
            except OSError as exc:
                raise StorageError(f"cannot stat {entry.path}: {exc.strerror or exc}") from exc
            scan.files.append(
                FileInfo(
                    entry.path,
                    name,
                    st.st_size,
                    int(st.st_mtime * 1000),
                    False,
                    stat.S_ISLNK(st.st_mode),
                )
            )
    yield scan


def move_local(src: str, dst: str, *, replace: bool) -> bool:
    try:
        os.makedirs(parent(dst), exist_ok=True)
        if replace:
            os.replace(src, dst)
            return True
        try:
            os.link(src, dst)
        except FileExistsError:
            if not os.path.samefile(src, dst):
                raise StorageError(f"cannot move {src}: {dst} exists") from None
        except OSError as exc:
            if exc.errno not in (errno.EPERM, errno.EXDEV, errno.ENOTSUP, errno.EMLINK):
                raise
            try:
                os.lstat(dst)
            except FileNotFoundError:
                os.rename(src, dst)  # no hard links here: rename, never over a file
                return True
            raise StorageError(f"cannot move {src}: {dst} exists") from None
        os.unlink(src)
        return True
    except FileNotFoundError:
        return False
    except StorageError:
        raise
    except OSError as exc:
        raise StorageError(f"cannot move {src} to {dst}: {exc.strerror or exc}") from exc


def unlink(path: str) -> bool:
    """Delete one local file; False when it was already absent."""
    try:
        os.unlink(path)
        return True
    except FileNotFoundError:
        return False
    except OSError as exc:
        raise StorageError(f"cannot delete {path}: {exc.strerror or exc}") from exc


def write_temp_beside(path: str, data: bytes) -> str:
    """Write ``data`` to a hidden temp file next to ``path`` (Paimon's ``.name.uuid.tmp``)."""
    tmp = join(parent(path), f".{basename(path)}.{uuid.uuid4()}.tmp")
    try:
        os.makedirs(parent(path), exist_ok=True)
        with open(tmp, "wb") as fh:
            fh.write(data)
    except OSError as exc:
        quiet_unlink(tmp)
        raise StorageError(f"cannot write {path}: {exc.strerror or exc}") from exc
    return tmp


def quiet_unlink(path: str) -> None:
    with contextlib.suppress(OSError):
        os.unlink(path)
