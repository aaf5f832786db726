"""What other roots protect while one branch expires: the files every other branch's
snapshots, tags and changelogs use, the long-lived changelogs of this branch, Paimon's
skipping tags, and the directories an expiry empties. Shared by snapshot and changelog
expiry (same protection rules, same directory cleanup)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from functools import partial
from typing import Any

from core.format.model import Tag
from core.io.fileio import join
from core.retention.references import Want, changelog_references, collect_references
from core.runtime.executors.base import Executor
from core.runtime.plans import FileAction
from core.table.scan import ManifestCache, full_live_set, live_sets
from core.table.table import PaimonTable


def find_skipping_tags(tags: list[Tag], begin: int, end: int) -> list[Tag]:
    """Paimon's findSkippingTags: newest tag <= begin (or the first tag) .. last tag < end."""
    right = max((i for i, t in enumerate(tags) if t.snapshot.id < end), default=-1)
    if right < 0:
        return []
    left = max(max((i for i, t in enumerate(tags) if t.snapshot.id <= begin), default=-1), 0)
    return tags[left : right + 1]


def tags_everywhere(table: PaimonTable, views: list[PaimonTable]) -> dict[str, Tag]:
    """``<branch>/<tag>`` -> tag, over ``views``."""
    return {f"{v.branch}/{t.name}": t for v in views for t in v.tags.tags()}


def other_views(table: PaimonTable) -> list[PaimonTable]:
    """Every branch of the table but ``table``'s own (main included)."""
    names = ["main", *table.branches.branches()]
    return [table.for_branch(b) for b in names if b != table.branch]


def _claim(protected: dict[str, str], branch: str, path: str, _size: Any, _role: str) -> None:
    protected.setdefault(path, branch)


def branch_protection(views: list[PaimonTable], executor: Executor) -> dict[str, str]:
    """path -> branch, for every file any other branch's snapshot or tag references."""
    protected: dict[str, str] = {}
    for view in views:
        cache = ManifestCache(view, executor)
        want = partial(_claim, protected, view.branch)
        for snap, live in live_sets(view, view.snapshots.snapshots(), cache):
            collect_references(view, snap, live, want)
        for tag in view.tags.tags():
            live = full_live_set(view, tag.snapshot, cache)
            collect_references(view, tag.snapshot, live, want, kind="tag")
        changelog_references(view, partial(_same, want))
    return protected


def _same(want: Want, _changelog_id: int) -> Want:
    return want


def changelog_protection(table: PaimonTable, expiring: Iterable[int] = ()) -> dict[str, int]:
    """path -> changelog id, for every file a long-lived changelog of this branch needs:
    kept whatever the lifecycle is now (decoupling may have been switched off since);
    ``expiring``: changelogs this plan expires."""
    needed: dict[str, int] = {}
    skip = set(expiring)

    def want_for(cid: int) -> Callable[[str, Any, str], None]:
        def want(path: str, _size: Any, _role: str) -> None:
            if cid not in skip:
                needed.setdefault(path, cid)

        return want

    changelog_references(table, want_for)
    return needed


def empty_dir_actions(table: PaimonTable, buckets: Iterable[tuple[bytes, int]]) -> list[FileAction]:
    """Bucket dirs, then partition dirs deepest first (Paimon's cleanEmptyDirectories,
    table-root based)."""
    bucket_dirs = dict.fromkeys(table.paths.bucket_dir(p, b) for p, b in buckets)
    levels: dict[int, dict[str, None]] = {}
    for partition, _bucket in buckets:
        parts = (
            table.paths.partition_path(partition).split("/") if table.paths.partition_keys else []
        )
        for depth in range(len(parts), 0, -1):
            levels.setdefault(depth, {})[join(table.location, *parts[:depth])] = None
    actions = [FileAction("rmdir", d, "directory", None, "emptied by expiry") for d in bucket_dirs]
    for depth in sorted(levels, reverse=True):
        actions += [
            FileAction("rmdir", d, "directory", None, "emptied by expiry") for d in levels[depth]
        ]
    return actions
