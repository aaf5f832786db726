"""The bucket function postpone compaction routes records with is Paimon's: every record of
a fixed-bucket table Paimon (Java 0.9) wrote sits in the bucket it computes, and the bucket
number comes from the partition's real buckets, then the options, as PostponeUtils decides."""

from __future__ import annotations

import pyarrow as pa
import pytest
from support.fixtures import JAVA_BUILT

from core.compaction.postpone import PostponeSpec, bucket_key
from core.format.data_files import read_raw
from core.format.types import parse_type
from core.table.table import open_table


def test_buckets_of_matches_what_java_wrote() -> None:
    root = JAVA_BUILT / "pk_deletion_vectors" / "table"
    if not root.is_dir():
        pytest.fail(f"{root} is missing")
    t = open_table(str(root))
    latest = t.snapshots.latest()
    assert latest is not None
    keys = bucket_key(t)
    assert keys == ("id",)  # the trimmed primary key (dt is the partition)
    spec = PostponeSpec(keys, (t.schema.field("id").type,), None, None, 1 << 30)
    checked = 0
    for entry in t.live_files(latest):
        assert entry.total_buckets == 2
        path = t.paths.data_file_path(entry)
        ids = read_raw(path, entry.file.file_name, pa.schema([pa.field("id", pa.int32())]))
        assert set(spec.buckets_of(ids, entry.total_buckets)) <= {entry.bucket}
        checked += ids.num_rows
    assert checked > 10


@pytest.mark.parametrize(
    ("known", "default", "target_rows", "rows", "size", "expected"),
    [
        (4, 7, None, 100, 10, (4, "existing buckets")),
        (None, 7, 3, 100, 10, (7, "postpone.default-bucket-num")),
        (None, None, 30, 100, 10, (4, "postpone.target-row-num-per-bucket")),
        (None, None, 30, 0, 10, (1, "postpone.target-row-num-per-bucket")),
        (None, None, None, 100, 2500, (3, "postpone.target-size-per-bucket")),
        (None, None, None, 100, 1000, (1, "postpone.target-size-per-bucket")),
    ],
)
def test_bucket_number(
    known: int | None,
    default: int | None,
    target_rows: int | None,
    rows: int,
    size: int,
    expected: tuple[int, str],
) -> None:
    spec = PostponeSpec(("k",), (parse_type("INT"),), default, target_rows, 1000)
    assert spec.bucket_number(known, rows, size) == expected
