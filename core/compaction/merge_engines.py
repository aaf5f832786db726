"""Paimon's merge engines (``merge-engine``) as full compaction applies them per key.

``MergeSpec.of(table)`` reads the table's options once (it is small and picklable, so Spark
executors get it with their task); ``MergeSpec.function()`` makes the per-key merge function:
``reset()``, ``add(seq, kind, values)`` for each record of one key in merge order (key, then
``sequence.field``, then sequence number), then ``result()``: ``(seq, kind, values)`` or
None. Each class follows Paimon's ``*MergeFunction`` of the same name, including its
treatment of ``-U``/``-D`` records and the errors it raises. Deduplicate and first-row need
no per-record work and are vectorized in ``core.compaction.merge_tree``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from core.compaction import aggregators
from core.compaction.aggregators import FieldAggregator, MergeFunctionError
from core.format.model import DataField

ENGINES = ("deduplicate", "partial-update", "aggregation", "first-row")
IGNORE_DELETE_KEYS = (
    "ignore-delete",
    "first-row.ignore-delete",
    "deduplicate.ignore-delete",
    "partial-update.ignore-delete",
)
FIELDS_PREFIX = "fields."
SEQUENCE_GROUP = "sequence-group"
DEFAULT_AGG = "fields.default-aggregate-function"
INSERT, UPDATE_BEFORE, UPDATE_AFTER, DELETE = 0, 1, 2, 3

Record = tuple[int, int, list[Any]]  # (sequence number, value kind, value fields)


def is_retract(kind: int) -> bool:
    return kind in (UPDATE_BEFORE, DELETE)


def _true(options: Mapping[str, str], key: str) -> bool:
    return (options.get(key) or "false").strip().lower() == "true"


def _split(text: str) -> list[str]:
    return [p.strip() for p in text.split(",") if p.strip()]


@dataclass(frozen=True, slots=True)
class SequenceGroup:
    ordering: tuple[int, ...]  # indexes of the fields that order the group
    protected: tuple[int, ...]  # indexes of the fields the group updates


@dataclass(frozen=True, slots=True)
class MergeSpec:
    """What full compaction needs to know about a table's merge engine."""

    engine: str
    fields: tuple[DataField, ...]
    primary_keys: tuple[str, ...]
    options: Mapping[str, str]
    ignore_delete: bool
    sequence_fields: tuple[str, ...]
    sequence_ascending: bool
    groups: tuple[SequenceGroup, ...]
    remove_on_delete: bool
    remove_on_group: frozenset[int]
    lookup: bool = False  # CoreOptions.needLookup: compaction merges through LookupMergeFunction

    @classmethod
    def of(
        cls,
        fields: Sequence[DataField],
        primary_keys: Sequence[str],
        options: Mapping[str, str],
    ) -> MergeSpec:
        opts = dict(options)
        engine = (opts.get("merge-engine") or "deduplicate").strip().lower()
        names = [f.name for f in fields]
        groups: list[SequenceGroup] = []
        by_name: dict[str, int] = {}
        for key in sorted(opts):
            if key.startswith("fields") and key.endswith(SEQUENCE_GROUP):
                inner = key[len(FIELDS_PREFIX) : -len(SEQUENCE_GROUP) - 1]
                ordering = tuple(_index(names, n, key) for n in _split(inner))
                protected = tuple(_index(names, n, key) for n in _split(opts[key]))
                groups.append(SequenceGroup(ordering, protected))
                for i in ordering:
                    by_name[names[i]] = i
        remove_on_group: set[int] = set()
        group_text = opts.get("partial-update.remove-record-on-sequence-group")
        if group_text:
            remove_on_group = {by_name[n] for n in _split(group_text) if n in by_name}
        order = (opts.get("sequence.field.sort-order") or "ascending").strip().lower()
        remove_key = (
            "aggregation.remove-record-on-delete"
            if engine == "aggregation"
            else "partial-update.remove-record-on-delete"
        )
        return cls(
            engine=engine,
            fields=tuple(fields),
            primary_keys=tuple(primary_keys),
            options=opts,
            ignore_delete=any(_true(opts, k) for k in IGNORE_DELETE_KEYS),
            sequence_fields=tuple(_split(opts.get("sequence.field") or "")),
            sequence_ascending=order != "descending",
            groups=tuple(groups),
            remove_on_delete=_true(opts, remove_key),
            remove_on_group=frozenset(remove_on_group),
            lookup=(opts.get("changelog-producer") or "").strip().lower() == "lookup"
            or _true(opts, "deletion-vectors.enabled")
            or _true(opts, "force-lookup"),
        )

    # -- what cannot be compacted exactly -----------------------------------------------------
    def refusals(self) -> list[str]:
        out: list[str] = []
        names = [f.name for f in self.fields]
        if self.engine not in ENGINES:
            return [f"merge-engine={self.engine} (unknown merge engine)"]
        for name in self.sequence_fields:
            if name not in names:
                out.append(f"sequence.field={name} (no such column)")
        if self.sequence_fields and self.engine == "first-row":
            out.append("sequence.field with merge-engine=first-row (Paimon refuses it)")
        for name in self.sequence_fields:
            f = self.fields[names.index(name)] if name in names else None
            if f is not None and f.type.root not in aggregators.ORDERED:
                out.append(f"sequence.field={name} of type {f.type} (not ordered by paimon-cli)")
        for group in self.groups:
            for i in group.ordering:
                if self.fields[i].type.root not in aggregators.ORDERED:
                    out.append(
                        f"sequence-group ordered by {self.fields[i].name} of type "
                        f"{self.fields[i].type} (not ordered by paimon-cli)"
                    )
        if self.engine == "partial-update":
            if self.remove_on_delete and self.ignore_delete:
                out.append(
                    "ignore-delete with partial-update.remove-record-on-delete "
                    "(conflicting, Paimon refuses them together)"
                )
            if self.remove_on_delete and self.groups:
                out.append(
                    "sequence-group with partial-update.remove-record-on-delete "
                    "(conflicting, Paimon refuses them together)"
                )
        if self.engine in ("aggregation", "partial-update"):
            for i, f in enumerate(self.fields):
                try:
                    func = self.agg_name(i)
                except MergeFunctionError as exc:
                    out.append(str(exc))
                    continue
                if func is None:
                    continue
                problem = aggregators.refusal(func, f, self.options)
                if problem is not None:
                    out.append(problem)
        return out

    def agg_name(self, i: int) -> str | None:
        """``getAggFuncName`` of the aggregation and partial-update engines."""
        name = self.fields[i].name
        if self.engine == "aggregation":
            if name in self.sequence_fields:
                return "last_value"
            if name in self.primary_keys:
                return "primary_key"
            return (
                self.options.get(f"fields.{name}.aggregate-function")
                or self.options.get(DEFAULT_AGG)
                or "last_non_null_value"
            )
        if self.engine != "partial-update":
            return None
        if any(i in g.ordering for g in self.groups):
            return None
        if name in self.primary_keys:
            return "primary_key"
        func = self.options.get(f"fields.{name}.aggregate-function") or self.options.get(
            DEFAULT_AGG
        )
        protected = any(i in g.protected for g in self.groups)
        if func is not None and func != "last_non_null_value" and not protected:
            raise MergeFunctionError(
                f"Must use sequence group for aggregation functions but not found for field {name}."
            )
        return func

    @property
    def row_wise(self) -> bool:
        return self.engine in ("partial-update", "aggregation")

    def function(self) -> MergeFunction:
        """The merge function as compaction applies it: on a lookup table (changelog-producer
        lookup, deletion vectors, force-lookup) LookupMergeFunction runs it on every key;
        otherwise ReducerMergeFunctionWrapper keeps a key's single record as written."""
        fn: MergeFunction
        if self.engine == "partial-update":
            fn = PartialUpdate(self)
        elif self.engine == "aggregation":
            fn = Aggregate(self)
        else:
            raise ValueError(f"{self.engine} is merged vectorized")
        return fn if self.lookup else Reducer(fn)

    def aggregators(self) -> dict[int, FieldAggregator]:
        out: dict[int, FieldAggregator] = {}
        for i, f in enumerate(self.fields):
            name = self.agg_name(i)
            if name is not None:
                out[i] = aggregators.create(name, f, self.options)
        return out


