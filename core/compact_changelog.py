"""The changelog a full compaction writes for ``changelog-producer = full-compaction``.

Paimon's ``FullChangelogMergeTreeCompactRewriter`` produces changelog whenever a compaction
writes the max level (a full compaction), through ``FullChangelogMergeFunctionWrapper``:
per key, in key order, with the records of every input in merge order,

* a key with one record: ``+I`` of that record as written, unless it is at the max level
  already (nothing changed) or is a retraction;
* a key with several records: the merge engine's result ``merged``; with no max-level record
  ``+I merged`` if it adds a row; with a max-level record ``top``: ``-D top`` if ``merged``
  retracts, else ``-U top, +U merged`` unless ``changelog-producer.row-deduplicate`` is set
  and the values are equal (ignoring ``changelog-producer.row-deduplicate-ignore-fields``).

Each changelog record keeps the key, sequence number and value of the record it copies
(``-U``/``-D``: ``top``; ``+I``/``+U``: the merged record, or the single record). The files
are ``changelog-<uuid>-<n>.<format>`` key-value files like data files, at the output level,
with ``_FILE_SOURCE = APPEND`` and ``_DELETE_ROW_COUNT`` = their ``-U``/``-D`` records; the
COMPACT snapshot lists them in its ``changelogManifestList``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from core.data_files import FORMATS, SEQUENCE_NUMBER, VALUE_KIND, WriteOptions, _check_mode
from core.errors import InvalidOptionError
from core.merge_engines import (
    DELETE,
    INSERT,
    UPDATE_AFTER,
    UPDATE_BEFORE,
    MergeFunctionError,
    MergeSpec,
    is_retract,
)
from core.merge_tree import key_changes, sort_for_merge

LEVEL = "__paimon_cli_level__"  # input level of each record, while the changelog is made
PRODUCERS_WITH_COMPACTION = ("full-compaction", "lookup")


def producer_of(options: Mapping[str, str]) -> str:
    return (options.get("changelog-producer") or "none").strip().lower()


@dataclass(frozen=True, slots=True)
class ChangelogSpec:
    """What a compaction task needs to write changelog (small and picklable)."""

    producer: str
    max_level: int
    row_deduplicate: bool
    ignore_fields: tuple[str, ...]

    @classmethod
    def of(cls, options: Mapping[str, str], max_level: int) -> ChangelogSpec | None:
        """None when compaction writes no changelog for this table."""
        producer = producer_of(options)
        if producer != "full-compaction":
            return None
        dedup = (options.get("changelog-producer.row-deduplicate") or "false").strip().lower()
        ignore = options.get("changelog-producer.row-deduplicate-ignore-fields")
        # CoreOptions splits on "," without trimming.
        return cls(
            producer=producer,
            max_level=max_level,
            row_deduplicate=dedup == "true",
            ignore_fields=tuple(ignore.split(",")) if ignore else (),
        )


def refusals(options: Mapping[str, str], engine: str) -> list[str]:
    """Producer settings whose changelog paimon-cli does not write as Paimon does."""
    producer = producer_of(options)
    if producer not in PRODUCERS_WITH_COMPACTION:
        return []
    if producer == "lookup":
        return ["changelog-producer=lookup (compaction must write lookup changelog)"]
    out = []
    if engine == "first-row":
        out.append(
            "changelog-producer=full-compaction with merge-engine=first-row "
            "(Paimon supports only none and lookup there)"
        )
    for key in ("deletion-vectors.enabled", "force-lookup"):
        if (options.get(key) or "").strip().lower() == "true":
            out.append(
                f"changelog-producer=full-compaction with {key}=true "
                "(lookup merging is not reproduced for changelog)"
            )
    return out


def write_options(options: Any, level: int) -> WriteOptions:
    """How Paimon writes a changelog file at ``level``: the data file options, overridden by
    ``changelog-file.format`` / ``.compression`` / ``.stats-mode`` and named with
    ``changelog-file.prefix``."""
    base = WriteOptions.of(options, level=level)
    fmt = (options.get("changelog-file.format") or base.file_format).strip().lower()
    if fmt not in FORMATS:
        raise InvalidOptionError(
            f"changelog-file.format={fmt}: paimon-cli writes parquet, orc and avro files only"
        )
    compression = options.get("changelog-file.compression")
    mode = options.get("changelog-file.stats-mode")
    return replace(
        base,
        file_format=fmt,
        compression=compression.strip().lower() if compression else base.compression,
        stats_mode=_check_mode(mode, "changelog-file.stats-mode") if mode else base.stats_mode,
        prefix=options.get("changelog-file.prefix") or "changelog-",
    )


# -- producing ----------------------------------------------------------------------------------
def _values_equal(a: Any, b: Any) -> bool:
    """RecordEqualiser per field: nulls equal each other, NaN equals nothing."""
    if a is None or b is None:
        return a is None and b is None
    return bool(a == b)


def full_changelog(
    data: Any, key_columns: Sequence[str], spec: MergeSpec, changelog: ChangelogSpec
) -> Any:
    """The changelog records of one bucket's full compaction, in the order Paimon writes
    them; ``data`` holds every input record with its level in column ``LEVEL``. The result
    has ``data``'s columns without ``LEVEL``."""
    import pyarrow as pa

    schema = data.schema.remove(data.schema.get_field_index(LEVEL))
    if data.num_rows == 0:
        return schema.empty_table()
    data = sort_for_merge(data, key_columns, spec)
    n = data.num_rows
    if n == 1:
        ends = [0]
    else:
        changes = key_changes(data, key_columns).to_pylist()
        ends = [i for i, c in enumerate(changes) if c] + [n - 1]
    levels = data.column(LEVEL).to_pylist()
    kinds = data.column(VALUE_KIND).to_pylist()
    value_names = [f.name for f in spec.fields]
    compare = [i for i, name in enumerate(value_names) if name not in set(changelog.ignore_fields)]
    cols = [data.column(name).to_pylist() for name in value_names]
    seqs = data.column(SEQUENCE_NUMBER).to_pylist()
    row_wise = spec.row_wise
    fn = spec.function() if row_wise else None
    # Output records: (row to copy, kind, merged (seq, values) or None to copy as is).
    out: list[tuple[int, int, tuple[int, list[Any]] | None]] = []

    def merged_of(start: int, end: int) -> tuple[int, int, tuple[int, list[Any]] | None]:
        """(row, kind, override) of the merge function's result over rows start..end."""
        if fn is None:  # deduplicate: the last record (the last add with ignore-delete)
            if not spec.ignore_delete:
                return end, kinds[end], None
            for r in range(end, start - 1, -1):
                if not is_retract(kinds[r]):
                    return r, kinds[r], None
            raise MergeFunctionError(
                "full-compaction changelog: every record of a key is a retraction under "
                "ignore-delete (Paimon's compaction fails on this key too)"
            )
        fn.reset()
        for r in range(start, end + 1):
            fn.add(seqs[r], kinds[r], [c[r] for c in cols])
        result = fn.result()
        if result is None:
            raise MergeFunctionError("full-compaction changelog: no merge result for a key")
        seq, kind, values = result
        return end, kind, (seq, list(values))

    def same_values(top: int, row: int, override: tuple[int, list[Any]] | None) -> bool:
        after = override[1] if override is not None else [c[row] for c in cols]
        return all(_values_equal(cols[i][top], after[i]) for i in compare)

    start = 0
    for end in ends:
        tops = [r for r in range(start, end + 1) if levels[r] == changelog.max_level]
        if len(tops) > 1:
            raise MergeFunctionError(
                "Top level key-value already exists! This is unexpected. (two max-level "
                "records of one key)"
            )
        top = tops[0] if tops else None
        if start == end:
            if top is None and not is_retract(kinds[start]):
                out.append((start, INSERT, None))
        else:
            row, kind, override = merged_of(start, end)
            if top is None:
                if not is_retract(kind):
                    out.append((row, INSERT, override))
            elif is_retract(kind):
                out.append((top, DELETE, None))
            elif not changelog.row_deduplicate or not same_values(top, row, override):
                out.append((top, UPDATE_BEFORE, None))
                out.append((row, UPDATE_AFTER, override))
        start = end + 1
    if not out:
        return schema.empty_table()
    idx = pa.array([r for r, _, _ in out], pa.int64())
    arrays = []
    for f in schema:
        if f.name == VALUE_KIND:
            arrays.append(pa.array([k for _, k, _ in out], f.type))
        elif f.name == SEQUENCE_NUMBER and row_wise:
            arrays.append(pa.array([o[0] if o is not None else seqs[r] for r, _, o in out], f.type))
        elif f.name in value_names and row_wise:
            j = value_names.index(f.name)
            arrays.append(
                pa.array([o[1][j] if o is not None else cols[j][r] for r, _, o in out], f.type)
            )
        else:
            arrays.append(data.column(f.name).take(idx))
    return pa.Table.from_arrays(arrays, schema=schema)


def delete_row_count(changelog: Any) -> int:
    """``-U`` and ``-D`` records (KeyValueDataFileWriter's deleteRecordCount)."""
    import pyarrow.compute as pc

    kinds = changelog.column(VALUE_KIND)
    return int(pc.sum(pc.or_(pc.equal(kinds, UPDATE_BEFORE), pc.equal(kinds, DELETE))).as_py() or 0)


__all__ = [
    "LEVEL",
    "ChangelogSpec",
    "delete_row_count",
    "full_changelog",
    "producer_of",
    "refusals",
    "write_options",
]
