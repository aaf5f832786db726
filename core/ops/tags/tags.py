"""Tag plans: create, replace, rename, delete (with TagDeletion's file cleanup) and expire.

A tag file is the tagged snapshot's JSON, written as Java writes it
(``tagCreateTime`` as a LocalDateTime array, ``tagTimeRetained`` as decimal seconds, both
only with a retention). Deleting a tag whose snapshot is gone also deletes the files only
that tag kept alive; a file any snapshot, tag or long-lived changelog of any branch still
references is never touched (Paimon's neighbour rule gives the same set on main; other
branches are protected too, D3). Deletions run through ``core.runtime.apply`` with a journal, tag
files first (pointers first, D2).
"""

from __future__ import annotations

import datetime as dt
import json
import logging
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, TypeVar

from core.errors import InvalidOptionError, MissingFileError, PaimonError
from core.format.model import Snapshot, Tag
from core.io.fileio import file_size
from core.ops.details.tags import CreateTagDetails, DeletedTag, TagDeletionDetails
from core.retention.references import changelog_references, collect_references
from core.retention.tag_period import period_handler
from core.runtime.executors.base import Executor
from core.runtime.plans import FileAction, Phase, Plan, Requirements
from core.runtime.timeparse import format_wall_clock, iso_utc, local_datetime
from core.table.scan import ManifestCache, full_live_set, live_sets
from core.table.table import PaimonTable
from core.write.commit import JavaDecimal, create_if_absent, java_json, ordered_snapshot_fields

logger = logging.getLogger(__name__)

P = TypeVar("P", bound=Plan[Any])


class TagError(PaimonError):
    """A tag operation that cannot be done as asked (exists, missing, snapshot gone)."""

    kind = "tag_error"


def validate_tag_name(name: str) -> str:
    """Tag names are file-name suffixes: non-blank, no separators, not a temp-file name."""
    if not name or not name.strip():
        raise InvalidOptionError("tag name must not be blank")
    if "/" in name or "\\" in name or name in (".", "..") or name.startswith("."):
        raise InvalidOptionError(
            f"invalid tag name {name!r}: it becomes the file name tag-<name>, so it may not "
            "contain '/' or '\\' or start with '.'"
        )
    if name.strip().isdigit():
        raise InvalidOptionError(f"invalid tag name {name!r}: all digits (reads as a snapshot id)")
    return name


# -- tag JSON ------------------------------------------------------------------------------------
def java_local_datetime(value: dt.datetime) -> list[int]:
    """Jackson's LocalDateTime array: seconds and nanos only when non-zero."""
    parts = [value.year, value.month, value.day, value.hour, value.minute]
    nanos = value.microsecond * 1000
    if value.second or nanos:
        parts.append(value.second)
    if nanos:
        parts.append(nanos)
    return parts


def java_duration_seconds(ms: int) -> JavaDecimal:
    """Jackson's Duration: decimal seconds with nanosecond scale (``86400.000000000``)."""
    seconds, millis = divmod(ms, 1000)
    return JavaDecimal(f"{seconds}.{millis * 1_000_000:09d}")


def tag_content(
    snapshot: Snapshot, *, create_time: dt.datetime | None, time_retained_ms: int | None
) -> str:
    """Tag file text: the snapshot JSON, plus the TTL fields only when a retention is given."""
    data: dict[str, Any] = ordered_snapshot_fields(snapshot.raw)
    if time_retained_ms is not None and create_time is not None:
        data["tagCreateTime"] = java_local_datetime(create_time)
        data["tagTimeRetained"] = java_duration_seconds(time_retained_ms)
    return java_json(data)


# -- create / replace / rename -------------------------------------------------------------------
def _source_snapshot(table: PaimonTable, snapshot_id: int | None) -> Snapshot:
    if snapshot_id is None:
        latest = table.snapshots.latest()
        if latest is None:
            raise TagError(f"{table.location} has no snapshot to tag")
        return latest
    snap = table.snapshots.try_snapshot(snapshot_id)
    if snap is not None:
        return snap
    # An expired snapshot can still be tagged from another tag on it (Paimon findSnapshot).
    for tag in table.tags.tags():
        if tag.snapshot.id == snapshot_id:
            return tag.snapshot
    earliest = table.snapshots.earliest_id()
    raise TagError(
        f"snapshot {snapshot_id} does not exist"
        + (
            f" (earliest is {earliest}; it has expired)"
            if earliest and snapshot_id < earliest
            else ""
        ),
        hint="an expired snapshot cannot be tagged: its files may already be gone",
    )


