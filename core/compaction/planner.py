"""Planning a compaction: which files of the latest snapshot Paimon would merge, as tasks.

The planner reads the manifests once: the live files of the latest snapshot (filtered by
``--partition``; for unaware-bucket append tables only the small ones, or the ones whose
deletion vector deletes too much), grouped by bucket. Each bucket's files are picked or
packed by the table kind's rule (``core.compaction.selection``); each pick becomes a
``CompactTask`` with the deletion vectors it applies and the vector index files it
replaces (``core.compaction.vector_maintenance``). Nothing is written.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from core.compaction.config import (
    CompactConfig,
    CompactFlags,
    check_partition_filters,
    compact_config,
    merge_details,
    partition_matches,
)
from core.compaction.details import (
    CompactDeferred,
    CompactDetails,
    CompactSums,
    CompactTaskDetails,
    InputFile,
    PostponeRouting,
    SkippedBucket,
)
from core.compaction.postpone import POSTPONE_BUCKET, PostponeSpec, replay_order
from core.compaction.selection import (
    pack_unaware,
    pack_unaware_dv,
    pick_bucketed,
    pick_pk,
    too_many_deleted,
)
from core.compaction.task import (
    CompactTask,
    IndexKeys,
    KeptGroups,
    PostponeTask,
    file_size,
    input_path,
    min_sequence,
)
from core.compaction.vector_maintenance import index_rewrite
from core.errors import StorageError
from core.format.arrow_types import arrow_type
from core.format.data_files import read_raw
from core.format.deletion_vectors import DeletionFile, bucket_index_files, deletion_files
from core.format.model import IndexManifestEntry, Snapshot, TableSchema
from core.runtime.plans import Phase, Plan, Requirements
from core.runtime.wording import plural
from core.table.table import PaimonTable
from core.write.live_entries import live_raw_entries

COMMAND = "compact"

Bucket = tuple[bytes, int]  # (partition, bucket)


@dataclass(frozen=True, slots=True)
class CompactPlan:
    plan: Plan[CompactDetails]
    tasks: tuple[CompactTask, ...]
    config: CompactConfig | None
    # The snapshot the plan was made from: the commit checks only what changed after it.
    snapshot: Snapshot | None = None
    # Postpone-bucket tables: per partition with postpone files, the routing into its real
    # buckets (their bucket tasks are inside, not in ``tasks``).
    postpone: tuple[PostponeTask, ...] = ()

    @property
    def work(self) -> tuple[CompactTask | PostponeTask, ...]:
        """What the executor runs: the bucket tasks, then one task per postpone partition."""
        return (*self.tasks, *self.postpone)

    @property
    def bucket_tasks(self) -> tuple[CompactTask, ...]:
        """Every bucket task, those of postpone partitions included."""
        return (*self.tasks, *(b for p in self.postpone for b in p.buckets))


@dataclass(frozen=True, slots=True)
class _BucketState:
    """What planning knows of one bucket's deletion vectors."""

    vectors: Mapping[str, DeletionFile]  # by data file name
    index_entries: Sequence[IndexManifestEntry]  # the bucket's index manifest entries
    index_files: IndexKeys  # its vector index files (checked again at commit)


