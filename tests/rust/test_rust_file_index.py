"""`compact` on tables with bloom-filter file indexes, written by pypaimon-rust: the files it
writes carry the index Paimon writes (embedded in the manifest up to
``file-index.in-manifest-threshold``, else an ``.index`` file beside them), byte for byte
what pypaimon-rust itself writes for the same rows, and pypaimon-rust, which skips files by
that index, still finds every row by a point query."""

from __future__ import annotations

import datetime as dt
import struct
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from support import reference_check
from support import rust_writer as rw
from support.fixtures import Run
from support.invariants import assert_rust_reads_intact

from core.compaction.file_index import FileIndexSpec
from core.format.arrow_types import arrow_type
from core.format.data_files import read_raw
from core.table.table import PaimonTable, open_table

COLUMNS = "id INT, big BIGINT, v STRING, d DOUBLE, day DATE, b BYTES"
INDEXED = "id,big,v,d,day,b"
#: 50 expected items per column: small filters, embedded in the manifest (<= 500 bytes)
SMALL = {f"file-index.bloom-filter.{c}.items": "50" for c in INDEXED.split(",")}
#: bitmap indexes beside the bloom filters (every indexed type but BYTES, which Paimon's
#: bitmap index refuses)
BITMAP = {"file-index.bitmap.columns": "id,big,v,d,day"}


def _rows(commit: int) -> list[tuple[object, ...]]:
    return [
        (
            commit * 10 + i,
            -(10**12) * i + commit,
            f"value-{commit}-{i}" * (1 + i % 3),
            i / 3 - commit,
            dt.date(2020, 1, 1) + dt.timedelta(days=commit * 40 - i),
            bytes([commit, i, 255]) if i % 4 else None,
        )
        for i in range(5)
    ]


def _table(tmp_path: Path, name: str, options: dict[str, str], pk: bool = False) -> rw.RustTable:
    wh = rw.RustWarehouse(tmp_path / "wh")
    columns = COLUMNS + (", PRIMARY KEY (id)" if pk else "")
    options = {"file-index.bloom-filter.columns": INDEXED, **options}
    with_ = ", ".join(f"'{k}' = '{v}'" for k, v in options.items())
    wh.sql(f"CREATE TABLE {wh.qualified(name)} ({columns}) WITH ({with_})")
    for commit in range(5):
        wh.sql(f"INSERT INTO {wh.qualified(name)} VALUES {rw.values(_rows(commit))}")
    wh.call("create_tag", name, tag="t2", snapshot_id=2)
    return rw.record(wh, name, f"bloom filter {options}")


def _spec(t: PaimonTable) -> FileIndexSpec:
    spec = FileIndexSpec.of({**t.options.table, **t.options.dynamic}, t.schema.fields)
    assert spec is not None
    return spec


def _index_of(t: PaimonTable, entry: Any) -> bytes:
    """The index Paimon reads for a data file: embedded, or its ``.index`` extra file."""
    if entry.file.embedded_index is not None:
        assert not entry.file.extra_files
        return bytes(entry.file.embedded_index)
    (extra,) = entry.file.extra_files
    assert extra == entry.file.file_name + ".index"
    with open(t.paths.extra_file_paths(entry.partition, entry.bucket, entry.file)[0], "rb") as fh:
        return fh.read()


def _bodies(container: bytes) -> dict[tuple[str, str], bytes]:
    """(column, index type) -> index bytes of a container (FileIndexFormat version 1)."""
    magic, version, _head, columns = struct.unpack_from(">qiii", container, 0)
    assert (magic, version) == (1493475289347502, 1)
    pos, out = 20, {}
    for _ in range(columns):
        (n,) = struct.unpack_from(">H", container, pos)
        column = container[pos + 2 : pos + 2 + n].decode()
        pos += 2 + n
        (types,) = struct.unpack_from(">i", container, pos)
        pos += 4
        for _ in range(types):
            (n,) = struct.unpack_from(">H", container, pos)
            index_type = container[pos + 2 : pos + 2 + n].decode()
            start, length = struct.unpack_from(">ii", container, pos + 2 + n)
            pos += 2 + n + 8
            out[(column, index_type)] = container[start : start + length]
    return out


def _assert_indexes_match_rows(t: PaimonTable, snapshot_id: int, *, exact: bool) -> int:
    """Every live data file's index is the container of its own rows; the file count.
    pypaimon-rust lists the columns in name order, Paimon (Java) in HashMap order: for its
    files (``exact=False``) the bodies are compared, for ours the bytes."""
    spec = _spec(t)
    schema = pa.schema([pa.field(f.name, arrow_type(f.type)) for f in t.schema.fields])
    files = t.live_files(t.snapshots.snapshot(snapshot_id))
    for entry in files:
        data = read_raw(t.paths.data_file_path(entry), entry.file.file_name, schema)
        ours, theirs = spec.container(data), _index_of(t, entry)
        if exact:
            assert ours == theirs, entry.file.file_name
        else:
            assert _bodies(ours) == _bodies(theirs), entry.file.file_name
            assert len(ours) == len(theirs)
    return len(files)


@pytest.mark.parametrize(
    ("name", "options", "pk", "embedded"),
    [
        ("bloom_append", {}, False, False),
        ("bloom_small", SMALL, False, True),
        ("bloom_pk", {"bucket": "1"}, True, False),
        ("bitmap", BITMAP, False, False),
        (
            "bitmap_pk_embedded",
            {"bucket": "1", "file-index.in-manifest-threshold": "8 kb", **BITMAP, **SMALL},
            True,
            True,
        ),
    ],
)
def test_compaction_writes_the_index_paimon_writes(
    run: Run, tmp_path: Path, name: str, options: dict[str, str], pk: bool, embedded: bool
) -> None:
    table = _table(tmp_path, name, options, pk)
    wh = rw.RustWarehouse(tmp_path / "wh")
    root = table.root
    t = open_table(str(root))
    # Our container of pypaimon-rust's own files is what it wrote for them.
    assert _assert_indexes_match_rows(t, 1, exact=False) == 1
    result = run("compact", root)
    assert result.exit_code == 0, result.stdout + result.stderr
    t = open_table(str(root))
    latest = t.snapshots.latest()
    assert latest is not None and latest.commit_kind == "COMPACT"
    new = [e for e in t.live_files(latest) if e.file.file_source == 1]
    assert new
    for entry in new:
        assert (entry.file.embedded_index is not None) is embedded
    _assert_indexes_match_rows(t, latest.id, exact=True)
    expected = table.expected_after_compaction
    assert wh.read(name) == expected
    for row in expected:  # pypaimon-rust skips files by the bloom filter
        for column in ("id", "v"):
            got = wh.sql(
                f"SELECT id FROM {wh.qualified(name)} WHERE {column} = {rw._sql(row[column])}"
            )
            assert got == [{"id": row["id"]}], (column, row)
    assert wh.sql(f"SELECT id FROM {wh.qualified(name)} WHERE v = 'absent'") == []
    assert_rust_reads_intact(wh, table)
    assert reference_check.missing_references(root) == []
    expired = run("expire-snapshots", root, "--retain-min", "1", "--retain-max", "1")
    assert expired.exit_code == 0, expired.stderr
    assert wh.read(name) == expected
    assert reference_check.missing_references(root) == []
