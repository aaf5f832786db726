"""What orphan cleaning on Spark runs on the executors (``orphan_files_spark.py`` drives
it): listing a directory level, listing the files of bucket-level directories, the names
a snapshot, tag or changelog and its manifests use, and deleting a batch of orphans with a
result per file. Module-level functions, so Spark ships them by reference.
"""

from __future__ import annotations

import pickle
from collections.abc import Iterator
from typing import Any

from core.format.model import ManifestRef
from core.io.fileio import FileIO, parent
from core.ops.orphans.orphan_inventory import still_orphan
from core.ops.orphans.orphan_listing import (
    CandidateRow,
    ListedDir,
    NameShapes,
    candidate_batch,
)
from core.ops.orphans.orphan_roots import names_in_manifest_files, root_chunk
from core.runtime.executors.spark import arrow_schema
from core.runtime.quarantine import Quarantine
from core.table.table import PaimonTable


def expand(
    fileio: FileIO, roots: frozenset[str], d: ListedDir
) -> tuple[list[ListedDir], list[ListedDir]]:
    """One partition-level directory: (directories to descend into, directories whose
    files are candidates), following Paimon's dataDirs rules as the local engine does."""
    entries = fileio.list_dir(d.path)
    if d.depth > 0:
        subdirs = [e for e in entries if e.is_dir and not e.is_symlink and "=" in e.name]
        if subdirs or d.path in roots:
            return [ListedDir(e.path, d.kind, d.depth - 1) for e in subdirs], []
        return [], [ListedDir(d.path, d.kind + LEVEL, -1)]  # nothing below: listed itself
    buckets = [e for e in entries if e.is_dir and not e.is_symlink and e.name.startswith("bucket-")]
    if buckets:
        return [], [ListedDir(e.path, d.kind, -1) for e in buckets]
    if d.path in roots and not entries:
        return [], []
    return [], [ListedDir(d.path, d.kind + LEVEL, -1)]


# What each task yields (the Spark DDL its job declares; the Arrow schema of its batches).
ROOT_NAMES_SCHEMA = "name string, manifest boolean, size long, entries long"
MANIFEST_NAMES_SCHEMA = "name string, missing boolean"
DELETE_SCHEMA = "path string, kind string, outcome string, bytes long, error string"

# Marks a partition level (or the data root) listed only to find it empty: Paimon writes
# no file there, so none of its files is a candidate (local engine: ``_scan_one``).
LEVEL = ":level"


def list_files(
    fileio_bytes: bytes,
    shapes: NameShapes,
    older_than_ms: int,
    future_ms: int,
    roots: frozenset[str],
    batches: Iterator[Any],
) -> Iterator[Any]:
    """Executor side: list each directory, emit old candidate files and old empty dirs,
    and candidates modified after ``future_ms`` (the driver refuses on any)."""
    fileio: FileIO = pickle.loads(fileio_bytes)
    for batch in batches:
        for path, dir_kind in zip(
            batch.column("path").to_pylist(), batch.column("kind").to_pylist(), strict=True
        ):
            kind, level = dir_kind.removesuffix(LEVEL), dir_kind.endswith(LEVEL)
            candidate = shapes.matcher(kind)
            # One Arrow batch per page of a listing: a task never holds a directory whole.
            listed = 0
            for page in fileio.list_dir_pages(path):
                listed += len(page)
                rows: list[CandidateRow] = []
                for e in page:
                    if e.is_dir or e.is_symlink or e.mtime_ms is None or level:
                        continue
                    if e.mtime_ms < older_than_ms and candidate(e.name):
                        rows.append(("file", e.name, e.path, e.size, e.mtime_ms, kind))
                    elif e.mtime_ms > future_ms and candidate(e.name):
                        rows.append(("future", e.name, e.path, e.size, e.mtime_ms, kind))
                if rows:
                    yield candidate_batch(rows)
            if not listed and kind in ("data", "external") and path not in roots:
                info = fileio.info(path)
                if info is not None and info.mtime_ms is not None and info.mtime_ms < older_than_ms:
                    yield candidate_batch([("empty", "", path, 0, info.mtime_ms, kind)])


def emit_root_names(views_bytes: bytes, batches: Iterator[Any]) -> Iterator[Any]:
    import pyarrow as pa

    views: dict[str, PaimonTable] = pickle.loads(views_bytes)
    for batch in batches:
        names: list[str] = []
        flags: list[bool] = []
        sizes: list[int | None] = []
        entries: list[int | None] = []
        for branch, kind, key in zip(
            batch.column("branch").to_pylist(),
            batch.column("kind").to_pylist(),
            batch.column("key").to_pylist(),
            strict=True,
        ):
            _, part = root_chunk(views, [(branch, kind, int(key) if kind != "tag" else key)])
            for name in part.names:
                ref = part.manifests.get(name)
                names.append(name)
                flags.append(ref is not None)
                # What the list records, so the executor reading it can check it (issue 28).
                sizes.append(ref.file_size if ref is not None else None)
                entries.append(ref.entries if ref is not None else None)
        yield pa.RecordBatch.from_pydict(
            {"name": names, "manifest": flags, "size": sizes, "entries": entries},
            schema=arrow_schema(ROOT_NAMES_SCHEMA),
        )


