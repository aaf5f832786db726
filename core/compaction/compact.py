"""plan_compact() / apply_compact(): rewrite small data files as Paimon's compaction does.

Which files are merged follows Paimon:
* unaware-bucket append tables (``bucket = -1``): ``AppendCompactCoordinator`` — per
  partition, files smaller than ``target-file-size × compaction.small-file-ratio`` sorted by
  size, packed into bins that close at ``2 × target`` (counting
  ``source.split.open-file-cost`` per file); a last bin needs ``compaction.min.file-num``.
  With deletion vectors, files whose vector deletes more than
  ``compaction.delete-ratio-threshold`` of their rows are picked too, files with a vector
  are grouped by their vector index file (a group never splits over bins) and always
  compacted; each task rewrites the vectors its inputs' index files keep for other files
  into new index files (``AppendDeleteFileMaintainer``);
* fixed-bucket append tables: ``BucketedAppendCompactManager`` per bucket (``full``: skip
  leading big files, compact when at least 3 remain and small ones outnumber big ones —
  with deletion vectors: skip only leading big files without a vector, compact the rest
  always; ``minor``: the first sliding window of ``compaction.min.file-num`` files);
* primary-key tables: full compaction of every bucket into the max level
  (``num-levels − 1``), merged per key by the table's merge engine (``core.compaction.merge_tree``:
  deduplicate, partial-update, aggregation, first-row; ``sequence.field``), dropping
  ``-U``/``-D`` results as Paimon does at the top level.

Rewrites are tasks (one per append bin, one per PK bucket) mapped over the executor, so
Spark runs them on its workers; the driver then makes one COMPACT commit (DELETE of every
input at its level, ADD of every output with ``_FILE_SOURCE = 1``). If a concurrent writer
removed any input (or rescaled a partition's buckets) the commit is abandoned and every file
written by this run is deleted: nothing is lost, the next run plans again. The manifests are
read once, to plan: on the planned snapshot the commit reads none, after other commits only
their delta manifests (the full live set only if that history has expired meanwhile).
"""

from __future__ import annotations

import datetime as dt
import logging
import math
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from core.compaction import compact_changelog
from core.compaction.merge_engines import MergeSpec
from core.compaction.merge_tree import merge_bucket
from core.errors import InvalidOptionError, MissingFileError, SafetyRefusalError, StorageError
from core.format.data_files import (
    SEQUENCE_NUMBER,
    SYSTEM_STATS_MODE,
    FileLayout,
    WriteOptions,
    conform,
    encode_file,
    key_row,
    read_raw,
    stats_of,
    unsupported_types,
    value_stats_modes,
)
from core.format.deletion_vectors import (
    INDEX_TYPE,
    DeletionFile,
    bucket_index_files,
    deletion_files,
    keep_mask,
    read_vector,
    roll_index_files,
    serialized_vector,
)
from core.format.model import DataField, FileKind, IndexManifestEntry, Snapshot, TableSchema
from core.format.options import parse_memory_size
from core.io.fileio import join
from core.ops.expire_partitions import live_raw_entries
from core.runtime.executors.base import Executor
from core.runtime.plans import Phase, Plan, Requirements
from core.runtime.runs import Run
from core.table.table import PaimonTable
from core.write.commit import (
    Changes,
    CommitConflictError,
    CommitResult,
    Publication,
    commit,
    delete_quietly,
    entry_identifier,
)
from core.write.manifest_writer import INDEX_MANIFEST_VERSION, MANIFEST_VERSION

logger = logging.getLogger(__name__)

COMMAND = "compact"
STRATEGIES = ("full", "minor")
FULL_COMPACT_MIN_FILE = 3  # BucketedAppendCompactManager
MB = 1024 * 1024
# Inputs at least this big are decoded with Arrow's thread pool; smaller ones (the usual
# compaction input) on the task's own thread: tasks already run in parallel, and handing a
# few-KB file to the pool costs more than decoding it.
THREADED_READ_BYTES = 8 * MB


IndexKeys = frozenset[tuple[bytes, int, str, str]]  # (partition, bucket, index type, name)
KeptGroups = tuple[tuple[tuple[str, DeletionFile], ...], ...]


class UnsupportedTableError(SafetyRefusalError):
    """The table uses a feature whose compaction paimon-cli cannot reproduce exactly."""

    kind = "unsupported_table"


class CompactConflictError(CommitConflictError):
    """A concurrent writer removed an input file: Paimon's 'File deletion conflicts'."""


# -- configuration -------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class CompactFlags:
    """What the user asked for; None falls back to table options, then Paimon defaults."""

    partitions: tuple[Mapping[str, str], ...] = ()
    strategy: str | None = None
    target_file_size: str | None = None


@dataclass(frozen=True, slots=True)
class CompactConfig:
    mode: str  # unaware-append | bucketed-append | primary-key
    strategy: str
    target_file_size: int
    small_file_ratio: float
    open_file_cost: int
    min_file_num: int
    file_num_limit: int
    max_level: int
    sources: Mapping[str, Any]
    merge: MergeSpec | None = None  # primary-key tables only
    # changelog-producer = full-compaction: the changelog the compaction writes
    changelog: compact_changelog.ChangelogSpec | None = None
    deletion_vectors: bool = False
    delete_ratio_threshold: float = 0.2  # unaware-bucket append tables with vectors
    index_target_size: int = 2 * MB  # deletion-vector.index-file.target-size

    @property
    def small_file_size(self) -> int:
        """CoreOptions.compactionFileSize: target × compaction.small-file-ratio."""
        return int(self.target_file_size * self.small_file_ratio)


def _true(table: PaimonTable, key: str) -> bool:
    value = table.options.get(key)
    return value is not None and value.strip().lower() == "true"


