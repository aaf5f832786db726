"""What object stores offer beyond single files: deleting many keys a request (S3
DeleteObjects: up to 1,000, an error per key), listing a prefix a page at a time (S3
ListObjectsV2: 1,000 keys a page; s3fs's ``ls`` collects every page of a prefix first),
and S3's ``Date`` header (the store's clock). Each call goes through the FileIO's
``remote`` (rate limit, retries, credential and permission errors)."""

from __future__ import annotations

import email.utils
import logging
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import timezone
from functools import partial
from typing import Any

from core.errors import StorageAccessError, StorageError
from core.io.locations import protocol_of
from core.io.retry import Retrier
from core.io.storage_errors import key_error

logger = logging.getLogger(__name__)

# A call made through FileIO's retrying, rate-limited ``remote(fn, path)``.
Remote = Callable[[Callable[[], Any], str], Any]
# FileIO.info: what is at a path now (None: nothing), or StorageError.
Probe = Callable[[str], object | None]

# S3's per-key DeleteObjects error codes worth asking again (the rest are refusals).
_TRANSIENT_KEY_ERRORS = frozenset(
    {"InternalError", "SlowDown", "ServiceUnavailable", "RequestTimeout", "OperationAborted"}
)
DELETE_OBJECTS_MAX = 1000  # keys per S3 DeleteObjects request


def s3_pages(fs: Any, path: str, remote: Remote, size: int) -> Iterator[list[dict[str, Any]]]:
    """The entries directly under ``path`` (s3fs's bucket/key form), one ListObjectsV2 page
    (of at most ``size`` keys; S3 answers 1,000 at most) at a time, each page asked and
    retried on its own: a prefix of millions of keys is never held whole. Entries are
    shaped as s3fs's ``ls(detail=True)`` shapes them."""
    bucket, key, _version = fs.split_path(path)
    prefix = key.rstrip("/") + "/" if key else ""
    where = f"s3://{bucket}/{prefix}"
    token: str | None = None
    while True:
        ask: dict[str, Any] = {
            "Bucket": bucket,
            "Prefix": prefix,
            "Delimiter": "/",
            "MaxKeys": min(size, 1000),
        }
        if token:
            ask["ContinuationToken"] = token
        answer: dict[str, Any] = remote(partial(fs.call_s3, "list_objects_v2", **ask), where)
        page = [
            {"name": f"{bucket}/{p['Prefix'].rstrip('/')}", "size": 0, "type": "directory"}
            for p in answer.get("CommonPrefixes") or ()
        ]
        page += [
            {
                "name": f"{bucket}/{o['Key']}",
                "size": o.get("Size") or 0,
                "type": "file",
                "LastModified": o.get("LastModified"),
            }
            for o in answer.get("Contents") or ()
            if o["Key"] != prefix  # the prefix's own directory marker
        ]
        yield page
        token = answer.get("NextContinuationToken")
        if not answer.get("IsTruncated") or not token:
            return


def s3_date_ms(fs: Any, root: str, remote: Remote) -> int:
    """The store's clock: the ``Date`` header of a one-key listing under ``root``."""
    bucket, key, _version = fs.split_path(root)

    def ask() -> dict[str, Any]:
        answer: dict[str, Any] = fs.call_s3(
            "list_objects_v2", Bucket=bucket, Prefix=key.rstrip("/") + "/", MaxKeys=1
        )
        return answer

    try:
        answer = remote(ask, root)
    except OSError as exc:
        raise StorageError(f"cannot read the store's clock at {root}: {exc}") from exc
    date = answer.get("ResponseMetadata", {}).get("HTTPHeaders", {}).get("date")
    try:
        when = email.utils.parsedate_to_datetime(str(date))
    except (TypeError, ValueError) as exc:
        raise StorageError(f"the store's answer carries no usable Date header ({date!r})") from exc
    if when.tzinfo is None:  # "-0000": UTC without a stated zone
        when = when.replace(tzinfo=timezone.utc)
    return int(when.timestamp() * 1000)


