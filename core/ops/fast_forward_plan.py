"""Fast-forward planning: what making a branch's history the target's changes (Paimon's
``fast_forward`` procedure, ``FileSystemBranchManager``). The target's snapshots from the
branch's earliest snapshot on, its schemas from that snapshot's schema on and its tags on
those snapshots are removed, then the branch's schemas, snapshots and tags are copied in;
a file the target already holds with the branch's content stays. Refusals (safer than
Paimon, D3): a consumer or branch that depends on what goes, unless ``--force``, and a
schema the target keeps reading that the branch's would replace. The operation and its
race watch are in ``fast_forward.py``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from core.errors import SafetyRefusalError
from core.format.model import Consumer, Tag
from core.io.fileio import join
from core.ops.branches import BranchError, require_branch, same_json
from core.ops.details.branches import FastForwardDetails
from core.ops.details.repair import ConsumerAhead
from core.ops.tags import branches_from_tag
from core.runtime.plans import FileAction, Phase, Plan, Requirements, SnapshotIdentity
from core.table.branch_manager import validate_branch_name
from core.table.table import PaimonTable

ForwardPlan = Plan[FastForwardDetails]


@dataclass(frozen=True)
class _Side:
    """One branch as fast-forward sees it: its snapshot ids and the texts of its snapshots
    (from ``start`` on), schemas and tags."""

    snapshots: list[int]
    texts: dict[int, str]
    schemas: dict[int, str]
    tags: dict[str, str]

    @classmethod
    def of(cls, view: PaimonTable, start: int = 0) -> _Side:
        fileio = view.fileio
        ids = view.snapshots.ids()
        return cls(
            ids,
            {i: fileio.read_text(view.snapshots.path(i)) for i in ids if i >= start},
            {
                sid: fileio.read_text(join(view.schemas.directory, f"schema-{sid}"))
                for sid in view.schemas.ids()
            },
            {name: fileio.read_text(view.tags.path(name)) for name in view.tags.names()},
        )


def _tag_snapshot_id(text: str) -> int:
    return int(json.loads(text)["id"])


def _schema_of(text: str) -> int:
    return int(json.loads(text).get("schemaId", 0))


@dataclass(frozen=True)
class _Merge:
    """What fast-forward changes on the target, decided from both sides. A file the target
    already holds with the branch's very content (the snapshot the branch was created from,
    everything after a finished fast-forward) stays where it is."""

    earliest: int  # the branch's earliest snapshot: the target's from here on go
    doomed_snapshots: list[int]  # newest first
    copied_snapshots: list[int]
    unchanged_snapshots: list[int]  # from the earliest on, the same in both
    kept_snapshots: list[int]  # before the earliest
    schema_deletes: list[int]  # newest first
    schema_creates: list[int]
    tag_deletes: list[str]
    tag_creates: list[str]

    @property
    def changes(self) -> bool:
        return bool(
            self.doomed_snapshots
            or self.copied_snapshots
            or self.schema_deletes
            or self.schema_creates
            or self.tag_deletes
            or self.tag_creates
        )


def _decide(target: _Side, branch: _Side, earliest: int, schema: int) -> _Merge:
    unchanged = [
        i for i in branch.snapshots if i in target.texts and target.texts[i] == branch.texts[i]
    ]
    replaced = [
        i
        for i in target.schemas
        if i in branch.schemas and not same_json(target.schemas[i], branch.schemas[i])
    ]
    dropped = [i for i in target.schemas if i >= schema and i not in branch.schemas]
    identical = {
        n for n, text in target.tags.items() if n in branch.tags and same_json(text, branch.tags[n])
    }
    return _Merge(
        earliest,
        sorted((i for i in target.texts if i not in unchanged), reverse=True),
        [i for i in branch.snapshots if i not in unchanged],
        unchanged,
        [i for i in target.snapshots if i < earliest],
        sorted(set(replaced) | set(dropped), reverse=True),
        sorted(i for i in branch.schemas if i not in target.schemas or i in replaced),
        sorted(
            n
            for n, text in target.tags.items()
            if n not in identical and (_tag_snapshot_id(text) >= earliest or n in branch.tags)
        ),
        sorted(n for n in branch.tags if n not in identical),
    )


def _refuse_schema_swaps(table: PaimonTable, target: _Side, merge: _Merge) -> None:
    """A snapshot or tag the target keeps reads schemas up to its own: none of those may be
    replaced by (or lose to) the branch's (safer than Paimon, which overwrites them)."""
    readers: dict[int, str] = {}
    for sid in merge.kept_snapshots + merge.unchanged_snapshots:
        snap = table.snapshots.try_snapshot(sid)
        if snap is not None:
            readers.setdefault(snap.schema_id, f"snapshot {sid}")
    for name, text in target.tags.items():
        if name not in merge.tag_deletes:
            readers.setdefault(_schema_of(text), f"tag {name!r}")
    if not readers:
        return
    swapped = [i for i in merge.schema_deletes if i <= max(readers)]
    if swapped:
        who = readers[min(s for s in readers if s >= swapped[-1])]
        raise SafetyRefusalError(
            f"refusing to fast-forward: schema {swapped[-1]} of {table.branch} differs from the "
            f"branch's (or the branch lacks it), and {who}, which {table.branch} keeps, reads "
            "data written with it",
            hint="the branch and the target diverged before the branch's earliest snapshot; "
            "Paimon would overwrite the schema and break those reads",
        )


