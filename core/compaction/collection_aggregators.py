"""Paimon's aggregate functions on collections: ``collect`` (arrays), ``merge_map``,
``merge_map_with_keytime`` (maps) and ``nested_update``/``nested_partial_update`` (nested
tables, ``ARRAY<ROW>``). Paimon builds them in Java hash sets and maps, whose iteration
order is the result's order: ``core.compaction.java_hash`` reproduces those."""

from __future__ import annotations

from typing import Any

from core.compaction import java_hash
from core.compaction.field_aggregator import FieldAggregator
from core.errors import MergeFunctionError
from core.format import binary_row
from core.format.model import DataField


class Collect(FieldAggregator):
    """FieldCollectAgg: arrays concatenated; with ``distinct`` through a Java HashSet (its
    iteration order), or for rows and binaries a list that skips equal elements. Retraction
    removes one equal accumulator element per retracted element."""

    name = "collect"

    def __init__(self, field: DataField, distinct: bool) -> None:
        super().__init__(field)
        self.distinct = distinct
        self.element = field.type.children[0]
        self.equaliser = distinct and (
            self.element.root in java_hash.CONSTRUCTED or self.element.root in java_hash.BINARIES
        )

    def agg_reversed(self, acc: Any, value: Any) -> Any:
        return self.agg(acc, value)  # Paimon: the accumulator is already distinct

    def agg(self, acc: Any, value: Any) -> Any:
        if acc is None and value is None:
            return None
        if (acc is None or value is None) and not self.distinct:
            return value if acc is None else acc
        if self.equaliser:
            out = list(acc or ())
            keys = [java_hash.equality_key(e, self.element) for e in out]
            for e in value or ():
                k = java_hash.equality_key(e, self.element)
                if k not in keys:
                    keys.append(k)
                    out.append(e)
            return out
        if not self.distinct:
            return [*acc, *value]
        seen = java_hash.JavaHashMap()
        for e in (*(acc or ()), *(value or ())):
            seen.put(self._hash(e), self._key(e), e, replace=False)
        return list(seen.payloads())

    def _hash(self, e: Any) -> int:
        return java_hash.java_hash(e, self.element)

    def _key(self, e: Any) -> Any:
        return java_hash.equality_key(e, self.element)

    def _equal_key(self, e: Any) -> Any:
        """What Paimon's retraction compares: the equaliser's value equality when distinct;
        otherwise ``Object.equals``, which is identity for a ``byte[]`` (only nulls match)
        and not reproduced for nested values read from a file."""
        if self.equaliser or e is None:
            return self._key(e)
        if self.element.root in java_hash.BINARIES:
            return object()
        if self.element.root in java_hash.CONSTRUCTED:
            raise MergeFunctionError(
                f"fields.{self.field.name}: retracting from collect of {self.element.root} "
                "elements without distinct compares Java objects by identity in Paimon; "
                f"paimon-cli does not reproduce that (set 'fields.{self.field.name}.distinct' "
                "or 'ignore-retract')"
            )
        return self._key(e)

    def retract(self, acc: Any, value: Any) -> Any:
        if acc is None:
            return None
        if not value:
            return acc
        pending = [self._equal_key(e) for e in value]
        out = []
        for e in acc:
            k = self._equal_key(e)
            if k in pending:
                pending.remove(k)
            else:
                out.append(e)
        return out


class MergeMap(FieldAggregator):
    """FieldMergeMapAgg: later entries win, in a Java HashMap (its iteration order);
    retraction drops the retracted keys."""

    name = "merge_map"

    def __init__(self, field: DataField) -> None:
        super().__init__(field)
        self.key_type, self.value_type = field.type.children

    def _put_all(self, into: java_hash.JavaHashMap, entries: Any) -> None:
        for k, v in entries:
            into.put(
                java_hash.java_hash(k, self.key_type),
                java_hash.equality_key(k, self.key_type),
                (k, v),
            )

    def agg(self, acc: Any, value: Any) -> Any:
        if acc is None or value is None:
            return value if acc is None else acc
        merged = java_hash.JavaHashMap()
        self._put_all(merged, acc)
        self._put_all(merged, value)
        return list(merged.payloads())

    def retract(self, acc: Any, value: Any) -> Any:
        if acc is None:
            return None
        if not value:
            return acc
        gone = {java_hash.equality_key(k, self.key_type) for k, _ in value}
        kept = java_hash.JavaHashMap()
        self._put_all(
            kept, [(k, v) for k, v in acc if java_hash.equality_key(k, self.key_type) not in gone]
        )
        return list(kept.payloads())


