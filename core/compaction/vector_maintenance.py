"""Deletion vectors around a compaction task, as Paimon's maintainers keep them.

A task applies its inputs' vectors when it reads them; the vector index files holding those
vectors are dropped by the commit. Vectors in those index files that belong to files the
task does not rewrite must survive: planning decides which index files go and which
vectors are kept (``index_rewrite``), the rewrite copies the kept vectors, bytes as they
are, into new index files (``write_kept_vectors``).
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from typing import Any

from core.compaction.config import CompactConfig
from core.compaction.task import CompactTask, IndexKeys, KeptGroups
from core.errors import StorageError
from core.format.deletion_vectors import (
    INDEX_TYPE,
    DeletionFile,
    roll_index_files,
    serialized_vector,
)
from core.format.model import FileKind, IndexManifestEntry
from core.table.table import PaimonTable
from core.write.manifest_writer import INDEX_MANIFEST_VERSION


def index_rewrite(
    table: PaimonTable,
    index_entries: Sequence[IndexManifestEntry],
    partition: bytes,
    bucket: int,
    inputs: set[str],
    task_vectors: Mapping[str, DeletionFile],
    cfg: CompactConfig,
) -> tuple[IndexKeys, KeptGroups]:
    """Which vector index files an append task drops and which vectors of other files it
    copies into new index files.

    Unaware bucket (``AppendDeleteFileMaintainer``): each index file holding an input's
    vector is dropped; its vectors of files not compacted go to new files of their own.
    Fixed bucket (``BucketedDvMaintainer``): the bucket's index files are replaced by one
    file of every remaining vector of the bucket (none when nothing remains)."""
    touched = {v.path for v in task_vectors.values()}
    own = [
        e
        for e in index_entries
        if e.index_type == INDEX_TYPE and (e.partition, e.bucket) == (partition, bucket)
    ]
    if cfg.mode == "unaware-append":
        own = [e for e in own if table.paths.index_file_path(e) in touched]
    deletes = frozenset((e.partition, e.bucket, e.index_type, e.file_name) for e in own)
    groups = []
    for e in own:
        path = table.paths.index_file_path(e)
        groups.append(
            tuple(
                (r.data_file, DeletionFile(path, r.offset, r.length, r.cardinality))
                for r in e.dv_ranges
                if r.data_file not in inputs
            )
        )
    if cfg.mode == "bucketed-append":
        groups = [tuple(v for g in groups for v in g)]  # writeSingleFile: one file
    return deletes, tuple(g for g in groups if g)


def index_bytes(table: PaimonTable, path: str, cache: dict[str, bytes]) -> bytes:
    if path not in cache:
        try:
            cache[path] = table.fileio.read_bytes(path)
        except FileNotFoundError:
            raise StorageError(
                f"deletion vector file {path} of the latest snapshot is missing"
            ) from None
    return cache[path]


def write_kept_vectors(
    table: PaimonTable, task: CompactTask, index_data: dict[str, bytes], written: list[str]
) -> tuple[dict[str, Any], ...]:
    """New index files for the vectors of files this task keeps (their bytes copied as
    they are, as Paimon's maintainer re-serializes them), appending paths to ``written``."""
    out: list[dict[str, Any]] = []
    prefix = f"index-{uuid.uuid4()}-"
    count = 0
    for group in task.kept_vectors:
        kept = [
            serialized_vector(index_bytes(table, v.path, index_data), v.offset, v.path, name)
            for name, v in group
        ]
        for content in roll_index_files(kept, task.index_target_size):
            name = f"{prefix}{count}"
            count += 1
            entry = IndexManifestEntry(
                FileKind.ADD, task.partition, task.bucket, INDEX_TYPE, name, 0, 0, None
            )
            path = table.paths.index_file_path(entry)
            written.append(path)
            if not table.fileio.write_if_absent(path, content.payload):
                raise StorageError(f"{path} already exists (UUID collision?)")
            out.append(
                {
                    "_VERSION": INDEX_MANIFEST_VERSION,
                    "_KIND": 0,
                    "_PARTITION": task.partition,
                    "_BUCKET": task.bucket,
                    "_INDEX_TYPE": INDEX_TYPE,
                    "_FILE_NAME": name,
                    "_FILE_SIZE": len(content.payload),
                    "_ROW_COUNT": len(content.ranges),
                    "_DELETIONS_VECTORS_RANGES": [
                        {"f0": f, "f1": off, "f2": length, "_CARDINALITY": card}
                        for f, off, length, card in content.ranges
                    ],
                    "_EXTERNAL_PATH": None,
                    "_GLOBAL_INDEX": None,
                }
            )
    return tuple(out)


__all__ = ["index_bytes", "index_rewrite", "write_kept_vectors"]
