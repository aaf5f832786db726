"""Full compaction of one bucket of a primary-key table: the records of every input file
(deletion vectors already applied) sorted as Paimon's merge readers order them, merged per
key by the table's merge engine, with deletes dropped as at the top level.

Order: key, then ``sequence.field`` (``sequence.field.sort-order``; a null is older than
any value in both orders, as Paimon's generated comparator has it), then sequence number.
Deduplicate and first-row keep one record as written, so they are column operations on the
Arrow table; partial-update and aggregation build new rows and run the per-key merge
functions of ``core.compaction.merge_engines``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from core.compaction.merge_engines import MergeFunctionError, MergeSpec, is_retract
from core.format.data_files import SEQUENCE_NUMBER, VALUE_KIND

SORT_SEQ = "__seq_field_"


def _adds(rows: Any) -> Any:
    """INSERT (0) or UPDATE_AFTER (2): the record adds a row."""
    import pyarrow.compute as pc

    kinds = rows.column(VALUE_KIND)
    return pc.or_(pc.equal(kinds, 0), pc.equal(kinds, 2))


def merge_order(data: Any, key_columns: Sequence[str], spec: MergeSpec) -> Any:
    """Row indices of ``data`` in merge order (stable; retractions before additions on
    equal sequence numbers). Only the ordering columns are sorted: callers take the wide
    value columns once, after deciding which rows survive."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if data.num_rows <= 1:
        return pa.array(range(data.num_rows), pa.uint64())
    names = [f"k{i}" for i in range(len(key_columns))]
    columns = [data.column(c) for c in key_columns]
    keys: list[tuple[str, str]] = [(n, "ascending") for n in names]
    direction = "ascending" if spec.sequence_ascending else "descending"
    for i, f in enumerate(spec.sequence_fields):
        names.append(f"{SORT_SEQ}{i}")
        columns.append(data.column(f))
        keys.append((names[-1], direction))
    names += ["seq", "add"]
    columns += [data.column(SEQUENCE_NUMBER), pc.cast(_adds(data), pa.int8())]
    keys += [("seq", "ascending"), ("add", "ascending")]
    return pc.sort_indices(
        pa.table(columns, names=names), sort_keys=keys, null_placement="at_start"
    )


def sort_for_merge(data: Any, key_columns: Sequence[str], spec: MergeSpec) -> Any:
    """The records in merge order (``merge_order``)."""
    if data.num_rows <= 1:
        return data
    return data.take(merge_order(data, key_columns, spec))


def _sorted_keys(data: Any, key_columns: Sequence[str], order: Any) -> Any:
    """The key columns and value kind of ``data`` in ``order``: all a keep-one merge
    needs to decide which rows survive."""
    return data.select([*key_columns, VALUE_KIND]).take(order)


def key_changes(data: Any, key_columns: Sequence[str]) -> Any:
    """Per adjacent pair of sorted records: True where the key changes (n - 1 flags)."""
    import pyarrow.compute as pc

    n = data.num_rows
    differs = None
    for c in key_columns:
        col = data.column(c).combine_chunks()
        a, b = col.slice(0, n - 1), col.slice(1)
        ne = pc.not_equal(a, b)
        if col.null_count:  # two nulls are the same key (primary keys are NOT NULL anyway)
            ne = pc.fill_null(ne, True)
            both_null = pc.and_(pc.is_null(a), pc.is_null(b))
            ne = pc.and_(ne, pc.invert(both_null))
        differs = ne if differs is None else pc.or_(differs, ne)
    assert differs is not None
    return differs


def _last_of_key(data: Any, key_columns: Sequence[str]) -> Any:
    import pyarrow as pa

    if data.num_rows == 1:
        return pa.array([True])
    return pa.concat_arrays([key_changes(data, key_columns), pa.array([True])])


def _first_of_key(data: Any, key_columns: Sequence[str]) -> Any:
    import pyarrow as pa

    if data.num_rows == 1:
        return pa.array([True])
    return pa.concat_arrays([pa.array([True]), key_changes(data, key_columns)])


