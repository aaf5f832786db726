"""FileIO over fsspec: the only place that touches storage.

Paths are strings (``core.io.locations``, whose helpers are handed on from here: callers
of FileIO build paths with them). Missing files raise ``FileNotFoundError``; every other
storage failure raises ``StorageError`` so callers never mistake an error for "empty"
(DECISIONS D3).
"""

from __future__ import annotations

import logging
import os
import stat
import threading
import uuid
from collections.abc import Callable, Iterator, Mapping
from collections.abc import Set as AbstractSet
from typing import Any, TypeVar

from core.errors import StorageAccessError, StorageError, WriteOutcomeUnknownError
from core.io.file_info import LIST_PAGE, DirScan, FileInfo, chunked, file_size, mtime_ms
from core.io.local_files import (
    local_dir_pages,
    move_local,
    quiet_unlink,
    scan_local,
    unlink,
    write_temp_beside,
)
from core.io.locations import basename, is_under, join, normalize_path, parent, protocol_of
from core.io.object_stores import BatchDelete, s3_date_ms, s3_pages
from core.io.retry import RateLimiter, Retrier
from core.io.storage_errors import (
    credential_errors,
    credentials_hint,
    install_hint,
    open_error,
    permission_hint,
    unreachable_hint,
)

logger = logging.getLogger(__name__)

__all__ = [
    "DirScan",
    "FileIO",
    "FileInfo",
    "basename",
    "file_size",
    "is_under",
    "join",
    "normalize_path",
    "parent",
    "protocol_of",
]

T = TypeVar("T")
K = TypeVar("K")

_LOCAL_PROTOCOLS = frozenset({"", "file", "local"})
_BATCH_DELETE_PROTOCOLS = frozenset({"s3", "s3a", "gs", "gcs", "abfs", "az", "oss"})
_DIRECTORY_PROTOCOLS = frozenset({"hdfs", "viewfs"})


