"""The changelog a full compaction writes for ``changelog-producer`` full-compaction / lookup.

Paimon's ``FullChangelogMergeTreeCompactRewriter`` produces changelog whenever a compaction
writes the max level (a full compaction), through ``FullChangelogMergeFunctionWrapper``:
per key, in key order, with the records of every input in merge order,

* a key with one record: ``+I`` of that record as written, unless it is at the max level
  already (nothing changed) or is a retraction;
* a key with several records: the merge engine's result ``merged``; with no max-level record
  ``+I merged`` if it adds a row; with a max-level record ``top``: ``-D top`` if ``merged``
  retracts, else ``-U top, +U merged`` unless ``changelog-producer.row-deduplicate`` is set
  and the values are equal (ignoring ``changelog-producer.row-deduplicate-ignore-fields``).

With ``lookup`` (``LookupMergeTreeCompactRewriter`` at a full compaction, where the lookup
beyond the max level finds nothing): only keys with level-0 records get changelog, ``before``
is the key's high-level record at the lowest level (``LookupMergeFunction`` merges the level-0
records with that one only: older levels hold superseded merge results, and deletion vectors
already hid them where enabled), then the same ``+I``/``-D``/``-U +U`` rules with no
single-record shortcut; first-row (``FirstRowMergeFunctionWrapper``) writes the first record
of keys without any high-level record.

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

from core.compaction.merge_engines import (
    DELETE,
    INSERT,
    UPDATE_AFTER,
    UPDATE_BEFORE,
    MergeFunctionError,
    MergeSpec,
    is_retract,
)
from core.compaction.merge_tree import key_changes, sort_for_merge
from core.errors import InvalidOptionError
from core.format.data_files import FORMATS, SEQUENCE_NUMBER, VALUE_KIND, WriteOptions, _check_mode

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
    # needLookup (lookup producer, deletion vectors, force-lookup): records of a key merge
    # through LookupMergeFunction (level-0 records and the newest high-level record only)
    lookup_merge: bool = False

    @classmethod
    def of(cls, options: Mapping[str, str], max_level: int) -> ChangelogSpec | None:
        """None when compaction writes no changelog for this table and merges every record.

        ``force-lookup`` without a changelog producer gives a spec of producer ``none``: no
        changelog, but records merge as LookupMergeFunction does (Paimon reads them so)."""
        producer = producer_of(options)
        force = (options.get("force-lookup") or "").strip().lower() == "true"
        engine = (options.get("merge-engine") or "deduplicate").strip().lower()
        if producer not in PRODUCERS_WITH_COMPACTION and not (force and engine != "first-row"):
            return None
        if producer not in PRODUCERS_WITH_COMPACTION:
            producer = "none"
        dedup = (options.get("changelog-producer.row-deduplicate") or "false").strip().lower()
        ignore = options.get("changelog-producer.row-deduplicate-ignore-fields")
        lookup = producer == "lookup" or any(
            (options.get(k) or "").strip().lower() == "true"
            for k in ("deletion-vectors.enabled", "force-lookup")
        )
        # CoreOptions splits on "," without trimming.
        return cls(
            producer=producer,
            max_level=max_level,
            row_deduplicate=dedup == "true",
            ignore_fields=tuple(ignore.split(",")) if ignore else (),
            lookup_merge=lookup,
        )


def refusals(options: Mapping[str, str], engine: str) -> list[str]:
    """Producer settings whose changelog paimon-cli does not write as Paimon does."""
    producer = producer_of(options)
    if producer not in PRODUCERS_WITH_COMPACTION:
        return []
    out = []
    if engine == "first-row" and producer == "full-compaction":
        out.append(
            "changelog-producer=full-compaction with merge-engine=first-row "
            "(Paimon supports only none and lookup there)"
        )
    if producer == "full-compaction":
        # Paimon: "Deletion vectors mode is only supported for NONE/INPUT/LOOKUP changelog
        # producer"; force-lookup merging under this producer is not checked against Paimon.
        for key in ("deletion-vectors.enabled", "force-lookup"):
            if (options.get(key) or "").strip().lower() == "true":
                out.append(f"changelog-producer=full-compaction with {key}=true")
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


Override = tuple[int, list[Any]]  # a merged record's (sequence number, values)
Outcome = tuple[int, int, Override | None]  # (row to copy, kind, merged record or None)


def full_changelog(
    data: Any, key_columns: Sequence[str], spec: MergeSpec, changelog: ChangelogSpec
) -> tuple[Any, Any]:
    """The changelog records of one bucket's full compaction, in the order Paimon writes
    them, and the records the compaction merges (for lookup, without the superseded
    high-level records LookupMergeFunction skips). ``data`` holds every input record with its
    level in column ``LEVEL``; both results have its columns without ``LEVEL``."""
    import pyarrow as pa

    schema = data.schema.remove(data.schema.get_field_index(LEVEL))
    if data.num_rows == 0:
        return schema.empty_table(), schema.empty_table()
    data = sort_for_merge(data, key_columns, spec)
    producer = _Producer(data, spec, changelog)
    for group in _key_groups(data, key_columns):
        producer.key(group)
    merge_input = data.drop_columns([LEVEL])
    if len(producer.keep) < data.num_rows:
        merge_input = merge_input.take(pa.array(producer.keep, pa.int64()))
    if not producer.out:
        return schema.empty_table(), merge_input
    return producer.records(schema), merge_input


def _key_groups(data: Any, key_columns: Sequence[str]) -> list[range]:
    """The row ranges of each key in ``data`` (sorted for merging)."""
    n = data.num_rows
    if n == 1:
        ends = [0]
    else:
        flags = key_changes(data, key_columns).to_pylist()
        ends = [i for i, c in enumerate(flags) if c] + [n - 1]
    groups = []
    start = 0
    for end in ends:
        groups.append(range(start, end + 1))
        start = end + 1
    return groups


class _Producer:
    """The changelog of one bucket, key by key: the merge wrappers of Paimon's producers.

    ``out`` collects the changelog records, ``keep`` the rows LookupMergeFunction merges."""

    def __init__(self, data: Any, spec: MergeSpec, changelog: ChangelogSpec) -> None:
        self.data = data
        self.spec = spec
        self.changelog = changelog
        self.levels: list[int] = data.column(LEVEL).to_pylist()
        self.kinds: list[int] = data.column(VALUE_KIND).to_pylist()
        self.value_names = [f.name for f in spec.fields]
        ignored = set(changelog.ignore_fields)
        self.compare = [i for i, name in enumerate(self.value_names) if name not in ignored]
        self.cols = [data.column(name).to_pylist() for name in self.value_names]
        self.seqs: list[int] = data.column(SEQUENCE_NUMBER).to_pylist()
        self.fn = spec.function() if spec.row_wise else None
        self.out: list[Outcome] = []
        self.keep: list[int] = []

    def key(self, group: range) -> None:
        """The changelog of one key (rows ``group``), by producer."""
        if self.changelog.producer == "none":
            self.keep.extend(_lookup_rows(group, self.levels))
            return
        if self.changelog.producer == "lookup":
            self._lookup_key(group)
            return
        rows = _lookup_rows(group, self.levels) if self.changelog.lookup_merge else group
        self.keep.extend(rows)
        tops = [r for r in group if self.levels[r] == self.changelog.max_level]
        if len(tops) > 1:
            raise MergeFunctionError(
                "Top level key-value already exists! This is unexpected. (two max-level "
                "records of one key)"
            )
        top = tops[0] if tops else None
        if len(group) == 1:
            if top is None and not is_retract(self.kinds[group[0]]):
                self.out.append((group[0], INSERT, None))
        else:
            self._changes(top, self._merged(rows))

    def _lookup_key(self, group: range) -> None:
        """One key at a full compaction of a lookup-producer table.

        LookupMergeFunction merges the level-0 records with only the newest high-level
        record (the one at the lowest level above 0; older levels hold superseded merge
        results); the lookup beyond the max level finds nothing. Changelog only for keys
        with level-0 records (LookupChangelogMergeFunctionWrapper /
        FirstRowMergeFunctionWrapper)."""
        levels, kinds = self.levels, self.kinds
        if self.spec.engine == "first-row":  # not wrapped in LookupMergeFunction: every record
            self.keep.extend(group)
            if any(levels[r] > 0 for r in group):
                return  # the key exists already: no changelog
            first = next((r for r in group if not is_retract(kinds[r])), None)
            if first is not None:
                self.out.append((first, kinds[first], None))  # the first record as written
            return
        rows = _lookup_rows(group, levels)
        self.keep.extend(rows)
        high = next((r for r in rows if levels[r] > 0), None)
        if not any(levels[r] == 0 for r in group):
            return
        before = high if high is not None and not is_retract(kinds[high]) else None
        self._changes(before, self._merged(rows))

    def _merged(self, rows: Sequence[int]) -> Outcome:
        """(row, kind, override) of the merge function's result over ``rows`` (in order)."""
        kinds = self.kinds
        if self.fn is None:  # deduplicate: the last record (the last add with ignore-delete)
            if not self.spec.ignore_delete:
                return rows[-1], kinds[rows[-1]], None
            for r in reversed(rows):
                if not is_retract(kinds[r]):
                    return r, kinds[r], None
            raise MergeFunctionError(
                f"{self.changelog.producer} changelog: every record of a key is a retraction "
                "under ignore-delete (Paimon's compaction fails on this key too)"
            )
        self.fn.reset()
        for r in rows:
            self.fn.add(self.seqs[r], kinds[r], [c[r] for c in self.cols])
        result = self.fn.result()
        if result is None:
            raise MergeFunctionError(
                f"{self.changelog.producer} changelog: no merge result for a key"
            )
        seq, kind, values = result
        return rows[-1], kind, (seq, list(values))

    def _changes(self, before: int | None, after: Outcome) -> None:
        """setChangelog of both wrappers: ``before`` (an add record, or None) to ``after``."""
        row, kind, override = after
        if before is None:
            if not is_retract(kind):
                self.out.append((row, INSERT, override))
        elif is_retract(kind):
            self.out.append((before, DELETE, None))
        elif not self.changelog.row_deduplicate or not self._same_values(before, row, override):
            self.out.append((before, UPDATE_BEFORE, None))
            self.out.append((row, UPDATE_AFTER, override))

    def _same_values(self, top: int, row: int, override: Override | None) -> bool:
        cols = self.cols
        after = override[1] if override is not None else [c[row] for c in cols]
        return all(_values_equal(cols[i][top], after[i]) for i in self.compare)

    def records(self, schema: Any) -> Any:
        """The changelog records as a table of ``schema``: copies of the rows they name,
        with the merged sequence number and values where the merge function made new ones."""
        import pyarrow as pa

        out, cols, seqs = self.out, self.cols, self.seqs
        row_wise = self.spec.row_wise
        idx = pa.array([r for r, _, _ in out], pa.int64())
        arrays = []
        for f in schema:
            if f.name == VALUE_KIND:
                arrays.append(pa.array([k for _, k, _ in out], f.type))
            elif f.name == SEQUENCE_NUMBER and row_wise:
                arrays.append(
                    pa.array([o[0] if o is not None else seqs[r] for r, _, o in out], f.type)
                )
            elif f.name in self.value_names and row_wise:
                j = self.value_names.index(f.name)
                arrays.append(
                    pa.array([o[1][j] if o is not None else cols[j][r] for r, _, o in out], f.type)
                )
            else:
                arrays.append(self.data.column(f.name).take(idx))
        return pa.Table.from_arrays(arrays, schema=schema)


def _lookup_rows(group: Sequence[int], levels: list[int]) -> Sequence[int]:
    """LookupMergeFunction's input: level-0 records and the high-level record at the lowest
    level (the first one there); older levels hold superseded merge results."""
    high = None
    for r in group:
        if levels[r] > 0 and (high is None or levels[r] < levels[high]):
            high = r
    if high is None:
        return group
    return [r for r in group if levels[r] <= 0 or r == high]


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
