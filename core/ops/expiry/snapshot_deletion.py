"""Paimon's SnapshotDeletion, as planned actions: the data files the expiring snapshots'
deltas removed, their changelog files, and the manifests, index and statistics files no
kept root (the new earliest snapshot, a skipping tag) still uses; then the pointer phases,
pointers first (DECISIONS D2)."""

from __future__ import annotations

import json
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import partial
from typing import TypeVar

from core.errors import MissingFileError, PaimonError, SafetyRefusalError
from core.format.model import (
    ExpireFileEntry,
    FileKind,
    ManifestEntry,
    ManifestRef,
    Snapshot,
    Tag,
)
from core.format.options import ExpireConfig
from core.ops.details.expiry import KeptByBranch, KeptByChangelog, KeptByTag
from core.retention.protection import empty_dir_actions
from core.runtime.executors.base import Executor, Work
from core.runtime.plans import FileAction, Phase
from core.runtime.progress import Progress
from core.table.paths import DataFileLocation
from core.table.table import PaimonTable

T = TypeVar("T")
KeySet = set[tuple[bytes, int, str]]
Deleted = list[tuple[str, ExpireFileEntry]]  # a delta's deleted files, by physical path
ListCache = dict[str, list[ManifestRef]]  # manifest lists read once, by name


@dataclass
class DeleteActions:
    """The deletes an expiry plans, data files and manifests apart; a path is planned at
    most once, and one outside the table root and its declared external paths refuses the
    whole plan (``outside``)."""

    table: PaimonTable
    seen: set[str] = field(default_factory=set)
    data: list[FileAction] = field(default_factory=list)
    manifests: list[FileAction] = field(default_factory=list)
    buckets: dict[tuple[bytes, int], None] = field(default_factory=dict)  # data removed from

    def add(
        self, into: list[FileAction], path: str, kind: str, size: int | None, reason: str
    ) -> None:
        if path in self.seen:
            return
        self.seen.add(path)
        if self.keeps(path):
            return
        if not self.table.paths.is_inside_table(path):
            raise self.outside(
                f"metadata references {path} ({kind}), outside the table root and its declared "
                "external paths; refusing to plan any deletion"
            )
        into.append(FileAction("delete", path, kind, size, reason))

    def add_entry(self, entry: ManifestEntry, kind: str, reason: str) -> None:
        """A data (or changelog) file of a manifest entry, with its extra files."""
        f = entry.file
        self.add_file(entry.partition, entry.bucket, f, f.file_size, kind, reason)

    def add_file(
        self,
        partition: bytes,
        bucket: int,
        f: DataFileLocation,
        size: int,
        kind: str,
        reason: str,
        path: str | None = None,
    ) -> None:
        """A data (or changelog) file, with its extra files; ``path``: its path if known."""
        paths = self.table.paths
        self.add(self.data, path or paths.file_path(partition, bucket, f), kind, size, reason)
        if f.extra_files:
            for extra in paths.extra_file_paths(partition, bucket, f):
                self.add(self.data, extra, "extra", None, reason)
        self.buckets[(partition, bucket)] = None

    def add_deleted(self, path: str, entry: ExpireFileEntry, kind: str, reason: str) -> None:
        """A file a delta deleted (``path``: its physical path, as ``delta_deletions``)."""
        self.add_file(entry.partition, entry.bucket, entry, entry.file_size, kind, reason, path)

    def keeps(self, path: str) -> bool:
        """Whether a path to delete is kept instead (recording why)."""
        return False

    def outside(self, message: str) -> PaimonError:
        return SafetyRefusalError(
            message, hint="check data-file.external-paths, or the manifest is corrupt"
        )


@dataclass
class DeletionBuilder(DeleteActions):
    """A snapshot expiry's deletes, and what it keeps and why."""

    kept_by_tag: list[KeptByTag] = field(default_factory=list)
    kept_by_branch: list[KeptByBranch] = field(default_factory=list)
    kept_for_changelog: int = 0
    kept_by_changelog: list[KeptByChangelog] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def vanished_or_raise(table: PaimonTable, snap: Snapshot, read: Callable[[], T]) -> T | None:
    """Run a metadata read for ``snap``. Missing metadata of a snapshot that is itself gone
    means a concurrent expiry got there first (None); otherwise it is a clear error: we never
    plan deletions from incomplete metadata (safer than Paimon, which skips and leaks)."""
    try:
        return read()
    except MissingFileError as exc:
        if not table.fileio.exists(table.snapshots.path(snap.id)):
            return None
        err = MissingFileError(
            exc.path, f"metadata of snapshot {snap.id}: " + exc.message.split(" not found")[0]
        )
        err.hint = "nothing was deleted; `paimon inspect TABLE --check` lists what is missing"
        raise err from None


