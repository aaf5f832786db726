"""Property: random upserts, deletes and nulls, merged by compaction's merge (per engine),
equal a straightforward reference merge that replays the records in write order."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.aggregate_references import ref_updates

from core.compaction.merge_engines import MergeFunctionError, MergeSpec
from core.compaction.merge_tree import merge_bucket
from core.format.data_files import FileLayout
from core.format.model import DataField
from core.format.types import parse_type

FIELDS = (
    DataField(0, "k", parse_type("INT NOT NULL")),
    DataField(1, "a", parse_type("BIGINT")),
    DataField(2, "s", parse_type("STRING")),
    DataField(3, "b", parse_type("BOOLEAN")),
    DataField(4, "g", parse_type("INT")),  # sequence-group ordering / sequence.field
)
LAYOUT = FileLayout.of(FIELDS, ["k"])
KEY = ["_KEY_k"]

Rec = tuple[int, int, list[Any]]  # (kind, key, [a, s, b, g])
INSERT, UB, UA, DELETE = 0, 1, 2, 3

values = st.tuples(
    st.one_of(st.none(), st.integers(-1000, 1000)),
    st.one_of(st.none(), st.sampled_from(["x", "y", "", " ", "z,w"])),
    st.one_of(st.none(), st.booleans()),
    st.one_of(st.none(), st.integers(0, 5)),
)


def records(kinds: Sequence[int]) -> st.SearchStrategy[list[Rec]]:
    return st.lists(
        st.tuples(st.sampled_from(kinds), st.integers(0, 4), values.map(list)),
        min_size=1,
        max_size=40,
    )


def _merge(options: Mapping[str, str], recs: list[Rec]) -> dict[int, tuple[int, list[Any]]]:
    """Our compaction's merge over the records (sequence number = write position)."""
    rows = [
        {
            "_KEY_k": key,
            "_SEQUENCE_NUMBER": seq,
            "_VALUE_KIND": kind,
            "k": key,
            "a": v[0],
            "s": v[1],
            "b": v[2],
            "g": v[3],
        }
        for seq, (kind, key, v) in enumerate(recs)
    ]
    # Files arrive in any order: shuffle deterministically (reverse) before merging.
    data = pa.Table.from_pylist(rows[::-1], schema=LAYOUT.arrow_schema())
    spec = MergeSpec.of(FIELDS, ["k"], options)
    out = merge_bucket(data, KEY, spec).to_pylist()
    keys = [r["k"] for r in out]
    assert keys == sorted(keys) and len(set(keys)) == len(keys)
    assert all(r["_VALUE_KIND"] in (0, 2) for r in out)
    return {r["k"]: (r["_SEQUENCE_NUMBER"], [r["a"], r["s"], r["b"], r["g"]]) for r in out}


def _by_key(recs: list[Rec]) -> dict[int, list[tuple[int, int, list[Any]]]]:
    out: dict[int, list[tuple[int, int, list[Any]]]] = {}
    for seq, (kind, key, v) in enumerate(recs):
        out.setdefault(key, []).append((seq, kind, v))
    return out


def _retract(kind: int) -> bool:
    return kind in (UB, DELETE)


# -- reference merges ------------------------------------------------------------------------
def ref_deduplicate(recs: list[Rec], ignore_delete: bool = False) -> dict[int, Any]:
    out = {}
    for key, items in _by_key(recs).items():
        if ignore_delete:
            items = [i for i in items if not _retract(i[1])]
        if items and not _retract(items[-1][1]):
            out[key] = (items[-1][0], items[-1][2])
    return out


def ref_sequence_field(recs: list[Rec], descending: bool) -> dict[int, Any]:
    """Deduplicate by ``g`` (null oldest), then by write order."""
    out = {}
    for key, items in _by_key(recs).items():

        def rank(i: tuple[int, int, list[Any]]) -> tuple[int, int, int]:
            g = i[2][3]
            if g is None:
                return (0, 0, i[0])
            return (1, -g if descending else g, i[0])

        last = max(items, key=rank)
        if not _retract(last[1]):
            out[key] = (last[0], last[2])
    return out