@dataclass(frozen=True)
class BatchDelete:
    """Deletes files of one object store in batched requests. Absent keys are no error
    ("deleted" and "already absent" are one outcome here). S3 answers DeleteObjects 200
    with one ``<Error>`` per refused key: each is a failure (AccessDenied: storage access),
    transient ones (InternalError, SlowDown) are retried; when a batch's answer is lost (a
    500 after it was applied, a dropped connection), each of its keys is checked."""

    fs: Any  # the store's fsspec filesystem
    remote: Remote
    retrier: Retrier
    probe: Probe

    def delete(self, paths: list[str]) -> dict[str, StorageError]:
        """The paths that could not be deleted, each with its error."""
        if protocol_of(paths[0]) in ("s3", "s3a"):
            return self._delete_objects(paths)
        keys = [self.fs._strip_protocol(p) for p in paths]
        try:
            self.remote(lambda: self.fs.rm(keys), paths[0])
        except FileNotFoundError:
            return {}
        except (OSError, StorageError) as exc:
            return self._unconfirmed(paths, exc)
        return {}

    def _delete_objects(self, paths: list[str]) -> dict[str, StorageError]:
        by_bucket: dict[str, dict[str, str]] = {}
        for path in paths:
            bucket, key, _version = self.fs.split_path(path)
            by_bucket.setdefault(bucket, {})[key] = path
        failed: dict[str, StorageError] = {}
        for bucket, keys in by_bucket.items():
            items = list(keys.items())
            for i in range(0, len(items), DELETE_OBJECTS_MAX):
                failed.update(self._batch(bucket, dict(items[i : i + DELETE_OBJECTS_MAX])))
        return failed

    def _unconfirmed(self, paths: list[str], exc: BaseException) -> dict[str, StorageError]:
        """A batch delete failed without a per-key answer (it may have been applied): each
        key still present failed; each one gone is deleted."""
        message = exc.message if isinstance(exc, StorageError) else str(exc)
        failed: dict[str, StorageError] = {}
        for path in paths:
            try:
                present = self.probe(path) is not None
            except StorageError as probe:
                failed[path] = probe
                continue
            if present:
                failed[path] = StorageError(f"cannot delete {path}: {message}")
        return failed

    def _batch(self, bucket: str, keys: dict[str, str]) -> dict[str, StorageError]:
        """One DeleteObjects request (at most 1,000 keys: key -> path), its per-key errors
        read from the answer; keys refused for a transient reason go again."""
        failed: dict[str, StorageError] = {}
        pending = keys
        retries = self.retrier.retries
        for attempt in range(retries + 1):
            try:
                answer = self._send(bucket, pending)
            except StorageAccessError as exc:
                return failed | dict.fromkeys(pending.values(), exc)  # refused: nothing applied
            except (OSError, StorageError) as exc:
                return failed | self._unconfirmed(list(pending.values()), exc)
            retry: dict[str, str] = {}
            for error in answer.get("Errors") or ():
                path = pending.get(str(error.get("Key")))
                if path is None:
                    continue
                code = str(error.get("Code") or "")
                if code in _TRANSIENT_KEY_ERRORS and attempt < retries:
                    retry[str(error["Key"])] = path
                else:
                    failed[path] = key_error(path, code, str(error.get("Message") or ""))
            if not retry:
                break
            logger.info(
                "%d key(s) of a batch delete answered a transient error; retrying", len(retry)
            )
            self.retrier.sleep(self.retrier.backoff(attempt))
            pending = retry
        return failed

    def _send(self, bucket: str, keys: dict[str, str]) -> dict[str, Any]:
        request: dict[str, Any] = {"Objects": [{"Key": k} for k in keys], "Quiet": True}

        def send() -> dict[str, Any]:
            answer: dict[str, Any] = self.fs.call_s3(
                "delete_objects", Bucket=bucket, Delete=request
            )
            return answer

        answer: dict[str, Any] = self.remote(send, next(iter(keys.values())))
        return answer
