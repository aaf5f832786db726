"""Postpone-bucket tables (``bucket = -2``), as Paimon master compacts them.

Writers put every record of a postpone table into the partition's ``bucket-postpone``
directory, unsorted and in arrival order; readers do not see those files until a
compaction moves their records into real buckets (``PostponeUtils``,
``PostponeBucketCompactSplitSource``, ``PostponeBucketCompactOperator``):

* how many buckets a partition gets: the number its real buckets already have; else
  ``postpone.default-bucket-num``; else estimated from its postpone files,
  ``ceil(rows / postpone.target-row-num-per-bucket)`` when that is set, otherwise
  ``ceil(bytes / postpone.target-size-per-bucket)`` (1 gb), at least 1;
* which bucket a record goes to: Paimon's default bucket function, the Murmur hash of the
  bucket key as a ``BinaryRow``, ``Math.abs(hash % buckets)``;
* in which order: the partition's postpone files by creation time, each file's records as
  written; records routed into a bucket get sequence numbers after every file of that bucket
  (the sequence numbers stored in postpone files are not used).

paimon-cli then compacts each bucket that has files or received records fully into the max
level, with the records the table already holds there (Paimon's postpone compaction writes
them as level-0 files and compacts; a full compaction gives the same rows).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from core.compaction.java_hash import murmur_hash
from core.errors import InvalidOptionError
from core.format.data_files import key_rows
from core.format.types import DataType
from core.table.table import PaimonTable

POSTPONE_BUCKET = -2


@dataclass(frozen=True, slots=True)
class PostponeSpec:
    """How a postpone table's records are routed into real buckets (small, picklable)."""

    bucket_key: tuple[str, ...]
    key_types: tuple[DataType, ...]
    default_bucket_num: int | None  # postpone.default-bucket-num
    target_row_num: int | None  # postpone.target-row-num-per-bucket
    target_size: int  # postpone.target-size-per-bucket, bytes

    def bucket_number(self, known: int | None, rows: int, size: int) -> tuple[int, str]:
        """``PostponeBucketNumResolver``: the partition's bucket number and where it came
        from; ``known`` is the number its real buckets have (None: no real bucket yet),
        ``rows`` and ``size`` sum its postpone files."""
        if known is not None:
            return known, "existing buckets"
        if self.default_bucket_num is not None:
            return self.default_bucket_num, "postpone.default-bucket-num"
        if self.target_row_num is not None:
            return _ceil_div(rows, self.target_row_num), "postpone.target-row-num-per-bucket"
        return _ceil_div(size, self.target_size), "postpone.target-size-per-bucket"

    def buckets_of(self, data: Any, num_buckets: int) -> list[int]:
        """The real bucket of every record of ``data`` (DefaultBucketFunction)."""
        # Math.abs(hash % n) == abs(hash) % n under Java's truncating remainder; the hash
        # covers the row without the arity prefix the manifest form carries.
        return [
            abs(murmur_hash(row[4:])) % num_buckets
            for row in key_rows(data, self.bucket_key, self.key_types)
        ]


def _ceil_div(value: int, per_bucket: int) -> int:
    """PostponeUtils.computeBucketNum: at least one bucket."""
    return 1 if value <= 0 else (value - 1) // per_bucket + 1


def bucket_key(table: PaimonTable) -> tuple[str, ...]:
    """TableSchema.bucketKeys: ``bucket-key`` (split on ","), else the trimmed primary key."""
    text = table.options.get("bucket-key")
    if text is None or not text.strip():
        return table.schema.trimmed_primary_keys
    return tuple(text.split(","))


def refusals(table: PaimonTable) -> list[str]:
    """Postpone settings whose routing paimon-cli does not reproduce."""
    out = []
    function = (table.options.get("bucket-function.type") or "default").strip().lower()
    if function != "default":
        out.append(
            f"bucket-function.type={function} on a postpone-bucket table (paimon-cli routes "
            "records with Paimon's default bucket function only)"
        )
    trimmed = set(table.schema.trimmed_primary_keys)
    outside = [k for k in bucket_key(table) if k not in trimmed]
    if outside:
        out.append(
            f"bucket-key {','.join(outside)} outside the trimmed primary key (Paimon refuses "
            "it on postpone-bucket tables)"
        )
    return out


def spec_of(table: PaimonTable, values: Mapping[str, str | None], target_size: int) -> PostponeSpec:
    """The spec from the resolved option values (``values``: option -> text or None)."""
    keys = bucket_key(table)
    return PostponeSpec(
        bucket_key=keys,
        key_types=tuple(table.schema.field(k).type for k in keys),
        default_bucket_num=_positive(values, "postpone.default-bucket-num"),
        target_row_num=_positive(values, "postpone.target-row-num-per-bucket"),
        target_size=target_size,
    )


def _positive(values: Mapping[str, str | None], key: str) -> int | None:
    text = values.get(key)
    if text is None:
        return None
    try:
        number = int(text.strip())
    except ValueError:
        raise InvalidOptionError(f"{key} must be an integer, got {text!r}") from None
    if number <= 0:
        raise InvalidOptionError(f"Option '{key}' must be greater than 0.")
    return number


def replay_order(files: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The order Paimon replays a partition's postpone files: by creation time (a stable
    sort, so files of one instant keep manifest order)."""
    return sorted(files, key=lambda r: r["_FILE"]["_CREATION_TIME"])


__all__ = [
    "POSTPONE_BUCKET",
    "PostponeSpec",
    "bucket_key",
    "refusals",
    "replay_order",
    "spec_of",
]
