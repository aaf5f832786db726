"""Data behind ``paimon inspect``: typed rows for every view; rendering lives in the CLI."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from core.errors import PaimonError
from core.format.model import Consumer, ManifestEntry, Snapshot, Tag
from core.io.fileio import FileInfo
from core.ops.inspection.live_rows import reader_rows, records
from core.ops.inspection.space import FileSizes, SpaceView, file_sizes, space_view
from core.retention.expire_range import ExpireRange, active_consumers, compute_range, expire_config
from core.runtime.executors.base import Executor
from core.runtime.timeparse import local_datetime, local_wall_clock_ms, resolve_zone
from core.table.scan import ManifestCache, full_live_set
from core.table.table import PaimonTable

_SKIP_WALK = frozenset({".paimon-cli"})


@dataclass(frozen=True, slots=True)
class FileRow:
    path: str
    name: str
    partition: dict[str, str | None]
    bucket: int
    level: int
    size: int
    rows: int
    kind: str  # data | changelog
    source: str | None
    schema_id: int
    creation_time: str | None  # the writer's local wall clock, as Paimon stores it
    extra_files: tuple[str, ...]
    external: bool
    # creation_time read in the table's zone (Paimon's creationTimeEpochMillis).
    creation_ms: int | None = None


@dataclass(frozen=True, slots=True)
class PartitionRow:
    partition: dict[str, str | None]
    path: str
    files: int
    rows: int
    bytes: int
    last_update: str | None  # newest _CREATION_TIME (writer's local wall clock)


@dataclass(frozen=True, slots=True)
class ManifestRow:
    name: str
    list_kind: str  # base | delta | changelog
    size: int
    added: int
    deleted: int
    schema_id: int


@dataclass(frozen=True, slots=True)
class RetentionView:
    config: dict[str, Any]
    range: ExpireRange
    expirable: int  # snapshot files that would be deleted right now
    kept: int
    stale_consumers: tuple[str, ...]
    tags_due: tuple[str, ...]
    changelogs: ChangelogBacklog | None = None


@dataclass(frozen=True, slots=True)
class ChangelogBacklog:
    """Long-lived changelogs on storage and what the table's own settings would expire."""

    decoupled: bool
    count: int
    earliest: int | None
    latest: int | None
    expirable: int  # of those present, or written by the snapshot expiry above
    stop: str
    stop_detail: str


@dataclass(frozen=True, slots=True)
class Summary:
    table: PaimonTable
    earliest: int | None
    latest: Snapshot | None
    snapshot_count: int
    tags: list[Tag]
    consumers: list[Consumer]
    branches: list[str]
    live_files: int
    live_records: int  # the live files' row counts, before merges and deletion vectors
    reader_rows: (
        int | None
    )  # what a reader returns, where metadata says (core.ops.inspection.live_rows)
    live_bytes: int
    partitions: int
    storage_bytes: int | None
    storage_files: int | None
    retention: RetentionView | None
    retention_error: str | None = None
    notes: list[str] = field(default_factory=list)
    space: SpaceView | None = None  # bytes by category (needs the storage listing)
    space_error: str | None = None
    file_sizes: FileSizes | None = None


def creation_text(entry: ManifestEntry) -> str | None:
    ct = entry.file.creation_time
    return ct.replace(tzinfo=None).isoformat(sep=" ", timespec="seconds") if ct else None


def creation_epoch_ms(entry: ManifestEntry, zone: dt.tzinfo | None) -> int | None:
    ct = entry.file.creation_time
    if ct is None:
        return None
    return local_wall_clock_ms(ct.replace(tzinfo=None), zone or resolve_zone(None))