def emit_manifest_names(reader_bytes: bytes, batches: Iterator[Any]) -> Iterator[Any]:
    import pyarrow as pa

    reader: PaimonTable = pickle.loads(reader_bytes)
    for batch in batches:
        manifests = [
            (reader.paths.manifest_path(name), ManifestRef(name, size, entries).expected())
            for name, size, entries in zip(
                batch.column("name").to_pylist(),
                batch.column("size").to_pylist(),
                batch.column("entries").to_pylist(),
                strict=True,
            )
        ]
        _count, found, missing = names_in_manifest_files(reader.fileio, manifests)
        names = list(set(found))
        yield pa.RecordBatch.from_pydict(
            {"name": names + missing, "missing": [False] * len(names) + [True] * len(missing)},
            schema=arrow_schema(MANIFEST_NAMES_SCHEMA),
        )


def delete_batches(
    table_bytes: bytes,
    quarantine_bytes: bytes,
    head_older_than_ms: int | None,
    fence_bytes: bytes,
    batches: Iterator[Any],
) -> Iterator[Any]:
    """Executor side: delete each orphan (path lock first), or move it into the quarantine
    when there is one, then try to remove the bucket and partition directories it emptied
    (never a root, never a non-empty directory). ``head_older_than_ms`` (inventory plans):
    each file is HEADed first and kept ("skipped") unless it is still the old file the
    inventory listed. The run's lease fence (``fence_bytes``, or None) is confirmed before
    the task's first deletion and again every ``FENCE_CHUNK`` of them: once it fails, the
    rest of the task is left untouched ("fenced", with the reason)."""
    import pyarrow as pa

    from core.errors import StorageError
    from core.runtime.lease import FenceWatch, LeaseFence, LeaseLostError

    table: PaimonTable = pickle.loads(table_bytes)
    quarantine: Quarantine | None = pickle.loads(quarantine_bytes)
    fence: LeaseFence | None = pickle.loads(fence_bytes)
    watch: FenceWatch | None = None
    fenced: str | None = None
    depth = len(table.schema.partition_keys)
    roots = {table.location, table.paths.data_root, *table.paths.external_roots}
    schema = arrow_schema(DELETE_SCHEMA)
    touched: dict[str, None] = {}
    for batch in batches:
        out: dict[str, list[Any]] = {k: [] for k in schema.names}
        for path, kind, size in zip(
            batch.column("path").to_pylist(),
            batch.column("kind").to_pylist(),
            batch.column("size").to_pylist(),
            strict=True,
        ):
            error: str | None = None
            if fence is not None and fenced is None:
                try:
                    if watch is None:
                        watch = fence.watch()
                    else:
                        fenced = watch.stop_reason()
                except LeaseLostError as exc:
                    fenced = exc.message
            if fenced is not None:
                for key, value in zip(schema.names, (path, kind, "fenced", 0, fenced), strict=True):
                    out[key].append(value)
                continue
            try:
                if not table.paths.is_inside_table(path):
                    raise StorageError("outside the table root and declared external paths")
                if head_older_than_ms is not None and not still_orphan(
                    table.fileio.info(path), size, head_older_than_ms
                ):
                    for key, value in zip(
                        schema.names, (path, kind, "skipped", 0, None), strict=True
                    ):
                        out[key].append(value)
                    continue
                if quarantine is not None:
                    done = quarantine.move_in(table.fileio, path)
                else:
                    done = table.fileio.delete(path)
                outcome, nbytes, error = ("done", size, None) if done else ("absent", 0, None)
                touched[parent(path)] = None
            except StorageError as exc:
                outcome, nbytes, error = "failed", 0, exc.message
            for key, value in zip(schema.names, (path, kind, outcome, nbytes, error), strict=True):
                out[key].append(value)
        yield pa.RecordBatch.from_pydict(out, schema=schema)
    if fenced is not None:
        return  # nothing more, not even an empty directory: the run lost its lease
    dirs = [d for d in touched if "bucket-" in d.rpartition("/")[2]]
    rows: dict[str, list[Any]] = {k: [] for k in schema.names}
    for start in dirs:
        current = start
        for _ in range(depth + 1):
            if current in roots or not table.paths.is_inside_table(current):
                break
            removed = table.fileio.delete_empty_dir(current)
            for key, value in zip(
                schema.names,
                (current, "directory", "done" if removed else "skipped", 0, None),
                strict=True,
            ):
                rows[key].append(value)
            if not removed:
                break
            current = parent(current)
    yield pa.RecordBatch.from_pydict(rows, schema=schema)


__all__ = [
    "LEVEL",
    "delete_batches",
    "emit_manifest_names",
    "emit_root_names",
    "expand",
    "list_files",
]