def _index(names: list[str], name: str, key: str) -> int:
    if name not in names:
        raise MergeFunctionError(f"{key}: field {name} not found in the table")
    return names.index(name)


class MergeFunction:
    def reset(self) -> None:
        raise NotImplementedError

    def add(self, seq: int, kind: int, values: list[Any]) -> None:
        raise NotImplementedError

    def result(self) -> Record | None:
        raise NotImplementedError


class Reducer(MergeFunction):
    """ReducerMergeFunctionWrapper: a key with a single record keeps that record as it is
    (a lone retraction is then dropped at the top level); only two or more records go
    through the merge function."""

    def __init__(self, inner: MergeFunction) -> None:
        self.inner = inner
        self.first: Record | None = None
        self.merging = False

    def reset(self) -> None:
        self.first = None
        self.merging = False
        self.inner.reset()

    def add(self, seq: int, kind: int, values: list[Any]) -> None:
        if self.first is None:
            self.first = (seq, kind, values)
            return
        if not self.merging:
            self.merging = True
            self.inner.add(*self.first)
        self.inner.add(seq, kind, values)

    def result(self) -> Record | None:
        return self.inner.result() if self.merging else self.first


def _init_row(spec: MergeSpec, values: list[Any]) -> list[Any]:
    for i, f in enumerate(spec.fields):
        if values[i] is None and not f.type.nullable:
            raise MergeFunctionError(f"Field {i} can not be null")
    return list(values)