def _refuse_broken_lineage(
    table: PaimonTable, branch: _Side, merge: _Merge, name: str, *, force: bool
) -> None:
    """The branch's earliest snapshot must follow the target's newest one below it (safer
    than Paimon, which splices them whatever they are). Snapshot files name no parent, but a
    parent is committed before its child: a target snapshot below the branch's earliest
    that is newer than it was committed after the branch forked (a rollback, then new
    commits), and fast-forward would leave those commits out of the history above them. A
    hole below the branch's earliest (the target rolled back below the fork) would leave the
    target with a snapshot id missing, which no reader expects."""
    kept, earliest = merge.kept_snapshots, merge.earliest
    if not kept or earliest in merge.unchanged_snapshots:
        return  # the branch starts on the target's own snapshot, or below all of it
    target = table.branch
    if kept[-1] < earliest - 1:
        missing = (
            f"{kept[-1] + 1}" if kept[-1] + 2 == earliest else f"{kept[-1] + 1}..{earliest - 1}"
        )
        raise SafetyRefusalError(
            f"refusing to fast-forward {target} to branch {name}: the branch starts at snapshot "
            f"{earliest} but {target} ends at {kept[-1]}, so snapshot {missing} would be missing "
            f"from {target}'s history",
            hint=f"{target} was rolled back below the snapshot the branch was created from; "
            "create the branch again from a snapshot or tag that is still there",
        )
    forked = int(json.loads(branch.texts[earliest])["timeMillis"])
    later: list[int] = []
    for sid in reversed(kept):
        snapshot = table.snapshots.try_snapshot(sid)
        if snapshot is None or snapshot.time_millis <= forked:
            break
        later.append(sid)
    if later and not force:
        ids = f"{later[-1]}" if len(later) == 1 else f"{later[-1]}..{later[0]}"
        raise SafetyRefusalError(
            f"refusing to fast-forward {target} to branch {name}: {target}'s snapshot {ids} "
            f"was committed after the branch's snapshot {earliest}, so the branch does not hold "
            f"it, and {target}'s history would lose it while it stays below the branch's "
            "snapshots",
            hint="pass --force to fast-forward anyway (as Paimon does)",
        )