def snapshot_from_time(table: PaimonTable, time_ms: int) -> Snapshot:
    """Paimon's ``create_tag_from_timestamp``: the earliest snapshot committed at or after
    the time, or a tag's snapshot when the first tag (by snapshot id) committed at or after
    it is earlier still (its snapshot may have expired); refused when there is none. Of
    snapshots committed in the same millisecond the lowest id is the first (DECISIONS D4)."""
    snap = table.snapshots.later_or_equal_time(time_ms)
    for tag in table.tags.tags():
        if time_ms <= tag.snapshot.time_millis:
            tagged = tag.snapshot
            if snap is None or (tagged.time_millis, tagged.id) < (snap.time_millis, snap.id):
                snap = tagged
            break
    if snap is None:
        raise TagError(
            f"no snapshot or tag of {table.location} was committed at or after {iso_utc(time_ms)}",
            hint="give an earlier time (Paimon's create_tag_from_timestamp picks the first "
            "snapshot committed at or after it)",
        )
    return snap


def _requirements(table: PaimonTable, tags: Mapping[str, int] | None = None) -> Requirements:
    return Requirements(
        latest_snapshot=table.snapshots.latest_id(),
        expire_end=None,
        tags=dict(tags or {}),
        branches=tuple(table.branches.branches()),
        consumers_min_next=None,
    )


def plan_create_tag(
    table: PaimonTable,
    name: str,
    *,
    snapshot_id: int | None,
    time_retained_ms: int | None,
    replace_existing: bool,
    now_local: dt.datetime,
    now_ms: int,
    from_time_ms: int | None = None,
) -> Plan[CreateTagDetails]:
    """One write: ``tag/tag-<name>`` from the snapshot (latest by default, or the first
    committed at or after ``from_time_ms``)."""
    validate_tag_name(name)
    if time_retained_ms is not None and time_retained_ms <= 0:
        raise InvalidOptionError("time retained must be positive")
    if snapshot_id is not None and from_time_ms is not None:
        raise InvalidOptionError("give a snapshot or a time, not both")
    exists = name in table.tags.names()
    if exists and not replace_existing:
        raise TagError(f"tag {name!r} already exists", hint="pass --replace to move it")
    if from_time_ms is not None:
        snapshot_id = snapshot_from_time(table, from_time_ms).id
    snap = _source_snapshot(table, snapshot_id)
    content = tag_content(snap, create_time=now_local, time_retained_ms=time_retained_ms)
    action = FileAction(
        "write",
        table.tags.path(name),
        "tag",
        len(content.encode("utf-8")),
        (
            "replaces the tag on snapshot " + str(table.tags.tag(name).snapshot.id)
            if exists
            else "new tag"
        )
        + f" -> snapshot {snap.id}",
        content,
    )
    details = CreateTagDetails(
        tag=name,
        snapshot_id=snap.id,
        snapshot_time_ms=snap.time_millis,
        replace=exists,
        time_retained_ms=time_retained_ms,
        create_time_local=now_local.isoformat(sep=" ") if time_retained_ms else None,
        # --from-timestamp: the time asked for (the snapshot is the first at or after it)
        from_timestamp_ms=from_time_ms,
        create_time_ms=now_ms if time_retained_ms else None,
    )
    return Plan(
        "create-tag",
        table.location,
        table.branch,
        now_ms,
        (Phase("tag", (action,), sequential=True),),
        _requirements(table, {name: snap.id}),
        details,
    )


def apply_create_tag(table: PaimonTable, plan: Plan[CreateTagDetails]) -> None:
    """Write the tag; refuse if its snapshot vanished or another writer created the tag."""
    action = plan.phases[0].actions[0]
    name, sid = plan.details.tag, plan.details.snapshot_id
    if table.snapshots.try_snapshot(sid) is None and not any(
        t.snapshot.id == sid for t in table.tags.tags()
    ):
        raise TagError(f"snapshot {sid} expired while planning; nothing written")
    from_snapshot_file = table.snapshots.try_snapshot(sid) is not None
    data = (action.content or "").encode("utf-8")
    if plan.details.replace:
        table.fileio.write_bytes(action.path, data)
    elif not create_if_absent(table.fileio, action.path, data):
        raise TagError(f"tag {name!r} was created by someone else meanwhile; nothing written")
    gone = _vanished_after_write(table, action.content or "", sid, from_snapshot_file)
    if gone is not None:
        # An expiry deleted it between our read and our write, after its last re-check saw
        # the tags: the tag would point at deleted files (issue 12 defect 6).
        table.fileio.delete(action.path)
        raise TagError(
            f"{gone} was deleted (a concurrent expire-snapshots?) while tag {name!r} was "
            "written; the tag was removed again",
            hint="tag a snapshot that is retained, e.g. the latest",
        )