class NestedUpdate(FieldAggregator):
    """FieldNestedUpdateAgg on ``ARRAY<ROW>``: without ``nested-key`` rows are appended (up
    to ``count-limit``); with it rows replace the row of the same key (``nested-sequence-field``
    decides between two of one key) in a Java ``HashMap<BinaryRow, ...>`` whose iteration
    order is the result's order. Null rows are dropped."""

    name = "nested_update"

    def __init__(
        self,
        field: DataField,
        key: list[str],
        null_strategy: str,
        sequence: list[str],
        count_limit: int,
    ) -> None:
        super().__init__(field)
        self.row_type = field.type.children[0]
        names = list(self.row_type.field_names)
        self.key = [names.index(n) for n in key]
        self.key_types = [self.row_type.children[i] for i in self.key]
        self.sequence = [names.index(n) for n in sequence]
        self.null_strategy = null_strategy
        self.count_limit = count_limit

    def _field(self, row: dict[str, Any], i: int) -> Any:
        return row.get(self.row_type.field_names[i])

    def _key_of(self, row: dict[str, Any]) -> tuple[int, bytes] | None:
        """The nested key as Paimon's projected BinaryRow (hash, bytes); None: skip the row."""
        values = [self._field(row, i) for i in self.key]
        if any(v is None for v in values):
            if self.null_strategy == "ignore":
                return None
            if self.null_strategy == "error":
                raise MergeFunctionError(
                    "Nested key contains null values. Primary key fields must not be null."
                )
        raw = binary_row.encode(values, self.key_types)[4:]  # without the arity prefix
        return java_hash.murmur_hash(raw), raw

    def _newer_or_same(self, new: dict[str, Any], old: dict[str, Any]) -> bool:
        for i in self.sequence:
            a, b = self._field(new, i), self._field(old, i)
            if a == b:
                continue
            if a is None or b is None:
                return b is None  # nulls first
            return bool(a > b)
        return True

    def _add_keyed(self, rows: Any, into: java_hash.JavaHashMap, limit_new: bool) -> None:
        for row in rows:
            if row is None:
                continue
            key = self._key_of(row)
            if key is None:
                continue
            existing = into.get(*key)
            if existing is not None:
                if not self.sequence or self._newer_or_same(row, existing):
                    into.put(*key, row)
            elif not limit_new or into.size < self.count_limit:
                into.put(*key, row)

    def agg(self, acc: Any, value: Any) -> Any:
        if value is None:
            return acc
        if not self.key:
            if acc is None:
                return [r for r in value if r is not None][: max(self.count_limit, 0)]
            if len(acc) >= self.count_limit:
                return acc
            remain = self.count_limit - len(acc)
            return [r for r in acc if r is not None] + [r for r in value if r is not None][:remain]
        rows = java_hash.JavaHashMap()
        if acc is not None:
            self._add_keyed(acc, rows, False)
        self._add_keyed(value, rows, True)
        return list(rows.payloads())

    def retract(self, acc: Any, value: Any) -> Any:
        if acc is None or value is None:
            return acc
        if not self.key:
            rows = [r for r in acc if r is not None]
            for r in value:
                if r is None:
                    continue
                gone = java_hash.equality_key(r, self.row_type)
                rows = [x for x in rows if java_hash.equality_key(x, self.row_type) != gone]
            return rows
        kept = java_hash.JavaHashMap()
        for row in acc:
            key = None if row is None else self._key_of(row)
            if key is not None:
                kept.put(*key, row)
        for row in value:
            key = None if row is None else self._key_of(row)
            if key is not None:
                kept.remove(*key)
        return list(kept.payloads())


class NestedPartialUpdate(NestedUpdate):
    """FieldNestedPartialUpdateAgg on ``ARRAY<ROW>``: the rows of one ``nested-key`` merged
    field by field (non-null values of later rows win), in a Java HashMap filled through
    ``computeIfAbsent``. No retraction."""

    name = "nested_partial_update"

    def __init__(self, field: DataField, key: list[str], null_strategy: str) -> None:
        super().__init__(field, key, null_strategy, [], 2147483647)

    def agg(self, acc: Any, value: Any) -> Any:
        if value is None:
            return acc
        names = self.row_type.field_names
        merged = java_hash.JavaHashMap()
        for row in (*(acc or ()), *value):
            if row is None:
                continue
            key = self._key_of(row)
            if key is None:
                continue
            target = merged.compute_if_absent(*key, lambda: dict.fromkeys(names))
            for n in names:
                if row.get(n) is not None:
                    target[n] = row[n]
        return list(merged.payloads())

    def retract(self, acc: Any, value: Any) -> Any:
        return FieldAggregator.retract(self, acc, value)


class MergeMapWithKeyTime(MergeMap):
    """FieldMergeMapWithKeyTimeAgg: ``MAP<K, ROW>``; an input entry replaces the entry of its
    key when its ``ts-field`` (a string, compared as Java strings) is later, a null value
    removes the key, a null time is skipped. No retraction."""

    name = "merge_map_with_keytime"

    def __init__(self, field: DataField, ts_field: str) -> None:
        super().__init__(field)
        self.ts_field = ts_field

    def agg(self, acc: Any, value: Any) -> Any:
        if acc is None:
            return value
        if value is None:
            return acc
        merged = java_hash.JavaHashMap()
        self._put_all(merged, acc)
        kt = self.key_type
        for k, row in value:
            h, key = java_hash.java_hash(k, kt), java_hash.equality_key(k, kt)
            if row is None:
                merged.remove(h, key)
                continue
            ts = row.get(self.ts_field)
            if ts is None:
                continue
            existing = merged.get(h, key)
            old = None if existing is None or existing[1] is None else existing[1]
            if (
                old is None
                or old.get(self.ts_field) is None
                or _utf16(ts) > _utf16(old[self.ts_field])
            ):
                merged.put(h, key, (k if existing is None else existing[0], row))
        return list(merged.payloads())

    def retract(self, acc: Any, value: Any) -> Any:
        return FieldAggregator.retract(self, acc, value)


def _utf16(text: str) -> bytes:
    """Java's ``String.compareTo`` order: UTF-16 code units."""
    return text.encode("utf-16-be")


__all__ = [
    "Collect",
    "MergeMap",
    "MergeMapWithKeyTime",
    "NestedPartialUpdate",
    "NestedUpdate",
]