def ref_first_row(recs: list[Rec]) -> dict[int, Any]:
    out: dict[int, Any] = {}
    for seq, (kind, key, v) in enumerate(recs):
        if not _retract(kind) and key not in out:
            out[key] = (seq, v)
    return out


def ref_partial_update(recs: list[Rec], mode: str) -> dict[int, Any]:
    """Later non-null values win. ``mode``: ignore-delete (a retraction only fills a row
    nothing filled yet) or remove (a -D replaces the row by its own values and marks it
    deleted until the next insert)."""
    out = {}
    for key, items in _by_key(recs).items():
        row: list[Any] = [None] * 4
        filled = inserted = deleted = False
        seq = 0
        for s, kind, v in items:
            deleted = False
            if _retract(kind):
                if not filled:
                    row, filled = list(v), True
                if mode == "ignore-delete":
                    continue
                seq = s
                if kind == DELETE:
                    deleted, row = True, list(v)
                continue
            seq = s
            row = [n if n is not None else o for o, n in zip(row, v, strict=True)]
            inserted = filled = True
        if inserted and not deleted:
            out[key] = (seq, row)
    return out


def ref_sequence_group(recs: list[Rec]) -> dict[int, Any]:
    """``fields.g.sequence-group=a,s``: a and s follow the record with the largest g (a
    record with null g leaves them alone); b is a plain partial-update field. A retraction
    whose g is not older clears a and s and takes its g."""
    out = {}
    for key, items in _by_key(recs).items():
        if len(items) == 1:  # a lone record is kept as written; a lone retraction dropped
            if not _retract(items[0][1]):
                out[key] = (items[0][0], items[0][2])
            continue
        a = s_ = b = g = None
        inserted = False
        seq = 0
        first = True
        for sq, kind, v in items:
            if first and _retract(kind):
                a, s_, b, g = v
            first = False
            seq = sq
            newer = v[3] is not None and (g is None or v[3] >= g)
            if _retract(kind):
                if newer:
                    a, s_, g = None, None, v[3]
                continue
            if newer:
                a, s_, g = v[0], v[1], v[3]
            if v[2] is not None:
                b = v[2]
            inserted = True
        if inserted:
            out[key] = (seq, [a, s_, b, g])
    return out


def _java_sum(x: int, y: int) -> int:
    total = x + y
    assert -(2**63) <= total < 2**63
    return total


def ref_aggregation(recs: list[Rec]) -> dict[int, Any]:
    """a: sum (retract subtracts), s: listagg with ',' (blank skipped, retract ignored),
    b: bool_or (retract ignored), g: max (retract ignored)."""
    out = {}
    for key, items in _by_key(recs).items():
        if len(items) == 1:  # a lone record is kept as written; a lone retraction dropped
            if not _retract(items[0][1]):
                out[key] = (items[0][0], items[0][2])
            continue
        a = s_ = b = g = None
        for _sq, kind, v in items:
            if _retract(kind):
                if v[0] is not None:
                    a = -v[0] if a is None else a - v[0]
                continue
            if v[0] is not None:
                a = v[0] if a is None else _java_sum(a, v[0])
            if v[1] is not None and v[1].strip():
                s_ = v[1] if s_ is None or not s_.strip() else f"{s_},{v[1]}"
            if v[2] is not None:
                b = v[2] if b is None else (b or v[2])
            if v[3] is not None:
                g = v[3] if g is None else max(g, v[3])
        out[key] = (items[-1][0], [a, s_, b, g])
    return out


AGG = {
    "merge-engine": "aggregation",
    "fields.a.aggregate-function": "sum",
    "fields.s.aggregate-function": "listagg",
    "fields.s.ignore-retract": "true",
    "fields.b.aggregate-function": "bool_or",
    "fields.b.ignore-retract": "true",
    "fields.g.aggregate-function": "max",
    "fields.g.ignore-retract": "true",
}