def delta_deletions(table: PaimonTable, snap: Snapshot, lists: ListCache | None = None) -> Deleted:
    """Files DELETEd by a snapshot's delta and not re-ADDed in it, keyed by physical path;
    the delta list's manifests go into ``lists`` when given (step 3 needs them again)."""
    pending: dict[str, ExpireFileEntry] = {}
    file_path = table.paths.file_path
    refs = table.manifest_list_names(snap, snap.delta_manifest_list)
    if lists is not None:
        lists[snap.delta_manifest_list] = refs
    for ref in refs:
        for entry in table.expire_entries(ref):
            path = file_path(entry.partition, entry.bucket, entry)
            if entry.kind is FileKind.ADD:
                pending.pop(path, None)
            else:
                pending[path] = entry
    return list(pending.items())


def metadata_work(table: PaimonTable) -> Work:
    """How an expiry reads many small metadata files: inline on local disk (decoding is
    CPU-bound and threads share one GIL: 2,000 deltas took longer on 4 threads than on
    one, and 2,000 snapshots 0.065 s against 0.044 s), threads on object stores."""
    return "local" if table.fileio.is_local(table.location) else "io"


def check_retained(
    table: PaimonTable, end: Snapshot, latest: int | None, executor: Executor
) -> None:
    """Every kept snapshot must parse and the latest one's manifest lists must read before
    anything goes: with a broken latest snapshot the older ones may be all that is left to
    roll back to (safer than Paimon, which never looks; docs/safety.md "Incomplete metadata
    stops the run")."""
    newest: Snapshot | None = end
    if latest is not None and latest > end.id:
        kept = executor.map(
            table.snapshots.try_snapshot, range(end.id + 1, latest + 1), work=metadata_work(table)
        )
        newest = next((s for s in reversed(kept) if s is not None), None)
    if newest is not None:
        for name in newest.manifest_lists:
            table.manifest_list_names(newest, name)


def _read_delta(table: PaimonTable, lists: ListCache, snap: Snapshot) -> Deleted | None:
    return vanished_or_raise(table, snap, partial(delta_deletions, table, snap, lists))


def skipping_names(
    table: PaimonTable, roots: Iterable[Snapshot], exists: Callable[[str], bool] = bool
) -> set[str]:
    """manifestSkippingSet: the roots' manifest lists and their manifests, index manifest
    and index files, statistics; ``exists`` (ChangelogDeletion's): a list or index
    manifest not there is skipped."""
    names: set[str] = set()
    for snap in roots:
        for list_name in (snap.base_manifest_list, snap.delta_manifest_list):
            if exists(list_name):
                names.add(list_name)
                names.update(m.file_name for m in table.manifest_list_names(snap, list_name))
        if snap.index_manifest and exists(snap.index_manifest):
            names.add(snap.index_manifest)
            names.update(e.file_name for e in table.index_manifest(snap))
        if snap.statistics:
            names.add(snap.statistics)
    return names


# Files whose size no metadata records: one stat each, so plans and reports show real bytes.
_STAT_KINDS = frozenset({"snapshot", "manifest-list", "index-manifest", "statistics"})


def with_sizes(table: PaimonTable, executor: Executor, phases: list[Phase]) -> list[Phase]:
    unknown = [
        a.path
        for p in phases
        for a in p.actions
        if a.op == "delete" and a.size is None and a.kind in _STAT_KINDS
    ]
    if not unknown:
        return phases
    infos = executor.map(table.fileio.info, unknown, work="local")
    sizes = {path: info.size for path, info in zip(unknown, infos, strict=True) if info is not None}
    # Only the stat'ed actions are rebuilt (a plan holds tens of thousands of others).
    return [
        replace(
            p,
            actions=tuple(
                replace(a, size=sizes[a.path]) if a.path in sizes else a for a in p.actions
            ),
        )
        for p in phases
    ]


def _unseen(
    table: PaimonTable, snap: Snapshot, list_name: str, seen: set[Hashable]
) -> list[Sequence[ManifestRef]]:
    """The blocks of a list not met before in this plan: every name in a block met before
    is already in ``skip`` (a base list repeats the previous one's blocks when manifests
    are not merged, so this keeps step 3 linear in the distinct manifests)."""
    out: list[Sequence[ManifestRef]] = []
    for block in table.manifest_list_blocks(snap, list_name):
        if block.key not in seen:
            seen.add(block.key)
            out.append(block.refs)
    return out