def _vanished_after_write(
    table: PaimonTable, content: str, sid: int, from_snapshot_file: bool
) -> str | None:
    """What the new tag needs that is gone now: its snapshot file (when it was read from
    one; expiry deletes that first) or one of its manifest lists."""
    if from_snapshot_file and not table.fileio.exists(table.snapshots.path(sid)):
        return f"snapshot {sid}"
    snap = Snapshot.from_json(json.loads(content), table.tags.directory)
    # Not the changelog list: expiry may delete it for tagged snapshots (Paimon does).
    for name in (snap.base_manifest_list, snap.delta_manifest_list):
        if not table.fileio.exists(table.paths.manifest_path(name)):
            return f"manifest list {name} of snapshot {sid}"
    return None


def rename_tag(table: PaimonTable, old: str, new: str) -> tuple[str, str]:
    """Rename by creating the new file (if absent) and then deleting the old one."""
    validate_tag_name(old)
    validate_tag_name(new)
    names = table.tags.names()
    if old not in names:
        raise TagError(f"tag {old!r} does not exist")
    if new in names:
        raise TagError(f"tag {new!r} already exists")
    src, dst = table.tags.path(old), table.tags.path(new)
    try:
        data = table.fileio.read_bytes(src)
    except FileNotFoundError:
        raise TagError(f"tag {old!r} vanished meanwhile") from None
    if not create_if_absent(table.fileio, dst, data):
        raise TagError(f"tag {new!r} was created by someone else meanwhile")
    table.fileio.delete(src)
    return src, dst


# -- deletion ------------------------------------------------------------------------------------
def branches_from_tag(table: PaimonTable, tag: Tag) -> list[str]:
    """Other branches created from this tag: they hold a copy of it (or of its snapshot).
    The tag's own branch is never one of them (a tag a branch created itself)."""
    out = []
    for branch in table.branches.branches():
        if branch == table.branch:
            continue
        view = table.for_branch(branch)
        copy = view.tags.listing().get(tag.name)
        if copy is not None:
            try:
                if view.tags.tag(tag.name).snapshot.id == tag.snapshot.id:
                    out.append(branch)
                    continue
            except MissingFileError:
                pass
        snap = view.snapshots.try_snapshot(tag.snapshot.id)
        if snap is not None and snap.base_manifest_list == tag.snapshot.base_manifest_list:
            out.append(branch)
    return out


def _root_references(
    table: PaimonTable, executor: Executor, exclude: Mapping[str, int]
) -> set[str]:
    """Every path referenced by any snapshot, tag or changelog of any branch, except the
    tags in ``exclude`` (``<branch>/<tag>`` -> snapshot id) that still point there."""
    protected: set[str] = set()

    def want(path: str, _size: Any, _role: str) -> None:
        protected.add(path)

    views = [table if table.branch == "main" else table.for_branch("main")]
    views += [table.for_branch(b) for b in table.branches.branches()]
    for view in views:
        cache = ManifestCache(view, executor)
        for snap, live in live_sets(view, view.snapshots.snapshots(), cache):
            collect_references(view, snap, live, want)
        for tag in view.tags.tags():
            if exclude.get(f"{view.branch}/{tag.name}") == tag.snapshot.id:
                continue
            live = full_live_set(view, tag.snapshot, cache)
            collect_references(view, tag.snapshot, live, want, kind="tag")
        changelog_references(view, lambda _id: want)
    return protected