def merge_bucket(data: Any, key_columns: Sequence[str], spec: MergeSpec) -> Any:
    """Every record of a bucket merged into one row per surviving key, in key order."""
    if spec.engine == "first-row":
        return _merge_first_row(data, key_columns, spec)
    if spec.row_wise:
        return _merge_rows(data, key_columns, spec)
    return _merge_deduplicate(data, key_columns, spec)


def _merge_deduplicate(data: Any, key_columns: Sequence[str], spec: MergeSpec) -> Any:
    """DeduplicateMergeFunction with dropDelete: per key the last record, then no
    retractions (ignore-delete drops retractions before merging)."""
    import pyarrow.compute as pc

    if spec.ignore_delete:
        data = data.filter(_adds(data))
    if data.num_rows == 0:
        return data
    order = merge_order(data, key_columns, spec)
    keys = _sorted_keys(data, key_columns, order)
    keep = pc.and_(_last_of_key(keys, key_columns), _adds(keys))
    return data.take(order.filter(keep))


def _merge_first_row(data: Any, key_columns: Sequence[str], spec: MergeSpec) -> Any:
    """FirstRowMergeFunction: per key the first record; retractions are skipped with
    ignore-delete and an error otherwise, as in Paimon."""
    import pyarrow.compute as pc

    adds = _adds(data)
    if not spec.ignore_delete and data.num_rows and not pc.all(adds).as_py():
        raise MergeFunctionError(
            "By default, First row merge engine can not accept DELETE/UPDATE_BEFORE records. "
            "You can config 'ignore-delete' to ignore the DELETE/UPDATE_BEFORE records."
        )
    data = data.filter(adds)
    if data.num_rows == 0:
        return data
    order = merge_order(data, key_columns, spec)
    keys = _sorted_keys(data, key_columns, order)
    return data.take(order.filter(_first_of_key(keys, key_columns)))


def _merge_rows(data: Any, key_columns: Sequence[str], spec: MergeSpec) -> Any:
    """Partial-update and aggregation: the merge function over each key's records."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if data.num_rows == 0:
        return data
    data = sort_for_merge(data, key_columns, spec)
    ends = pc.indices_nonzero(_last_of_key(data, key_columns)).to_pylist()
    names = [f.name for f in spec.fields]
    cols = [data.column(n).to_pylist() for n in names]
    seqs = data.column(SEQUENCE_NUMBER).to_pylist()
    kinds = data.column(VALUE_KIND).to_pylist()
    fn = spec.function()
    out_idx: list[int] = []
    out_seq: list[int] = []
    out_kind: list[int] = []
    out_vals: list[list[Any]] = [[] for _ in names]
    start = 0
    for end in ends:
        fn.reset()
        for r in range(start, end + 1):
            fn.add(seqs[r], kinds[r], [c[r] for c in cols])
        start = end + 1
        result = fn.result()
        if result is None or is_retract(result[1]):
            continue  # dropDelete: the top level keeps no retraction
        seq, kind, values = result
        out_idx.append(end)
        out_seq.append(seq)
        out_kind.append(kind)
        for j, v in enumerate(values):
            out_vals[j].append(v)
    schema = data.schema
    idx = pa.array(out_idx, pa.int64())
    arrays = []
    for field in schema:
        if field.name == SEQUENCE_NUMBER:
            arrays.append(pa.array(out_seq, pa.int64()))
        elif field.name == VALUE_KIND:
            arrays.append(pa.array(out_kind, pa.int8()))
        elif field.name in names:
            arrays.append(pa.array(out_vals[names.index(field.name)], field.type))
        else:
            arrays.append(data.column(field.name).take(idx))
    return pa.Table.from_arrays(arrays, schema=schema)


__all__ = ["key_changes", "merge_bucket", "merge_order", "sort_for_merge"]
