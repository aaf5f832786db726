"""compact of ``changelog-producer = full-compaction`` tables written by pypaimon: the COMPACT
snapshot lists changelog files whose records are what a reference written here derives from
the rows before and after (Paimon's FullChangelogMergeFunctionWrapper), pypaimon and Java read
the compacted rows, and snapshot expiry removes (or, decoupled, keeps) those files."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from support import pypaimon_writer as pw
from support.invariants import assert_no_dangling_references
from support.java_paimon import JavaPaimon, assert_java_ok

from core.compaction.compact import CompactFlags, UnsupportedTableError, apply_compact, plan_compact
from core.compaction.compact_changelog import LEVEL, ChangelogSpec, full_changelog
from core.compaction.merge_engines import MergeSpec
from core.format.data_files import SEQUENCE_NUMBER, VALUE_KIND
from core.format.model import DataField
from core.format.types import parse_type
from core.runtime.executors.local import LocalExecutor
from core.table.table import open_table

NOW = 4_000_000_000_000
SCHEMA = pa.schema(
    [
        pa.field("id", pa.int32(), nullable=False),
        ("v", pa.string()),
        ("n", pa.int64()),
        ("rk", pa.string()),
    ]
)
KINDS = {0: "+I", 1: "-U", 2: "+U", 3: "-D"}
VALUES = ("id", "v", "n", "rk")


def _batch(rnd: random.Random) -> list[dict[str, Any]]:
    rows = []
    for key in rnd.sample(range(14), 8):
        kind = "-D" if rnd.random() < 0.25 else "+I"
        v = None if rnd.random() < 0.2 else rnd.choice(["x", "y"])
        rows.append({"id": key, "v": v, "n": rnd.choice([None, 1, 2]), "rk": kind})
    return rows


def _compact(root: Path) -> int:
    t = open_table(str(root))
    cplan = plan_compact(t, CompactFlags(), now_ms=NOW)
    assert cplan.plan.details.changelog_producer in ("full-compaction", "lookup")
    with LocalExecutor(2) as ex:
        result = apply_compact(t, cplan, executor=ex)
    assert result.commit is not None and result.commit.snapshot is not None
    return result.commit.snapshot.id


def _changelog(root: Path, snapshot_id: int) -> list[tuple[Any, ...]]:
    """(bucket, kind, values...) of the snapshot's changelog files, in file order."""
    t = open_table(str(root))
    snap = t.snapshots.snapshot(snapshot_id)
    out = []
    for e in t.changelog_files(snap):
        assert e.file.file_name.startswith("changelog-") and e.file.level == 5
        path = Path(t.paths.bucket_dir(e.partition, e.bucket)) / e.file.file_name
        rows = pq.read_table(path).to_pylist()
        assert e.file.delete_row_count == sum(1 for r in rows if r[VALUE_KIND] in (1, 3))
        out += [(e.bucket, KINDS[r[VALUE_KIND]], *(r[c] for c in VALUES)) for r in rows]
    assert snap.changelog_record_count == len(out)
    return out


def _expected(
    before: dict[int, dict[str, Any]],
    after: dict[int, dict[str, Any]],
    touched: set[int],
    bucket_of: dict[int, int],
    dedup: bool,
) -> list[tuple[Any, ...]]:
    """The full-compaction changelog of keys written since the last compaction."""
    out = []
    for key in sorted(touched, key=lambda k: (bucket_of[k], k)):
        old, new = before.get(key), after.get(key)
        b = bucket_of[key]
        if old is None and new is not None:
            out.append((b, "+I", *(new[c] for c in VALUES)))
        elif old is not None and new is None:
            out.append((b, "-D", *(old[c] for c in VALUES)))
        elif old is not None and new is not None and not (dedup and old == new):
            out.append((b, "-U", *(old[c] for c in VALUES)))
            out.append((b, "+U", *(new[c] for c in VALUES)))
    return sorted(out, key=lambda r: (r[0], r[2]))  # per bucket in key order


@pytest.mark.parametrize("producer", ["full-compaction", "lookup"])
@pytest.mark.parametrize("dedup", [False, True])
def test_changelog_of_two_full_compactions(tmp_path: Path, dedup: bool, producer: str) -> None:
    """Level-0 files and max-level files only: both producers write the same changelog."""
    options = {
        "bucket": "2",
        "rowkind.field": "rk",
        "changelog-producer": producer,
        "changelog-producer.row-deduplicate": str(dedup).lower(),
    }
    table = pw.create_table(tmp_path, "db.t", SCHEMA, primary_keys=["id"], options=options)
    root = pw.table_root(tmp_path, "db.t")
    rnd = random.Random(3)
    state: dict[int, dict[str, Any]] = {}
    before: dict[int, dict[str, Any]] = {}
    for _round in range(2):
        touched: set[int] = set()
        for _ in range(3):
            rows = _batch(rnd)
            pw.append(table, rows)
            for r in rows:
                touched.add(r["id"])
                if r["rk"] == "-D":
                    state.pop(r["id"], None)
                else:
                    state[r["id"]] = r
        sid = _compact(root)
        bucket_of = _buckets(root)
        got = _changelog(root, sid)
        # Keys whose only records were -D have no bucket in the output: none expected.
        known = {k for k in touched if k in bucket_of}
        assert got == _expected(before, state, known, bucket_of, dedup)
        assert any(r[1] == "-U" for r in got) or _round == 0
        assert pw.read_rows(tmp_path, "db.t") == pw.sort_rows(state.values())
        before = dict(state)
    assert_no_dangling_references(root)