def file_rows(
    table: PaimonTable,
    live: list[ManifestEntry],
    kind: str = "data",
    *,
    zone: dt.tzinfo | None = None,
) -> list[FileRow]:
    """Rows of the live files; ``zone`` (default: this machine's) reads creation times."""
    paths = table.paths
    rows = []
    for e in live:
        f = e.file
        rows.append(
            FileRow(
                path=paths.data_file_path(e),
                name=f.file_name,
                partition=paths.partition_spec(e.partition),
                bucket=e.bucket,
                level=f.level,
                size=f.file_size,
                rows=f.row_count,
                kind=kind,
                source={0: "APPEND", 1: "COMPACT"}.get(f.file_source or -1)
                if f.file_source is not None
                else None,
                schema_id=f.schema_id,
                creation_time=creation_text(e),
                extra_files=f.extra_files,
                external=f.external_path is not None,
                creation_ms=creation_epoch_ms(e, zone),
            )
        )
    rows.sort(key=lambda r: r.path)
    return rows


def partition_rows(table: PaimonTable, live: list[ManifestEntry]) -> list[PartitionRow]:
    acc: dict[bytes, list[Any]] = {}
    for e in live:
        slot = acc.setdefault(e.partition, [0, 0, 0, None])
        slot[0] += 1
        slot[1] += e.file.row_count
        slot[2] += e.file.file_size
        ct = e.file.creation_time
        if ct is not None:
            ct = ct.replace(tzinfo=None)
            slot[3] = ct if slot[3] is None or ct > slot[3] else slot[3]
    out = [
        PartitionRow(
            partition=table.paths.partition_spec(part),
            path=table.paths.partition_path(part),
            files=v[0],
            rows=v[1],
            bytes=v[2],
            last_update=v[3].isoformat(sep=" ", timespec="seconds") if v[3] else None,
        )
        for part, v in acc.items()
    ]
    out.sort(key=lambda r: r.path)
    return out


def manifest_rows(table: PaimonTable, snapshot: Snapshot) -> list[ManifestRow]:
    out = []
    lists = [("base", snapshot.base_manifest_list), ("delta", snapshot.delta_manifest_list)]
    if snapshot.changelog_manifest_list:
        lists.append(("changelog", snapshot.changelog_manifest_list))
    for kind, name in lists:
        for m in table.manifest_list(snapshot, name):
            out.append(
                ManifestRow(
                    m.file_name,
                    kind,
                    m.file_size,
                    m.num_added_files,
                    m.num_deleted_files,
                    m.schema_id,
                )
            )
    return out


def retention_view(
    table: PaimonTable, now_ms: int, consumers: list[Consumer], tags: list[Tag], zone: dt.tzinfo
) -> RetentionView:
    config = expire_config(table.options)
    protecting, stale = active_consumers(consumers, config, now_ms)
    rng = compute_range(table.snapshots, config, protecting, now_ms)
    present = table.snapshots.ids()
    expirable = sum(1 for i in present if rng.end is not None and i < rng.end)
    now_local = local_datetime(now_ms, zone)
    due = tuple(t.name for t in tags if t.expire_at is not None and t.expire_at < now_local)
    cfg = {
        "retain_min": config.retain_min,
        "retain_max": config.retain_max,
        "time_retained_ms": config.time_retained_ms,
        "expire_limit": config.expire_limit,
    }
    return RetentionView(
        cfg,
        rng,
        expirable,
        len(present) - expirable,
        tuple(c.id for c in stale),
        due,
        changelog_backlog(table, rng.end, config.changelog_decoupled, protecting, now_ms),
    )