def _seq_compare(spec: MergeSpec, ordering: Sequence[int], a: list[Any], b: list[Any]) -> int:
    """UserDefinedSeqComparator (ascending): null before any value, field by field."""
    for i in ordering:
        x, y = a[i], b[i]
        if x is None and y is None:
            continue
        if x is None:
            return -1
        if y is None:
            return 1
        if x != y:
            return -1 if x < y else 1
    return 0


class PartialUpdate(MergeFunction):
    """PartialUpdateMergeFunction: non-null fields of later records win; sequence groups
    update their fields only when their ordering fields are not older."""

    def __init__(self, spec: MergeSpec) -> None:
        self.spec = spec
        self.n = len(spec.fields)
        self.nullable = [f.type.nullable for f in spec.fields]
        self.aggs = spec.aggregators()
        self.group_of: dict[int, SequenceGroup] = {}
        for g in spec.groups:
            for i in (*g.protected, *g.ordering):
                self.group_of[i] = g
        self.reset()

    def reset(self) -> None:
        self.row: list[Any] = [None] * self.n
        self.seq = 0
        self.meet_insert = False
        self.not_null_filled = False
        self.delete_row = False
        for a in self.aggs.values():
            a.reset()

    def add(self, seq: int, kind: int, values: list[Any]) -> None:
        spec = self.spec
        self.delete_row = False
        if is_retract(kind):
            if not self.not_null_filled:
                self.row = _init_row(spec, values)
                self.not_null_filled = True
            if spec.ignore_delete:
                return
            self.seq = seq
            if spec.groups:
                self._retract_with_groups(kind, values)
                return
            if spec.remove_on_delete:
                if kind == DELETE:
                    self.delete_row = True
                    self.row = _init_row(spec, values)
                return
            raise MergeFunctionError(
                "By default, Partial update can not accept delete records: configure "
                "'ignore-delete', 'partial-update.remove-record-on-delete' or sequence-groups"
            )
        self.seq = seq
        if not spec.groups:
            for i in range(self.n):
                v = values[i]
                if v is not None:
                    self.row[i] = v
                elif not self.nullable[i]:
                    raise MergeFunctionError(f"Field {i} can not be null")
        else:
            self._update_with_groups(values)
        self.meet_insert = True
        self.not_null_filled = True

    def _empty_group(self, g: SequenceGroup, values: list[Any], done: list[bool]) -> bool:
        if any(values[i] is not None for i in g.ordering):
            return False
        for i in g.ordering:
            done[i] = True
        return True

    def _update_with_groups(self, values: list[Any]) -> None:
        row = self.row
        done = [False] * self.n
        for i in range(self.n):
            g = self.group_of.get(i)
            agg = self.aggs.get(i)
            acc = row[i]
            if g is not None:
                if done[i] or self._empty_group(g, values, done):
                    continue
                v = values[i]
                if _seq_compare(self.spec, g.ordering, values, row) >= 0:
                    if i in g.ordering:
                        for j in g.ordering:
                            row[j] = values[j]
                            done[j] = True
                        continue
                    row[i] = v if agg is None else agg.agg(acc, v)
                elif agg is not None:
                    row[i] = agg.agg_reversed(acc, v)
            else:
                v = values[i]
                if agg is not None:
                    row[i] = agg.agg(acc, v)
                elif v is not None:
                    row[i] = v

    def _retract_with_groups(self, kind: int, values: list[Any]) -> None:
        updated: set[int] = set()
        done = [False] * self.n
        for i in range(self.n):
            g = self.group_of.get(i)
            if g is None:
                continue
            agg = self.aggs.get(i)
            if done[i] or self._empty_group(g, values, done):
                continue
            if _seq_compare(self.spec, g.ordering, values, self.row) >= 0:
                if i in g.ordering:
                    for j in g.ordering:
                        if j not in updated:
                            if kind == DELETE and j in self.spec.remove_on_group:
                                self.delete_row = True
                                self.row = _init_row(self.spec, values)
                                return
                            self.row[j] = values[j]
                            updated.add(j)
                        done[j] = True
                elif agg is None:
                    self.row[i] = None
                else:
                    self.row[i] = agg.retract(self.row[i], values[i])
            elif agg is not None:
                self.row[i] = agg.retract(self.row[i], values[i])

    def result(self) -> Record | None:
        kind = DELETE if self.delete_row or not self.meet_insert else INSERT
        return self.seq, kind, self.row


