"""Rewriting one compaction task, on whichever worker the executor runs it: read the inputs
(deletion vectors applied), merge them (primary-key tables: the merge tree, with the
changelog a full compaction produces), and write rolling output files with the manifest
rows Paimon writes for them; the kept deletion vectors go to new index files.

Every file written is recorded first: a task that fails removes its own files, and the
driver removes the files of every task if the commit does not happen.
"""

from __future__ import annotations

import datetime as dt
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from core.compaction import compact_changelog
from core.compaction.config import option_true
from core.compaction.file_index import INDEX_SUFFIX, FileIndexSpec
from core.compaction.merge_tree import merge_bucket
from core.compaction.postpone import POSTPONE_BUCKET
from core.compaction.task import (
    MB,
    CompactTask,
    PostponeTask,
    TaskOutput,
    file_size,
    input_path,
    min_sequence,
)
from core.compaction.vector_maintenance import index_bytes, write_kept_vectors
from core.errors import StorageError
from core.format.data_files import (
    SEQUENCE_NUMBER,
    SYSTEM_STATS_MODE,
    FileLayout,
    Stats,
    WriteOptions,
    conform,
    encode_file,
    key_row,
    read_raw,
    stats_of,
    value_stats_modes,
)
from core.format.deletion_vectors import keep_mask, read_vector
from core.format.model import DataField
from core.io.fileio import join
from core.table.table import PaimonTable
from core.write.commit import delete_quietly
from core.write.manifest_writer import MANIFEST_VERSION

# Inputs at least this big are decoded with Arrow's thread pool; smaller ones (the usual
# compaction input) on the task's own thread: tasks already run in parallel, and handing a
# few-KB file to the pool costs more than decoding it.
THREADED_READ_BYTES = 8 * MB


def rewrite_task(table: PaimonTable, task: CompactTask, routed: Routed | None = None) -> TaskOutput:
    """Read a task's inputs, merge, write rolling outputs; pure and picklable (Spark).
    ``routed``: records of postpone files this bucket receives, merged as its newest."""
    layout = _layout(table)
    opts = WriteOptions.of(table.options, level=task.output_level)
    index_data: dict[str, bytes] = {}  # one read per vector index file
    with_level = task.changelog is not None
    extra = None if routed is None else routed.records
    data = _read_inputs(table, task, layout, index_data, with_level=with_level, extra=extra)
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
    step = _rows_per_file(task, data.num_rows, None if routed is None else routed.bytes_per_row)
    written: list[str] = []
    prefix = str(uuid.uuid4())
    seq_next = min_sequence(task.inputs[0]) if task.inputs else 0
    try:
        entries = _write_rolling(
            table,
            task,
            layout,
            opts,
            data,
            prefix,
            0,
            step,
            written,
            seq_start=seq_next,
            finish_meta=_file_index_writer(table, task, written),
        )
        changelog_entries = (
            _write_changelog(table, task, layout, changelog, prefix, len(entries), step, written)
            if changelog is not None
            else []
        )
        index_entries = write_kept_vectors(table, task, index_data, written)
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


@dataclass(frozen=True, slots=True)
class TaskFailure:
    """A task that raised (its own files already removed); returned, not raised, so the
    files of every task that succeeded are known and can be removed too."""

    error: Exception


def rewrite_or_failure(
    table: PaimonTable, task: CompactTask | PostponeTask
) -> TaskOutput | TaskFailure:
    """Run one task of a plan, its failure as a value."""
    try:
        if isinstance(task, PostponeTask):
            return rewrite_postpone(table, task)
        return rewrite_task(table, task)
    except Exception as exc:
        return TaskFailure(exc)


def _layout(table: PaimonTable) -> FileLayout:
    # KeyValueFileWriterFactory: thin files whenever data-file.thin-mode is set (the key
    # is always a subset of the values here); inputs of either layout read alike.
    schema = table.schema
    return FileLayout.of(
        schema.fields, schema.trimmed_primary_keys, thin=option_true(table, "data-file.thin-mode")
    )


# -- postpone buckets ----------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class Routed:
    """The records of postpone files one bucket receives, in replay order."""

    records: Any  # read as inputs are (conformed; with their level when changelog is made)
    bytes_per_row: float  # of the postpone files, to size output files of a new bucket


def rewrite_postpone(table: PaimonTable, task: PostponeTask) -> TaskOutput:
    """Route a partition's postpone records into its real buckets and rewrite each bucket
    task with the records it receives, numbered after every file of the bucket."""
    import pyarrow as pa
    import pyarrow.compute as pc

    layout = _layout(table)
    staging = CompactTask(
        task.partition,
        POSTPONE_BUCKET,
        POSTPONE_BUCKET,
        True,
        task.files,
        task.output_level,
        task.target_file_size,
    )
    records = _read_inputs(table, staging, layout, {}, with_level=task.changelog is not None)
    buckets = pa.array(task.spec.buckets_of(records, task.num_buckets), pa.int32())
    planned = {t.bucket for t in task.buckets}
    counts = pc.value_counts(buckets).to_pylist() if len(buckets) else []
    found = {int(c["values"]): int(c["counts"]) for c in counts}
    if not found.keys() <= planned or sorted(found.items()) != list(task.routed):
        raise StorageError(
            f"the postpone files of {table.paths.bucket_dir(task.partition, POSTPONE_BUCKET)} "
            "hold other records than planned (changed since planning?)"
        )
    per_row = max(task.bytes / max(task.rows, 1), 1e-9)
    outputs: list[TaskOutput] = []
    try:
        for bucket_task in task.buckets:
            mine = records.filter(pc.equal(buckets, bucket_task.bucket))
            routed = Routed(_numbered(mine, bucket_task), per_row)
            outputs.append(rewrite_task(table, bucket_task, routed))
    except BaseException:
        delete_quietly(table.fileio, [p for o in outputs for p in o.paths])
        raise
    return TaskOutput(
        tuple(e for o in outputs for e in o.entries),
        tuple(p for o in outputs for p in o.paths),
        sum(o.rows_in for o in outputs),
        sum(o.rows_out for o in outputs),
        tuple(e for o in outputs for e in o.changelog),
        tuple(e for o in outputs for e in o.index_entries),
    )