def _tag_candidates(table: PaimonTable, tag: Tag, cache: ManifestCache) -> list[FileAction]:
    """What TagDeletion considers: the tag's live data files (+ extras), its base and delta
    lists and their manifests, its index manifest and index files, its statistics."""
    snap, paths = tag.snapshot, table.paths
    reason = f"only used by deleted tag {tag.name}"
    out: list[FileAction] = []
    for entry in full_live_set(table, snap, cache).values():
        f = entry.file
        out.append(FileAction("delete", paths.data_file_path(entry), "data", f.file_size, reason))
        for extra in paths.extra_file_paths(entry.partition, entry.bucket, f):
            out.append(FileAction("delete", extra, "extra", None, reason))
    sizes = {
        snap.base_manifest_list: snap.raw.get("baseManifestListSize"),
        snap.delta_manifest_list: snap.raw.get("deltaManifestListSize"),
    }
    for list_name in (snap.base_manifest_list, snap.delta_manifest_list):
        for meta in table.manifest_list(snap, list_name):
            out.append(
                FileAction(
                    "delete",
                    paths.manifest_path(meta.file_name),
                    "manifest",
                    meta.file_size,
                    reason,
                )
            )
        out.append(
            FileAction(
                "delete", paths.manifest_path(list_name), "manifest-list", sizes[list_name], reason
            )
        )
    if snap.index_manifest:
        for ie in table.index_manifest(snap):
            out.append(
                FileAction("delete", paths.index_file_path(ie), "index", ie.file_size, reason)
            )
        out.append(
            FileAction(
                "delete", paths.manifest_path(snap.index_manifest), "index-manifest", None, reason
            )
        )
    if snap.statistics:
        out.append(
            FileAction("delete", paths.statistics_path(snap.statistics), "statistics", None, reason)
        )
    return out


_DATA_KINDS = frozenset({"data", "extra", "index", "statistics"})


def plan_delete_tags(
    table: PaimonTable,
    names: Sequence[str],
    *,
    executor: Executor,
    now_ms: int,
    force: bool = False,
    command: str = "delete-tag",
    reasons: Mapping[str, str] | None = None,
) -> Plan[TagDeletionDetails]:
    """Tag files first, then manifests, then data files only the deleted tags kept alive."""
    for name in names:
        validate_tag_name(name)
    existing = {t.name: t for t in table.tags.tags()}
    missing = [n for n in names if n not in existing]
    doomed = [existing[n] for n in dict.fromkeys(names) if n in existing]
    refused = _refuse_branch_bases(table, doomed, force=force)
    exclude = {f"{table.branch}/{t.name}": t.snapshot.id for t in doomed}
    freeing = _Freeing(table, _root_references(table, executor, exclude) if doomed else set())
    cache = ManifestCache(table, executor)
    listing = table.tags.listing()
    tag_actions: list[FileAction] = []
    per_tag: list[DeletedTag] = []
    for tag in doomed:
        reason = (reasons or {}).get(tag.name, "deleted on request")
        tag_actions.append(
            FileAction.commit_delete(
                table.tags.path(tag.name),
                "tag",
                file_size(listing, tag.name),
                reason,
                tag.snapshot,
            )
        )
        snapshot_alive = table.snapshots.try_snapshot(tag.snapshot.id) is not None
        freed = 0 if snapshot_alive else freeing.add(tag, _tag_candidates(table, tag, cache))
        branches = tuple(refused.get(tag.name, ()))
        per_tag.append(
            DeletedTag(tag.name, tag.snapshot.id, snapshot_alive, freed, reason, branches)
        )
    details = TagDeletionDetails(tuple(per_tag), tuple(missing), bool(refused) and force)
    phases = (
        Phase("tag-files", tuple(tag_actions), sequential=True),
        Phase("manifests", tuple(freeing.manifests)),
        Phase("data-files", tuple(freeing.data)),
    )
    return Plan(
        command,
        table.location,
        table.branch,
        now_ms,
        phases,
        _requirements(table, {t.name: t.snapshot.id for t in doomed}),
        details,
    )


def _refuse_branch_bases(
    table: PaimonTable, doomed: list[Tag], *, force: bool
) -> dict[str, list[str]]:
    """Tag -> branches created from it; a refusal unless ``force`` (Paimon issue #6272)."""
    refused: dict[str, list[str]] = {}
    for tag in doomed:
        branches = branches_from_tag(table, tag)
        if branches:
            refused[tag.name] = branches
    if refused and not force:
        name, branches = next(iter(refused.items()))
        raise TagError(
            f"branch {', '.join(branches)} was created from tag {name!r}"
            + ("" if table.branch == "main" else f" of branch {table.branch}")
            + "; deleting the tag "
            "could delete files the branch still uses (Paimon issue #6272)",
            hint="pass --force to delete the tag anyway (files the branch uses are still kept)",
        )
    return refused


@dataclass
class _Freeing:
    """The files deleted tags alone kept alive: each once, never a protected one."""

    table: PaimonTable
    protected: set[str]
    manifests: list[FileAction] = field(default_factory=list)
    data: list[FileAction] = field(default_factory=list)
    seen: set[str] = field(default_factory=set)

    def add(self, tag: Tag, candidates: list[FileAction]) -> int:
        """Plan the candidates of ``tag`` no other root needs; returns how many."""
        freed = 0
        for action in candidates:
            if action.path in self.protected or action.path in self.seen:
                continue
            if not self.table.paths.is_inside_table(action.path):
                raise TagError(
                    f"tag {tag.name} references {action.path}, outside the table root and "
                    "its declared external paths; refusing to plan any deletion"
                )
            self.seen.add(action.path)
            (self.data if action.kind in _DATA_KINDS else self.manifests).append(action)
            freed += 1
        return freed