def _buckets(root: Path) -> dict[int, int]:
    """Bucket of every key written so far (from the live data and changelog files)."""
    t = open_table(str(root))
    out = {}
    for snap in t.snapshots.snapshots():
        entries = list(t.changelog_files(snap)) if snap.changelog_manifest_list else []
        for e in [*t.live_files(snap), *entries]:
            path = Path(t.paths.bucket_dir(e.partition, e.bucket)) / e.file.file_name
            for r in pq.read_table(path).to_pylist():
                out[r["_KEY_id"]] = e.bucket
    return out


def _spec(
    ignore: str | None = None,
    dedup: bool = True,
    producer: str = "full-compaction",
    **extra: str,
) -> tuple[MergeSpec, ChangelogSpec]:
    fields = [
        DataField(0, "id", parse_type("INT NOT NULL")),
        DataField(1, "v", parse_type("STRING")),
        DataField(2, "t", parse_type("BIGINT")),
    ]
    opts = {
        "changelog-producer": producer,
        "changelog-producer.row-deduplicate": str(dedup).lower(),
        **extra,
    }
    if ignore is not None:
        opts["changelog-producer.row-deduplicate-ignore-fields"] = ignore
    cl = ChangelogSpec.of(opts, 5)
    assert cl is not None
    return MergeSpec.of(fields, ["id"], opts), cl


def _records(rows: list[tuple[int, int, int, int, str, int]]) -> Any:
    """(level, seq, kind, id, v, t) records as read from key-value files."""
    return pa.table(
        {
            "_KEY_id": pa.array([r[3] for r in rows], pa.int32()),
            SEQUENCE_NUMBER: pa.array([r[1] for r in rows], pa.int64()),
            VALUE_KIND: pa.array([r[2] for r in rows], pa.int8()),
            "id": pa.array([r[3] for r in rows], pa.int32()),
            "v": pa.array([r[4] for r in rows], pa.string()),
            "t": pa.array([r[5] for r in rows], pa.int64()),
            LEVEL: pa.array([r[0] for r in rows], pa.int32()),
        }
    )


def _kinds(table: Any) -> list[tuple[int, int, str, int]]:
    return [(r[VALUE_KIND], r["id"], r["v"], r["t"]) for r in table.to_pylist()]


def test_row_deduplicate_ignore_fields() -> None:
    """Key 1 changes only ``t`` (ignored: no changelog), key 2 changes ``v``; key 3 is
    updated to the same values; key 4 sits at the max level only; key 5 is a lone -D."""
    data = _records(
        [
            (5, 1, 0, 1, "a", 10),
            (0, 7, 0, 1, "a", 11),
            (5, 2, 0, 2, "a", 10),
            (0, 8, 0, 2, "b", 10),
            (5, 3, 0, 3, "c", 1),
            (0, 9, 0, 3, "c", 1),
            (5, 4, 0, 4, "d", 1),
            (0, 10, 3, 5, "e", 1),
        ]
    )
    spec, cl = _spec("t")
    out = full_changelog(data, ["_KEY_id"], spec, cl)[0]
    assert _kinds(out) == [(1, 2, "a", 10), (2, 2, "b", 10)]
    assert out.column(SEQUENCE_NUMBER).to_pylist() == [2, 8]
    spec, cl = _spec(None)
    assert [k for k, *_ in _kinds(full_changelog(data, ["_KEY_id"], spec, cl)[0])] == [1, 2, 1, 2]
    spec, cl = _spec(None, dedup=False)
    assert [k for k, *_ in _kinds(full_changelog(data, ["_KEY_id"], spec, cl)[0])] == [1, 2] * 3


def test_deleted_and_new_keys() -> None:
    """A max-level key deleted: -D of the max-level record; a new key with a -D last: nothing;
    a new key from several records: +I of the last."""
    data = _records(
        [
            (5, 1, 0, 1, "a", 1),
            (0, 5, 3, 1, "a", 1),
            (0, 6, 0, 2, "b", 1),
            (0, 7, 3, 2, "b", 1),
            (2, 3, 0, 3, "c", 1),
            (0, 8, 0, 3, "c2", 2),
        ]
    )
    spec, cl = _spec(None, dedup=False)
    out = full_changelog(data, ["_KEY_id"], spec, cl)[0]
    assert _kinds(out) == [(3, 1, "a", 1), (0, 3, "c2", 2)]
    assert out.column(SEQUENCE_NUMBER).to_pylist() == [1, 8]


