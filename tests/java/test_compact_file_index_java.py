"""Bloom-filter file indexes against Apache Paimon (Java 0.9): for the append files Paimon
writes, our container of their rows is its index byte for byte (columns in Java's HashMap
order, two of them sharing a bucket); after `paimon compact`, Paimon reads every snapshot
and tag of the table as before, and the new files carry their index (primary-key files
too, as Paimon master writes them; 0.9 writes none there and reads ours)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from support.fixtures import Run
from support.java_paimon import JavaPaimon, assert_same_rows
from support.java_writer import JavaWriter

from core.compaction.file_index import FileIndexSpec
from core.format.arrow_types import arrow_type
from core.format.data_files import read_raw
from core.table.table import PaimonTable, open_table

pytestmark = pytest.mark.java

# "b" and "big" share a bucket of Java's HashMap: their order is the insertion order.
FIELDS = [
    {"name": "id", "type": "INT NOT NULL"},
    {"name": "big", "type": "BIGINT"},
    {"name": "b", "type": "STRING"},
    {"name": "d", "type": "DOUBLE"},
    {"name": "ts", "type": "TIMESTAMP(3)"},
]


#: 1,000 expected items per column: about 600 bytes each, embedded under a 10 kb threshold
SMALL = {f"file-index.bloom-filter.{f['name']}.items": "1000" for f in FIELDS}


def _script(options: dict[str, str], primary_keys: list[str]) -> dict[str, Any]:
    steps: list[dict[str, Any]] = []
    for commit in range(6):
        rows = [
            ["+I", commit * 10 + i, -(10**11) * i, f"s{commit}-{i}", i / 7, 1_700_000_000_000 + i]
            for i in range(4)
        ]
        rows.append(["+I", 100 + commit, None, None, None, None])
        steps.append({"op": "write", "rows": rows})
        if commit == 1:
            steps.append({"op": "tag", "name": "t1"})
    return {
        "table": "t",
        "schema": {
            "fields": FIELDS,
            "primaryKeys": primary_keys,
            "options": {"file-index.bloom-filter.columns": "id,big,b,d,ts", **options},
        },
        "steps": steps,
    }


def _containers_equal(t: PaimonTable) -> int:
    spec = FileIndexSpec.of({**t.options.table, **t.options.dynamic}, t.schema.fields)
    assert spec is not None
    schema = pa.schema([pa.field(f.name, arrow_type(f.type)) for f in t.schema.fields])
    latest = t.snapshots.latest()
    assert latest is not None
    checked = 0
    for entry in t.live_files(latest):
        data = read_raw(t.paths.data_file_path(entry), entry.file.file_name, schema)
        if entry.file.embedded_index is not None:
            theirs = bytes(entry.file.embedded_index)
        else:
            (path,) = t.paths.extra_file_paths(entry.partition, entry.bucket, entry.file)
            with open(path, "rb") as fh:
                theirs = fh.read()
        assert spec.container(data) == theirs, entry.file.file_name
        checked += 1
    return checked


@pytest.mark.parametrize(
    ("options", "primary_keys"),
    [
        ({"bucket": "-1"}, []),
        ({"bucket": "1", "file-index.in-manifest-threshold": "10 kb", **SMALL}, ["id"]),
    ],
)
def test_java_reads_our_compaction_of_bloom_filter_tables(
    tmp_path: Path,
    java_writer: JavaWriter,
    java: JavaPaimon,
    run: Run,
    options: dict[str, str],
    primary_keys: list[str],
) -> None:
    root = java_writer.run(tmp_path / "wh", _script(options, primary_keys))
    written = open_table(str(root))
    if primary_keys:
        # Paimon 0.9 writes no index into key-value files; master does (D1: we follow it).
        snapshot = written.snapshots.latest()
        assert snapshot is not None
        for entry in written.live_files(snapshot):
            assert entry.file.embedded_index is None and not entry.file.extra_files
    else:
        assert _containers_equal(written) == 6  # Java's own files
    before = java.verify(root)
    result = run("compact", root)
    assert result.exit_code == 0, result.stdout + result.stderr
    after = java.verify(root)
    assert after["latest_snapshot_id"] == before["latest_snapshot_id"] + 1
    assert_same_rows(before, after, keys=[k for k in before["entries"] if k != "latest"])
    assert after["entries"]["latest"] == before["entries"]["latest"]
    t = open_table(str(root))
    latest = t.snapshots.latest()
    assert latest is not None and latest.commit_kind == "COMPACT"
    embedded = "file-index.in-manifest-threshold" in options
    for entry in t.live_files(latest):
        assert (entry.file.embedded_index is not None) is embedded
        assert bool(entry.file.extra_files) is not embedded
    assert _containers_equal(t) >= 1
