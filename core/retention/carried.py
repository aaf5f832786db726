"""What consecutive snapshots need, carried from one snapshot to the next.

Snapshot S needs what S-1 needed, less what changed: its manifests are S-1's base and delta
manifests until a merge, its live files S-1's plus its delta. Reporting every file of every
snapshot (``collect_references`` per root) costs snapshots x files, minutes on a table of
thousands of unmerged commits. Here a file is *held* when the first snapshot of a run of
consecutive ones needs it and *dropped* when one no longer does, so the cost follows the
changes: the manifest-list blocks that differ (``PaimonTable.manifest_list_blocks``) and the
delta entries. The files reported are exactly ``collect_references``' for kind "snapshot";
a file named twice (two list blocks, two live-file keys of one path) is held once.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Hashable, Iterable
from typing import Any, Protocol

from core.format.list_blocks import ListBlock
from core.format.model import FileKind, IndexManifestEntry, ManifestEntry, ManifestRef, Snapshot
from core.retention.references import producer_of, root_lists, want_entries
from core.table.scan import LiveSet, ManifestCache, full_live_set
from core.table.table import PaimonTable


class Holder(Protocol):
    def want(self, path: str, size: Any, role: str) -> None:
        """The current snapshot needs ``path`` (it alone)."""

    def hold(self, path: str, size: Any, role: str) -> None:
        """The current snapshot and the following ones need ``path`` until it is dropped."""

    def drop(self, path: str, *, through_current: bool = False) -> None:
        """The snapshot before the current one (or the current one) was the last to need
        a held ``path``."""


class Carried:
    """One run of consecutive snapshots of one branch, ascending (``step`` each, then
    ``end``): what each needs goes to ``holder`` as wants, holds and drops."""

    def __init__(self, table: PaimonTable, holder: Holder, cache: ManifestCache) -> None:
        self.table = table
        self.holder = holder
        self.cache = cache
        self.producer = producer_of(table)
        self.previous: int | None = None  # id of the last snapshot stepped
        self.live: LiveSet = {}
        self.schema_ids: Counter[int] = Counter()  # of the live files
        self._blocks: Counter[Hashable] = Counter()
        self._block_refs: dict[Hashable, tuple[ManifestRef, ...]] = {}
        self._held: Counter[str] = Counter()  # data, extra and index files by path
        self._manifests: Counter[str] = Counter()  # manifests held, by name
        self._index: tuple[str, list[str]] | None = None  # index manifest and files held

    def step(self, snap: Snapshot) -> LiveSet:
        """Report what ``snap`` needs (all its reads happen before the first report, so a
        read that raises leaves the run as it was); returns its live files."""
        table = self.table
        consecutive = self.previous is not None and self.previous == snap.id - 1
        lists = root_lists("snapshot", snap, self.producer).required
        blocks = [(name, table.manifest_list_blocks(snap, name)) for name in lists]
        if consecutive:
            delta = table.manifest_list_names(snap, snap.delta_manifest_list)
            changes: list[ManifestEntry] | None = list(self.cache.entries_of(delta))
        else:
            changes = None
            fresh = full_live_set(table, snap, self.cache)
        changelog = list(table.changelog_files(snap)) if snap.changelog_manifest_list else []
        same_index = (
            consecutive and self._index is not None and self._index[0] == snap.index_manifest
        )
        index = table.index_manifest(snap) if snap.index_manifest and not same_index else []

        if not consecutive:
            self.end(through_current=False)
        self._lists(snap, blocks)
        if changes is None:
            self.live = {}
            self._apply(fresh.values(), ())
            self.live = dict(fresh)
        else:
            self._apply_delta(changes)
        self._changelog_and_index(snap, changelog, index)
        self.previous = snap.id
        return self.live

    def end(self, *, through_current: bool = True) -> None:
        """The run ends: every held file was last needed by the current snapshot (or, with
        ``through_current`` False, by the one before: the current one could not be read)."""
        paths = self.table.paths
        for name in self._manifests:
            self.holder.drop(paths.manifest_path(name), through_current=through_current)
        for path in self._held:
            self.holder.drop(path, through_current=through_current)
        self._held.clear()
        self._manifests.clear()
        self._blocks.clear()
        self._block_refs.clear()
        self.live = {}
        self.schema_ids.clear()
        self._index = None
        self.previous = None

    # -- the parts of a snapshot ---------------------------------------------------------
    def _lists(self, snap: Snapshot, lists: list[tuple[str, list[ListBlock]]]) -> None:
        paths = self.table.paths
        current: Counter[Hashable] = Counter()
        for name, blocks in lists:
            self.holder.want(paths.manifest_path(name), _recorded_size(snap, name), "manifest-list")
            for block in blocks:
                current[block.key] += 1
                self._block_refs.setdefault(block.key, block.refs)
        added = current - self._blocks
        removed = self._blocks - current
        names = self._manifests  # by name: a path is built only when a hold starts or ends
        for key, times in added.items():
            for ref in self._block_refs[key]:
                if not names[ref.file_name]:
                    self.holder.hold(paths.manifest_path(ref.file_name), ref.file_size, "manifest")
                names[ref.file_name] += times
        for key, times in removed.items():
            for ref in self._block_refs[key]:
                left = names[ref.file_name] - times
                if left > 0:
                    names[ref.file_name] = left
                else:
                    del names[ref.file_name]
                    self.holder.drop(paths.manifest_path(ref.file_name))
        for key in removed:
            if key not in current:
                del self._block_refs[key]
        self._blocks = current

    def _apply_delta(self, delta: Iterable[ManifestEntry]) -> None:
        added: list[ManifestEntry] = []
        removed: list[ManifestEntry] = []
        live = self.live
        for entry in delta:
            key = entry.identifier
            old = live.get(key)
            if entry.kind is FileKind.ADD:
                if old is not None:
                    removed.append(old)
                live[key] = entry
                added.append(entry)
            elif old is not None:
                del live[key]
                removed.append(old)
        self._apply(added, removed)

    def _apply(self, added: Iterable[ManifestEntry], removed: Iterable[ManifestEntry]) -> None:
        """Adds before removals: a file re-added under another key stays held."""
        paths = self.table.paths
        for entry in added:
            self._hold(paths.data_file_path(entry), entry.file.file_size, "data")
            for extra in paths.extra_file_paths(entry.partition, entry.bucket, entry.file):
                self._hold(extra, None, "extra")
            self.schema_ids[entry.file.schema_id] += 1
        for entry in removed:
            self._drop(paths.data_file_path(entry))
            for extra in paths.extra_file_paths(entry.partition, entry.bucket, entry.file):
                self._drop(extra)
            self.schema_ids[entry.file.schema_id] -= 1
            if not self.schema_ids[entry.file.schema_id]:
                del self.schema_ids[entry.file.schema_id]

    def _changelog_and_index(
        self, snap: Snapshot, changelog: list[ManifestEntry], index: list[IndexManifestEntry]
    ) -> None:
        table, holder = self.table, self.holder
        want_entries(
            table, (e for e in changelog if e.kind is FileKind.ADD), "changelog", holder.want
        )
        name = snap.index_manifest
        if self._index is not None and self._index[0] != name:
            for path in self._index[1]:
                self._drop(path)
            self._index = None
        if name and self._index is None:
            held = [table.paths.manifest_path(name)]
            self._hold(held[0], None, "index-manifest")
            for ie in index:
                path = table.paths.index_file_path(ie)
                self._hold(path, ie.file_size, "index")
                held.append(path)
            self._index = (name, held)
        if snap.statistics:
            holder.want(table.paths.statistics_path(snap.statistics), None, "statistics")

    def _hold(self, path: str, size: Any, role: str, times: int = 1) -> None:
        if not self._held[path]:
            self.holder.hold(path, size, role)
        self._held[path] += times

    def _drop(self, path: str, times: int = 1) -> None:
        left = self._held[path] - times
        if left > 0:
            self._held[path] = left
            return
        del self._held[path]
        self.holder.drop(path)


def _recorded_size(snap: Snapshot, name: str) -> object:
    """What the snapshot records as the list's size, as ``collect_references`` reads it."""
    for key in ("baseManifestList", "deltaManifestList", "changelogManifestList"):
        if snap.raw.get(key) == name:
            return snap.raw.get(f"{key}Size")
    return None
