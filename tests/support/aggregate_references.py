"""Reference merges for aggregate functions, written from Paimon's documented behaviour and
independent of ``core``: the property tests and the table tests compare compaction with them."""

from __future__ import annotations

from typing import Any

# The collection aggregates both table tests use (pypaimon- and Java-written), over the
# columns ci/cd/cr (collect, distinct), m/mi (merge_map), nk/ns/nn (nested_update).
COLLECTION_AGGS = {
    "merge-engine": "aggregation",
    "fields.ci.aggregate-function": "collect",
    "fields.cd.aggregate-function": "collect",
    "fields.cd.distinct": "true",
    "fields.cr.aggregate-function": "collect",
    "fields.cr.distinct": "true",
    "fields.m.aggregate-function": "merge_map",
    "fields.mi.aggregate-function": "merge_map",
    "fields.nk.aggregate-function": "nested_update",
    "fields.nk.nested-key": "k",
    "fields.ns.aggregate-function": "nested_update",
    "fields.ns.nested-key": "name",
    "fields.nn.aggregate-function": "nested_update",
}
# Strings of several lengths and a non-ASCII one: their Java hash codes spread over buckets.
WORDS = ["x", "y", "zz", "é", "a longer word", "another longer one", "k1", "k2", "k3", "bb"]


def ref_updates(recs: list[tuple[int, list[Any]]]) -> dict[int, list[Any]]:
    """p: rows merged per ``i``, non-null values of later rows winning; t: per map key the
    entry with the latest ``ts`` (a null entry removes the key, a null ts is ignored)."""
    out: dict[int, list[Any]] = {}
    by_key: dict[int, list[list[Any]]] = {}
    for key, v in recs:
        by_key.setdefault(key, []).append(v)
    for key, values in by_key.items():
        if len(values) == 1:
            p0, t0 = values[0]
            out[key] = [p0, dict(t0) if t0 is not None else None]
            continue
        p: dict[Any, dict[str, Any]] | None = None
        t: dict[int, Any] | None = None
        for vp, vt in values:
            if vp is not None:
                p = {} if p is None else p
                for row in vp:
                    if row is not None:
                        merged = p.setdefault(row["i"], {"i": None, "v": None, "w": None})
                        merged.update({n: x for n, x in row.items() if x is not None})
            if vt is not None:
                if t is None:
                    t = dict(vt)
                    continue
                for mk, entry in vt:
                    if entry is None:
                        t.pop(mk, None)
                    elif entry["ts"] is not None:
                        old = t.get(mk)
                        if old is None or old["ts"] is None or entry["ts"] > old["ts"]:
                            t[mk] = entry
        out[key] = [p, t]
    return out
