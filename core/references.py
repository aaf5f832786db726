"""Every file a snapshot-shaped root (snapshot, tag, changelog) references, as paths."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from core.model import FileKind, Snapshot
from core.scan import LiveSet
from core.table import PaimonTable

# want(path, expected size or None, role)
Want = Callable[[str, Any, str], None]


def changelog_root_lists(snap: Snapshot) -> tuple[str, ...]:
    """What a long-lived changelog still needs: its changelog list if it has one (Paimon
    deletes its base/delta lists then), otherwise its base and delta lists (producer none)."""
    if snap.changelog_manifest_list:
        return (snap.changelog_manifest_list,)
    return (snap.base_manifest_list, snap.delta_manifest_list)


def collect_references(
    table: PaimonTable,
    snap: Snapshot,
    live: LiveSet | None,
    want: Want,
    *,
    lists: tuple[str, ...] | None = None,
) -> None:
    """Report each referenced file once per call; raises on unreadable metadata.

    ``lists`` narrows the manifest lists considered (long-lived changelogs)."""
    paths = table.paths
    sizes = {
        snap.base_manifest_list: snap.raw.get("baseManifestListSize"),
        snap.delta_manifest_list: snap.raw.get("deltaManifestListSize"),
        snap.changelog_manifest_list: snap.raw.get("changelogManifestListSize"),
    }
    for name in snap.manifest_lists if lists is None else lists:
        want(paths.manifest_path(name), sizes.get(name), "manifest-list")
        for meta in table.manifest_list(name):
            want(paths.manifest_path(meta.file_name), meta.file_size, "manifest")
    if live is not None:
        for entry in live.values():
            f = entry.file
            want(paths.data_file_path(entry), f.file_size, "data")
            for extra in paths.extra_file_paths(entry.partition, entry.bucket, f):
                want(extra, None, "extra")
    if snap.changelog_manifest_list and (lists is None or snap.changelog_manifest_list in lists):
        for entry in table.changelog_files(snap):
            if entry.kind is FileKind.ADD:
                want(paths.data_file_path(entry), entry.file.file_size, "changelog")
                for extra in paths.extra_file_paths(entry.partition, entry.bucket, entry.file):
                    want(extra, None, "extra")
    if lists is not None:
        return  # index and statistics files belong to snapshots, never to changelogs (§5)
    if snap.index_manifest:
        want(paths.manifest_path(snap.index_manifest), None, "index-manifest")
        for ie in table.index_manifest(snap.index_manifest):
            want(paths.index_file_path(ie), ie.file_size, "index")
    if snap.statistics:
        want(paths.statistics_path(snap.statistics), None, "statistics")
