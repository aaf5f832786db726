"""Details of partition expiry (expire-partitions, maintain's partition step)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from core.ops.details.expiry import Sourced
from core.runtime.details import Record


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
