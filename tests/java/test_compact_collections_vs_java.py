"""Collection aggregates (collect, merge_map, nested_update) against Apache Paimon's own
full compaction: one copy of a Java-written table is compacted by Paimon (Java 0.9), the
other by `paimon compact`; both hold the same rows, arrays in the same order (Java's
HashSet/HashMap iteration order for distinct collect and keyed nested_update).

The records avoid what Paimon 0.9 does differently from current Paimon (D1): retractions
carry non-null collections (0.9 fails on a null one), nested_update arrays hold no null
rows, and keyed nested_update arrays hold one row (0.9 keeps a key's first array as
written, later Paimon re-keys it)."""

from __future__ import annotations

import random
import shutil
from pathlib import Path
from typing import Any

import pytest
from support.aggregate_references import COLLECTION_AGGS, WORDS
from support.fixtures import Run
from support.java_paimon import JavaPaimon, assert_java_ok
from support.java_writer import JavaWriter

pytestmark = pytest.mark.java

KV = {
    "type": "ROW",
    "fields": [{"id": 20, "name": "k", "type": "INT"}, {"id": 21, "name": "v", "type": "STRING"}],
}
NAMED = {
    "type": "ROW",
    "fields": [
        {"id": 22, "name": "name", "type": "STRING"},
        {"id": 23, "name": "n", "type": "BIGINT"},
    ],
}
FIELDS = [
    {"name": "id", "type": "INT NOT NULL"},
    {"name": "ci", "type": {"type": "ARRAY", "element": "BIGINT"}},
    {"name": "cd", "type": {"type": "ARRAY", "element": "STRING"}},
    {"name": "cr", "type": {"type": "ARRAY", "element": KV}},
    {"name": "m", "type": {"type": "MAP", "key": "STRING NOT NULL", "value": "INT"}},
    {"name": "mi", "type": {"type": "MAP", "key": "INT NOT NULL", "value": "DOUBLE"}},
    {"name": "nk", "type": {"type": "ARRAY", "element": KV}},
    {"name": "ns", "type": {"type": "ARRAY", "element": NAMED}},
    {"name": "nn", "type": {"type": "ARRAY", "element": KV}},
]


def _commits(seed: int, kinds: tuple[str, ...], commits: int = 6) -> list[list[list[Any]]]:
    rnd = random.Random(seed)
    out = []
    for _ in range(commits):
        rows = []
        for key in rnd.sample(range(10), 6):
            kind = rnd.choice(kinds)
            retract = kind in ("-U", "-D")

            def maybe(v: Any, retract: bool = retract) -> Any:
                return v if retract or rnd.random() < 0.75 else None

            def kv() -> list[Any]:
                return [rnd.randint(0, 9), rnd.choice(WORDS)]

            ints = [rnd.choice([None, *range(-3, 60)]) for _ in range(rnd.randint(0, 6))]
            rows.append(
                [
                    kind,
                    key,
                    maybe(ints),
                    maybe(rnd.sample(WORDS, rnd.randint(0, 4)) * rnd.randint(1, 2)),
                    maybe([kv() for _ in range(rnd.randint(0, 3))]),
                    maybe([[w, rnd.randint(0, 9)] for w in rnd.sample(WORDS, 3)]),
                    maybe([[i, rnd.random()] for i in rnd.sample(range(-40, 40), 3)]),
                    maybe([kv()]),
                    maybe([[rnd.choice(WORDS), rnd.randint(0, 5)]]),
                    maybe([kv() for _ in range(rnd.randint(0, 2))]),
                ]
            )
        out.append(rows)
    return out


CASES = {"upserts": ("+I", "+U"), "retractions": ("+I", "+I", "+U", "-U", "-D")}


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("seed", [5, 17])
def test_collection_aggregates_equal_paimons_own_compaction(
    tmp_path: Path, java_writer: JavaWriter, java: JavaPaimon, run: Run, case: str, seed: int
) -> None:
    steps: list[dict[str, Any]] = [
        {"op": "write", "rows": rows} for rows in _commits(seed, CASES[case])
    ]
    script = {
        "table": "t",
        "schema": {
            "fields": FIELDS,
            "primaryKeys": ["id"],
            "options": {"bucket": "2", "write-only": "true", **COLLECTION_AGGS},
        },
        "steps": steps,
    }
    ours = java_writer.run(tmp_path / "ours", script)
    shutil.copytree(ours.parents[1], tmp_path / "theirs")
    theirs = java_writer.run(tmp_path / "theirs", {"table": "t", "steps": [{"op": "compact"}]})
    result = run("compact", ours)
    assert result.exit_code == 0, result.stdout + result.stderr
    ours_rows = java_writer.rows(ours, kinds=False)
    assert ours_rows, "the case should leave rows"
    assert ours_rows == java_writer.rows(theirs, kinds=False)
    assert_java_ok(java.verify(ours))
    check = run("inspect", ours, "--check")
    assert check.exit_code == 0, check.stdout + check.stderr
