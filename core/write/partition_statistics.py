"""What a commit changes per partition, as Paimon sends it to a REST catalog with the
snapshot (Java's PartitionEntry merged per partition, as PartitionStatistics): records,
bytes and files added minus those deleted, the newest file's creation time, the buckets."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime, timezone
from typing import Any

from core.table.table import PaimonTable


def _epoch_ms(value: Any) -> int:
    if isinstance(value, datetime):
        # Java stores the writer's local time without a zone; read back as written.
        aware = value if value.tzinfo else value.replace(tzinfo=timezone.utc)
        return int(aware.timestamp() * 1000)
    return int(value or 0)


def partition_statistics(
    table: PaimonTable, entries: Iterable[Mapping[str, Any]]
) -> list[dict[str, Any]]:
    """One statistics record per partition the delta ``entries`` touch."""
    default = table.options.default_partition_name
    merged: dict[bytes, dict[str, Any]] = {}
    for entry in entries:
        sign = 1 if entry["_KIND"] == 0 else -1
        f = entry["_FILE"]
        partition = bytes(entry["_PARTITION"])
        stats = merged.get(partition)
        if stats is None:
            spec = table.paths.partition_spec(partition)
            stats = merged[partition] = {
                "spec": {k: default if v is None else v for k, v in spec.items()},
                "recordCount": 0,
                "fileSizeInBytes": 0,
                "fileCount": 0,
                "lastFileCreationTime": 0,
                "totalBuckets": 0,
            }
        stats["recordCount"] += sign * int(f["_ROW_COUNT"])
        stats["fileSizeInBytes"] += sign * int(f["_FILE_SIZE"])
        stats["fileCount"] += sign
        stats["lastFileCreationTime"] = max(
            stats["lastFileCreationTime"], _epoch_ms(f.get("_CREATION_TIME"))
        )
        stats["totalBuckets"] = max(stats["totalBuckets"], int(entry.get("_TOTAL_BUCKETS") or 0))
    return list(merged.values())
