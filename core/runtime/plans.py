"""Plan value types shared by every destructive command; lossless to/from JSON.

A plan is what will change and why, in phases applied in order (a phase is a barrier),
plus requirements re-checked right before acting (DECISIONS D2).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, Literal, TypeVar

from core.errors import CorruptMetadataError
from core.io.fileio import join
from core.runtime.details import Details, RawDetails, Record
from core.runtime.lazy import MadeOnAccess
from core.runtime.timeparse import format_utc

if TYPE_CHECKING:
    from core.format.model import Snapshot

PLAN_FORMAT = 1

D = TypeVar("D", bound=Details)
T = TypeVar("T", bound=Details)
R = TypeVar("R", bound=Record)

# write: overwrite (hints); create: write only where absent, an existing file holding other
# content fails the action (a commit copied into place never replaces a writer's); move:
# ``source`` back to ``path`` (restore), never over another file; put-back: the same over the
# file at ``path`` (a hint's old content)
Op = Literal["delete", "write", "create", "rmdir", "move", "put-back"]
OPS: tuple[Op, ...] = ("delete", "write", "create", "rmdir", "move", "put-back")


class LazyRows(MadeOnAccess[Any]):
    """``fn`` applied to ``items`` on access: the JSON form of a big plan part (a million
    delete actions) without a million dicts held at once (``to_json(lazy=True)``)."""

    __slots__ = ("items", "fn")

    def __init__(self, items: Sequence[Any], fn: Callable[[Any], Any]) -> None:
        self.items = items
        self.fn = fn

    def _item(self, index: int) -> Any:
        return self.fn(self.items[index])

    def _slice(self, index: slice) -> Sequence[Any]:
        return LazyRows(self.items[index], self.fn)

    def __len__(self) -> int:
        return len(self.items)

    def __iter__(self) -> Iterator[Any]:
        return map(self.fn, self.items)


@dataclass(frozen=True, slots=True)
class SnapshotIdentity:
    """Which commit a snapshot, long-lived changelog or tag file holds.

    After a rollback a writer's next commit reuses the ids that went, in files of the same
    size; what differs between two commits is what Paimon writes anew for each: the commit
    time, the manifest lists, the commit user and identifier (and ``uuid`` where a writer
    records one), plus a tag's own creation time. Plans record it for every such file they
    delete or rely on, and a resume finds each one again or is discarded (issue 22)."""

    id: int
    time_ms: int
    commit_user: str
    commit_identifier: int
    manifest_lists: tuple[str, ...]
    uuid: str | None = None
    tag_create_time: str | None = None  # the tag file's tagCreateTime, as JSON text

    @classmethod
    def of(cls, snapshot: Snapshot) -> SnapshotIdentity:
        raw = snapshot.raw
        uuid = raw.get("uuid")
        created = raw.get("tagCreateTime")
        return cls(
            snapshot.id,
            snapshot.time_millis,
            snapshot.commit_user,
            snapshot.commit_identifier,
            snapshot.manifest_lists,
            None if uuid is None else str(uuid),
            None if created is None else json.dumps(created),
        )

    def differences(self, other: SnapshotIdentity) -> list[str]:
        """What ``other`` has that this commit had not, in words (empty: the same commit)."""
        out = []
        if other.time_ms != self.time_ms:
            out.append(
                f"committed at {format_utc(other.time_ms, millis=True)}, "
                f"not {format_utc(self.time_ms, millis=True)}"
            )
        if (other.commit_user, other.commit_identifier) != (
            self.commit_user,
            self.commit_identifier,
        ):
            out.append(
                f"by {other.commit_user!r} (identifier {other.commit_identifier}), not "
                f"{self.commit_user!r} ({self.commit_identifier})"
            )
        if other.manifest_lists != self.manifest_lists:
            out.append("other manifest lists")
        if other.uuid != self.uuid:
            out.append("another uuid")
        if other.tag_create_time != self.tag_create_time:
            out.append("created again")
        if other.id != self.id:
            out.append(f"id {other.id}, not {self.id}")
        return out

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "id": self.id,
            "time_ms": self.time_ms,
            "commit_user": self.commit_user,
            "commit_identifier": self.commit_identifier,
            "manifest_lists": list(self.manifest_lists),
        }
        if self.uuid is not None:
            out["uuid"] = self.uuid
        if self.tag_create_time is not None:
            out["tag_create_time"] = self.tag_create_time
        return out

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> SnapshotIdentity:
        """KeyError, TypeError or ValueError when ``data`` is not one (an older journal)."""
        uuid, created = data.get("uuid"), data.get("tag_create_time")
        return cls(
            int(data["id"]),
            int(data["time_ms"]),
            str(data["commit_user"]),
            int(data["commit_identifier"]),
            tuple(str(n) for n in data["manifest_lists"]),
            None if uuid is None else str(uuid),
            None if created is None else str(created),
        )


# Files that hold one commit: a plan that deletes one records which (FileAction.identity).
COMMIT_FILE_KINDS = frozenset({"snapshot", "changelog-json", "tag"})


@dataclass(frozen=True, slots=True)
class FileAction:
    op: Op
    path: str
    kind: str  # snapshot, manifest-list, manifest, index-manifest, data, extra, changelog, ...
    size: int | None = None
    reason: str = ""
    content: str | None = None  # for op == "write" and "create"
    # For a delete of a snapshot, changelog or tag file: the commit it held when planned.
    identity: SnapshotIdentity | None = None
    source: str | None = None  # for op == "move" and "put-back": where the file is now

    @classmethod
    def commit_delete(
        cls, path: str, kind: str, size: int | None, reason: str, commit: Snapshot
    ) -> FileAction:
        """Delete a snapshot, changelog or tag file, with the identity of the commit it
        holds: a resume deletes it only while it still holds that commit."""
        return cls("delete", path, kind, size, reason, identity=SnapshotIdentity.of(commit))

    @classmethod
    def write_hint(cls, directory: str, hint: str, value: int, reason: str) -> FileAction:
        """(Over)write a snapshot or changelog directory's ``EARLIEST`` or ``LATEST`` hint."""
        return cls("write", join(directory, hint), "hint", None, reason, str(value))

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "op": self.op,
            "path": self.path,
            "kind": self.kind,
            "size": self.size,
            "reason": self.reason,
        }
        if self.content is not None:
            out["content"] = self.content
        if self.identity is not None:
            out["identity"] = self.identity.to_json()
        if self.source is not None:
            out["source"] = self.source
        return out

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> FileAction:
        op = data["op"]
        if op not in OPS:
            raise ValueError(f"unknown op {op!r}")
        identity, source = data.get("identity"), data.get("source")
        if op in ("move", "put-back") and not isinstance(source, str):
            raise ValueError(f"a {op} action without its source: {data.get('path')!r}")
        return cls(
            op,
            str(data["path"]),
            str(data["kind"]),
            data.get("size"),
            str(data.get("reason", "")),
            data.get("content"),
            None if identity is None else SnapshotIdentity.from_json(identity),
            source,
        )