def filter_for_resume(table: PaimonTable, plan: P) -> P:
    """Fresh plans and journals: drop every delete a root present now still needs, and the
    tag-file delete of a tag that was moved to another snapshot meanwhile."""
    from core.runtime.executors.local import LocalExecutor

    planned = dict(plan.requirements.tags)
    current = {t.name: t.snapshot.id for t in table.tags.tags()}
    moved = {n for n, sid in planned.items() if n in current and current[n] != sid}
    exclude = {f"{table.branch}/{n}": sid for n, sid in planned.items() if n not in moved}
    protected = _root_references(table, LocalExecutor(1), exclude)  # small, rare: inline
    moved_paths = {table.tags.path(n) for n in moved}
    phases = tuple(
        replace(
            p,
            actions=tuple(
                a
                for a in p.actions
                if not (a.op == "delete" and (a.path in protected or a.path in moved_paths))
            ),
        )
        for p in plan.phases
    )
    return replace(plan, phases=phases)


# -- expiry --------------------------------------------------------------------------------------
def is_auto_tag(name: str, table: PaimonTable) -> bool:
    """Whether Paimon's TagPeriodHandler would parse the name as an automatic tag."""
    return period_handler(table.options).is_auto_tag(name)


@dataclass(frozen=True, slots=True)
class TagExpiry:
    name: str
    reason: str


def select_expired_tags(
    table: PaimonTable,
    *,
    now_local: dt.datetime,
    older_than_local: dt.datetime | None,
    zone: dt.tzinfo,
) -> list[TagExpiry]:
    """TagTimeExpire (retention reached, or created before ``older_than``), then
    ``tag.num-retained-max`` for automatic tags (semantics 5.6-5.7)."""
    tags = table.tags.tags()
    listing = table.tags.listing()
    chosen: dict[str, str] = {}
    for tag in tags:
        create = tag.create_time
        if create is None or tag.time_retained_ms is None:
            if older_than_local is None:
                continue
            info = listing.get(tag.name)
            if info is None or info.mtime_ms is None:
                continue
            create = local_datetime(info.mtime_ms, zone)
        expire_at = tag.expire_at
        if expire_at is not None and now_local > expire_at:
            chosen[tag.name] = f"retention ended {format_wall_clock(expire_at, zone)}"
        elif older_than_local is not None and older_than_local > create:
            chosen[tag.name] = f"created {format_wall_clock(create, zone)}, before --older-than"
    _trim_by_count(table, [t for t in tags if t.name not in chosen], listing, chosen)
    order = {t.name: (t.snapshot.id, t.name) for t in tags}
    return [TagExpiry(n, r) for n, r in sorted(chosen.items(), key=lambda kv: order[kv[0]])]


def _trim_by_count(
    table: PaimonTable, remaining: list[Tag], listing: Mapping[str, Any], chosen: dict[str, str]
) -> None:
    limit = table.options.get_int("tag.num-retained-max")
    mode = (table.options.get("tag.automatic-creation") or "none").lower()
    if limit is None or mode == "none":
        return
    candidates = (
        remaining if mode == "batch" else [t for t in remaining if is_auto_tag(t.name, table)]
    )
    groups: dict[int, list[Tag]] = {}
    for tag in candidates:
        groups.setdefault(tag.snapshot.id, []).append(tag)
    reason = f"beyond tag.num-retained-max={limit}"
    if mode == "batch":  # every tag counts; the last group is trimmed oldest file first
        excess = len(candidates) - limit
        for sid in sorted(groups):
            if excess <= 0:
                break
            group = sorted(
                groups[sid], key=lambda t: getattr(listing.get(t.name), "mtime_ms", 0) or 0
            )
            for tag in group[:excess]:
                chosen[tag.name] = reason
            excess -= min(len(group), excess)
        return
    for sid in sorted(groups)[: max(len(groups) - limit, 0)]:
        for tag in groups[sid]:
            chosen[tag.name] = reason


def expired_tag_names(expiries: Iterable[TagExpiry]) -> dict[str, str]:
    return {e.name: e.reason for e in expiries}