def _plan_manifests(
    b: DeletionBuilder,
    snap: Snapshot,
    skip: set[str],
    lists: ListCache,
    seen: set[Hashable],
    *,
    data_lists: bool,
    changelog_list: bool,
) -> None:
    table, paths = b.table, b.table.paths
    reason = f"only used by expired snapshot {snap.id}"
    names = [snap.base_manifest_list, snap.delta_manifest_list] if data_lists else []
    if changelog_list and snap.changelog_manifest_list:
        names.append(snap.changelog_manifest_list)
    for list_name in names:
        if list_name in skip:
            continue
        skip.add(list_name)
        cached = lists.get(list_name)
        blocks = [cached] if cached is not None else _unseen(table, snap, list_name, seen)
        for refs in blocks:
            for name, size, _entries in refs:
                if name not in skip:
                    skip.add(name)
                    b.add(b.manifests, paths.manifest_path(name), "manifest", size, reason)
        recorded = snap.list_expected(list_name).size
        b.add(b.manifests, paths.manifest_path(list_name), "manifest-list", recorded, reason)
    if snap.index_manifest and snap.index_manifest not in skip:
        for ie in table.index_manifest(snap):
            if ie.file_name not in skip:
                skip.add(ie.file_name)
                b.add(b.data, paths.index_file_path(ie), "index", ie.file_size, reason)
        skip.add(snap.index_manifest)
        b.add(b.manifests, paths.manifest_path(snap.index_manifest), "index-manifest", None, reason)
    if snap.statistics and snap.statistics not in skip:
        skip.add(snap.statistics)
        b.add(b.data, paths.statistics_path(snap.statistics), "statistics", None, reason)


def note_tagged_changelogs(
    b: DeletionBuilder, expiring: list[Snapshot], tags: list[Tag], decoupled: bool
) -> None:
    """Say what happens to the changelog of a tagged snapshot: as in Paimon, a tag keeps its
    data, not its changelog (issue 12.4; docs/commands.md "Long-lived changelogs")."""
    if decoupled:
        return  # the changelog moves to changelog-N and keeps its files
    tagged = {t.snapshot.id: t.name for t in tags}
    hit = [s for s in expiring if s.changelog_manifest_list and s.id in tagged]
    if hit:
        names = ", ".join(f"{tagged[s.id]} (snapshot {s.id})" for s in hit)
        b.notes.append(
            f"changelog files of tagged snapshots are deleted, as Paimon does: {names}; a tag "
            "keeps the data it reads, not the changelog"
        )


def plan_deleted_data(
    b: DeletionBuilder,
    deltas: Iterable[tuple[Snapshot, Deleted | None]],
    tags: list[Tag],
    keys_of: Callable[[Tag], KeySet],
    branch_files: Mapping[str, str],
    config: ExpireConfig,
) -> None:
    """Step 1: the data files each expiring delta deleted, unless the newest earlier tag
    still reads them, another branch uses them, or (decoupled, no producer) they are the
    changelog."""
    decoupled = config.changelog_decoupled
    produce_changelog = config.changelog_producer != "none"
    for snap, deleted in deltas:
        if deleted is None:
            continue
        previous = [t for t in tags if t.snapshot.id < snap.id]
        keys = keys_of(previous[-1]) if previous else set()
        reason = f"removed by snapshot {snap.id}"
        for path, entry in deleted:
            if decoupled and not produce_changelog and entry.file_source in (None, 0):
                b.kept_for_changelog += 1  # producer none: APPEND files are the changelog
                continue
            if (entry.partition, entry.bucket, entry.file_name) in keys:
                b.kept_by_tag.append(KeptByTag(path, previous[-1].name))
                continue
            if path in branch_files:
                b.kept_by_branch.append(KeptByBranch(path, branch_files[path]))
                continue
            b.add_deleted(path, entry, "data", reason)


def plan_coupled_changelogs(
    b: DeletionBuilder, expiring: list[Snapshot], branch_files: Mapping[str, str]
) -> None:
    """Step 2 (coupled lifecycle only): the changelog files of the expiring snapshots; as
    in Paimon, tags do not protect them."""
    table = b.table
    for snap in expiring:
        if not snap.changelog_manifest_list:
            continue
        entries = vanished_or_raise(table, snap, partial(table.changelog_files, snap))
        if entries is None:
            continue
        for entry in entries:
            if entry.kind is not FileKind.ADD:
                continue
            path = table.paths.data_file_path(entry)
            if path in branch_files:
                b.kept_by_branch.append(KeptByBranch(path, branch_files[path]))
                continue
            b.add_entry(entry, "changelog", f"changelog of expired snapshot {snap.id}")


