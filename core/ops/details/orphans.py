"""Details of orphan cleaning (delete-orphan-files, maintain --orphans): the orphans, kept
as found and shown as JSON rows only when written (a plan may hold millions)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

from core.io.fileio import basename
from core.ops.orphans.orphan_roots import RootsSeen
from core.ops.orphans.orphan_sets import Orphan
from core.runtime.details import CUSTOM, OMIT_NONE, Record
from core.runtime.plans import LazyRows
from core.runtime.timeparse import iso_utc


class OrphanRow(Mapping[str, Any]):
    """One orphan as the plan's JSON shows it, built on access (``dict(row)`` gives the
    JSON object)."""

    __slots__ = ("orphan", "now_ms")
    KEYS: ClassVar[tuple[str, ...]] = ("path", "size", "dir_kind", "modified", "age_ms")

    def __init__(self, orphan: Orphan, now_ms: int) -> None:
        self.orphan = orphan
        self.now_ms = now_ms

    def __getitem__(self, key: str) -> Any:
        o = self.orphan
        if key == "path":
            return o.path
        if key == "size":
            return o.size
        if key == "dir_kind":
            return o.kind
        if key == "modified":
            return {"epoch_ms": o.mtime_ms, "utc": iso_utc(o.mtime_ms)}
        if key == "age_ms":
            return self.now_ms - o.mtime_ms
        raise KeyError(key)

    def __iter__(self) -> Iterator[str]:
        return iter(self.KEYS)

    def __len__(self) -> int:
        return len(self.KEYS)


@dataclass(frozen=True, slots=True)
class InventorySummary(Record):
    """The storage inventory the listing came from (``--inventory``)."""

    source: str
    format: str
    taken_ms: int
    taken: str  # the same instant, UTC
    files: int


@dataclass(frozen=True, slots=True)
class OrphanDetails(Record):
    older_than_ms: int
    older_than: str  # the same instant, UTC
    now_ms: int
    allow_recent: bool
    used_names: int
    roots: RootsSeen
    # sorted by path (in memory or spilled to disk); a sample when ``truncated`` (Spark
    # lists at most 10,000)
    orphans: Sequence[Orphan] = field(metadata=CUSTOM)
    orphan_count: int
    orphan_bytes: int
    truncated: bool
    empty_directories: tuple[str, ...]
    branches: tuple[str, ...]
    external_roots_skipped: tuple[str, ...]
    # --inventory: what it is (each file it names is HEADed again before its deletion)
    inventory: InventorySummary | None = field(default=None, metadata=OMIT_NONE)

    def age_ms(self, orphan: Orphan) -> int:
        return self.now_ms - orphan.mtime_ms

    def rows(self) -> Sequence[Mapping[str, Any]]:
        """The orphans as JSON rows, made on access."""
        return LazyRows(self.orphans, self._row)

    def _row(self, orphan: Orphan) -> OrphanRow:
        return OrphanRow(orphan, self.now_ms)

    def _field_json(self, name: str, *, lazy: bool) -> Any:
        rows = self.rows()
        return rows if lazy else [dict(r) for r in rows]

    @classmethod
    def _field_from_json(cls, name: str, value: Any, data: Mapping[str, Any]) -> Any:
        if not isinstance(value, list):
            raise TypeError("orphans is not an array")
        return [
            Orphan(
                str(r["path"]),
                basename(str(r["path"])),
                int(r["size"]),
                int(r["modified"]["epoch_ms"]),
                str(r["dir_kind"]),
            )
            for r in value
        ]