def test_lookup_merges_level_zero_with_the_newest_high_level_record() -> None:
    """Key 1: records at levels 5, 2 and 0 (level 2 already holds the merge of level 5, as
    lookup compaction leaves it): sum over level 2 and level 0 only, -U of the level-2 record.
    Key 2: levels 3 and 5 without level 0: no changelog, the level-3 record is the result.
    Key 3: one level-0 record: +I. Key 4 only at level 1: nothing; full-compaction would
    write +I for it."""
    data = _records(
        [
            (5, 1, 0, 1, "a", 10),
            (2, 4, 0, 1, "a", 15),
            (0, 9, 0, 1, "b", 1),
            (5, 2, 0, 2, "c", 3),
            (3, 5, 0, 2, "c", 7),
            (0, 10, 0, 3, "d", 2),
            (1, 6, 0, 4, "e", 4),
        ]
    )
    agg = {"merge-engine": "aggregation", "fields.t.aggregate-function": "sum"}
    spec, cl = _spec(None, dedup=False, producer="lookup", **agg)
    out, merged = full_changelog(data, ["_KEY_id"], spec, cl)
    assert _kinds(out) == [(1, 1, "a", 15), (2, 1, "b", 16), (0, 3, "d", 2)]
    assert out.column(SEQUENCE_NUMBER).to_pylist() == [4, 9, 10]
    assert merged.column("t").to_pylist() == [15, 1, 7, 2, 4]  # superseded levels left out
    spec, cl = _spec(None, dedup=False, producer="full-compaction")
    assert [r[1] for r in _kinds(full_changelog(data, ["_KEY_id"], spec, cl)[0])] == [
        1,
        1,
        2,
        2,
        3,
        4,
    ]


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (
            {"changelog-producer": "full-compaction", "merge-engine": "first-row"},
            "first-row",
        ),
        (
            {"changelog-producer": "full-compaction", "deletion-vectors.enabled": "true"},
            "full-compaction with deletion-vectors.enabled",
        ),
    ],
)
def test_refusals(tmp_path: Path, options: dict[str, str], message: str) -> None:
    pw.create_table(tmp_path, "db.t", SCHEMA, primary_keys=["id"], options={"bucket": "1"})
    root = pw.table_root(tmp_path, "db.t")
    schema_file = root / "schema" / "schema-0"
    doc = json.loads(schema_file.read_text())
    doc["options"].update(options)
    schema_file.write_text(json.dumps(doc))
    with pytest.raises(UnsupportedTableError, match=message):
        plan_compact(open_table(str(root)), CompactFlags(), now_ms=NOW)


@pytest.mark.java
def test_expiry_removes_or_keeps_compaction_changelog(
    tmp_path: Path, java: JavaPaimon, run: Any
) -> None:
    """Coupled: expiring the COMPACT snapshot deletes its changelog files and lists.
    Decoupled (changelog.num-retained.max above the snapshot retention): they stay with the
    long-lived changelog until expire-changelogs removes it."""
    options = {"bucket": "1", "rowkind.field": "rk", "changelog-producer": "full-compaction"}
    table = pw.create_table(tmp_path, "db.t", SCHEMA, primary_keys=["id"], options=options)
    root = pw.table_root(tmp_path, "db.t")
    rnd = random.Random(5)
    compactions = []
    for _ in range(3):
        pw.append(table, _batch(rnd))
        pw.append(table, _batch(rnd))
        compactions.append(_compact(root))
    t = open_table(str(root))
    changelog_paths = {
        sid: [
            Path(t.paths.bucket_dir(e.partition, e.bucket)) / e.file.file_name
            for e in t.changelog_files(t.snapshots.snapshot(sid))
        ]
        for sid in compactions
    }
    assert all(p.is_file() for ps in changelog_paths.values() for p in ps)
    assert_java_ok(java.verify(root))
    rows = pw.read_rows(tmp_path, "db.t")
    assert run("inspect", root, "--check").exit_code == 0

    decoupled = (
        "snapshot.num-retained.max=2,snapshot.num-retained.min=1,"
        "changelog.num-retained.max=20,changelog.num-retained.min=1"
    )
    doc = run.json("expire-snapshots", root, "--options", decoupled)
    assert doc["plan"]["details"]["config"]["changelog_decoupled"] is True
    t = open_table(str(root))
    assert t.changelogs.ids(), "the expired COMPACT snapshots became long-lived changelogs"
    assert all(p.is_file() for ps in changelog_paths.values() for p in ps)
    assert run("inspect", root, "--check").exit_code == 0

    run.json("expire-changelogs", root, "--delete-all")
    assert open_table(str(root)).changelogs.ids() == []
    kept = {s.id for s in open_table(str(root)).snapshots.snapshots()}
    for sid, paths in changelog_paths.items():
        assert all(p.is_file() == (sid in kept) for p in paths), sid
    assert run("inspect", root, "--check").exit_code == 0

    run.json("expire-snapshots", root, "--retain-max", "1", "--retain-min", "1")
    kept = {s.id for s in open_table(str(root)).snapshots.snapshots()}
    for sid, paths in changelog_paths.items():
        assert all(p.is_file() == (sid in kept) for p in paths), sid
    assert pw.read_rows(tmp_path, "db.t") == rows
    assert_java_ok(java.verify(root))
    assert_no_dangling_references(root)
