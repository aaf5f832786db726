"""Rollback to a snapshot or tag: Paimon's ``rollbackTo`` (``RollbackHelper``, Paimon 1.2+).

What goes: every ``snapshot-N`` after the target, every long-lived ``changelog-N`` after it,
and every tag (of the branch) on a snapshot after it; ``LATEST`` moves back to the target
and the changelog ``LATEST`` hint to the newest remaining changelog (``-1`` when none
remain, as Paimon writes). Rolling back to a tag whose snapshot has expired writes
``snapshot-<id>`` from the tag and moves ``EARLIEST`` to it. Data files, manifests and
index files are not deleted (Paimon stopped deleting them in 1.2, PR #5712): files only the
removed snapshots used become orphans for ``delete-orphan-files``.

Safer than Paimon (D3): refused, unless forced, while a consumer has read a snapshot that
would go (its ``nextSnapshot`` is after target + 1: new commits would reuse those ids) or a
branch was created from a tag that would go. Order (D2): the new pointers first (the
snapshot file from the tag, then ``LATEST``), then snapshot files newest first (the ids stay
contiguous), then changelog files and their hint, then tag files, then ``EARLIEST``.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from core.commit import snapshot_json
from core.errors import PaimonError, SafetyRefusalError, StalePlanError
from core.fileio import join
from core.model import Snapshot, Tag
from core.plans import FileAction, Phase, Plan, Requirements
from core.table import PaimonTable
from core.tags import branches_from_tag


class RollbackError(PaimonError):
    kind = "rollback_error"


def _target(
    table: PaimonTable, snapshot_id: int | None, tag_name: str | None
) -> tuple[Snapshot, Tag | None]:
    """The snapshot to keep as latest, and the tag it comes from (if rolling back to one)."""
    tags = table.tags.tags()
    if tag_name is not None:
        for tag in tags:
            if tag.name == tag_name:
                return tag.snapshot, tag
        raise RollbackError(f"tag {tag_name!r} does not exist")
    assert snapshot_id is not None
    snap = table.snapshots.try_snapshot(snapshot_id)
    if snap is not None:
        return snap, None
    # As Paimon: an expired snapshot id that a tag holds rolls back to that tag.
    for tag in sorted(tags, key=lambda t: t.name):
        if tag.snapshot.id == snapshot_id:
            return tag.snapshot, tag
    raise RollbackError(f"snapshot {snapshot_id} does not exist (and no tag holds it)")


def _requirements(table: PaimonTable, latest: int | None) -> Requirements:
    return Requirements(
        latest_snapshot=latest,
        expire_end=None,
        tags={f"{table.branch}/{t.name}": t.snapshot.id for t in table.tags.tags()},
        branches=tuple(table.branches.branches()),
        consumers_min_next=None,
    )


def plan_rollback(
    table: PaimonTable,
    *,
    snapshot_id: int | None = None,
    tag: str | None = None,
    force: bool = False,
    now_ms: int | None = None,
) -> Plan:
    """Everything a rollback removes and rewrites, pointers first (refusals before any change)."""
    if (snapshot_id is None) == (tag is None):
        raise RollbackError("give a snapshot id or a tag, not both")
    target, from_tag = _target(table, snapshot_id, tag)
    tid = target.id
    snapshots = table.snapshots
    listing = snapshots.listing()
    ids = sorted(listing)
    latest = ids[-1] if ids else None
    if latest is None and from_tag is None:
        raise RollbackError(f"{table.location} has no snapshots")
    snapshot_missing = snapshots.try_snapshot(tid) is None
    doomed_snapshots = sorted((i for i in ids if i > tid), reverse=True)
    doomed_tags = sorted(
        (t for t in table.tags.tags() if t.snapshot.id > tid), key=lambda t: t.name
    )
    changelog_ids = table.changelogs.ids()
    doomed_changelogs = sorted((i for i in changelog_ids if i > tid), reverse=True)

    consumers = [c for c in table.consumers.consumers() if c.next_snapshot > tid + 1]
    branches = {t.name: branches_from_tag(table, t) for t in doomed_tags}
    branches = {k: v for k, v in branches.items() if v}
    if (consumers or branches) and not force:
        why = [
            f"consumer {c.id!r} has read up to snapshot {c.next_snapshot - 1}" for c in consumers
        ] + [f"branch {', '.join(v)} was created from tag {k!r}" for k, v in branches.items()]
        raise SafetyRefusalError(
            f"refusing to roll back {table.location} to snapshot {tid}: " + "; ".join(why),
            hint="pass --force to roll back anyway (consumers then re-read reused snapshot ids)",
        )

    pointers: list[FileAction] = []
    if from_tag is not None and snapshot_missing:
        pointers.append(
            FileAction(
                "write",
                snapshots.path(tid),
                "snapshot",
                None,
                f"restored from tag {from_tag.name} (its snapshot had expired)",
                snapshot_json(from_tag.snapshot.raw),
            )
        )
    if doomed_snapshots or pointers:
        pointers.append(
            FileAction(
                "write", join(snapshots.directory, "LATEST"), "hint", None, "rolled back", str(tid)
            )
        )
    snapshot_actions = [
        # The size identifies the file: a resume never removes a snapshot committed since.
        FileAction("delete", snapshots.path(i), "snapshot", listing[i].size, f"after {tid}")
        for i in doomed_snapshots
    ]
    changelog_actions = [
        FileAction("delete", table.changelogs.path(i), "changelog-json", None, f"after {tid}")
        for i in doomed_changelogs
    ]
    if doomed_changelogs:
        remaining = [i for i in changelog_ids if i <= tid]
        changelog_actions.append(
            FileAction(
                "write",
                join(table.changelogs.directory, "LATEST"),
                "hint",
                None,
                "long-lived changelog hint",
                str(remaining[-1] if remaining else -1),
            )
        )
    tag_actions = [
        FileAction("delete", table.tags.path(t.name), "tag", None, f"on snapshot {t.snapshot.id}")
        for t in doomed_tags
    ]
    earliest: list[FileAction] = []
    if from_tag is not None and snapshot_missing:
        earliest.append(
            FileAction(
                "write",
                join(snapshots.directory, "EARLIEST"),
                "hint",
                None,
                "the tag's snapshot is the only one left",
                str(tid),
            )
        )
    details: dict[str, Any] = {
        "target_snapshot": tid,
        "target_tag": from_tag.name if from_tag else None,
        "snapshot_restored_from_tag": bool(from_tag and snapshot_missing),
        "latest_snapshot": latest,
        "snapshots": sorted(doomed_snapshots),
        "changelogs": sorted(doomed_changelogs),
        "tags": [{"name": t.name, "snapshot_id": t.snapshot.id} for t in doomed_tags],
        "consumers_ahead": [{"id": c.id, "next_snapshot": c.next_snapshot} for c in consumers],
        "branches_from_removed_tags": branches,
        "forced": force and bool(consumers or branches),
        "notes": [
            "data files, manifests and index files are kept, as Paimon (1.2+) does: those "
            "only the removed snapshots used are left for delete-orphan-files"
        ],
    }
    phases = (
        Phase("snapshot-pointers", tuple(pointers), sequential=True),
        Phase("snapshot-files", tuple(snapshot_actions), sequential=True),
        Phase("changelog-files", tuple(changelog_actions), sequential=True),
        Phase("tag-files", tuple(tag_actions), sequential=True),
        Phase("earliest-hint", tuple(earliest), sequential=True),
    )
    return Plan(
        "rollback",
        table.location,
        table.branch,
        now_ms if now_ms is not None else int(time.time() * 1000),
        phases,
        _requirements(table, latest),
        details,
    )


def recheck(table: PaimonTable, plan: Plan) -> Plan:
    """Before acting: the table must not have moved (a commit or a tag change) since planning."""
    now = _requirements(table, table.snapshots.ids()[-1] if table.snapshots.ids() else None)
    if now.latest_snapshot != plan.requirements.latest_snapshot:
        raise StalePlanError(
            f"snapshot {now.latest_snapshot} is the latest now, not "
            f"{plan.requirements.latest_snapshot}: plan the rollback again"
        )
    if dict(now.tags) != dict(plan.requirements.tags):
        raise StalePlanError("tags changed since planning: plan the rollback again")
    return plan


def filter_for_resume(table: PaimonTable, plan: Plan) -> Plan:
    """Finishing an interrupted rollback: refuse if a writer committed after the snapshots
    it was removing (those ids would now hold new commits)."""
    planned: Mapping[str, Any] = plan.details
    latest_then = planned.get("latest_snapshot")
    listing = table.snapshots.listing()
    newer = [i for i in listing if latest_then is not None and i > latest_then]
    by_path = {table.snapshots.path(i): info.size for i, info in listing.items()}
    newer += [
        int(a.path.rsplit("-", 1)[-1])
        for p in plan.phases
        for a in p.actions
        if a.op == "delete" and a.kind == "snapshot" and by_path.get(a.path, a.size) != a.size
    ]
    if newer:
        raise SafetyRefusalError(
            f"an interrupted rollback to snapshot {planned.get('target_snapshot')} cannot be "
            f"finished: snapshot {min(newer)} was committed meanwhile",
            hint="inspect the table; remove the journal under .paimon-cli/journal by hand "
            "once you have decided",
        )
    return plan