def plan_unused_metadata(
    b: DeletionBuilder,
    expiring: list[Snapshot],
    skip: set[str],
    config: ExpireConfig,
    branch_files: Mapping[str, str],
    changelog_files: Mapping[str, int],
    lists: ListCache | None = None,
) -> None:
    """Step 3: manifests, index and statistics files not used by the new earliest snapshot
    or the skipping tags (``skip``); then what another branch or a long-lived changelog
    still uses is kept. ``lists``: manifest lists already read (``read_deltas``)."""
    decoupled = config.changelog_decoupled
    data_lists = not decoupled or config.changelog_producer != "none"
    seen: set[Hashable] = set()
    for snap in expiring:
        plan_one = partial(
            _plan_manifests,
            b,
            snap,
            skip,
            lists or {},
            seen,
            data_lists=data_lists,
            changelog_list=not decoupled,
        )
        vanished_or_raise(b.table, snap, plan_one)
    for bucket in (b.manifests, b.data):
        kept = [a for a in bucket if a.path in branch_files]
        for a in kept:
            b.kept_by_branch.append(KeptByBranch(a.path, branch_files[a.path]))
        bucket[:] = [a for a in bucket if a.path not in branch_files]
        for a in bucket:
            if a.path in changelog_files:
                b.kept_by_changelog.append(KeptByChangelog(a.path, changelog_files[a.path]))
        bucket[:] = [a for a in bucket if a.path not in changelog_files]


def pointer_phases(
    b: DeletionBuilder, expiring: list[Snapshot], end: int, latest: int, config: ExpireConfig
) -> list[Phase]:
    """Step 4, pointers first: changelog-N (decoupled), snapshot files ascending and
    EARLIEST, then manifests, then data files, then empty directories."""
    table = b.table
    phases: list[Phase] = []
    if config.changelog_decoupled:
        phases.append(_changelog_pointers(table, expiring))
    directory = table.snapshots.directory
    snapshot_actions = _stale_latest_hint(table, directory, end, latest)
    snapshot_actions += [
        FileAction.commit_delete(table.snapshots.path(s.id), "snapshot", None, "expired", s)
        for s in expiring
    ]
    snapshot_actions.append(
        FileAction.write_hint(directory, "EARLIEST", end, "new earliest snapshot")
    )
    phases.append(Phase("snapshot-files", tuple(snapshot_actions), sequential=True))
    phases.append(Phase("manifests", tuple(b.manifests)))
    phases.append(Phase("data-files", tuple(b.data)))
    if config.clean_empty_directories and b.buckets:
        phases.append(
            Phase("empty-directories", tuple(empty_dir_actions(table, b.buckets)), sequential=True)
        )
    return phases


def _stale_latest_hint(
    table: PaimonTable, directory: str, end: int, latest: int
) -> list[FileAction]:
    """A LATEST hint below the new earliest snapshot is rewritten first (safer than Paimon,
    whose expiry leaves it): readers, Java's too, take the hint as the latest whenever the
    next snapshot is absent, so once the expiry removes that one they would read a snapshot
    that is gone. Such a hint is left by a writer whose hint write failed (pypaimon only
    warns) or by a rollback that stopped for a commit landing beside its own hint write. A
    hint at or below the real latest is always safe: with the next snapshot present,
    readers list the directory."""
    hint = table.snapshots.latest_hint()
    if hint is None or hint >= end:
        return []
    return [
        FileAction.write_hint(
            directory, "LATEST", latest, f"the LATEST hint named snapshot {hint}, which expires"
        )
    ]


def _changelog_pointers(table: PaimonTable, expiring: list[Snapshot]) -> Phase:
    """Decoupled lifecycle: each expiring snapshot becomes ``changelog/changelog-N``."""
    writes = [
        FileAction(
            "write",
            table.changelogs.path(s.id),
            "changelog-json",
            None,
            "keeps the changelog of an expired snapshot (decoupled lifecycle)",
            json.dumps(dict(s.raw), indent=2),
        )
        for s in expiring
    ]
    if expiring:
        writes.append(changelog_latest_hint(table, expiring[-1].id))
    return Phase("changelog-pointers", tuple(writes), sequential=True)


def changelog_latest_hint(table: PaimonTable, latest: int) -> FileAction:
    """Write the long-lived changelogs' ``LATEST`` hint (``-1``: none left, as Paimon)."""
    directory = table.changelogs.directory
    return FileAction.write_hint(directory, "LATEST", latest, "long-lived changelog hint")


def read_deltas(
    table: PaimonTable,
    snaps: list[Snapshot],
    executor: Executor,
    progress: Progress,
    lists: ListCache | None = None,
) -> list[tuple[Snapshot, Deleted | None]]:
    """Each snapshot's delta deletions (None when the snapshot vanished meanwhile), read
    inline on local disk (``metadata_work``): worker processes cost more CPU to start than
    the decoding they would share on a busy 2-core machine. The delta lists read go into
    ``lists`` (step 3 reads each list once)."""
    progress.start("reading deltas", len(snaps))
    deltas = executor.map(
        partial(_read_delta, table, {} if lists is None else lists),
        snaps,
        on_result=lambda _r: progress.advance(),
        work=metadata_work(table),
    )
    progress.finish()
    return list(zip(snaps, deltas, strict=True))