def refusals(table: PaimonTable) -> list[str]:
    """Options under which a Python rewrite would not be Paimon's (each names the option)."""
    opts = table.options
    out = []
    if _true(table, "deletion-vectors.enabled") and not table.is_primary_key:
        external = opts.get("global-index.external-path")
        if external:
            out.append(f"global-index.external-path={external} (new vector index files)")
    # Paimon master compacts these through machinery paimon-cli does not reproduce yet;
    # each refusal says what a rewrite would have to carry (issue 23.3).
    if _true(table, "data-evolution.enabled"):
        out.append(
            "data-evolution.enabled=true (partial-column files are merged by row-id range, "
            "with their BLOB files, deletion vectors and global indexes)"
        )
    if _true(table, "row-tracking.enabled"):
        out.append(
            "row-tracking.enabled=true (compacted files must carry each row's _ROW_ID and "
            "_SEQUENCE_NUMBER columns)"
        )
    if opts.bucket == -2:
        out.append(
            "bucket=-2 (postpone bucket: records are redistributed into real buckets by "
            "Paimon's bucket hash, then compacted there)"
        )
    for key in (
        "record-level.expire-time",
        "file.format.per.level",
        "file.compression.per.level",
        "clustering.columns",
        "chain-table.enabled",
    ):
        value = opts.get(key)
        if value and value.strip().lower() not in ("false", ""):
            out.append(f"{key}={value}")
    file_index = sorted(k for k in {**opts.table, **opts.dynamic} if k.startswith("file-index."))
    if file_index:
        out.append(f"{file_index[0]} (file indexes are not written by paimon-cli)")
    if table.is_primary_key:
        spec = merge_spec(table)
        out += spec.refusals()
        out += compact_changelog.refusals({**opts.table, **opts.dynamic}, spec.engine)
    fmt = (opts.get("file.format") or "parquet").strip().lower()
    bad = unsupported_types(table.schema.fields, fmt)
    if bad:
        out.append(f"column types {'; '.join(bad)}")
    return out


def merge_spec(table: PaimonTable) -> MergeSpec:
    """The merge engine settings of a primary-key table (dynamic options included)."""
    opts = table.options
    return MergeSpec.of(
        table.schema.fields, table.schema.primary_keys, {**opts.table, **opts.dynamic}
    )


def merge_details(spec: MergeSpec | None) -> dict[str, Any] | None:
    """How records of a key are merged (the plan's ``merge``); None for append tables."""
    if spec is None:
        return None
    return {
        "engine": spec.engine,
        "sequence_fields": list(spec.sequence_fields),
        "sequence_order": "ascending" if spec.sequence_ascending else "descending",
        "ignore_delete": spec.ignore_delete,
        "remove_record_on_delete": spec.remove_on_delete,
        "sequence_groups": [
            {
                "ordered_by": [spec.fields[i].name for i in g.ordering],
                "fields": [spec.fields[i].name for i in g.protected],
            }
            for g in spec.groups
        ],
        "aggregate_functions": {
            f.name: name
            for i, f in enumerate(spec.fields)
            if spec.engine in ("aggregation", "partial-update")
            and (name := spec.agg_name(i)) is not None
        },
    }


def compact_config(table: PaimonTable, flags: CompactFlags) -> CompactConfig:
    """Flags over table options over Paimon defaults; refuses unsupported tables."""
    problems = refusals(table)
    if problems:
        raise UnsupportedTableError(
            f"cannot compact {table.location}: " + "; ".join(problems),
            hint="compact this table with Paimon itself (Spark/Flink sys.compact)",
        )
    opts = table.options
    sources: dict[str, Any] = {}
    pk = table.is_primary_key

    def pick(flag: Any, key: str, default: str) -> str:
        if flag is not None:
            sources[key] = {"value": flag, "source": "flag"}
            return str(flag)
        found = opts.lookup(key)
        if found.value is None:
            sources[key] = {"value": default, "source": "default"}
            return default
        sources[key] = {"value": found.value, "source": found.source}
        return found.value

    mode = "primary-key" if pk else "unaware-append" if opts.bucket == -1 else "bucketed-append"
    default_strategy = "full"
    if _true(table, "clustering.incremental"):
        default_strategy = "minor"
    strategy = pick(flags.strategy, "compact-strategy", default_strategy).strip().lower()
    if strategy not in STRATEGIES:
        raise InvalidOptionError(f"unknown compact strategy {strategy!r} (use full or minor)")
    if pk and strategy == "minor":
        raise InvalidOptionError(
            "minor compaction of primary-key tables is not supported: use --compact-strategy full"
        )
    target = parse_memory_size(
        pick(flags.target_file_size, "target-file-size", "128 mb" if pk else "256 mb")
    )
    if target <= 0:
        raise InvalidOptionError(f"target file size must be positive, got {target}")
    try:
        ratio = float(pick(None, "compaction.small-file-ratio", "0.7"))
    except ValueError:
        raise InvalidOptionError("compaction.small-file-ratio must be a number") from None
    num_levels = opts.get_int("num-levels")
    if num_levels is None:
        trigger = opts.get_int("num-sorted-run.compaction-trigger") or 5
        num_levels = trigger + 1
    sources["num-levels"] = {"value": num_levels, "source": "derived"}
    dv = _true(table, "deletion-vectors.enabled")
    dv_extra: dict[str, Any] = {}
    if dv and not pk:
        try:
            dv_extra["delete_ratio_threshold"] = float(
                pick(None, "compaction.delete-ratio-threshold", "0.2")
            )
        except ValueError:
            raise InvalidOptionError("compaction.delete-ratio-threshold must be a number") from None
        dv_extra["index_target_size"] = parse_memory_size(
            pick(None, "deletion-vector.index-file.target-size", "2 mb")
        )
    return CompactConfig(
        mode=mode,
        strategy=strategy,
        target_file_size=target,
        small_file_ratio=ratio,
        open_file_cost=parse_memory_size(pick(None, "source.split.open-file-cost", "4 mb")),
        min_file_num=int(pick(None, "compaction.min.file-num", "5")),
        file_num_limit=int(pick(None, "compaction.file-num-limit", "100000")),
        max_level=num_levels - 1,
        sources=sources,
        merge=merge_spec(table) if pk else None,
        changelog=(
            compact_changelog.ChangelogSpec.of({**opts.table, **opts.dynamic}, num_levels - 1)
            if pk
            else None
        ),
        deletion_vectors=dv,
        **dv_extra,
    )