class Aggregate(MergeFunction):
    """AggregateMergeFunction: every field folded by its aggregator, retractions undone."""

    def __init__(self, spec: MergeSpec) -> None:
        self.spec = spec
        self.n = len(spec.fields)
        aggs = spec.aggregators()
        self.aggs = [aggs[i] for i in range(self.n)]
        self.reset()

    def reset(self) -> None:
        self.row: list[Any] = [None] * self.n
        self.seq: int | None = None
        self.delete_row = False
        for a in self.aggs:
            a.reset()

    def add(self, seq: int, kind: int, values: list[Any]) -> None:
        self.seq = seq
        self.delete_row = self.spec.remove_on_delete and kind == DELETE
        if self.delete_row:
            self.row = _init_row(self.spec, values)
            return
        row = self.row
        if is_retract(kind):
            for i, a in enumerate(self.aggs):
                row[i] = a.retract(row[i], values[i])
        else:
            for i, a in enumerate(self.aggs):
                row[i] = a.agg(row[i], values[i])

    def result(self) -> Record | None:
        if self.seq is None:
            return None
        return self.seq, DELETE if self.delete_row else INSERT, self.row


__all__ = [
    "DELETE",
    "ENGINES",
    "INSERT",
    "MergeFunction",
    "MergeFunctionError",
    "MergeSpec",
    "is_retract",
]
