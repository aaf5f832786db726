"""Details of partition expiry (expire-partitions, maintain's partition step)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from core.ops.details.expiry import Sourced
from core.runtime.details import OMIT_NONE, Record


@dataclass(frozen=True, slots=True)
class SourcedText(Record):
    """A text setting (as given or as the table option reads) and where it came from."""

    value: str | None
    source: str


@dataclass(frozen=True, slots=True)
class PartitionExpiryConfig(Record):
    expiration_time: SourcedText
    strategy: SourcedText
    formatter: SourcedText
    pattern: SourcedText
    max_expires: Sourced

    @classmethod
    def of(cls, sources: Mapping[str, Mapping[str, Any]]) -> PartitionExpiryConfig:
        """From the resolved settings: name -> {value, source}."""

        def text(name: str) -> SourcedText:
            value = sources[name]["value"]
            return SourcedText(None if value is None else str(value), sources[name]["source"])

        cap = sources["max_expires"]
        return cls(
            text("expiration_time"),
            text("strategy"),
            text("formatter"),
            text("pattern"),
            Sourced(int(cap["value"]), cap["source"]),
        )


@dataclass(frozen=True, slots=True)
class ExpiredPartition(Record):
    partition: dict[str, str | None]  # key -> value, as in the directory names
    partition_hex: str  # the partition's BinaryRow: what the drop matches
    path: str
    time_local: str | None  # the time read from its values (update-time: its last update)
    last_update_local: str | None
    # the wall clocks above read in the table zone (epoch ms), as every other time
    time_ms: int | None
    last_update_ms: int | None
    files: int
    rows: int
    bytes: int


@dataclass(frozen=True, slots=True)
class SkippedPartition(Record):
    """A partition values-time cannot read a time from: it never expires by its values."""

    partition: dict[str, str | None]
    reason: str


@dataclass(frozen=True, slots=True)
class MetastoreDrop(Record):
    """A partition the run drops from the metastore (never its data)."""

    partition: dict[str, str]  # key -> value, as the metastore holds it
    reason: str  # expired, a done marker, left by an earlier run


@dataclass(frozen=True, slots=True)
class MetastoreChanges(Record):
    """What a run changes in the metastore that mirrors the table's partitions."""

    metastore: str
    drops: tuple[MetastoreDrop, ...] = ()
    left_by_earlier_runs: int = 0  # partitions earlier runs meant to drop, finished now


@dataclass(frozen=True, slots=True)
class PartitionExpiryDetails(Record):
    config: PartitionExpiryConfig
    now_ms: int
    expire_before_local: str
    expire_before_ms: int
    latest_snapshot: int | None
    partitions: tuple[ExpiredPartition, ...] = ()
    skipped: tuple[SkippedPartition, ...] = ()
    skipped_hint: str | None = None  # what to do about the skipped ones
    capped: int = 0  # expired partitions left for the next run (max expires)
    # metastore.partitioned-table: the metastore's partitions this run drops
    metastore: MetastoreChanges | None = field(default=None, metadata=OMIT_NONE)
