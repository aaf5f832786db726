"""File indexes as Paimon writes them: the container (bloom filters, bitmaps) computed from
a data file's rows is byte for byte the one Paimon (Java) wrote for it, and what is not
reproduced is refused by name."""

from __future__ import annotations

import pyarrow as pa
import pytest
from support.fixtures import JAVA_FIXTURES

from core.compaction.compact import UnsupportedTableError, plan_compact
from core.compaction.config import CompactFlags
from core.compaction.file_index import FileIndexSpec, long_hash, xxh64
from core.format.arrow_types import arrow_type
from core.format.data_files import read_raw
from core.format.model import DataField
from core.format.types import parse_type
from core.table.table import open_table


def test_xxh64_reference_values() -> None:
    """XXH64 with seed 0 (the reference implementation's published values), as Java longs."""
    assert xxh64(b"") == 0xEF46DB3751D8E999 - (1 << 64)
    assert xxh64(b"a") == 0xD24EC4F1A98C6E5B - (1 << 64)
    assert xxh64(b"abc") == 0x44BC2CF5AD770999
    text = b"Nobody inspects the spammish repetition"
    assert xxh64(text) == 0xFBCEA83C8A378BF1 - (1 << 64)


def test_long_hash_is_java_long_arithmetic() -> None:
    assert long_hash(0) == long_hash(0)  # deterministic
    for v in (0, 1, -1, 2**31 - 1, -(2**31), 2**63 - 1, -(2**63)):
        assert -(2**63) <= long_hash(v) < 2**63


@pytest.mark.parametrize(
    ("name", "extra"),
    [
        # bloom filters on STRING, INT, INT, DOUBLE, TIMESTAMP(9), nulls, negative times
        ("append_with_bloomfilter", {}),
        # bitmaps (version 2) on STRING, INT, INT: embedded, in a file, on key-value files
        ("append_with_bitmap", {}),
        ("append_with_bitmap_no_embedding", {}),
        ("pk_with_bitmap_dv", {}),
        # version 1, asked per column (master reads no table-wide version option)
        ("append_with_bitmap_v1", {f"file-index.bitmap.f{i}.version": "1" for i in range(3)}),
    ],
)
def test_container_is_javas(name: str, extra: dict[str, str]) -> None:
    """Our container of a Java-written file's rows equals the index Paimon wrote for it
    (embedded in the manifest or the .index file beside it), byte for byte."""
    root = JAVA_FIXTURES / "orc" / f"{name}.db" / name
    t = open_table(str(root))
    latest = t.snapshots.latest()
    assert latest is not None
    spec = FileIndexSpec.of({**t.options.table, **t.options.dynamic, **extra}, t.schema.fields)
    assert spec is not None and spec.refusals() == []
    schema = pa.schema([pa.field(f.name, arrow_type(f.type)) for f in t.schema.fields])
    files = t.live_files(latest)
    assert files
    for entry in files:
        path = t.paths.data_file_path(entry)
        data = read_raw(path, entry.file.file_name, schema)
        if entry.file.embedded_index is not None:
            theirs = bytes(entry.file.embedded_index)
        else:
            assert entry.file.extra_files == (entry.file.file_name + ".index",)
            with open(path + ".index", "rb") as fh:
                theirs = fh.read()
        assert spec.container(data) == theirs


def _spec(options: dict[str, str], *fields: tuple[str, str]) -> FileIndexSpec:
    spec = FileIndexSpec.of(
        options, [DataField(i, n, parse_type(t)) for i, (n, t) in enumerate(fields)]
    )
    assert spec is not None
    return spec


def test_options_and_refusals() -> None:
    spec = _spec(
        {
            "file-index.bloom-filter.columns": "a, b",
            "file-index.bloom-filter.a.items": "100",
            "file-index.bloom-filter.a.fpp": "0.01",
            "file-index.in-manifest-threshold": "1 kb",
            "file-index.read.enabled": "true",
        },
        ("a", "INT"),
        ("b", "STRING"),
    )
    assert [(i.column, i.index_type, i.options) for i in spec.indexes] == [
        ("a", "bloom-filter", (("fpp", "0.01"), ("items", "100"))),
        ("b", "bloom-filter", ()),
    ]
    assert spec.in_manifest_threshold == 1024
    assert spec.refusals() == []
    assert FileIndexSpec.of({"file-index.read.enabled": "true"}, []) is None
    refused = _spec(
        {
            "file-index.bsi.columns": "a",
            "file-index.bitmap.columns": "x",
            "file-index.bloom-filter.columns": "c,m[k],missing",
        },
        ("a", "INT"),
        ("c", "BOOLEAN"),
        ("m", "STRING"),
        ("x", "BYTES"),
    ).refusals()
    assert any("the bsi index" in r for r in refused)
    assert any("BOOLEAN" in r for r in refused)
    assert any("bitmap.columns on x of type BYTES" in r for r in refused)
    assert any("m[k]" in r for r in refused)  # a map key: not a column
    assert any("missing" in r for r in refused)


def test_a_bsi_table_is_refused_before_anything_is_read() -> None:
    root = JAVA_FIXTURES / "orc" / "append_with_bsi.db" / "append_with_bsi"
    with pytest.raises(UnsupportedTableError, match="file-index.bsi.columns"):
        plan_compact(open_table(str(root)), CompactFlags(), now_ms=0)
