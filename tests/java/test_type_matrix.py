"""Compaction writes every Paimon type as Java does: Apache Paimon (Java) reads the result.

For parquet, orc and avro, an append and a primary-key table with one column of every type
Paimon writes in that format (tests/support/type_matrix.py) take several small commits through
pypaimon's writer; their data files are encoded by our own writer (core.format.physical), because
pypaimon's own encodings (decimals as FIXED_LEN_BYTE_ARRAY, nanosecond INT64 timestamps,
...) are not Java's. Java reads the table (the "before"), ``paimon compact`` rewrites it, and
Java reads the latest snapshot with the same rows and checksum.

MULTISET is left out here: pypaimon cannot write it (tests/java/test_java_verify.py compacts
a MULTISET column the Java writer wrote; tests/core/test_physical.py checks its layout).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from pypaimon import Schema
from pypaimon.filesystem.local_file_io import LocalFileIO
from pypaimon.schema.data_types import DataField as PyDataField
from support import pypaimon_writer as pw
from support import type_matrix as tm
from support.fixtures import Run
from support.java_paimon import JavaPaimon, assert_java_ok, assert_same_rows

from core.format import physical
from core.format.data_files import FileLayout, conform
from core.format.model import DataField
from core.table.table import open_table

pytestmark = pytest.mark.java

COMMITS = 5  # compaction.min.file-num: an append bin needs 5 files
ROWS = 5


class _OurEncoder:
    """Replaces pypaimon's data file encoders with core.format.physical for one table's layout."""

    def __init__(self, fields: list[DataField], pk: bool) -> None:
        self.layout = FileLayout.of(fields, ["id"] if pk else [])

    def write(self, fmt: str, path: str, data: pa.Table, compression: str) -> None:
        columns = [c for c in self.layout.columns() if c.name in data.column_names]
        schema = pa.schema([f for f in self.layout.arrow_schema() if f.name in data.column_names])
        payload = physical.encode(conform(data, schema), columns, fmt, compression, 1)
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        Path(path).write_bytes(payload)


@pytest.fixture
def our_encoder(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[_OurEncoder]]:
    holder: list[_OurEncoder] = []

    def patch(fmt: str) -> None:
        def write(self: Any, path: str, data: pa.Table, *args: Any, **kwargs: Any) -> None:
            compression = kwargs.get("compression") or "zstd"
            holder[0].write(fmt, path, data, str(compression))

        monkeypatch.setattr(LocalFileIO, f"write_{fmt}", write)

    for fmt in ("parquet", "orc", "avro"):
        patch(fmt)
    yield holder


def _create(warehouse: Path, name: str, fields: list[DataField], fmt: str, pk: bool) -> Any:
    raw = dict(tm.COLUMNS)
    schema = Schema(
        fields=[
            PyDataField.from_dict({"id": f.id, "name": f.name, "type": raw[f.name]}) for f in fields
        ],
        primary_keys=["id"] if pk else [],
        options={"file.format": fmt, "bucket": "1" if pk else "-1"},
    )
    cat = pw.catalog(warehouse)
    cat.create_database(pw.DB, True)
    cat.create_table(f"{pw.DB}.{name}", schema, False)
    return cat.get_table(f"{pw.DB}.{name}")


@pytest.mark.parametrize("fmt", ["parquet", "orc", "avro"])
@pytest.mark.parametrize("pk", [False, True], ids=["append", "pk"])
def test_compaction_output_reads_in_java(
    java: JavaPaimon,
    tmp_path: Path,
    run: Run,
    our_encoder: list[_OurEncoder],
    fmt: str,
    pk: bool,
) -> None:
    fields = tm.fields(fmt, multiset=False)
    our_encoder.append(_OurEncoder(fields, pk))
    table = _create(tmp_path, f"types_{fmt}", fields, fmt, pk)
    for n in range(COMMITS):
        # PK commits overlap on ids, so the merge decides which version survives.
        start = n * (ROWS - 3) if pk else n * ROWS
        pw.append(table, tm.arrow_table(fields, start, ROWS))
    root = pw.root_of(table)
    before = java.verify(root)
    assert_java_ok(before)
    assert before["entries"]["latest"]["rows"] == (
        COMMITS * (ROWS - 3) + 3 if pk else COMMITS * ROWS
    )

    result = run("compact", root, "--json")
    assert result.exit_code == 0, result.stderr
    after = java.verify(root)
    assert after["latest_snapshot_id"] == before["latest_snapshot_id"] + 1
    assert_same_rows(before, after, keys=["latest"])
    assert after["entries"]["latest"]["checksum"] == before["entries"]["latest"]["checksum"]
    ours = open_table(str(root))
    latest = ours.snapshots.snapshot(after["latest_snapshot_id"])
    assert all(e.file.file_name.endswith(f".{fmt}") for e in ours.live_files(latest))
    assert len(list(ours.live_files(latest))) == 1  # the compaction output is what Java read