CASES: dict[str, tuple[dict[str, str], Sequence[int], Callable[[list[Rec]], dict[int, Any]]]] = {
    "deduplicate": ({}, (INSERT, UA, UB, DELETE), ref_deduplicate),
    "deduplicate-ignore-delete": (
        {"ignore-delete": "true"},
        (INSERT, DELETE),
        lambda r: ref_deduplicate(r, ignore_delete=True),
    ),
    "sequence-field": (
        {"sequence.field": "g"},
        (INSERT, DELETE),
        lambda r: ref_sequence_field(r, descending=False),
    ),
    "sequence-field-descending": (
        {"sequence.field": "g", "sequence.field.sort-order": "descending"},
        (INSERT, DELETE),
        lambda r: ref_sequence_field(r, descending=True),
    ),
    "first-row": (
        {"merge-engine": "first-row", "ignore-delete": "true"},
        (INSERT, DELETE),
        ref_first_row,
    ),
    "partial-update": (
        {"merge-engine": "partial-update"},
        (INSERT,),
        lambda r: ref_partial_update(r, ""),
    ),
    "partial-update-ignore-delete": (
        {"merge-engine": "partial-update", "ignore-delete": "true"},
        (INSERT, DELETE, UB),
        lambda r: ref_partial_update(r, "ignore-delete"),
    ),
    "partial-update-remove-record-on-delete": (
        {"merge-engine": "partial-update", "partial-update.remove-record-on-delete": "true"},
        (INSERT, DELETE),
        lambda r: ref_partial_update(r, "remove"),
    ),
    "partial-update-sequence-group": (
        {"merge-engine": "partial-update", "fields.g.sequence-group": "a,s"},
        (INSERT, DELETE),
        ref_sequence_group,
    ),
    "aggregation": (AGG, (INSERT, UB, DELETE), ref_aggregation),
}


@pytest.mark.parametrize("case", sorted(CASES))
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_merge_equals_reference(case: str, data: st.DataObject) -> None:
    options, kinds, reference = CASES[case]
    recs = data.draw(records(kinds))
    assert _merge(options, recs) == reference(recs)


# -- collection aggregates -------------------------------------------------------------------
COLL_FIELDS = (
    DataField(0, "k", parse_type("INT NOT NULL")),
    DataField(1, "c", parse_type({"type": "ARRAY", "element": "BIGINT"})),
    DataField(2, "d", parse_type({"type": "ARRAY", "element": "STRING"})),
    DataField(3, "m", parse_type({"type": "MAP", "key": "STRING NOT NULL", "value": "INT"})),
    DataField(
        4,
        "n",
        parse_type(
            {
                "type": "ARRAY",
                "element": {
                    "type": "ROW",
                    "fields": [
                        {"id": 6, "name": "i", "type": "INT"},
                        {"id": 7, "name": "v", "type": "STRING"},
                    ],
                },
            }
        ),
    ),
)
COLL_FIELDS = (*COLL_FIELDS, DataField(5, "u", COLL_FIELDS[4].type))
COLL_LAYOUT = FileLayout.of(COLL_FIELDS, ["k"])
COLL_OPTIONS = {
    "merge-engine": "aggregation",
    "fields.c.aggregate-function": "collect",
    "fields.d.aggregate-function": "collect",
    "fields.d.distinct": "true",
    "fields.m.aggregate-function": "merge_map",
    "fields.n.aggregate-function": "nested_update",
    "fields.n.nested-key": "i",
    "fields.u.aggregate-function": "nested_update",
    "fields.u.count-limit": "3",
}
nested_rows = st.lists(
    st.fixed_dictionaries(
        {"i": st.one_of(st.none(), st.integers(0, 3)), "v": st.sampled_from(["p", "q"])}
    ),
    max_size=3,
)
coll_values = st.tuples(
    st.one_of(st.none(), st.lists(st.one_of(st.none(), st.integers(-5, 40)), max_size=4)),
    st.one_of(
        st.none(), st.lists(st.sampled_from([None, "a", "b", "ccc", "a longer one"]), max_size=4)
    ),
    st.one_of(
        st.none(),
        st.dictionaries(st.sampled_from(["a", "b", "c", "d"]), st.integers(0, 9), max_size=3).map(
            lambda d: list(d.items())
        ),
    ),
    st.one_of(st.none(), nested_rows),
    st.one_of(st.none(), nested_rows),
)