class FileIO:
    """Storage access for one run; filesystems are created lazily per protocol."""

    def __init__(
        self,
        storage_options: Mapping[str, str] | None = None,
        *,
        max_requests_per_second: float | None = None,
        retries: int = 6,
    ) -> None:
        self.storage_options: dict[str, str] = dict(storage_options or {})
        self.max_requests_per_second = max_requests_per_second
        self.retries = retries
        self._lock = threading.Lock()
        self._filesystems: dict[str, Any] = {}
        limiter = RateLimiter(max_requests_per_second) if max_requests_per_second else None
        self._retrier = Retrier(retries=retries, limiter=limiter, unreachable_hint=unreachable_hint)

    def __getstate__(self) -> dict[str, Any]:
        # Executors (Spark) get the configuration, never live clients.
        return {
            "storage_options": self.storage_options,
            "max_requests_per_second": self.max_requests_per_second,
            "retries": self.retries,
        }

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(  # type: ignore[misc]
            state["storage_options"],
            max_requests_per_second=state.get("max_requests_per_second"),
            retries=state.get("retries", 6),
        )

    def _remote(self, fn: Callable[[], T], path: str) -> T:
        """Object-store calls: rate-limited, transient failures retried with backoff;
        missing credentials and refused permissions say which setting to fix."""
        try:
            return self._retrier.call(fn, path)
        except PermissionError as exc:
            raise StorageAccessError(
                f"access denied to {path}: {exc}", hint=permission_hint(protocol_of(path))
            ) from exc
        except credential_errors() as exc:
            raise StorageAccessError(
                f"no usable credentials for {path}: {exc}",
                hint=credentials_hint(protocol_of(path)),
            ) from exc

    def is_local(self, path: str) -> bool:
        return protocol_of(path) in _LOCAL_PROTOCOLS

    def renew_credentials(self) -> None:
        """Called before a filesystem is handed out: a FileIO whose credentials expire
        (a REST catalog's vended tokens) replaces them here, before they run out."""

    def replace_storage_options(self, options: Mapping[str, str]) -> None:
        """New settings (fresh credentials) for every filesystem created from now on."""
        with self._lock:
            self.storage_options = dict(options)
            self._filesystems.clear()

    def _fs(self, path: str) -> tuple[Any, str]:
        protocol = protocol_of(path)
        if protocol not in _LOCAL_PROTOCOLS:
            self.renew_credentials()
        with self._lock:
            fs = self._filesystems.get(protocol)
            if fs is None:
                import fsspec

                try:
                    fs = fsspec.filesystem(protocol or "file", **self._options_for(protocol))
                except (ImportError, ValueError) as exc:
                    raise StorageError(
                        f"cannot open storage for {protocol or 'file'}://: {exc}",
                        hint=install_hint(protocol),
                    ) from exc
                except OSError as exc:  # clients that connect or load native code here (HDFS)
                    raise open_error(protocol, path, exc) from exc
                self._filesystems[protocol] = fs
        return fs, fs._strip_protocol(path)

    def _options_for(self, protocol: str) -> dict[str, Any]:
        if protocol in _LOCAL_PROTOCOLS:
            return {}
        # A cached listing could hide a file a writer just added: always ask the store.
        options: dict[str, Any] = {"use_listings_cache": False}
        if protocol in ("s3", "s3a"):
            options["config_kwargs"] = dict(_S3_CLIENT_CONFIG)
        return {**options, **self.storage_options}

    # -- reading --------------------------------------------------------------------------
    def read_bytes(self, path: str) -> bytes:
        if self.is_local(path):
            try:
                with open(path, "rb") as fh:
                    return fh.read()
            except FileNotFoundError:
                raise
            except IsADirectoryError as exc:
                raise StorageError(f"expected a file, found a directory: {path}") from exc
            except OSError as exc:
                raise StorageError(f"cannot read {path}: {exc.strerror or exc}") from exc
        fs, p = self._fs(path)
        try:
            data: bytes = self._remote(lambda: fs.cat_file(p), path)
            return data
        except FileNotFoundError:
            raise
        except OSError as exc:
            raise StorageError(f"cannot read {path}: {exc}") from exc

    def read_text(self, path: str) -> str:
        data = self.read_bytes(path)
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise StorageError(f"{path} is not UTF-8 text") from exc

    def exists(self, path: str) -> bool:
        """Whether ``path`` exists. Only a definite "not found" answers False: permission
        denied, a stale NFS handle or an I/O error raises StorageError, because a directory
        briefly unreadable is not a missing one (issue 22)."""
        return self.info(path) is not None

    def has_directories(self, path: str) -> bool:
        """Whether directories exist on their own here (local and HDFS-like file systems),
        rather than being implied by the keys below them (object stores)."""
        return self.is_local(path) or protocol_of(path) in _DIRECTORY_PROTOCOLS

    def info(self, path: str) -> FileInfo | None:
        """Size and mtime of one file, or None when absent."""
        if self.is_local(path):
            try:
                st = os.lstat(path)
            except FileNotFoundError:
                return None
            except OSError as exc:
                raise StorageError(f"cannot stat {path}: {exc.strerror or exc}") from exc
            return FileInfo(
                path,
                basename(path),
                st.st_size,
                int(st.st_mtime * 1000),
                stat.S_ISDIR(st.st_mode),
                stat.S_ISLNK(st.st_mode),
            )
        fs, p = self._fs(path)
        try:
            raw = self._remote(lambda: fs.info(p), path)
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise StorageError(f"cannot stat {path}: {exc}") from exc
        return FileInfo(
            path,
            basename(path),
            int(raw.get("size") or 0),
            mtime_ms(raw),
            raw.get("type") == "directory",
        )

    def list_dir(self, path: str) -> list[FileInfo]:
        """Entries directly under ``path``; [] if it does not exist. Symlinks are not followed."""
        return [info for page in self.list_dir_pages(path) for info in page]

    def list_dir_pages(self, path: str) -> Iterator[list[FileInfo]]:
        """``list_dir`` a page of at most ``LIST_PAGE`` entries at a time, so a directory
        of millions of files is never held whole (on S3 each ListObjectsV2 page is asked and
        retried on its own; a filesystem with an ``ls_pages`` method streams its own pages;
        any other fsspec filesystem lists the whole directory at once)."""
        if self.is_local(path):
            yield from chunked(scan_local(path), LIST_PAGE)
            return
        fs, p = self._fs(path)
        prefix = path.rstrip("/")
        try:
            for raw in self._raw_pages(fs, p, path):
                page = []
                for entry in raw:
                    name = basename(entry["name"])
                    if not name or entry["name"].rstrip("/") == p.rstrip("/"):
                        continue
                    page.append(
                        FileInfo(
                            f"{prefix}/{name}",
                            name,
                            int(entry.get("size") or 0),
                            mtime_ms(entry),
                            entry.get("type") == "directory",
                        )
                    )
                yield page
        except FileNotFoundError:
            return
        except OSError as exc:
            raise StorageError(f"cannot list {path}: {exc}") from exc

    def _raw_pages(self, fs: Any, p: str, path: str) -> Iterator[list[dict[str, Any]]]:
        """fsspec ``ls(detail=True)`` entries of ``p``, in pages."""
        if protocol_of(path) in ("s3", "s3a") and hasattr(fs, "call_s3"):
            yield from s3_pages(fs, p, self._remote, LIST_PAGE)
        elif callable(getattr(fs, "ls_pages", None)):  # bench/synth: generated on the fly
            yield from fs.ls_pages(p, LIST_PAGE)
        else:
            yield self._remote(lambda: fs.ls(p, detail=True, refresh=True), path)

    def scan_dir_pages(
        self, path: str, *, known: AbstractSet[str] = frozenset()
    ) -> Iterator[DirScan]:
        """Entries directly under ``path`` (none if absent), a page of at most ``LIST_PAGE``
        at a time; files named in ``known`` come back by name only, which on local disk
        saves their ``lstat`` (orphan cleaning knows every used name before listing).
        Symlinks are never followed."""
        if not self.is_local(path):
            for page in self.list_dir_pages(path):
                scan = DirScan([], [], [])
                for e in page:
                    if e.is_dir:
                        scan.dirs.append(e)
                    elif e.name in known:
                        scan.known.append(e.name)
                    else:
                        scan.files.append(e)
                yield scan
            return
        yield from local_dir_pages(path, known, LIST_PAGE)

    # -- writing --------------------------------------------------------------------------
    def write_bytes(self, path: str, data: bytes) -> None:
        """Overwrite ``path`` (hint files, journals)."""
        if self.is_local(path):
            tmp = write_temp_beside(path, data)
            try:
                os.replace(tmp, path)
            except OSError as exc:
                quiet_unlink(tmp)
                raise StorageError(f"cannot write {path}: {exc.strerror or exc}") from exc
            return
        fs, p = self._fs(path)
        try:
            self._remote(lambda: fs.pipe_file(p, data), path)
        except OSError as exc:
            raise StorageError(f"cannot write {path}: {exc}") from exc

    def write_if_absent(self, path: str, data: bytes) -> bool:
        """Create ``path`` atomically only if it does not exist. True when it now holds
        ``data``: created by this call, or by an earlier try of it whose answer was lost
        (S3 answers the retry of a PUT it stored but answered 500, or whose connection
        dropped, "already exists"); False when it holds other bytes. A failure after which
        the write may still have landed, and the file cannot be read back as ours, raises
        :class:`WriteOutcomeUnknownError`."""
        if self.is_local(path):
            tmp = write_temp_beside(path, data)
            try:
                # link() never replaces an existing target: a compare-and-swap on POSIX.
                os.link(tmp, path)
                return True
            except FileExistsError:
                return self._holds(path, data)
            except OSError as exc:
                raise StorageError(f"cannot create {path}: {exc.strerror or exc}") from exc
            finally:
                quiet_unlink(tmp)
        fs, p = self._fs(path)

        def create() -> None:
            with fs.open(p, "xb") as fh:
                fh.write(data)

        try:
            self._remote(create, path)
            return True
        except FileExistsError:
            return self._holds(path, data)
        except (NotImplementedError, ValueError) as exc:
            raise StorageError(
                f"{protocol_of(path)}:// cannot create files atomically: {exc}",
                hint="this store has no conditional create; "
                "see docs/safety.md 'How paimon-cli commits'",
            ) from exc
        except OSError as exc:
            # A 5xx, a dropped connection or a timeout: the store may have applied it.
            if self._holds_after_error(path, data):
                return True
            raise WriteOutcomeUnknownError(
                f"cannot create {path}: {exc}; the store may still have stored it"
            ) from exc

    def _holds(self, path: str, data: bytes) -> bool:
        """Whether an existing ``path`` holds exactly ``data`` (ours, or identical)."""
        try:
            info = self.info(path)
            if info is not None and info.size != len(data):
                return False
            return self.read_bytes(path) == data
        except FileNotFoundError:
            # It existed a moment ago: whoever has it, it is not known to be ours.
            raise WriteOutcomeUnknownError(
                f"{path} was reported as existing, then was gone when read back"
            ) from None

    def _holds_after_error(self, path: str, data: bytes) -> bool:
        try:
            return self._holds(path, data)
        except (FileNotFoundError, StorageError):
            return False

    def store_now_ms(self, root: str) -> tuple[int, str] | None:
        """The store's clock (epoch ms) and where it was read, or None on local disk (its
        clock is this machine's). Object stores stamp LastModified with their own clock:
        S3 answers carry it in their ``Date`` header; elsewhere a probe object is written
        under ``<root>/.paimon-cli/clock/`` (ours, D6), its LastModified read, and removed."""
        if self.is_local(root):
            return None
        if protocol_of(root) in ("s3", "s3a"):
            fs, _ = self._fs(root)
            return s3_date_ms(fs, root, self._remote), "the Date header of an S3 answer"
        probe = join(root, ".paimon-cli", "clock", f"probe-{uuid.uuid4().hex}")
        self.write_bytes(probe, b"")
        try:
            info = self.info(probe)
        finally:
            self.delete(probe)
        if info is None or info.mtime_ms is None:
            raise StorageError(f"cannot read the store's clock: {probe} has no modification time")
        return info.mtime_ms, f"the modification time of a probe object ({probe})"

    def conditional_create_supported(self, path: str) -> bool:
        """True where ``write_if_absent`` is a real compare-and-swap: local file systems
        (link) and S3 (``If-None-Match: *`` in s3fs); other stores may accept exclusive
        mode yet overwrite."""
        return self.is_local(path) or protocol_of(path) in ("s3", "s3a")

    def delete(self, path: str) -> bool:
        """Delete one file; False when it was already absent (deletes are idempotent)."""
        if self.is_local(path):
            return unlink(path)
        fs, p = self._fs(path)
        try:
            self._remote(lambda: fs.rm_file(p), path)
            return True
        except FileNotFoundError:
            return False
        except OSError as exc:
            raise StorageError(f"cannot delete {path}: {exc}") from exc

    def delete_each(
        self, paths: list[str], keep_going: Callable[[], bool] | None = None
    ) -> list[bool | StorageError]:
        """``delete`` of each path in order: True deleted, False already absent, or the
        error it raised. Local files are unlinked in one tight loop: per-file calls cost more
        than the unlinks when a plan deletes 200,000 orphans. A subclass that hooks
        ``delete`` (fault injection) gets every call. ``keep_going`` is asked before each
        path; once it says no, the rest stay untouched (the answers are fewer than paths)."""
        plain = type(self).delete is _UNHOOKED_DELETE and "delete" not in vars(self)
        out: list[bool | StorageError] = []
        for path in paths:
            if keep_going is not None and not keep_going():
                break
            try:
                out.append(unlink(path) if plain and self.is_local(path) else self.delete(path))
            except StorageError as exc:
                out.append(exc)
        return out

    def delete_empty_dir(self, path: str) -> bool:
        """Remove a directory only if it is empty; never recursive."""
        if self.is_local(path):
            try:
                os.rmdir(path)
                return True
            except OSError:
                return False
        if any(self.list_dir_pages(path)):  # one page answers: a directory of millions
            return False
        fs, p = self._fs(path)
        try:
            self._remote(lambda: fs.rmdir(p), path)
        except (OSError, NotImplementedError):
            return False
        return True

    def move(self, src: str, dst: str, *, replace: bool = False) -> bool:
        """Move one file (quarantine and restore); False when ``src`` is already gone.

        Local and HDFS-like: a hard link then unlink (never clobbers ``dst``; an interrupted
        move leaves two names of one file, which a rerun completes). Object stores: copy,
        then delete, each retried like every request. An existing ``dst`` is an error
        unless it is the same file (a half-done move) or ``replace`` is given."""
        if self.is_local(src):
            return move_local(src, dst, replace=replace)
        fs, p = self._fs(src)
        _, q = self._fs(dst)
        if not self.exists(src):
            return False
        if not replace:
            there = self.info(dst)
            have = self.info(src)
            if there is not None and (have is None or there.size != have.size):
                raise StorageError(f"cannot move {src}: {dst} exists")
        try:
            self._remote(lambda: fs.copy(p, q), src)
        except FileNotFoundError:
            return False
        except OSError as exc:
            raise StorageError(f"cannot copy {src} to {dst}: {exc}") from exc
        self.delete(src)
        return True

    def supports_batch_delete(self, path: str) -> bool:
        """Object stores delete many keys per request (S3 DeleteObjects: 1,000)."""
        return protocol_of(path) in _BATCH_DELETE_PROTOCOLS

    def delete_many(self, paths: list[str]) -> dict[str, StorageError]:
        """Delete files of one object store in batched requests; the paths that could not be
        deleted, each with its error (``core.io.object_stores.BatchDelete``)."""
        if not paths:
            return {}
        fs, _ = self._fs(paths[0])
        return BatchDelete(fs, self._remote, self._retrier, self.info).delete(paths)


# delete as defined here: delete_each unlinks inline only while nothing replaced it (a
# subclass, a patch of the class or of one instance: the tests' fault injection)
_UNHOOKED_DELETE = FileIO.delete


# botocore's own retries (5 attempts, backoff up to 8 s, 60 s connect timeouts) would run
# inside each of our attempts and multiply them: an unreachable endpoint took a minute of
# silence. Connect within 5 s (Hadoop S3A's default) and retry once inside; our Retrier does
# the rest, bounded and announced.
_S3_CLIENT_CONFIG: Mapping[str, Any] = {
    "connect_timeout": 5,
    "retries": {"max_attempts": 2, "mode": "standard"},
}