def _numbered(records: Any, task: CompactTask) -> Any:
    """The routed records with sequence numbers after the bucket's files (the write
    restore's max sequence number + 1, counting on in replay order)."""
    import pyarrow as pa

    start = max((int(r["_FILE"]["_MAX_SEQUENCE_NUMBER"]) for r in task.inputs), default=-1) + 1
    index = records.schema.get_field_index(SEQUENCE_NUMBER)
    numbers = pa.array(range(start, start + records.num_rows), records.schema.field(index).type)
    return records.set_column(index, SEQUENCE_NUMBER, numbers)


# -- reading -----------------------------------------------------------------------------------


def _read_inputs(
    table: PaimonTable,
    task: CompactTask,
    layout: FileLayout,
    index_data: dict[str, bytes],
    *,
    with_level: bool = False,
    extra: Any = None,
) -> Any:
    """Every input record (deletion vectors applied), then ``extra`` (records read so
    already); ``with_level`` adds each record's file level as column
    ``compact_changelog.LEVEL``."""
    import pyarrow as pa

    schema = layout.arrow_schema()
    read_schema = layout.read_schema()
    bucket_dir = table.paths.bucket_dir(task.partition, task.bucket)
    parts = []
    for row in task.inputs:
        path = input_path(row, bucket_dir)
        name = str(row["_FILE"]["_FILE_NAME"])
        try:
            # Local files are read in place by pyarrow (no copy through Python).
            data: bytes | str = (
                path if table.fileio.is_local(path) else table.fileio.read_bytes(path)
            )
            big = file_size(row) >= THREADED_READ_BYTES
            part = layout.with_keys(read_raw(data, name, read_schema, use_threads=big))
        except FileNotFoundError:
            raise StorageError(f"data file {path} of the latest snapshot is missing") from None
        vector = task.deletion_vectors.get(name)
        if vector is not None:
            data_ = index_bytes(table, vector.path, index_data)
            deleted = read_vector(data_, vector.offset, vector.path)
            part = part.filter(keep_mask(part.num_rows, deleted))
        if with_level:
            part = conform(part, schema)
            level = pa.array([int(row["_FILE"]["_LEVEL"])] * part.num_rows, pa.int32())
            part = part.append_column(compact_changelog.LEVEL, level)
        parts.append(part)
    if extra is not None and extra.num_rows:
        parts.append(extra)
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


# -- writing -----------------------------------------------------------------------------------


def _rows_per_file(task: CompactTask, rows: int, hint: float | None = None) -> int:
    """Rows per output file: the target size over the inputs' bytes per row (``hint``
    for a bucket without files)."""
    if rows == 0:
        return 1
    per_row = max(task.bytes / max(task.rows, 1), 1e-9)
    if not task.inputs and hint is not None:
        per_row = hint
    return max(1, int(task.target_file_size / per_row))


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


def _file_index_writer(
    table: PaimonTable, task: CompactTask, written: list[str]
) -> Callable[[Any, dict[str, Any]], None] | None:
    """What adds a data file's index (``file-index.*``) to its meta: embedded up to
    ``file-index.in-manifest-threshold``, else ``<data file>.index`` beside it, listed in
    ``_EXTRA_FILES`` (DataFileIndexWriter); None for tables without file indexes."""
    spec = FileIndexSpec.of({**table.options.table, **table.options.dynamic}, table.schema.fields)
    if spec is None:
        return None
    bucket_dir = table.paths.bucket_dir(task.partition, task.bucket)

    def attach(chunk: Any, meta: dict[str, Any]) -> None:
        container = spec.container(chunk)
        if len(container) <= spec.in_manifest_threshold:
            meta["_EMBEDDED_FILE_INDEX"] = container
            return
        name = str(meta["_FILE_NAME"]) + INDEX_SUFFIX
        path = join(bucket_dir, name)
        written.append(path)
        if not table.fileio.write_if_absent(path, container):
            raise StorageError(f"{path} already exists (UUID collision?)")
        meta["_EXTRA_FILES"] = [name]

    return attach


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


def _local_now_ms() -> int:
    # _CREATION_TIME: local wall-clock time encoded as if it were UTC.
    now = dt.datetime.now()
    return int((now - dt.datetime(1970, 1, 1)).total_seconds() * 1000)


__all__ = ["THREADED_READ_BYTES", "TaskFailure", "rewrite_or_failure", "rewrite_task"]