def _coll_merge(recs: list[Rec]) -> dict[int, list[Any]]:
    rows = [
        {"_KEY_k": key, "_SEQUENCE_NUMBER": seq, "_VALUE_KIND": kind, "k": key}
        | dict(zip(("c", "d", "m", "n", "u"), v, strict=True))
        for seq, (kind, key, v) in enumerate(recs)
    ]
    data = pa.Table.from_pylist(rows[::-1], schema=COLL_LAYOUT.arrow_schema())
    spec = MergeSpec.of(COLL_FIELDS, ["k"], COLL_OPTIONS)
    out = merge_bucket(data, ["_KEY_k"], spec).to_pylist()
    return {r["k"]: [r["c"], r["d"], r["m"], r["n"], r["u"]] for r in out}


def ref_collections(recs: list[Rec]) -> dict[int, list[Any]]:
    """c: concatenation, retraction removes one equal element per retracted one; d: a set;
    m: a dict, later values win, retraction drops keys; n: a dict of rows by ``i`` (retraction
    drops keys); u: rows appended while fewer than 3, retraction drops equal rows. A lone
    record is kept as written, a lone retraction dropped."""
    out: dict[int, list[Any]] = {}
    for key, items in _by_key(recs).items():
        if len(items) == 1:
            if not _retract(items[0][1]):
                out[key] = list(items[0][2])
            continue
        c = d = m = n = u = None
        for _sq, kind, v in items:
            vc, vd, vm, vn, vu = v
            if _retract(kind):
                if c is not None and vc:
                    c = list(c)
                    for e in vc:
                        if e in c:
                            c.remove(e)
                if d is not None and vd:
                    d = [e for e in d if e not in vd]
                if m is not None and vm:
                    m = {a: b for a, b in m.items() if a not in dict(vm)}
                if n is not None and vn is not None:
                    n = {a: b for a, b in n.items() if a not in {r["i"] for r in vn}}
                if u is not None and vu is not None:
                    u = [r for r in u if r not in vu]
                continue
            if vc is not None:
                c = vc if c is None else [*c, *vc]
            if vd is not None or d is not None:
                d = list(dict.fromkeys([*(d or []), *(vd or [])]))
            if vm is not None:
                m = dict(vm) if m is None else {**m, **dict(vm)}
            if vn is not None:
                n = {**(n or {}), **{r["i"]: r for r in vn}}
            if vu is not None:
                u = vu[:3] if u is None else (u if len(u) >= 3 else [*u, *vu][:3])
        out[key] = [c, d, m, n, u]
    return out


def _unordered(row: list[Any], lone: bool) -> list[Any]:
    """Hash-ordered columns compared as sets/dicts (their order is checked against Java)."""
    c, d, m, n, u = row

    def order(x: Any) -> tuple[bool, Any]:
        return (x is None, x if x is not None else "")

    return [
        c,
        d if lone or d is None else sorted(d, key=order),
        dict(m) if m is not None else None,
        n if lone or n is None or isinstance(n, dict) else {r["i"]: r for r in n},
        u,
    ]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    recs=st.lists(
        st.tuples(st.sampled_from((INSERT, UB, DELETE)), st.integers(0, 3), coll_values.map(list)),
        min_size=1,
        max_size=25,
    )
)
def test_collection_aggregates_equal_reference(recs: list[Rec]) -> None:
    got = _coll_merge(recs)
    want = ref_collections(recs)
    assert sorted(got) == sorted(want)
    lone = {k for k, items in _by_key(recs).items() if len(items) == 1}
    for key in got:
        assert _unordered(got[key], key in lone) == _unordered(want[key], key in lone)