def changelog_backlog(
    table: PaimonTable,
    end: int | None,
    decoupled: bool,
    consumers: list[Consumer],
    now_ms: int,
) -> ChangelogBacklog:
    """Changelog expiry as the commit path would run it after the snapshot expiry ending at
    ``end`` (its new changelog-N counted), on the table's own settings (semantics 2.10)."""
    from core.retention.changelog_range import (
        LazyChangelogs,
        TableState,
        commit_config,
        compute_changelog_range,
    )

    ids = table.changelogs.ids()
    if not decoupled:
        detail = "the lifecycle is not decoupled: only expire-changelogs removes them"
        return ChangelogBacklog(
            False, len(ids), ids[0] if ids else None, ids[-1] if ids else None, 0, "coupled", detail
        )
    snap_ids = table.snapshots.ids()
    expiring = (
        {} if end is None else {i: table.snapshots.try_snapshot(i) for i in snap_ids if i < end}
    )
    first = next((i for i in snap_ids if end is None or i >= end), None)
    earliest = table.snapshots.try_snapshot(first) if first is not None else None
    changelogs = LazyChangelogs(table, ids, {i: s for i, s in expiring.items() if s is not None})
    state = TableState(earliest, snap_ids[-1] if snap_ids else None, changelogs)
    config, _ = commit_config(table)
    min_next = min((c.next_snapshot for c in consumers), default=None)
    rng = compute_changelog_range(state, config, min_next, now_ms)
    return ChangelogBacklog(
        True,
        len(ids),
        ids[0] if ids else None,
        ids[-1] if ids else None,
        len(rng.ids),
        rng.stop,
        rng.detail,
    )


def walk_storage(table: PaimonTable, executor: Executor) -> Iterator[FileInfo]:
    """Every file under the table root and its external roots, listed level by level."""
    roots = [table.location, *table.paths.external_roots]
    level = [r for r in roots if table.fileio.exists(r)]
    while level:
        listings = executor.map(table.fileio.list_dir, level)
        level = []
        for entries in listings:
            for info in entries:
                if info.is_symlink:
                    continue
                if info.is_dir:
                    if info.name not in _SKIP_WALK:
                        level.append(info.path)
                else:
                    yield info


def _live_files(table: PaimonTable, latest: Snapshot, executor: Executor) -> list[ManifestEntry]:
    return list(full_live_set(table, latest, ManifestCache(table, executor)).values())


def summarize(
    table: PaimonTable, *, now_ms: int, executor: Executor, zone: dt.tzinfo, storage: bool = True
) -> Summary:
    ids = table.snapshots.ids()
    latest = table.snapshots.latest()
    tags = table.tags.tags()
    consumers = table.consumers.consumers()
    listed = list(walk_storage(table, executor)) if storage else None
    retention: RetentionView | None = None
    retention_error = None
    try:
        retention = retention_view(table, now_ms, consumers, tags, zone)
    except PaimonError as exc:  # a bad retention option must not hide the rest of the summary
        retention_error = exc.message
    space, space_error = None, None
    walked: dict[int, list[ManifestEntry]] = {}  # live files of the snapshot the walk ended at
    if listed is not None:
        expirable = {
            i for i in ids if retention and retention.range.end and i < retention.range.end
        }
        try:
            space = space_view(
                table,
                listed,
                executor=executor,
                now_ms=now_ms,
                expirable=expirable,
                tags_due=set(retention.tags_due if retention else ()),
                latest_live=walked,
            )
        except PaimonError as exc:  # unreadable metadata: inspect --check says which
            space_error = exc.message
            walked.clear()
    live: list[ManifestEntry] = []
    if latest is not None:
        found = walked.get(latest.id)
        live = found if found is not None else _live_files(table, latest, executor)
    return Summary(
        table=table,
        earliest=table.snapshots.earliest_id(),
        latest=latest,
        snapshot_count=len(ids),
        tags=tags,
        consumers=consumers,
        branches=table.branches.branches(),
        live_files=len(live),
        live_records=records(live),
        reader_rows=reader_rows(table, latest, live) if latest is not None else 0,
        live_bytes=sum(e.file.file_size for e in live),
        partitions=len({e.partition for e in live}),
        storage_bytes=None if listed is None else sum(i.size for i in listed),
        storage_files=None if listed is None else len(listed),
        retention=retention,
        retention_error=retention_error,
        space=space,
        space_error=space_error,
        file_sizes=file_sizes(table, live, now_ms=now_ms) if latest is not None else None,
    )