def parse_partition_filter(text: str) -> dict[str, str]:
    """``k=v[,k2=v2]``: one partition spec (all keys must match)."""
    spec: dict[str, str] = {}
    for part in text.split(","):
        if "=" not in part:
            raise InvalidOptionError(
                f"partition filter {text!r}: {part.strip()!r} is not key=value"
            )
        key, value = part.split("=", 1)
        spec[key.strip()] = value.strip()
    return spec


def _check_partition_filters(table: PaimonTable, specs: Sequence[Mapping[str, str]]) -> None:
    keys = table.schema.partition_keys
    for spec in specs:
        if not keys:
            raise InvalidOptionError(
                f"{table.location} is not partitioned: --partition cannot be used"
            )
        unknown = [k for k in spec if k not in keys]
        if unknown:
            raise InvalidOptionError(
                f"partition filter names {', '.join(unknown)}, not a partition key "
                f"(partition keys: {', '.join(keys)})"
            )


def _matches(spec_text: Mapping[str, str | None], filters: Sequence[Mapping[str, str]]) -> bool:
    if not filters:
        return True
    return any(all(spec_text.get(k) == v for k, v in f.items()) for f in filters)


# -- tasks ----------------------------------------------------------------------------------------
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
    changelog: compact_changelog.ChangelogSpec | None = None  # write changelog files too
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
class CompactPlan:
    plan: Plan
    tasks: tuple[CompactTask, ...]
    config: CompactConfig | None
    # The snapshot the plan was made from: the commit checks only what changed after it.
    snapshot: Snapshot | None = None


def _size(row: Mapping[str, Any]) -> int:
    return int(row["_FILE"]["_FILE_SIZE"])


def _min_seq(row: Mapping[str, Any]) -> int:
    return int(row["_FILE"]["_MIN_SEQUENCE_NUMBER"])


def _pack_unaware(files: list[dict[str, Any]], cfg: CompactConfig) -> list[list[dict[str, Any]]]:
    """AppendCompactCoordinator.SubCoordinator.pack (files without deletion vectors)."""
    ordered = sorted(files, key=_size)  # stable: ties keep manifest order
    bins: list[list[dict[str, Any]]] = []
    current: list[dict[str, Any]] = []
    weight = 0
    for f in ordered:
        current.append(f)
        weight += _size(f) + cfg.open_file_cost
        if len(current) > 1 and weight >= cfg.target_file_size * 2:
            bins.append(current)
            current, weight = [], 0
    if len(current) >= cfg.min_file_num:
        bins.append(current)
    return bins


def _pack_unaware_dv(
    files: list[dict[str, Any]], cfg: CompactConfig, vectors: Mapping[str, DeletionFile]
) -> list[list[dict[str, Any]]]:
    """SubCoordinator.packInDeletionVectorVMode: files with a vector grouped by their index
    file, groups by total size into bins (a group never splits); the last bin is compacted
    whatever its size; files without a vector are packed as usual when more than one."""
    groups: dict[str, list[dict[str, Any]]] = {}
    rest: list[dict[str, Any]] = []
    for f in files:
        vector = vectors.get(str(f["_FILE"]["_FILE_NAME"]))
        if vector is None:
            rest.append(f)
        else:
            groups.setdefault(vector.path, []).append(f)
    bins: list[list[dict[str, Any]]] = []
    current: list[dict[str, Any]] = []
    weight = 0
    for group in sorted(groups.values(), key=lambda g: sum(_size(f) for f in g)):
        for f in group:
            current.append(f)
            weight += _size(f) + cfg.open_file_cost
        if len(current) > 1 and weight >= cfg.target_file_size * 2:
            bins.append(current)
            current, weight = [], 0
    if current:
        bins.append(current)
    if len(rest) > 1:
        bins += _pack_unaware(rest, cfg)
    return bins


def _too_many_deleted(row: Mapping[str, Any], vector: DeletionFile | None, ratio: float) -> bool:
    """AppendCompactCoordinator.tooHighDeleteRatio: a vector without a cardinality (written
    before Paimon 1.0) counts as too many."""
    if vector is None:
        return False
    if vector.cardinality is None:
        return True
    return vector.cardinality > int(row["_FILE"]["_ROW_COUNT"]) * ratio


def _pick_bucketed(
    files: list[dict[str, Any]],
    cfg: CompactConfig,
    vectors: Mapping[str, DeletionFile] | None = None,
) -> list[dict[str, Any]]:
    """BucketedAppendCompactManager: FullCompactTask or pickCompactBefore (minor).
    ``vectors`` is the bucket's deletion vectors when the table has them enabled."""
    ordered = sorted(files, key=_min_seq)
    if cfg.strategy == "full" and vectors is not None:
        # A file with a vector is always compacted, and so is everything after it.
        while (
            ordered
            and _size(ordered[0]) >= cfg.small_file_size
            and ordered[0]["_FILE"]["_FILE_NAME"] not in vectors
        ):
            ordered.pop(0)
        return ordered
    if cfg.strategy == "full":
        if len(ordered) < FULL_COMPACT_MIN_FILE:
            return []
        while ordered and _size(ordered[0]) >= cfg.small_file_size:
            ordered.pop(0)
        big = sum(1 for f in ordered if _size(f) >= cfg.small_file_size)
        small = len(ordered) - big
        return ordered if small > big and len(ordered) >= FULL_COMPACT_MIN_FILE else []
    window: list[dict[str, Any]] = []
    total = 0
    for f in ordered:
        window.append(f)
        total += _size(f)
        if len(window) >= cfg.min_file_num:
            return window
        if total >= cfg.target_file_size * 2:
            total -= _size(window.pop(0))
    return []


