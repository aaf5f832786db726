"""compact refuses, before writing anything, a type it cannot write as Paimon (Java) does."""

from __future__ import annotations

import os
from pathlib import Path

from pypaimon import Schema
from pypaimon.schema.data_types import DataField as PyDataField
from support import pypaimon_writer as pw
from support.fixtures import Run


def _files(root: Path) -> set[str]:
    out = set()
    for d, dirs, fs in os.walk(root):
        dirs[:] = [x for x in dirs if x != ".paimon-cli"]  # our run records, not the table
        out |= {os.path.join(d, f) for f in fs}
    return out


def test_compact_refuses_orc_binary_naming_column_and_type(tmp_path: Path, run: Run) -> None:
    schema = Schema(
        fields=[
            PyDataField.from_dict({"id": 0, "name": "id", "type": "INT"}),
            PyDataField.from_dict({"id": 1, "name": "payload", "type": "BINARY(4)"}),
        ],
        options={"file.format": "orc", "bucket": "-1"},
    )
    cat = pw.catalog(tmp_path)
    cat.create_database(pw.DB, True)
    cat.create_table(f"{pw.DB}.bin", schema, False)
    table = cat.get_table(f"{pw.DB}.bin")
    for i in range(5):
        pw.append(table, [{"id": i, "payload": bytes([i]) * 4}])
    root = pw.root_of(table)
    before = _files(root)

    result = run("compact", root)
    assert result.exit_code == 1
    assert (
        "payload (BINARY(4)): Paimon writes only BYTES among binary types in orc" in result.stderr
    )
    assert "Traceback" not in result.stderr
    assert _files(root) == before