def _dependents(
    table: PaimonTable, merge: _Merge, name: str, *, force: bool
) -> tuple[list[Consumer], dict[str, list[str]]]:
    """Consumers that read a replaced snapshot and branches created from a removed tag: a
    refusal unless ``force`` (safer than Paimon, D3)."""
    first = min(merge.doomed_snapshots, default=None)
    consumers = [
        c for c in table.consumers.consumers() if first is not None and c.next_snapshot > first
    ]
    branches: dict[str, list[str]] = {}
    tags = {t.name: t for t in table.tags.tags()}
    for tag_name in merge.tag_deletes:
        if tag_name in tags:
            users = [b for b in branches_from_tag(table, tags[tag_name]) if b != name]
            if users:
                branches[tag_name] = users
    if (consumers or branches) and not force:
        why = [
            f"consumer {c.id!r} has read up to snapshot {c.next_snapshot - 1}" for c in consumers
        ] + [f"branch {', '.join(v)} was created from tag {k!r}" for k, v in branches.items()]
        raise SafetyRefusalError(
            f"refusing to fast-forward {table.branch} to branch {name}: its snapshots from "
            f"{first} on are replaced, and " + "; ".join(why),
            hint="pass --force to fast-forward anyway",
        )
    return consumers, branches


def _removals(table: PaimonTable, name: str, target: _Side, merge: _Merge) -> tuple[Phase, ...]:
    """The target's tags, ``LATEST`` (off what goes), snapshots and schemas that go."""
    reason = f"fast-forward to branch {name}"
    tag_deletes = tuple(
        FileAction.commit_delete(
            table.tags.path(n),
            "tag",
            None,
            reason,
            Tag.from_json(n, json.loads(target.tags[n]), n).snapshot,
        )
        for n in merge.tag_deletes
    )
    latest_hint = join(table.snapshots.directory, "LATEST")
    below = [i for i in target.snapshots if i < min(merge.doomed_snapshots, default=0)]
    pointer: tuple[FileAction, ...] = ()
    if merge.doomed_snapshots:  # pointers first: LATEST off what goes
        pointer = (
            (FileAction("write", latest_hint, "hint", None, reason, str(below[-1])),)
            if below
            else (FileAction("delete", latest_hint, "hint", None, reason),)
        )
    snapshot_deletes = tuple(
        FileAction.commit_delete(
            table.snapshots.path(i),
            "snapshot",
            None,
            reason,
            table.snapshots.snapshot(i),
        )
        for i in merge.doomed_snapshots
    )
    schema_deletes = tuple(
        FileAction("delete", join(table.schemas.directory, f"schema-{i}"), "schema", None, reason)
        for i in merge.schema_deletes
    )
    return (
        Phase("tag-files", tag_deletes, sequential=True),
        Phase("latest-hint", pointer, sequential=True),
        Phase("snapshot-files", snapshot_deletes, sequential=True),
        Phase("schema-files", schema_deletes, sequential=True),
    )


def _copies(table: PaimonTable, name: str, branch: _Side, merge: _Merge) -> tuple[Phase, ...]:
    """The branch's schemas, snapshots and tags copied in, then both hints."""

    def create(path: str, kind: str, what: str, content: str) -> FileAction:
        return FileAction("create", path, kind, None, f"{what} of branch {name}", content)

    schema_creates = tuple(
        create(
            join(table.schemas.directory, f"schema-{i}"), "schema", f"schema {i}", branch.schemas[i]
        )
        for i in merge.schema_creates
    )
    snapshot_creates = tuple(
        create(table.snapshots.path(i), "snapshot", f"snapshot {i}", branch.texts[i])
        for i in merge.copied_snapshots
    )
    tag_creates = tuple(
        create(table.tags.path(n), "tag", f"tag {n}", text)
        for n, text in sorted(branch.tags.items())
        if n in merge.tag_creates
    )
    reason = f"fast-forward to branch {name}"
    earliest = min([*merge.kept_snapshots, merge.earliest])
    directory = table.snapshots.directory
    hints = (
        FileAction.write_hint(directory, "LATEST", branch.snapshots[-1], reason),
        FileAction.write_hint(directory, "EARLIEST", earliest, reason),
    )
    return (
        Phase("new-schema-files", schema_creates, sequential=True),
        Phase("new-snapshot-files", snapshot_creates, sequential=True),
        Phase("new-tag-files", tag_creates, sequential=True),
        Phase("hints", hints, sequential=True),
    )