NPU_ROW = {
    "type": "ROW",
    "fields": [
        {"id": 4, "name": "i", "type": "INT"},
        {"id": 5, "name": "v", "type": "STRING"},
        {"id": 6, "name": "w", "type": "INT"},
    ],
}
KT_ROW = {
    "type": "ROW",
    "fields": [{"id": 7, "name": "val", "type": "INT"}, {"id": 8, "name": "ts", "type": "STRING"}],
}
UPD_FIELDS = (
    DataField(0, "k", parse_type("INT NOT NULL")),
    DataField(1, "p", parse_type({"type": "ARRAY", "element": NPU_ROW})),
    DataField(2, "t", parse_type({"type": "MAP", "key": "INT NOT NULL", "value": KT_ROW})),
)
UPD_LAYOUT = FileLayout.of(UPD_FIELDS, ["k"])
UPD_OPTIONS = {
    "merge-engine": "aggregation",
    "fields.p.aggregate-function": "nested_partial_update",
    "fields.p.nested-key": "i",
    "fields.t.aggregate-function": "merge_map_with_keytime",
}
npu_rows = st.lists(
    st.one_of(
        st.none(),
        st.fixed_dictionaries(
            {
                "i": st.one_of(st.none(), st.integers(0, 3)),
                "v": st.one_of(st.none(), st.sampled_from(["p", "q"])),
                "w": st.one_of(st.none(), st.integers(0, 9)),
            }
        ),
    ),
    max_size=4,
)
kt_entries = st.dictionaries(
    st.integers(-3, 3),
    st.one_of(
        st.none(),
        st.fixed_dictionaries(
            {
                "val": st.integers(0, 9),
                "ts": st.one_of(st.none(), st.sampled_from(["2024-01", "2024-02", "2025"])),
            }
        ),
    ),
    max_size=3,
).map(lambda d: list(d.items()))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    recs=st.lists(
        st.tuples(
            st.integers(0, 3),
            st.tuples(st.one_of(st.none(), npu_rows), st.one_of(st.none(), kt_entries)).map(list),
        ),
        min_size=1,
        max_size=25,
    )
)
def test_nested_partial_update_and_keytime_maps_equal_reference(
    recs: list[tuple[int, list[Any]]],
) -> None:
    rows = [
        {"_KEY_k": key, "_SEQUENCE_NUMBER": seq, "_VALUE_KIND": INSERT, "k": key, "p": p, "t": t}
        for seq, (key, (p, t)) in enumerate(recs)
    ]
    data = pa.Table.from_pylist(rows[::-1], schema=UPD_LAYOUT.arrow_schema())
    merged = merge_bucket(data, ["_KEY_k"], MergeSpec.of(UPD_FIELDS, ["k"], UPD_OPTIONS))
    want = ref_updates(recs)
    lone = {k for k in want if sum(1 for key, _ in recs if key == k) == 1}
    got = {}
    for r in merged.to_pylist():
        p, t = r["p"], r["t"]
        if r["k"] not in lone and p is not None:
            p = {row["i"]: row for row in p}
        got[r["k"]] = [p, dict(t) if t is not None else None]
    assert got == want


def test_nested_partial_update_and_keytime_maps_refuse_retraction() -> None:
    rows = [
        {"_KEY_k": 1, "_SEQUENCE_NUMBER": s, "_VALUE_KIND": kind, "k": 1, "p": None, "t": None}
        for s, kind in enumerate((INSERT, DELETE))
    ]
    data = pa.Table.from_pylist(rows, schema=UPD_LAYOUT.arrow_schema())
    with pytest.raises(MergeFunctionError, match="ignore-retract"):
        merge_bucket(data, ["_KEY_k"], MergeSpec.of(UPD_FIELDS, ["k"], UPD_OPTIONS))