def plan_compact(table: PaimonTable, flags: CompactFlags, *, now_ms: int) -> CompactPlan:
    """Pure planner: which files of the latest snapshot Paimon would merge, per task."""
    check_partition_filters(table, flags.partitions)
    cfg = compact_config(table, flags)
    latest = table.snapshots.latest()
    details = _details(cfg, latest)
    requirements = Requirements.latest(latest.id if latest else None)
    if latest is None:
        plan = Plan(COMMAND, table.location, table.branch, now_ms, (), requirements, details)
        return CompactPlan(plan, (), cfg)
    with_vectors = cfg.mode == "primary-key" or cfg.deletion_vectors
    index_entries = table.index_files(latest) if with_vectors else []
    vectors = deletion_files(index_entries, table.paths.index_file_path)
    groups, staged = _candidates(table, flags, cfg, latest, vectors)
    states = _BucketStates(vectors, index_entries)
    skipped: list[SkippedBucket] = []
    routed: list[PostponeTask] = []
    if cfg.postpone is not None and staged:
        routed = _postpone_tasks(table, cfg, groups, staged, states, skipped)
    routed_partitions = {p.partition for p in routed}
    tasks: list[CompactTask] = []
    for (partition, bucket), files in sorted(groups.items(), key=lambda kv: kv[0]):
        if partition in routed_partitions:
            continue
        if not _compatible_schemas(table, files):
            skipped.append(_skipped(table, partition, bucket, SCHEMA_CHANGED))
            continue
        state = states.of((partition, bucket))
        picks = _pick(cfg, files, state.vectors)
        tasks += _bucket_tasks(table, cfg, partition, bucket, picks, state, with_vectors)
    tasks, routed, deferred = _within_budget(flags.max_bytes, tasks, routed)
    every = _in_plan_order(tasks, routed)
    details = replace(
        details,
        tasks=tuple(_task_details(table, t) for t in every),
        skipped=tuple(skipped),
        deferred=deferred,
        sums=_sums(every),
    )
    phases = _phases(table, details, latest)
    plan = Plan(COMMAND, table.location, table.branch, now_ms, phases, requirements, details)
    return CompactPlan(plan, tuple(tasks), cfg, latest, tuple(routed))


def _within_budget(
    max_bytes: int | None,
    tasks: list[CompactTask],
    routed: list[PostponeTask],
) -> tuple[list[CompactTask], list[PostponeTask], CompactDeferred | None]:
    """At most ``max_bytes`` of input per run: whole tasks (a partition's postpone routing
    is one) in plan order, the first always, so every run makes progress; the rest are
    planned again by the next run (a compacted bucket is no candidate any more)."""
    if max_bytes is None:
        return tasks, routed, None
    units: list[CompactTask | PostponeTask] = [*tasks, *routed]
    units.sort(key=lambda t: (t.partition, _bucket_of(t)))
    kept: list[CompactTask | PostponeTask] = []
    used = deferred = deferred_bytes = 0
    for unit in units:
        size = (
            unit.bytes + sum(b.bytes for b in unit.buckets)
            if isinstance(unit, PostponeTask)
            else unit.bytes
        )
        if kept and used + size > max_bytes:
            deferred, deferred_bytes = deferred + 1, deferred_bytes + size
            continue
        kept.append(unit)
        used += size
    return (
        [t for t in kept if isinstance(t, CompactTask)],
        [t for t in kept if isinstance(t, PostponeTask)],
        CompactDeferred(deferred, deferred_bytes, max_bytes),
    )


def _details(cfg: CompactConfig, latest: Snapshot | None) -> CompactDetails:
    """The plan's details before any task is known (tasks and skipped buckets follow)."""
    return CompactDetails(
        config=dict(cfg.sources),
        mode=cfg.mode,
        strategy=cfg.strategy,
        merge=merge_details(cfg.merge),
        changelog_producer=(
            cfg.changelog.producer if cfg.changelog and cfg.changelog.producer != "none" else None
        ),
        latest_snapshot=latest.id if latest else None,
    )