def _pick_pk(
    files: list[dict[str, Any]], max_level: int, vectors: Mapping[str, DeletionFile]
) -> list[dict[str, Any]]:
    """CompactStrategy.pickFullCompaction: every file, unless the bucket is one sorted run
    at the max level already; then only its files that have a deletion vector."""
    levels = {int(f["_FILE"]["_LEVEL"]) for f in files}
    if levels == {max_level}:
        files = [f for f in files if f["_FILE"]["_FILE_NAME"] in vectors]
    return sorted(files, key=_min_seq)


def _compatible_schemas(table: PaimonTable, files: Sequence[Mapping[str, Any]]) -> bool:
    """Files written with another schema are compatible when the columns are unchanged."""
    current = table.schema
    for sid in {int(f["_FILE"]["_SCHEMA_ID"]) for f in files}:
        if sid == current.id:
            continue
        other: TableSchema = table.schemas.schema(sid)
        if other.fields != current.fields:
            return False
    return True


def plan_compact(table: PaimonTable, flags: CompactFlags, *, now_ms: int) -> CompactPlan:
    """Pure planner: which files of the latest snapshot Paimon would merge, per task."""
    _check_partition_filters(table, flags.partitions)
    cfg = compact_config(table, flags)
    latest = table.snapshots.latest()
    details: dict[str, Any] = {
        "config": dict(cfg.sources),
        "mode": cfg.mode,
        "strategy": cfg.strategy,
        "merge": merge_details(cfg.merge),
        "changelog_producer": (
            cfg.changelog.producer if cfg.changelog and cfg.changelog.producer != "none" else None
        ),
        "latest_snapshot": latest.id if latest else None,
        "tasks": [],
        "skipped": [],
    }
    requirements = Requirements(latest.id if latest else None, None, {}, (), None)
    if latest is None:
        return CompactPlan(
            Plan(COMMAND, table.location, table.branch, now_ms, (), requirements, details),
            (),
            cfg,
        )
    groups: dict[tuple[bytes, int], list[dict[str, Any]]] = {}
    scanned = 0
    unaware = cfg.mode == "unaware-append"
    small_file_size = cfg.small_file_size
    selected: dict[bytes, bool] = {}  # partition filter, decided once per partition
    with_vectors = cfg.mode == "primary-key" or cfg.deletion_vectors
    index_entries = table.index_files(latest) if with_vectors else []
    vectors = deletion_files(index_entries, table.paths.index_file_path)
    for row in live_raw_entries(table, latest):
        bucket = int(row["_BUCKET"])
        if bucket < 0:
            continue
        partition = bytes(row["_PARTITION"])
        if flags.partitions:
            keep = selected.get(partition)
            if keep is None:
                spec = table.paths.partition_spec(partition)
                keep = selected[partition] = _matches(spec, flags.partitions)
            if not keep:
                continue
        if unaware:
            if _size(row) >= small_file_size and not (
                cfg.deletion_vectors
                and _too_many_deleted(
                    row,
                    vectors.get((partition, bucket, str(row["_FILE"]["_FILE_NAME"]))),
                    cfg.delete_ratio_threshold,
                )
            ):
                continue
            # Spark's procedure plans one round of at most compaction.file-num-limit of
            # the files its scan filter lets through.
            if scanned >= cfg.file_num_limit:
                continue
            scanned += 1
        groups.setdefault((partition, bucket), []).append(row)
    # Vectors and vector index files by bucket, once: a deletion-vector table can have
    # tens of thousands of buckets and a vector per file.
    vectors_of: dict[tuple[bytes, int], dict[str, DeletionFile]] = {}
    for (p, b, name), v in vectors.items():
        vectors_of.setdefault((p, b), {})[name] = v
    index_of: dict[tuple[bytes, int], list[IndexManifestEntry]] = {}
    for e in index_entries:
        index_of.setdefault((e.partition, e.bucket), []).append(e)
    tasks: list[CompactTask] = []
    for (partition, bucket), files in sorted(groups.items(), key=lambda kv: kv[0]):
        spec = table.paths.partition_spec(partition)
        if not _compatible_schemas(table, files):
            details["skipped"].append(
                {
                    "partition": spec,
                    "bucket": bucket,
                    "reason": "files written before a column change (schema evolution)",
                }
            )
            continue
        bucket_vectors = vectors_of.get((partition, bucket), {})
        bucket_index = frozenset(
            bucket_index_files(index_of.get((partition, bucket), ()), {(partition, bucket): True})
        )
        picked: list[list[dict[str, Any]]]
        if cfg.mode == "unaware-append":
            if cfg.deletion_vectors:
                picked = _pack_unaware_dv(files, cfg, bucket_vectors)
            else:
                picked = _pack_unaware(files, cfg)
        elif cfg.mode == "bucketed-append":
            chosen = _pick_bucketed(files, cfg, bucket_vectors if cfg.deletion_vectors else None)
            picked = [chosen] if chosen else []
        else:
            chosen = _pick_pk(files, cfg.max_level, bucket_vectors)
            picked = [chosen] if chosen else []
        for inputs in picked:
            names = {str(r["_FILE"]["_FILE_NAME"]) for r in inputs}
            task_vectors = {n: v for n, v in bucket_vectors.items() if n in names}
            index_deletes: IndexKeys = frozenset()
            kept: KeptGroups = ()
            if cfg.mode == "primary-key":
                index_deletes = bucket_index
            elif task_vectors:
                index_deletes, kept = _append_index_rewrite(
                    table,
                    index_of.get((partition, bucket), ()),
                    partition,
                    bucket,
                    names,
                    task_vectors,
                    cfg,
                )
            tasks.append(
                CompactTask(
                    partition=partition,
                    bucket=bucket,
                    total_buckets=int(inputs[0]["_TOTAL_BUCKETS"]),
                    primary_key=cfg.mode == "primary-key",
                    inputs=tuple(inputs),
                    output_level=cfg.max_level if cfg.mode == "primary-key" else 0,
                    target_file_size=cfg.target_file_size,
                    merge=cfg.merge,
                    deletion_vectors=task_vectors,
                    index_deletes=index_deletes,
                    changelog=cfg.changelog,
                    kept_vectors=kept,
                    index_target_size=cfg.index_target_size if unaware else None,
                    index_seen=bucket_index if with_vectors else None,
                )
            )
    for t in tasks:
        details["tasks"].append(_task_json(table, t))
    details["files_before"] = sum(len(t.inputs) for t in tasks)
    details["bytes_before"] = sum(t.bytes for t in tasks)
    details["files_after_estimate"] = sum(t.estimated_outputs for t in tasks)
    details["bytes_after_estimate"] = details["bytes_before"]
    phases: tuple[Phase, ...] = ()
    if tasks:
        phases = (
            Phase.commit(
                table.snapshots.path(latest.id + 1),
                f"COMPACT commit replacing {details['files_before']} files with about "
                f"{details['files_after_estimate']}",
            ),
        )
    plan = Plan(COMMAND, table.location, table.branch, now_ms, phases, requirements, details)
    return CompactPlan(plan, tuple(tasks), cfg, latest)


