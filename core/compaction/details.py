"""The details of a compaction plan: the effective settings, how records of a key merge,
and the tasks (files in, files out). The planner assembles them as data
(``core.compaction.planner``); ``CompactDetails.from_json`` reads them, checked, as it
reads a plan written before."""

from __future__ import annotations

from dataclasses import dataclass, field

from core.runtime.details import FLATTEN, OMIT_NONE, Record


@dataclass(frozen=True, slots=True)
class CompactSetting(Record):
    value: str | int | None
    source: str  # flag, dynamic, table, default, derived


@dataclass(frozen=True, slots=True)
class SequenceGroup(Record):
    ordered_by: tuple[str, ...]
    fields: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class MergeDetails(Record):
    """How the records of a key are merged (primary-key tables)."""

    engine: str
    sequence_fields: tuple[str, ...]
    sequence_order: str
    ignore_delete: bool
    remove_record_on_delete: bool
    sequence_groups: tuple[SequenceGroup, ...]
    aggregate_functions: dict[str, str]  # field -> function


@dataclass(frozen=True, slots=True)
class InputFile(Record):
    name: str
    level: int
    size: int


@dataclass(frozen=True, slots=True)
class PostponeRouting(Record):
    """A postpone partition's records, routed into its real buckets."""

    buckets: int
    bucket_number: str  # where the number of buckets came from
    records_by_bucket: dict[str, int]


@dataclass(frozen=True, slots=True)
class CompactTaskDetails(Record):
    partition: dict[str, str | None]
    partition_hex: str
    path: str  # the bucket directory
    bucket: int
    output_level: int
    files: int
    rows: int
    bytes: int
    files_after_estimate: int
    deletion_vectors: int  # inputs read with a vector
    index_files_dropped: tuple[str, ...]  # vector index files the commit removes
    vectors_applied: tuple[str, ...]  # the inputs read with a vector
    vectors_kept: tuple[str, ...]  # files not compacted whose vectors move to new files
    inputs: tuple[InputFile, ...]
    postpone: PostponeRouting | None = field(default=None, metadata=OMIT_NONE)


@dataclass(frozen=True, slots=True)
class SkippedBucket(Record):
    partition: dict[str, str | None]
    bucket: int
    reason: str


@dataclass(frozen=True, slots=True)
class CompactDeferred(Record):
    """Tasks left for later runs by a byte budget (maintain --compact-max-bytes)."""

    tasks: int
    bytes: int
    max_bytes: int


@dataclass(frozen=True, slots=True)
class CompactSums(Record):
    """The sums over the tasks (an estimate after: the rewrite decides)."""

    files_before: int
    bytes_before: int
    files_after_estimate: int
    bytes_after_estimate: int


@dataclass(frozen=True, slots=True)
class CompactDetails(Record):
    config: dict[str, CompactSetting]  # option key -> value and source
    mode: str  # unaware-append | bucketed-append | primary-key
    strategy: str
    merge: MergeDetails | None  # None for append tables
    changelog_producer: str | None  # written by the compaction (full-compaction, lookup)
    latest_snapshot: int | None
    tasks: tuple[CompactTaskDetails, ...] = ()
    skipped: tuple[SkippedBucket, ...] = ()
    deferred: CompactDeferred | None = field(default=None, metadata=OMIT_NONE)  # a budget
    sums: CompactSums | None = field(default=None, metadata=FLATTEN)  # None: no snapshot