def _candidates(
    table: PaimonTable,
    flags: CompactFlags,
    cfg: CompactConfig,
    latest: Snapshot,
    vectors: Mapping[tuple[bytes, int, str], DeletionFile],
) -> tuple[dict[Bucket, list[dict[str, Any]]], dict[bytes, list[dict[str, Any]]]]:
    """The live files a compaction may merge, by bucket, in manifest order; and on
    postpone-bucket tables the postpone files, by partition."""
    groups: dict[Bucket, list[dict[str, Any]]] = {}
    staged: dict[bytes, list[dict[str, Any]]] = {}
    postpone = cfg.postpone is not None
    scanned = 0
    unaware = cfg.mode == "unaware-append"
    small_file_size = cfg.small_file_size
    selected: dict[bytes, bool] = {}  # partition filter, decided once per partition
    for row in live_raw_entries(table, latest):
        bucket = int(row["_BUCKET"])
        if bucket < 0 and not (postpone and bucket == POSTPONE_BUCKET):
            continue
        partition = bytes(row["_PARTITION"])
        if flags.partitions:
            keep = selected.get(partition)
            if keep is None:
                spec = table.paths.partition_spec(partition)
                keep = selected[partition] = partition_matches(spec, flags.partitions)
            if not keep:
                continue
        if bucket == POSTPONE_BUCKET:
            staged.setdefault(partition, []).append(row)
            continue
        if unaware:
            if file_size(row) >= small_file_size and not (
                cfg.deletion_vectors
                and too_many_deleted(
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
    return groups, staged


class _BucketStates:
    """Vectors and vector index files by bucket, grouped once: a deletion-vector table can
    have tens of thousands of buckets and a vector per file."""

    def __init__(
        self,
        vectors: Mapping[tuple[bytes, int, str], DeletionFile],
        index_entries: Sequence[IndexManifestEntry],
    ) -> None:
        self._vectors: dict[Bucket, dict[str, DeletionFile]] = {}
        for (p, b, name), v in vectors.items():
            self._vectors.setdefault((p, b), {})[name] = v
        self._index: dict[Bucket, list[IndexManifestEntry]] = {}
        for e in index_entries:
            self._index.setdefault((e.partition, e.bucket), []).append(e)

    def of(self, key: Bucket) -> _BucketState:
        entries = self._index.get(key, ())
        return _BucketState(
            self._vectors.get(key, {}),
            entries,
            frozenset(bucket_index_files(entries, {key: True})),
        )


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


def _pick(
    cfg: CompactConfig, files: list[dict[str, Any]], vectors: Mapping[str, DeletionFile]
) -> list[list[dict[str, Any]]]:
    """The inputs of each task of one bucket, by the table kind's rule."""
    if cfg.mode == "unaware-append":
        if cfg.deletion_vectors:
            return pack_unaware_dv(files, cfg, vectors)
        return pack_unaware(files, cfg)
    if cfg.mode == "bucketed-append":
        chosen = pick_bucketed(files, cfg, vectors if cfg.deletion_vectors else None)
    else:
        chosen = pick_pk(files, cfg.max_level, vectors)
    return [chosen] if chosen else []


def _bucket_tasks(
    table: PaimonTable,
    cfg: CompactConfig,
    partition: bytes,
    bucket: int,
    picks: list[list[dict[str, Any]]],
    state: _BucketState,
    with_vectors: bool,
) -> list[CompactTask]:
    """The tasks of one bucket, one per pick, each with the vectors it applies and the
    vector index files it replaces."""
    tasks = []
    for inputs in picks:
        names = {str(r["_FILE"]["_FILE_NAME"]) for r in inputs}
        task_vectors = {n: v for n, v in state.vectors.items() if n in names}
        index_deletes: IndexKeys = frozenset()
        kept: KeptGroups = ()
        if cfg.mode == "primary-key":
            index_deletes = state.index_files
        elif task_vectors:
            index_deletes, kept = index_rewrite(
                table, state.index_entries, partition, bucket, names, task_vectors, cfg
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
                index_target_size=cfg.index_target_size if cfg.mode == "unaware-append" else None,
                index_seen=state.index_files if with_vectors else None,
            )
        )
    return tasks


def _in_plan_order(
    tasks: Sequence[CompactTask], routed: Sequence[PostponeTask]
) -> list[CompactTask | PostponeTask]:
    """Every task as the plan lists it: by partition and bucket, a postpone partition's
    routing (bucket -2) before the buckets it routes into."""
    every: list[CompactTask | PostponeTask] = [*tasks]
    for p in routed:
        every += [p, *p.buckets]
    every.sort(key=lambda t: (t.partition, _bucket_of(t)))  # stable: a bucket's bins in order
    return every


def _sums(every: Sequence[CompactTask | PostponeTask]) -> CompactSums:
    before = sum(t.bytes for t in every)
    return CompactSums(
        files_before=sum(len(t.inputs) for t in every),
        bytes_before=before,
        files_after_estimate=sum(t.estimated_outputs for t in every),
        bytes_after_estimate=before,
    )


def _phases(table: PaimonTable, details: CompactDetails, latest: Snapshot) -> tuple[Phase, ...]:
    """The plan's one phase: the commit (none when there is nothing to merge)."""
    if not details.tasks or details.sums is None:
        return ()
    return (
        Phase.commit(
            table.snapshots.path(latest.id + 1),
            f"COMPACT commit replacing {plural(details.sums.files_before, 'file')} with about "
            f"{details.sums.files_after_estimate}",
        ),
    )


def _bucket_of(t: CompactTask | PostponeTask) -> int:
    return POSTPONE_BUCKET if isinstance(t, PostponeTask) else t.bucket


def _task_details(table: PaimonTable, t: CompactTask | PostponeTask) -> CompactTaskDetails:
    if isinstance(t, PostponeTask):
        return _postpone_details(table, t)
    return CompactTaskDetails(
        partition=table.paths.partition_spec(t.partition),
        partition_hex=t.partition.hex(),
        path=table.paths.bucket_dir(t.partition, t.bucket),
        bucket=t.bucket,
        output_level=t.output_level,
        files=len(t.inputs),
        rows=t.rows,
        bytes=t.bytes,
        files_after_estimate=t.estimated_outputs,
        deletion_vectors=len(t.deletion_vectors),
        index_files_dropped=tuple(sorted(name for *_, name in t.index_deletes)),
        vectors_applied=tuple(sorted(t.deletion_vectors)),
        vectors_kept=tuple(sorted(name for g in t.kept_vectors for name, _ in g)),
        inputs=_inputs(t.inputs),
    )


def _postpone_details(table: PaimonTable, t: PostponeTask) -> CompactTaskDetails:
    """A partition's postpone files as a task of the plan (bucket -2): what they hold and
    into how many real buckets their records go."""
    return CompactTaskDetails(
        partition=table.paths.partition_spec(t.partition),
        partition_hex=t.partition.hex(),
        path=table.paths.bucket_dir(t.partition, POSTPONE_BUCKET),
        bucket=POSTPONE_BUCKET,
        output_level=t.output_level,
        files=len(t.files),
        rows=t.rows,
        bytes=t.bytes,
        files_after_estimate=t.estimated_outputs,
        deletion_vectors=0,
        index_files_dropped=(),
        vectors_applied=(),
        vectors_kept=(),
        inputs=_inputs(t.files),
        postpone=PostponeRouting(
            buckets=t.num_buckets,
            bucket_number=t.bucket_number_source,
            records_by_bucket={str(b): n for b, n in t.routed},
        ),
    )


def _inputs(rows: Sequence[Mapping[str, Any]]) -> tuple[InputFile, ...]:
    return tuple(
        InputFile(name=r["_FILE"]["_FILE_NAME"], level=r["_FILE"]["_LEVEL"], size=file_size(r))
        for r in rows
    )


# -- postpone-bucket tables ----------------------------------------------------------------------
SCHEMA_CHANGED = "files written before a column change (schema evolution)"


def _skipped(table: PaimonTable, partition: bytes, bucket: int, reason: str) -> SkippedBucket:
    return SkippedBucket(table.paths.partition_spec(partition), bucket, reason)


def _postpone_tasks(
    table: PaimonTable,
    cfg: CompactConfig,
    groups: Mapping[Bucket, list[dict[str, Any]]],
    staged: Mapping[bytes, list[dict[str, Any]]],
    states: _BucketStates,
    skipped: list[SkippedBucket],
) -> list[PostponeTask]:
    """Per partition with postpone files, the routing of their records into its real
    buckets, each of which is then compacted fully (every file, whatever its level)."""
    assert cfg.postpone is not None
    real: dict[bytes, dict[int, list[dict[str, Any]]]] = {}
    for (partition, bucket), files in groups.items():
        real.setdefault(partition, {})[bucket] = files
    out = []
    for partition, files in sorted(staged.items()):
        buckets = real.get(partition, {})
        reason = _postpone_problem(table, partition, files, buckets, states)
        if reason is not None:
            skipped.append(_skipped(table, partition, POSTPONE_BUCKET, reason))
            continue
        totals = {int(f["_TOTAL_BUCKETS"]) for fs in buckets.values() for f in fs}
        rows = sum(int(f["_FILE"]["_ROW_COUNT"]) for f in files)
        number, source = cfg.postpone.bucket_number(
            totals.pop() if totals else None, rows, sum(file_size(f) for f in files)
        )
        ordered = tuple(replay_order(files))
        routed = _routed_records(table, partition, ordered, cfg.postpone, number)
        out.append(
            PostponeTask(
                partition=partition,
                num_buckets=number,
                bucket_number_source=source,
                files=ordered,
                routed=tuple(routed.items()),
                spec=cfg.postpone,
                buckets=tuple(
                    _routed_bucket_tasks(table, cfg, partition, number, buckets, routed, states)
                ),
                output_level=cfg.max_level,
                target_file_size=cfg.target_file_size,
                merge=cfg.merge,
                changelog=cfg.changelog,
            )
        )
    return out


def _routed_bucket_tasks(
    table: PaimonTable,
    cfg: CompactConfig,
    partition: bytes,
    num_buckets: int,
    buckets: Mapping[int, list[dict[str, Any]]],
    routed: Mapping[int, int],
    states: _BucketStates,
) -> list[CompactTask]:
    """The bucket tasks of a partition with postpone files: a bucket that receives records
    is compacted fully with them (a bucket without files gets its first ones); any other
    bucket as on every primary-key table."""
    tasks = []
    for bucket in sorted(buckets.keys() | routed.keys()):
        files = buckets.get(bucket)
        state = states.of((partition, bucket))
        if files is None:
            tasks.append(_new_bucket_task(cfg, partition, bucket, num_buckets))
            continue
        if bucket in routed:
            picks = [sorted(files, key=min_sequence)]
        else:
            picks = _pick(cfg, files, state.vectors)
        tasks += _bucket_tasks(table, cfg, partition, bucket, picks, state, True)
    return tasks


def _new_bucket_task(
    cfg: CompactConfig, partition: bytes, bucket: int, num_buckets: int
) -> CompactTask:
    """A real bucket that gets its first files from postpone records."""
    return CompactTask(
        partition=partition,
        bucket=bucket,
        total_buckets=num_buckets,
        primary_key=True,
        inputs=(),
        output_level=cfg.max_level,
        target_file_size=cfg.target_file_size,
        merge=cfg.merge,
        changelog=cfg.changelog,
        index_target_size=None,
        index_seen=frozenset(),
    )


def _routed_records(
    table: PaimonTable,
    partition: bytes,
    files: Sequence[dict[str, Any]],
    spec: PostponeSpec,
    num_buckets: int,
) -> dict[int, int]:
    """How many records of a partition's postpone files each real bucket receives, from
    their bucket-key columns alone (planning reads no other column)."""
    import pyarrow as pa

    fields = {f.name: f for f in table.schema.fields}
    schema = pa.schema([pa.field(k, arrow_type(fields[k].type)) for k in spec.bucket_key])
    directory = table.paths.bucket_dir(partition, POSTPONE_BUCKET)
    counts: dict[int, int] = {}
    for row in files:
        path = input_path(row, directory)
        name = str(row["_FILE"]["_FILE_NAME"])
        try:
            data: bytes | str = (
                path if table.fileio.is_local(path) else table.fileio.read_bytes(path)
            )
            keys = read_raw(data, name, schema)
        except FileNotFoundError:
            raise StorageError(f"data file {path} of the latest snapshot is missing") from None
        for bucket in spec.buckets_of(keys, num_buckets):
            counts[bucket] = counts.get(bucket, 0) + 1
    return dict(sorted(counts.items()))


def _postpone_problem(
    table: PaimonTable,
    partition: bytes,
    files: Sequence[dict[str, Any]],
    buckets: Mapping[int, Sequence[dict[str, Any]]],
    states: _BucketStates,
) -> str | None:
    """Why a partition's postpone files are left where they are (None: they are routed)."""
    every = [*files, *(f for fs in buckets.values() for f in fs)]
    if not _compatible_schemas(table, every):
        return SCHEMA_CHANGED
    if states.of((partition, POSTPONE_BUCKET)).vectors:
        return "postpone files with deletion vectors (Paimon writes none there)"
    if len({int(f["_TOTAL_BUCKETS"]) for fs in buckets.values() for f in fs}) > 1:
        return "its real buckets disagree on the bucket number (Paimon fails here too)"
    return None


__all__ = ["COMMAND", "CompactPlan", "plan_compact"]
