"""Live file sets of snapshots, computed incrementally and reading each manifest once."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator, Sequence
from functools import partial
from typing import Any, Protocol, TypeVar

from core.format.manifest import merge_entries
from core.format.model import FileKind, ManifestEntry, ManifestFileMeta, ManifestRef, Snapshot
from core.table.table import PaimonTable

LiveSet = dict[Any, ManifestEntry]
Manifest = ManifestFileMeta | ManifestRef
T = TypeVar("T")
R = TypeVar("R")


class ParallelMap(Protocol):
    """What a scan needs of an executor: ``fn`` over ``items``, results in item order.
    Declared here, not imported from ``core/runtime`` (a layer above this one); every
    ``core.runtime.executors`` executor is one."""

    def map(self, fn: Callable[[T], R], items: Iterable[T]) -> list[R]: ...


def _read_manifest(table: PaimonTable, meta: Manifest) -> list[ManifestEntry]:
    return list(table.manifest(meta))


class ManifestCache:
    """Decoded manifests by name, bounded (manifests are shared by many snapshots)."""

    def __init__(self, table: PaimonTable, executor: ParallelMap, max_manifests: int = 512) -> None:
        self.table = table
        self.executor = executor
        self.max_manifests = max_manifests
        self._cache: OrderedDict[str, list[ManifestEntry]] = OrderedDict()

    def prefetch(self, manifests: Iterable[Manifest]) -> None:
        by_name = {m.file_name: m for m in manifests}
        missing = [m for name, m in by_name.items() if name not in self._cache]
        for meta, entries in zip(
            missing,
            self.executor.map(partial(_read_manifest, self.table), missing),
            strict=True,
        ):
            self._put(meta.file_name, entries)

    def _put(self, name: str, entries: list[ManifestEntry]) -> None:
        self._cache[name] = entries
        self._cache.move_to_end(name)
        while len(self._cache) > self.max_manifests:
            self._cache.popitem(last=False)

    def entries(self, meta: Manifest) -> list[ManifestEntry]:
        cached = self._cache.get(meta.file_name)
        if cached is None:
            cached = list(self.table.manifest(meta))
            self._put(meta.file_name, cached)
        else:
            self._cache.move_to_end(meta.file_name)
        return cached

    def entries_of(self, manifests: Sequence[Manifest]) -> Iterator[ManifestEntry]:
        self.prefetch(manifests)
        for meta in manifests:
            yield from self.entries(meta)


def full_live_set(table: PaimonTable, snapshot: Snapshot, cache: ManifestCache) -> LiveSet:
    merged = merge_entries(cache.entries_of(table.data_manifests(snapshot)))
    return {k: e for k, e in merged.items() if e.kind is FileKind.ADD}


def apply_delta(live: LiveSet, delta: Iterable[ManifestEntry]) -> LiveSet:
    """live(S) = live(S-1) merged with delta(S): base(S) is exactly base+delta of S-1."""
    out = dict(live)
    for entry in delta:
        key = entry.identifier
        if entry.kind is FileKind.ADD:
            out[key] = entry
        else:
            out.pop(key, None)
    return out


def next_live_set(
    table: PaimonTable, snap: Snapshot, previous: tuple[int, LiveSet] | None, cache: ManifestCache
) -> LiveSet:
    """Live set of ``snap``, from the previous snapshot's set when ids are consecutive."""
    if previous is not None and previous[0] == snap.id - 1:
        delta = cache.entries_of(table.manifest_list(snap, snap.delta_manifest_list))
        return apply_delta(previous[1], delta)
    return full_live_set(table, snap, cache)


def live_sets(
    table: PaimonTable, snapshots: list[Snapshot], cache: ManifestCache
) -> Iterator[tuple[Snapshot, LiveSet]]:
    """(snapshot, live files) for ascending snapshots; consecutive ids reuse the previous set."""
    previous: tuple[int, LiveSet] | None = None
    for snap in snapshots:
        live = next_live_set(table, snap, previous, cache)
        previous = (snap.id, live)
        yield snap, live
