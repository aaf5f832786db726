"""What each root (snapshot, tag, long-lived changelog) still needs, as paths.

One answer for every command: ``inspect --check`` demands exactly these files, and every
deleting command keeps them. Where Paimon deletes a file by design, the root does not need it:

* a **tag** needs its base and delta lists, their manifests, its live data, index files and
  statistics, but not its changelog list and changelog files: Paimon's snapshot expiry deletes
  those even for tagged snapshots (semantics 2.6; docs/commands.md "Long-lived changelogs");
* a **long-lived changelog** (``changelog/changelog-N``) is read as Paimon's streaming reader
  reads it: through its changelog list (and the changelog files in it) when it has one;
  otherwise, with ``changelog-producer`` = none, through its delta list, whose APPEND files
  are the changelog (snapshot expiry keeps them and the base and delta lists for it). With
  another producer Paimon deletes the base and delta lists of every changelog, so they are
  optional: used when present (orphan cleaning counts them, as Paimon's does), never missing.
  Index files and statistics belong to snapshots, never to changelogs.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Literal

from core.format.model import FileKind, ManifestEntry, Snapshot
from core.table.scan import LiveSet
from core.table.table import PaimonTable

# want(path, expected size or None, role)
Want = Callable[[str, Any, str], None]
RootKind = Literal["snapshot", "tag", "changelog"]

APPEND_SOURCE = 0  # _FILE_SOURCE of files a writer appended (null in old tables)


@dataclass(frozen=True, slots=True)
class RootLists:
    """Manifest lists a root needs, and those it names but Paimon may have deleted."""

    required: tuple[str, ...]
    optional: tuple[str, ...] = ()


def producer_of(table: PaimonTable) -> str:
    return (table.options.get("changelog-producer") or "none").lower()


def root_lists(kind: RootKind, snap: Snapshot, producer: str) -> RootLists:
    if kind == "snapshot":
        return RootLists(snap.manifest_lists)
    data = (snap.base_manifest_list, snap.delta_manifest_list)
    if kind == "tag":
        cl = (snap.changelog_manifest_list,) if snap.changelog_manifest_list else ()
        return RootLists(data, cl)
    if snap.changelog_manifest_list:
        return RootLists((snap.changelog_manifest_list,), data)
    if producer != "none":
        return RootLists((), data)  # e.g. a compaction's changelog: nothing left to read
    return RootLists(data)


def reads_delta_as_changelog(snap: Snapshot, producer: str) -> bool:
    """Producer none: a long-lived changelog's data are its delta's APPEND files."""
    return not snap.changelog_manifest_list and producer == "none"


def delta_changelog_files(table: PaimonTable, snap: Snapshot) -> list[ManifestEntry]:
    """ADD entries of the delta that producer none keeps as the changelog (APPEND or null
    source; compaction outputs are not changelog and Paimon's expiry deletes them)."""
    return [
        e
        for e in table.entries(table.manifest_list(snap, snap.delta_manifest_list))
        if e.kind is FileKind.ADD and e.file.file_source in (None, APPEND_SOURCE)
    ]


def want_entries(
    table: PaimonTable, entries: Iterable[ManifestEntry], role: str, want: Want
) -> None:
    paths = table.paths
    for entry in entries:
        want(paths.data_file_path(entry), entry.file.file_size, role)
        for extra in paths.extra_file_paths(entry.partition, entry.bucket, entry.file):
            want(extra, None, "extra")


def collect_references(
    table: PaimonTable,
    snap: Snapshot,
    live: LiveSet | None,
    want: Want,
    *,
    kind: RootKind = "snapshot",
) -> None:
    """Report each file the root needs (``live``: its live data, for snapshots and tags);
    raises on unreadable metadata. Optional lists are not reported (see the module doc)."""
    paths = table.paths
    producer = producer_of(table)
    sizes = {
        snap.base_manifest_list: snap.raw.get("baseManifestListSize"),
        snap.delta_manifest_list: snap.raw.get("deltaManifestListSize"),
        snap.changelog_manifest_list: snap.raw.get("changelogManifestListSize"),
    }
    lists = root_lists(kind, snap, producer).required
    for name in lists:
        want(paths.manifest_path(name), sizes.get(name), "manifest-list")
        for meta in table.manifest_list(snap, name):
            want(paths.manifest_path(meta.file_name), meta.file_size, "manifest")
    if live is not None and kind != "changelog":
        want_entries(table, live.values(), "data", want)
    if snap.changelog_manifest_list and snap.changelog_manifest_list in lists:
        adds = (e for e in table.changelog_files(snap) if e.kind is FileKind.ADD)
        want_entries(table, adds, "changelog", want)
    if kind == "changelog":
        if reads_delta_as_changelog(snap, producer):
            want_entries(table, delta_changelog_files(table, snap), "changelog", want)
        return  # index and statistics files belong to snapshots, never to changelogs
    if snap.index_manifest:
        want(paths.manifest_path(snap.index_manifest), None, "index-manifest")
        for ie in table.index_manifest(snap):
            want(paths.index_file_path(ie), ie.file_size, "index")
    if snap.statistics:
        want(paths.statistics_path(snap.statistics), None, "statistics")


def changelog_references(table: PaimonTable, want_for: Callable[[int], Want]) -> None:
    """Every long-lived changelog of this branch; ``want_for(id)`` receives its files."""
    for cl in table.changelogs.snapshots():
        collect_references(table, cl, None, want_for(cl.id), kind="changelog")