def _fast_forward_phases(
    table: PaimonTable, name: str, target: _Side, branch: _Side, merge: _Merge
) -> tuple[Phase, ...]:
    if not merge.changes:
        return ()
    return _removals(table, name, target, merge) + _copies(table, name, branch, merge)


def plan_fast_forward(table: PaimonTable, name: str, *, force: bool, now_ms: int) -> ForwardPlan:
    """What making branch ``name``'s history the target's (``table``'s branch) changes."""
    validate_branch_name(name)
    if name == table.branch:
        raise BranchError(f"fast-forward from the current branch {name!r} is not allowed")
    require_branch(table, name)
    source = table.for_branch(name)
    branch = _Side.of(source)
    if not branch.snapshots:
        raise BranchError(f"cannot fast-forward branch {name!r}: it has no snapshot")
    earliest = branch.snapshots[0]
    schema = _schema_of(branch.texts[earliest])
    target = _Side.of(table, earliest)
    merge = _decide(target, branch, earliest, schema)
    _refuse_schema_swaps(table, target, merge)
    _refuse_broken_lineage(table, branch, merge, name, force=force)
    consumers, branches = _dependents(table, merge, name, force=force)
    changelogs = [i for i in table.changelogs.ids() if i >= earliest]
    notes: list[str] = (
        [
            "manifests and data files are not deleted, as Paimon's fast_forward: those only "
            "the replaced snapshots and tags used are left for delete-orphan-files",
            "EARLIEST and LATEST are written from what is there (Paimon copies the branch's hints)",
        ]
        if merge.changes
        else [f"{table.branch} already holds the history of branch {name}"]
    )
    if changelogs and merge.doomed_snapshots:
        notes.append(
            f"long-lived changelogs {changelogs[0]}..{changelogs[-1]} stay, as Paimon leaves "
            "them: they describe the replaced history"
        )
    details = FastForwardDetails(
        branch=name,
        target=table.branch,
        branch_earliest=earliest,
        branch_latest=branch.snapshots[-1],
        branch_snapshots=tuple(branch.snapshots),
        branch_schema=schema,
        snapshots_removed=tuple(sorted(merge.doomed_snapshots)),
        snapshots_copied=tuple(merge.copied_snapshots),
        snapshots_unchanged=tuple(
            SnapshotIdentity.of(table.snapshots.snapshot(i)) for i in merge.unchanged_snapshots
        ),
        schemas_removed=tuple(sorted(merge.schema_deletes)),
        schemas_copied=tuple(merge.schema_creates),
        tags_removed=tuple(merge.tag_deletes),
        tags_copied=tuple(merge.tag_creates),
        consumers_ahead=tuple(ConsumerAhead(c.id, c.next_snapshot) for c in consumers),
        branches_from_removed_tags={k: tuple(v) for k, v in branches.items()},
        forced=force and bool(consumers or branches),
        latest_schema=max(target.schemas) if target.schemas else None,
        notes=tuple(notes),
    )
    return Plan(
        "fast-forward",
        table.location,
        table.branch,
        now_ms,
        _fast_forward_phases(table, name, target, branch, merge),
        Requirements(
            target.snapshots[-1] if target.snapshots else None,
            None,
            {f"{table.branch}/{t.name}": t.snapshot.id for t in table.tags.tags()},
            tuple(table.branches.branches()),
            None,
        ),
        details,
    )


__all__ = ["ForwardPlan", "plan_fast_forward"]
