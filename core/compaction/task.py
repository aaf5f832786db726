"""The values handed between the compactor's rooms: a compaction task (what the planner
decided one rewrite merges) and what its rewrite wrote (what the commit adds).

A task is small and picklable: Spark ships it to a worker, which runs
``core.compaction.rewrite.rewrite_task`` on it and returns a ``TaskOutput``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from core.compaction.compact_changelog import ChangelogSpec
from core.compaction.merge_engines import MergeSpec
from core.compaction.postpone import PostponeSpec
from core.format.deletion_vectors import DeletionFile
from core.io.fileio import join, normalize_path

MB = 1024 * 1024

IndexKeys = frozenset[tuple[bytes, int, str, str]]  # (partition, bucket, index type, name)
KeptGroups = tuple[tuple[tuple[str, DeletionFile], ...], ...]


def file_size(row: Mapping[str, Any]) -> int:
    """A manifest row's ``_FILE_SIZE``."""
    return int(row["_FILE"]["_FILE_SIZE"])


def input_path(row: Mapping[str, Any], bucket_dir: str) -> str:
    """Where the data file of a manifest row is: its external path, else in its bucket's
    directory."""
    f = row["_FILE"]
    external = f.get("_EXTERNAL_PATH")
    if external:
        return normalize_path(str(external))
    return join(bucket_dir, str(f["_FILE_NAME"]))


def min_sequence(row: Mapping[str, Any]) -> int:
    """A manifest row's ``_MIN_SEQUENCE_NUMBER``."""
    return int(row["_FILE"]["_MIN_SEQUENCE_NUMBER"])


@dataclass(frozen=True, slots=True)
class CompactTask:
    """One rewrite: its inputs (full manifest rows, in read order) and where outputs go."""

    partition: bytes
    bucket: int
    total_buckets: int
    primary_key: bool
    inputs: tuple[dict[str, Any], ...]
    output_level: int
    target_file_size: int
    merge: MergeSpec | None = None  # primary-key tasks: how records of a key merge
    # Deletion vectors of inputs (by file name), and the vector index files
    # (partition, bucket, index type, name) the commit drops.
    deletion_vectors: Mapping[str, DeletionFile] = field(default_factory=dict)
    index_deletes: frozenset[tuple[bytes, int, str, str]] = frozenset()
    changelog: ChangelogSpec | None = None  # write changelog files too
    # Append tables: vectors of files this task does not rewrite that live in a dropped
    # index file, copied into new index files (each group rolled at index_target_size).
    kept_vectors: KeptGroups = ()
    index_target_size: int | None = 2 * MB  # None: one file (fixed bucket)
    # The bucket's vector index files at planning: if they differ at commit time, vectors
    # were written meanwhile and the commit is abandoned. None: nothing to check.
    index_seen: IndexKeys | None = None
    # Sums over the inputs, computed once (a plan may hold 10,000s of inputs).
    _bytes: int = field(init=False, repr=False, compare=False)
    _rows: int = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_bytes", sum(int(r["_FILE"]["_FILE_SIZE"]) for r in self.inputs))
        object.__setattr__(self, "_rows", sum(int(r["_FILE"]["_ROW_COUNT"]) for r in self.inputs))

    @property
    def bytes(self) -> int:
        return self._bytes

    @property
    def rows(self) -> int:
        return self._rows

    @property
    def estimated_outputs(self) -> int:
        return max(1, math.ceil(self.bytes / self.target_file_size))


@dataclass(frozen=True, slots=True)
class TaskOutput:
    """What one task wrote: ADD manifest rows and the paths (to delete on failure)."""

    entries: tuple[dict[str, Any], ...]
    paths: tuple[str, ...]
    rows_in: int
    rows_out: int
    changelog: tuple[dict[str, Any], ...] = ()  # ADD rows of the changelog manifest
    index_entries: tuple[dict[str, Any], ...] = ()  # ADD rows of new vector index files


@dataclass(frozen=True, slots=True)
class PostponeTask:
    """The postpone files of one partition, routed into its real buckets: a bucket that
    receives records is compacted fully with them (a bucket without files gets its first
    ones), the partition's other buckets as on every primary-key table."""

    partition: bytes
    num_buckets: int
    bucket_number_source: str  # where num_buckets came from (the plan says it)
    files: tuple[dict[str, Any], ...]  # bucket-postpone files, in replay order
    routed: tuple[tuple[int, int], ...]  # (bucket, records it receives), by bucket
    buckets: tuple[CompactTask, ...]  # the buckets compacted (receiving records or picked)
    spec: PostponeSpec  # how records are routed
    output_level: int
    target_file_size: int
    merge: MergeSpec | None = None
    changelog: ChangelogSpec | None = None

    @property
    def inputs(self) -> tuple[dict[str, Any], ...]:
        """The postpone files (each bucket task lists its own inputs)."""
        return self.files

    @property
    def bytes(self) -> int:
        return sum(file_size(r) for r in self.files)

    @property
    def rows(self) -> int:
        return sum(int(r["_FILE"]["_ROW_COUNT"]) for r in self.files)

    @property
    def estimated_outputs(self) -> int:
        """New files for the routed records alone (buckets with files count their own)."""
        return max(1, math.ceil(self.bytes / self.target_file_size))


__all__ = [
    "MB",
    "CompactTask",
    "PostponeTask",
    "IndexKeys",
    "KeptGroups",
    "TaskOutput",
    "file_size",
    "input_path",
    "min_sequence",
]
