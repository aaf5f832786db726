"""Fast-forward planning: what making a branch's history the target's changes (Paimon's
``fast_forward`` procedure, ``FileSystemBranchManager``). The target's snapshots from the
branch's earliest snapshot on, its schemas from that snapshot's schema on and its tags on
those snapshots are removed, then the branch's schemas, snapshots and tags are copied in;
a file the target already holds with the branch's content stays. Refusals (safer than
Paimon, D3): a consumer or branch that depends on what goes, or a target commit made after
the branch forked (the fork from the branch's base tag once the branch expired it), unless
``--force``; a snapshot id that would be missing, and a schema the target keeps reading
that the branch's would replace. The operation and its race watch are in
``fast_forward.py``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace

from core.errors import SafetyRefusalError
from core.format.model import Consumer, Snapshot, Tag
from core.io.fileio import join
from core.ops.branches.branches import BranchError, require_branch, same_json
from core.ops.details.branches import FastForwardDetails
from core.ops.details.repair import ConsumerAhead
from core.ops.tags.tags import branches_from_tag
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


@dataclass(frozen=True)
class _Fork:
    """Where the branch left the target: the target's newest snapshot the branch's history
    holds, its commit time, and which commit it is."""

    id: int
    time_ms: int
    identity: SnapshotIdentity
    how: str  # how it is known, for messages


def _fork(branch: _Side, merge: _Merge) -> _Fork | None:
    """The fork point: the newest of the snapshots from the branch's earliest on that both
    hold the same (the branch still has its fork snapshot, or a fast-forward copied the
    branch in), else the snapshot of the branch's base tag (create-branch copies the tag
    into the branch, and it outlives the branch's expiry of that snapshot); None when
    neither tells (the base tag deleted and its snapshot expired in the branch)."""
    unchanged = set(merge.unchanged_snapshots)
    if merge.earliest in unchanged:
        fid = merge.earliest
        while fid + 1 in unchanged:
            fid += 1
        snap = Snapshot.from_json(json.loads(branch.texts[fid]), f"snapshot-{fid}")
        return _Fork(fid, snap.time_millis, SnapshotIdentity.of(snap), "a snapshot both hold")
    tags = sorted(
        (Tag.from_json(n, json.loads(text), n).snapshot.id, n, text)
        for n, text in branch.tags.items()
    )
    if tags and tags[0][0] <= merge.earliest:
        _, name, text = tags[0]
        snap = Tag.from_json(name, json.loads(text), name).snapshot
        identity = replace(SnapshotIdentity.of(snap), tag_create_time=None)
        return _Fork(snap.id, snap.time_millis, identity, f"the branch's base tag {name!r}")
    return None


def _post_fork(table: PaimonTable, target: _Side, merge: _Merge, fork: _Fork) -> list[int]:
    """The target's snapshots the branch's history does not hold: above the fork (unless
    the same commit as the branch's), the fork's id holding another commit (the target
    rolled back below it and committed again), and below it those committed after the
    fork (a rollback, then new commits; a parent is committed before its child)."""
    unchanged = set(merge.unchanged_snapshots)
    out = [i for i in target.snapshots if i > fork.id and i not in unchanged]
    snap = table.snapshots.try_snapshot(fork.id) if fork.id in target.snapshots else None
    if snap is not None and replace(SnapshotIdentity.of(snap), tag_create_time=None).differences(
        fork.identity
    ):
        out.append(fork.id)
    for sid in reversed([i for i in target.snapshots if i < fork.id]):
        below = table.snapshots.try_snapshot(sid)
        if below is None or below.time_millis <= fork.time_ms:
            break  # the fork's ancestors from here down
        out.append(sid)
    return sorted(out)


def _spans(ids: list[int]) -> str:
    """``3``, ``3..5`` or ``3, 6..8``."""
    spans: list[list[int]] = []
    for i in ids:
        if spans and spans[-1][1] + 1 == i:
            spans[-1][1] = i
        else:
            spans.append([i, i])
    return ", ".join(f"{a}" if a == b else f"{a}..{b}" for a, b in spans)


def _broken_lineage(
    table: PaimonTable, target: _Side, branch: _Side, merge: _Merge, name: str
) -> tuple[str | None, list[int]]:
    """Safer than Paimon, which splices whatever the two hold. A hole below the branch's
    earliest (the target rolled back below the fork) would leave the target with a snapshot
    id missing: always refused. Otherwise the target's commits the branch's history does not
    hold (``_post_fork``) would leave the target's history, or stay below the branch's
    snapshots without being their ancestors: what to refuse without --force, and those
    snapshots (issue 33)."""
    kept, earliest = merge.kept_snapshots, merge.earliest
    tname = table.branch
    if kept and earliest not in merge.unchanged_snapshots and kept[-1] < earliest - 1:
        missing = _spans(list(range(kept[-1] + 1, earliest)))
        raise SafetyRefusalError(
            f"refusing to fast-forward {tname} to branch {name}: the branch starts at snapshot "
            f"{earliest} but {tname} ends at {kept[-1]}, so snapshot {missing} would be missing "
            f"from {tname}'s history",
            hint=f"{tname} was rolled back below the snapshot the branch was created from; "
            "create the branch again from a snapshot or tag that is still there",
        )
    fork = _fork(branch, merge)
    if fork is None:
        foreign = [i for i in target.snapshots if i not in merge.unchanged_snapshots]
        if not foreign:
            return None, []
        return (
            f"where branch {name} forked from {tname} cannot be known (it holds neither a "
            f"snapshot {tname} holds nor the tag it was created from), so {tname}'s snapshots "
            f"{_spans(foreign)} may be commits the branch does not hold",
            foreign,
        )
    later = _post_fork(table, target, merge, fork)
    if not later:
        return None, []
    one = len(later) == 1
    return (
        f"{tname}'s snapshot{'' if one else 's'} {_spans(later)} {'was' if one else 'were'} "
        f"committed after branch {name} forked from it at snapshot {fork.id} ({fork.how}), "
        f"so the branch does not hold {'it' if one else 'them'} and {tname}'s history would "
        f"lose {'it' if one else 'them'}",
        later,
    )


def _dependents(
    table: PaimonTable, merge: _Merge, name: str, *, force: bool, lineage: str | None
) -> tuple[list[Consumer], dict[str, list[str]]]:
    """Consumers that read a replaced snapshot and branches created from a removed tag, and
    the target's commits made after the fork (``lineage``): a refusal unless ``force``
    (safer than Paimon, D3), naming every reason at once."""
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
    if (consumers or branches or lineage) and not force:
        why = [
            f"consumer {c.id!r} has read up to snapshot {c.next_snapshot - 1}" for c in consumers
        ] + [f"branch {', '.join(v)} was created from tag {k!r}" for k, v in branches.items()]
        reasons = [lineage] if lineage else []
        if why:
            reasons.append(f"its snapshots from {first} on are replaced, and " + "; ".join(why))
        raise SafetyRefusalError(
            f"refusing to fast-forward {table.branch} to branch {name}: " + "; also ".join(reasons),
            hint="pass --force to fast-forward anyway (as Paimon does)",
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
    lineage, post_fork = _broken_lineage(table, target, branch, merge, name)
    consumers, branches = _dependents(table, merge, name, force=force, lineage=lineage)
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
    if lineage:
        notes.append(f"forced: {lineage}")
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
        forced=force and bool(consumers or branches or post_fork),
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