def _append_index_rewrite(
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


def _task_json(table: PaimonTable, t: CompactTask) -> dict[str, Any]:
    return {
        "partition": table.paths.partition_spec(t.partition),
        "partition_hex": t.partition.hex(),
        "path": table.paths.bucket_dir(t.partition, t.bucket),
        "bucket": t.bucket,
        "output_level": t.output_level,
        "files": len(t.inputs),
        "rows": t.rows,
        "bytes": t.bytes,
        "files_after_estimate": t.estimated_outputs,
        "deletion_vectors": len(t.deletion_vectors),
        "index_files_dropped": sorted(name for *_, name in t.index_deletes),
        "vectors_applied": sorted(t.deletion_vectors),
        "vectors_kept": sorted(name for g in t.kept_vectors for name, _ in g),
        "inputs": [
            {"name": r["_FILE"]["_FILE_NAME"], "level": r["_FILE"]["_LEVEL"], "size": _size(r)}
            for r in t.inputs
        ],
    }


# -- rewriting (runs on executors) -------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class TaskOutput:
    """What one task wrote: ADD manifest rows and the paths (to delete on failure)."""

    entries: tuple[dict[str, Any], ...]
    paths: tuple[str, ...]
    rows_in: int
    rows_out: int
    changelog: tuple[dict[str, Any], ...] = ()  # ADD rows of the changelog manifest
    index_entries: tuple[dict[str, Any], ...] = ()  # ADD rows of new vector index files


def _input_path(table: PaimonTable, row: Mapping[str, Any], bucket_dir: str) -> str:
    f = row["_FILE"]
    external = f.get("_EXTERNAL_PATH")
    if external:
        from core.io.fileio import normalize_path

        return normalize_path(str(external))
    return join(bucket_dir, str(f["_FILE_NAME"]))


def _index_bytes(table: PaimonTable, path: str, cache: dict[str, bytes]) -> bytes:
    if path not in cache:
        try:
            cache[path] = table.fileio.read_bytes(path)
        except FileNotFoundError:
            raise StorageError(
                f"deletion vector file {path} of the latest snapshot is missing"
            ) from None
    return cache[path]


def _read_inputs(
    table: PaimonTable,
    task: CompactTask,
    layout: FileLayout,
    index_data: dict[str, bytes],
    *,
    with_level: bool = False,
) -> Any:
    """Every input record (deletion vectors applied); ``with_level`` adds each record's
    file level as column ``compact_changelog.LEVEL``."""
    import pyarrow as pa

    schema = layout.arrow_schema()
    read_schema = layout.read_schema()
    bucket_dir = table.paths.bucket_dir(task.partition, task.bucket)
    parts = []
    for row in task.inputs:
        path = _input_path(table, row, bucket_dir)
        name = str(row["_FILE"]["_FILE_NAME"])
        try:
            # Local files are read in place by pyarrow (no copy through Python).
            data: bytes | str = (
                path if table.fileio.is_local(path) else table.fileio.read_bytes(path)
            )
            big = _size(row) >= THREADED_READ_BYTES
            part = layout.with_keys(read_raw(data, name, read_schema, use_threads=big))
        except FileNotFoundError:
            raise StorageError(f"data file {path} of the latest snapshot is missing") from None
        vector = task.deletion_vectors.get(name)
        if vector is not None:
            data_ = _index_bytes(table, vector.path, index_data)
            deleted = read_vector(data_, vector.offset, vector.path)
            part = part.filter(keep_mask(part.num_rows, deleted))
        if with_level:
            part = conform(part, schema)
            level = pa.array([int(row["_FILE"]["_LEVEL"])] * part.num_rows, pa.int32())
            part = part.append_column(compact_changelog.LEVEL, level)
        parts.append(part)
    if with_level:
        if not parts:
            return schema.append(pa.field(compact_changelog.LEVEL, pa.int32())).empty_table()
        return pa.concat_tables(parts)
    if not parts:
        return schema.empty_table()
    first = parts[0].schema
    if all(p.schema.equals(first) for p in parts):
        return conform(pa.concat_tables(parts), schema)  # one cast for the whole task
    return pa.concat_tables([conform(p, schema) for p in parts])


def _rows_per_file(task: CompactTask, rows: int) -> int:
    if rows == 0:
        return 1
    per_row = max(task.bytes / max(task.rows, 1), 1e-9)
    return max(1, int(task.target_file_size / per_row))


def _local_now_ms() -> int:
    # _CREATION_TIME: local wall-clock time encoded as if it were UTC.
    now = dt.datetime.now()
    return int((now - dt.datetime(1970, 1, 1)).total_seconds() * 1000)


def rewrite_task(table: PaimonTable, task: CompactTask) -> TaskOutput:
    """Read a task's inputs, merge, write rolling outputs; pure and picklable (Spark)."""
    schema = table.schema
    # KeyValueFileWriterFactory: thin files whenever data-file.thin-mode is set (the key
    # is always a subset of the values here); inputs of either layout read alike.
    layout = FileLayout.of(
        schema.fields, schema.trimmed_primary_keys, thin=_true(table, "data-file.thin-mode")
    )
    opts = WriteOptions.of(table.options, level=task.output_level)
    index_data: dict[str, bytes] = {}  # one read per vector index file
    data = _read_inputs(table, task, layout, index_data, with_level=task.changelog is not None)
    rows_in = data.num_rows
    changelog = None
    if task.primary_key:
        keys = layout.key_columns
        assert task.merge is not None
        if task.changelog is not None:
            changelog, data = compact_changelog.full_changelog(
                data, keys, task.merge, task.changelog
            )
        data = merge_bucket(data, keys, task.merge)
    step = _rows_per_file(task, data.num_rows)
    written: list[str] = []
    prefix = str(uuid.uuid4())
    seq_next = _min_seq(task.inputs[0]) if task.inputs else 0
    try:
        entries = _write_rolling(
            table, task, layout, opts, data, prefix, 0, step, written, seq_start=seq_next
        )
        changelog_entries = (
            _write_changelog(table, task, layout, changelog, prefix, len(entries), step, written)
            if changelog is not None
            else []
        )
        index_entries = _write_kept_vectors(table, task, index_data, written)
    except BaseException:
        delete_quietly(table.fileio, written)
        raise
    return TaskOutput(
        tuple(entries),
        tuple(written),
        rows_in,
        data.num_rows,
        tuple(changelog_entries),
        index_entries,
    )


def _write_changelog(
    table: PaimonTable,
    task: CompactTask,
    layout: FileLayout,
    changelog: Any,
    uuid_prefix: str,
    counter: int,
    step: int,
    written: list[str],
) -> list[dict[str, Any]]:
    """Rolling changelog files (KeyValueFileWriterFactory#createRollingChangelogFileWriter):
    the data files' layout and options unless ``changelog-file.*`` says otherwise, same
    level, ``_FILE_SOURCE = APPEND``; named with the data files' UUID and counter."""

    def changelog_meta(chunk: Any, meta: dict[str, Any]) -> None:
        meta["_DELETE_ROW_COUNT"] = compact_changelog.delete_row_count(chunk)
        meta["_FILE_SOURCE"] = 0  # APPEND, as Paimon's changelog writer says

    opts = compact_changelog.write_options(table.options, task.output_level)
    return _write_rolling(
        table,
        task,
        layout,
        opts,
        changelog,
        uuid_prefix,
        counter,
        step,
        written,
        seq_start=0,
        finish_meta=changelog_meta,
    )


def _write_rolling(
    table: PaimonTable,
    task: CompactTask,
    layout: FileLayout,
    opts: WriteOptions,
    data: Any,
    uuid_prefix: str,
    counter: int,
    step: int,
    written: list[str],
    seq_start: int,
    finish_meta: Callable[[Any, dict[str, Any]], None] | None = None,
) -> list[dict[str, Any]]:
    """Write ``data`` as files of ``step`` rows named ``<prefix><uuid>-<n>``, ``n`` counting
    from ``counter``; their ADD manifest entries. ``seq_start`` numbers the rows of append
    files (key-value files carry their own sequence numbers); ``finish_meta`` amends each
    file's meta."""
    bucket_dir = table.paths.bucket_dir(task.partition, task.bucket)
    entries: list[dict[str, Any]] = []
    for n, start in enumerate(range(0, data.num_rows, step), start=counter):
        chunk = data.slice(start, step)
        name = f"{opts.prefix}{uuid_prefix}-{n}.{opts.file_format}"
        path = join(bucket_dir, name)
        columns = layout.columns()
        payload = encode_file(chunk.select([c.name for c in columns]), opts, columns)
        written.append(path)
        if not table.fileio.write_if_absent(path, payload):
            raise StorageError(f"{path} already exists (UUID collision?)")
        meta = _file_meta(table, task, layout, opts, chunk, name, len(payload), seq_start)
        seq_start += chunk.num_rows
        if finish_meta is not None:
            finish_meta(chunk, meta)
        entries.append(
            {
                "_VERSION": MANIFEST_VERSION,
                "_KIND": 0,
                "_PARTITION": task.partition,
                "_BUCKET": task.bucket,
                "_TOTAL_BUCKETS": task.total_buckets,
                "_FILE": meta,
            }
        )
    return entries


def _write_kept_vectors(
    table: PaimonTable, task: CompactTask, index_data: dict[str, bytes], written: list[str]
) -> tuple[dict[str, Any], ...]:
    """New index files for the vectors of files this task keeps (their bytes copied as
    they are, as Paimon's maintainer re-serializes them), appending paths to ``written``."""
    out: list[dict[str, Any]] = []
    prefix = f"index-{uuid.uuid4()}-"
    count = 0
    for group in task.kept_vectors:
        kept = [
            serialized_vector(_index_bytes(table, v.path, index_data), v.offset, v.path, name)
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


@dataclass(frozen=True, slots=True)
class TaskFailure:
    """A task that raised (its own files already removed); returned, not raised, so the
    files of every task that succeeded are known and can be removed too."""

    error: Exception


def _rewrite_or_failure(table: PaimonTable, task: CompactTask) -> TaskOutput | TaskFailure:
    try:
        return rewrite_task(table, task)
    except Exception as exc:
        return TaskFailure(exc)


def _file_meta(
    table: PaimonTable,
    task: CompactTask,
    layout: FileLayout,
    opts: WriteOptions,
    chunk: Any,
    name: str,
    size: int,
    seq_start: int,
) -> dict[str, Any]:
    import pyarrow.compute as pc

    value_fields = [(f.name, f) for f in layout.value_fields]
    value_stats = stats_of(
        chunk,
        value_fields,
        value_stats_modes(
            layout.value_fields,
            opts,
            frozenset(f.name for f in layout.key_fields) if layout.thin else frozenset(),
        ),
        dense=opts.dense_stats,
    )
    if task.primary_key:
        key_cols = layout.key_columns
        key_types = [f.type for f in layout.key_fields]
        key_fields: list[tuple[str, DataField]] = list(
            zip(key_cols, layout.key_fields, strict=True)
        )
        key_stats = stats_of(
            chunk, key_fields, [SYSTEM_STATS_MODE] * len(key_fields), dense=False
        ).record
        min_key = key_row(chunk, key_cols, 0, key_types)
        max_key = key_row(chunk, key_cols, chunk.num_rows - 1, key_types)
        mm = pc.min_max(chunk.column(SEQUENCE_NUMBER))
        min_seq, max_seq = int(mm["min"].as_py()), int(mm["max"].as_py())
    else:
        from core.format.data_files import Stats

        key_stats = Stats.empty()
        min_key = max_key = key_row(chunk, [], 0, [])
        # RowDataFileSequenceNumberTracker: a counter from the first input's min sequence.
        min_seq, max_seq = seq_start, seq_start + chunk.num_rows - 1
    return {
        "_FILE_NAME": name,
        "_FILE_SIZE": size,
        "_ROW_COUNT": chunk.num_rows,
        "_MIN_KEY": min_key,
        "_MAX_KEY": max_key,
        "_KEY_STATS": key_stats,
        "_VALUE_STATS": value_stats.record,
        "_MIN_SEQUENCE_NUMBER": min_seq,
        "_MAX_SEQUENCE_NUMBER": max_seq,
        "_SCHEMA_ID": table.schema.id,
        "_LEVEL": task.output_level,
        "_EXTRA_FILES": [],
        "_CREATION_TIME": _local_now_ms(),
        "_DELETE_ROW_COUNT": 0,
        "_EMBEDDED_FILE_INDEX": None,
        "_FILE_SOURCE": 1,
        "_VALUE_STATS_COLS": value_stats.cols,
        "_EXTERNAL_PATH": None,
        "_FIRST_ROW_ID": None,
        "_WRITE_COLS": None,
        "_WRITE_COLS_SEQUENCES": None,
    }


# -- commit -------------------------------------------------------------------------------------
@dataclass(frozen=True)
class CompactResult:
    commit: CommitResult | None
    files_before: int
    files_after: int
    bytes_before: int
    bytes_after: int
    rows_before: int
    rows_after: int
    notes: tuple[str, ...] = field(default=())
    changelog_files: int = 0  # changelog-producer full-compaction / lookup
    changelog_records: int = 0


def _same_snapshot(a: Snapshot, b: Snapshot) -> bool:
    """The same commit: ids are reused after a rollback, manifest list names are not."""
    return (a.id, a.base_manifest_list, a.delta_manifest_list) == (
        b.id,
        b.base_manifest_list,
        b.delta_manifest_list,
    )


def changes_since(
    table: PaimonTable, base: Snapshot, latest: Snapshot
) -> tuple[set[Any], set[tuple[bytes, int]]] | None:
    """What the snapshots after ``base`` up to ``latest`` did, from their delta manifests
    alone (each commit's delta holds exactly its ADD and DELETE entries): the identifiers
    they removed (net of re-adds) and the (partition, total buckets) pairs they added.

    None when that chain cannot be read as one history on top of ``base`` (a snapshot or
    manifest expired meanwhile, or ``base`` was rolled back and its id reused): the caller
    then checks against the full live set of ``latest``."""
    if latest.id < base.id:
        return None
    if latest.id == base.id:
        return (set(), set()) if _same_snapshot(latest, base) else None
    current = table.snapshots.try_snapshot(base.id)
    if current is None or not _same_snapshot(current, base):
        return None
    removed: set[Any] = set()
    added: set[tuple[bytes, int]] = set()
    try:
        for sid in range(base.id + 1, latest.id + 1):
            snap = latest if sid == latest.id else table.snapshots.try_snapshot(sid)
            if snap is None:
                return None
            for meta in table.manifest_list(snap, snap.delta_manifest_list):
                for entry in table.manifest(meta):
                    if entry.kind is FileKind.DELETE:
                        removed.add(entry.identifier)
                    else:
                        removed.discard(entry.identifier)
                        added.add((entry.partition, entry.total_buckets))
    except MissingFileError:
        return None
    return removed, added


def compact_builder(
    table: PaimonTable,
    tasks: Sequence[CompactTask],
    outputs: Sequence[TaskOutput],
    *,
    planned_on: Snapshot | None = None,
) -> Callable[[Any], Changes]:
    """DELETE every input and ADD every output, only if every input is still live.

    On the snapshot the plan was made from every input is live by construction, so nothing
    is read; when other commits came in between, only their delta manifests are read
    (``changes_since``), and the full live set of the latest snapshot only if that history
    cannot be read."""
    inputs = [row for t in tasks for row in t.inputs]
    index_deletes = frozenset(d for t in tasks for d in t.index_deletes)
    index_adds = tuple(e for o in outputs for e in o.index_entries)
    planned_index = {
        (t.partition, t.bucket): t.index_seen for t in tasks if t.index_seen is not None
    }
    seen = {d for v in planned_index.values() if v is not None for d in v}
    buckets = {(t.partition, t.total_buckets) for t in tasks}
    partitions = {p for p, _ in buckets}
    adds = [e for o in outputs for e in o.entries]
    entries = tuple([{**r, "_KIND": 1} for r in inputs] + adds)
    changelog = tuple(e for o in outputs for e in o.changelog)

    def conflict(gone: list[Any]) -> CompactConflictError:
        return CompactConflictError(
            f"File deletion conflicts detected: {len(gone)} input file(s) were removed by "
            f"a concurrent writer since planning (e.g. {gone[0]}); nothing committed",
            hint="run compact again: it plans from the new latest snapshot",
        )

    def check_rescaled(partition: bytes, total: int) -> None:
        if partition in partitions and total > 0 and (partition, total) not in buckets:
            raise CompactConflictError(
                "the bucket number of a compacted partition changed without overwrite; "
                "nothing committed"
            )

    def check_full(latest: Snapshot) -> None:
        live = live_raw_entries(table, latest)
        ids = {entry_identifier(r) for r in live}
        gone = [r["_FILE"]["_FILE_NAME"] for r in inputs if entry_identifier(r) not in ids]
        if gone:
            raise conflict(gone)
        for r in live:
            check_rescaled(bytes(r["_PARTITION"]), int(r["_TOTAL_BUCKETS"]))

    def build(latest: Snapshot) -> Changes:
        since = None if planned_on is None else changes_since(table, planned_on, latest)
        if since is None:
            check_full(latest)
        else:
            removed, added = since
            if removed:
                gone = [r["_FILE"]["_FILE_NAME"] for r in inputs if entry_identifier(r) in removed]
                if gone:
                    raise conflict(gone)
            for p, total in added:
                check_rescaled(p, total)
        if planned_index:
            # Vectors written after planning would delete rows our outputs still hold.
            now = bucket_index_files(table.index_files(latest), planned_index)
            if now != seen:
                raise CompactConflictError(
                    "the deletion vectors of a compacted bucket changed since planning; "
                    "nothing committed",
                    hint="run compact again: it plans from the new latest snapshot",
                )
        return Changes(
            entries,
            index_deletes=index_deletes,
            changelog=changelog,
            index_adds=index_adds,
            details={"based_on": latest.id},
            deletes_verified=True,
        )

    return build


def apply_compact(
    table: PaimonTable,
    cplan: CompactPlan,
    *,
    executor: Executor,
    allow_unsafe: bool = False,
    on_task: Callable[[TaskOutput], None] | None = None,
    before_commit: Callable[[], None] | None = None,
    run: Run | None = None,
) -> CompactResult:
    """Rewrite every task on the executor, then commit once (COMPACT) on the driver."""
    tasks = cplan.tasks
    if not tasks:
        return CompactResult(None, 0, 0, 0, 0, 0, 0)
    outputs: list[TaskOutput] = []
    # The written files are removed on failure only through this gate: never once the
    # snapshot referencing them was (possibly) created, whatever exception arrives.
    publication = Publication(table.fileio)

    def finished(result: TaskOutput | TaskFailure) -> None:
        if on_task is not None and isinstance(result, TaskOutput):
            on_task(result)

    try:
        # Every task runs to its end, so a failed one cannot hide files the others wrote.
        results = executor.map(partial(_rewrite_or_failure, table), tasks, on_result=finished)
        outputs = [r for r in results if isinstance(r, TaskOutput)]
        publication.outputs.extend(p for o in outputs for p in o.paths)
        failures = [r for r in results if isinstance(r, TaskFailure)]
        if failures:
            raise failures[0].error
        if before_commit is not None:
            before_commit()
        result = commit(
            table,
            compact_builder(table, tasks, outputs, planned_on=cplan.snapshot),
            commit_kind="COMPACT",
            allow_unsafe=allow_unsafe,
            publication=publication,
            run=run,
        )
    except BaseException:
        left = publication.discard_outputs()
        if left and publication.may_discard:
            logger.warning("%d written file(s) could not be removed (orphans)", len(left))
        raise
    if result.snapshot is None:
        publication.discard_outputs()
    adds = [e["_FILE"] for o in outputs for e in o.entries]
    changelog = [e["_FILE"] for o in outputs for e in o.changelog]
    return CompactResult(
        commit=result,
        files_before=sum(len(t.inputs) for t in tasks),
        files_after=len(adds),
        bytes_before=sum(t.bytes for t in tasks),
        bytes_after=sum(int(f["_FILE_SIZE"]) for f in adds),
        rows_before=sum(o.rows_in for o in outputs),
        rows_after=sum(o.rows_out for o in outputs),
        notes=result.notes,
        changelog_files=len(changelog),
        changelog_records=sum(int(f["_ROW_COUNT"]) for f in changelog),
    )


__all__ = [
    "COMMAND",
    "STRATEGIES",
    "CompactConfig",
    "CompactConflictError",
    "CompactFlags",
    "CompactPlan",
    "CompactResult",
    "CompactTask",
    "TaskOutput",
    "UnsupportedTableError",
    "apply_compact",
    "changes_since",
    "compact_builder",
    "compact_config",
    "parse_partition_filter",
    "plan_compact",
    "refusals",
    "rewrite_task",
]