@dataclass(frozen=True, slots=True)
class Phase:
    name: str
    actions: tuple[FileAction, ...]
    sequential: bool = False  # snapshot files go strictly in ascending order

    @classmethod
    def commit(cls, snapshot_path: str, reason: str) -> Phase:
        """The phase of a planner that commits one new snapshot (compact, partition expiry,
        remove-unexisting-files): writing ``snapshot_path``, for ``reason``."""
        action = FileAction("write", snapshot_path, "snapshot", None, reason)
        return cls("commit", (action,), sequential=True)

    @property
    def bytes(self) -> int:
        return sum(a.size or 0 for a in self.actions if a.op == "delete")

    def to_json(self, *, lazy: bool = False) -> dict[str, Any]:
        actions = self.actions
        return {
            "name": self.name,
            "sequential": self.sequential,
            "files": len(actions),
            "bytes": self.bytes,
            "actions": LazyRows(actions, FileAction.to_json)
            if lazy
            else [a.to_json() for a in actions],
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Phase:
        return cls(
            str(data["name"]),
            tuple(FileAction.from_json(a) for a in data["actions"]),
            bool(data.get("sequential", False)),
        )


class LazyPhases(MadeOnAccess[Phase]):
    """Phases made on access (``make(i)``): a plan of millions of deletions (orphan cleaning
    on a table of 100 million files) without millions of FileActions held at once; the
    actions live where ``make`` reads them (spilled to local disk). ``totals`` is what
    ``Plan.totals`` would sum, counted when the actions were written."""

    __slots__ = ("length", "make", "totals")

    def __init__(self, count: int, make: Callable[[int], Phase], totals: Mapping[str, Any]) -> None:
        self.length = count
        self.make = make
        self.totals = totals

    def _item(self, index: int) -> Phase:
        return self.make(index)

    def __len__(self) -> int:
        return self.length


@dataclass(frozen=True, slots=True)
class Requirements:
    """Facts the plan was built on; apply() re-reads the table and compares."""

    latest_snapshot: int | None
    expire_end: int | None  # snapshots below this id are expired by the plan
    tags: Mapping[str, int]  # "<branch>/<tag>" -> snapshot id, every branch
    branches: tuple[str, ...]
    consumers_min_next: int | None  # None when consumers do not bound the plan

    @classmethod
    def latest(cls, latest_snapshot: int | None) -> Requirements:
        """A plan built on the latest snapshot alone (a commit's base, its re-check)."""
        return cls(latest_snapshot, None, {}, (), None)

    def to_json(self) -> dict[str, Any]:
        return {
            "latest_snapshot": self.latest_snapshot,
            "expire_end": self.expire_end,
            "tags": dict(sorted(self.tags.items())),
            "branches": list(self.branches),
            "consumers_min_next": self.consumers_min_next,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Requirements:
        return cls(
            data.get("latest_snapshot"),
            data.get("expire_end"),
            {str(k): int(v) for k, v in (data.get("tags") or {}).items()},
            tuple(data.get("branches") or ()),
            data.get("consumers_min_next"),
        )


@dataclass(frozen=True, slots=True)
class Plan(Generic[D]):
    """What a command will change and why: ordered phases of file actions, the facts they
    were planned on, and ``details``, the operation's own typed account of its decision."""

    command: str
    table: str
    branch: str
    created_ms: int
    phases: Sequence[Phase]  # a tuple, or LazyPhases for plans too big to hold
    requirements: Requirements
    details: D

    @property
    def empty(self) -> bool:
        return not any(p.actions for p in self.phases)

    def totals(self) -> dict[str, Any]:
        if isinstance(self.phases, LazyPhases):
            totals = self.phases.totals
            return {**totals, "by_kind": {k: dict(v) for k, v in totals["by_kind"].items()}}
        by_kind: dict[str, dict[str, int]] = {}
        for phase in self.phases:
            for a in phase.actions:
                if a.op != "delete":
                    continue
                slot = by_kind.setdefault(a.kind, {"files": 0, "bytes": 0})
                slot["files"] += 1
                slot["bytes"] += a.size or 0
        return {
            "files": sum(v["files"] for v in by_kind.values()),
            "bytes": sum(v["bytes"] for v in by_kind.values()),
            "by_kind": dict(sorted(by_kind.items())),
        }

    def to_json(self, *, lazy: bool = False) -> dict[str, Any]:
        """The plan as JSON data. ``lazy``: big parts stay sequences made on access, for a
        streaming encoder that turns Mappings into objects and Sequences into arrays."""
        return {
            "format": PLAN_FORMAT,
            "command": self.command,
            "table": self.table,
            "branch": self.branch,
            "created_ms": self.created_ms,
            "details": self.details.to_json(lazy=lazy),
            "requirements": self.requirements.to_json(),
            "totals": self.totals(),
            "phases": LazyRows(self.phases, _phase_json_lazy)
            if lazy
            else [p.to_json() for p in self.phases],
        }

    def with_details(self, details: T) -> Plan[T]:
        """The same plan with its details read as their operation's type."""
        return Plan(
            self.command,
            self.table,
            self.branch,
            self.created_ms,
            self.phases,
            self.requirements,
            details,
        )

    @classmethod
    def from_json(cls, data: Mapping[str, Any], *, source: str = "plan") -> Plan[RawDetails]:
        """A plan as written; its details stay raw until its operation reads them
        (:meth:`typed`)."""
        try:
            if data.get("format") != PLAN_FORMAT:
                raise ValueError(f"unsupported plan format {data.get('format')!r}")
            details = data.get("details") or {}
            if not isinstance(details, Mapping):
                raise TypeError("details is not an object")
            return Plan(
                str(data["command"]),
                str(data["table"]),
                str(data["branch"]),
                int(data["created_ms"]),
                tuple(Phase.from_json(p) for p in data["phases"]),
                Requirements.from_json(data["requirements"]),
                RawDetails(dict(details)),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise CorruptMetadataError(source, f"not a paimon-cli plan ({exc})") from exc


def _phase_json_lazy(phase: Phase) -> dict[str, Any]:
    return phase.to_json(lazy=True)


def typed(plan: Plan[Any], details_type: type[R], *, source: str = "plan") -> Plan[R]:
    """``plan`` with its details read as ``details_type`` (a journal, a ``--plan`` file);
    CorruptMetadataError when they are not of that shape (an older paimon-cli's)."""
    if isinstance(plan.details, details_type):
        return plan
    raw = plan.details.to_json() if not isinstance(plan.details, RawDetails) else plan.details.data
    try:
        return plan.with_details(details_type.from_json(raw))
    except (KeyError, TypeError, ValueError) as exc:
        raise CorruptMetadataError(
            source, f"its {plan.command} plan details are not this version's ({exc})"
        ) from exc
