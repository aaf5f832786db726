"""The branch commands as operations: Paimon's ``create_branch``, ``delete_branch`` and
``fast_forward`` procedures (``FileSystemBranchManager``, Paimon master).

A branch is the directory ``branch/branch-<name>/`` holding its own ``schema/``,
``snapshot/``, ``tag/``, ``consumer/`` and ``changelog/``; its manifests and data files live
in the table's shared directories, next to main's. So:

* **create-branch** copies the schemas (``schema-0`` up to the latest, or up to the tag's
  snapshot's) and, from a tag, the tag and its snapshot (written from the tag when the
  snapshot expired). Files are created only where absent, schemas first and the tag last,
  so a branch is never without the schema its snapshot names; a run interrupted halfway
  leaves a branch that the same command line finishes.
* **delete-branch** removes the branch directory (tags, snapshots, changelogs, consumers,
  hints, then schemas, then the directories), journaled with the identity of every commit
  file, as Paimon deletes it. Nothing in the shared directories is touched: files only the
  branch used are orphans for ``delete-orphan-files``, and a file main or another branch
  uses is never a candidate. A commit that lands in the branch meanwhile stops the run.
* **fast-forward** makes the branch's history the target's (main, or ``--branch``): the
  target's snapshots from the branch's earliest snapshot on, its schemas from that
  snapshot's schema on and its tags on those snapshots are removed, then the branch's
  schemas, snapshots and tags are copied in (created only where absent). Pointers first,
  journaled: a writer's commit that lands meanwhile is never removed or overwritten (the
  run fails naming it, as a raced rollback does).

Safer than Paimon (D3), each said in the plan: fast-forward refuses, unless ``--force``,
while a consumer has read a target snapshot that goes or another branch was created from a
target tag that goes; it refuses when a snapshot or tag the target keeps reads a schema the
branch's would replace with another; and it writes ``EARLIEST``/``LATEST`` from what is
there instead of copying the branch's hints. create-branch ``--snapshot`` is not offered:
Paimon removed it (#3934) because nothing protects such a branch's files from main's
expiry; tag the snapshot and branch from the tag.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, replace
from functools import partial
from typing import Any, ClassVar

from core.errors import MissingFileError, PaimonError, SafetyRefusalError, StalePlanError
from core.format.model import Consumer, Tag
from core.io.fileio import FileInfo, FileIO, basename, join, parent
from core.ops.details.branches import CreateBranchDetails, DeleteBranchDetails, FastForwardDetails
from core.ops.details.repair import ConsumerAhead
from core.ops.tags import branches_from_tag, validate_tag_name
from core.runtime.apply import apply_phases
from core.runtime.details import Record
from core.runtime.operation import Deletion, Env
from core.runtime.plans import FileAction, Phase, Plan, Requirements, SnapshotIdentity
from core.runtime.races import ActionGuard, newest_first_guard
from core.runtime.requests import parsed
from core.table.branch_manager import MAIN, validate_branch_name
from core.table.snapshot_manager import SnapshotManager
from core.table.table import PaimonTable
from core.table.tag_manager import TagManager
from core.write.commit import snapshot_json

CreatePlan = Plan[CreateBranchDetails]
DeletePlan = Plan[DeleteBranchDetails]
ForwardPlan = Plan[FastForwardDetails]


class BranchError(PaimonError):
    """A branch command that cannot be done as asked (exists, missing, no snapshot)."""

    kind = "branch_error"


class FastForwardRaced(BranchError):
    kind = "fast_forward_raced"


class BranchCommitRaced(BranchError):
    kind = "branch_commit_raced"


def _text(fileio: FileIO, path: str) -> str:
    return fileio.read_text(path)


def _same_json(a: str, b: str) -> bool:
    """Two metadata files hold the same JSON (whatever the whitespace a writer used)."""
    try:
        return bool(json.loads(a) == json.loads(b))
    except ValueError:
        return a == b


def _require_branch(table: PaimonTable, name: str) -> None:
    existing = table.branches.branches()
    if name not in existing:
        raise BranchError(
            f"branch {name!r} does not exist in {table.location}",
            hint=f"existing branches: {', '.join(existing) or 'none'}",
        )


def _walk(fileio: FileIO, root: str) -> tuple[list[FileInfo], list[str]]:
    """Every file under ``root`` and every directory (deepest first, ``root`` last)."""
    files: list[FileInfo] = []
    dirs: list[str] = []
    level = [root]
    while level:
        dirs.extend(level)
        below: list[str] = []
        for directory in level:
            for info in fileio.list_dir(directory):
                if info.is_dir and not info.is_symlink:
                    below.append(info.path)
                else:
                    files.append(info)
        level = below
    return files, list(reversed(dirs))


# -- create-branch --------------------------------------------------------------------------------
def _create_actions(
    table: PaimonTable, dest: str, tag: Tag | None
) -> tuple[list[FileAction], list[FileAction], list[FileAction]]:
    """The schemas, the snapshot and the tag file a new branch gets, as Paimon copies them."""
    fileio = table.fileio
    limit = tag.snapshot.schema_id if tag is not None else table.schemas.ids()[-1]
    schemas = [
        FileAction(
            "create",
            join(dest, "schema", f"schema-{sid}"),
            "schema",
            None,
            f"schema {sid}",
            _text(fileio, join(table.schemas.directory, f"schema-{sid}")),
        )
        for sid in table.schemas.ids()
        if sid <= limit
    ]
    if tag is None:
        return schemas, [], []
    sid = tag.snapshot.id
    source = table.snapshots.path(sid)
    try:
        snapshot_text, why = _text(fileio, source), f"snapshot {sid} of tag {tag.name}"
    except FileNotFoundError:  # expired: the tag holds its content (Paimon master)
        snapshot_text = snapshot_json(tag.snapshot.raw)
        why = f"snapshot {sid}, written from tag {tag.name} (the snapshot expired)"
    snapshot = FileAction(
        "create", join(dest, "snapshot", f"snapshot-{sid}"), "snapshot", None, why, snapshot_text
    )
    tag_file = FileAction(
        "create",
        join(dest, "tag", f"tag-{tag.name}"),
        "tag",
        None,
        f"tag {tag.name}",
        _text(fileio, table.tags.path(tag.name)),
    )
    return schemas, [snapshot], [tag_file]


def _unfinished_create(
    table: PaimonTable, name: str, dest: str, actions: Sequence[FileAction]
) -> bool:
    """Whether an existing branch directory is this very creation left halfway (every file
    there is one it writes, with that content, and some are missing). A complete or a
    different branch of that name is refused, as Paimon refuses."""
    files, _dirs = _walk(table.fileio, dest)
    if not files and not table.fileio.exists(dest):
        return False
    wanted = {a.path: a.content or "" for a in actions}
    foreign = [
        f.path
        for f in files
        if f.path not in wanted or not _same_json(_text(table.fileio, f.path), wanted[f.path])
    ]
    if foreign or len(files) == len(wanted):
        raise BranchError(
            f"branch {name!r} already exists in {table.location}",
            hint="pick another name, or delete it first: paimon delete-branch TABLE " + name,
        )
    return True


def plan_create_branch(
    table: PaimonTable, name: str, tag_name: str | None, now_ms: int
) -> CreatePlan:
    """The files a new branch gets (read only; refusals before any change)."""
    validate_branch_name(name)
    tag = None
    if tag_name is not None:
        try:
            tag = table.tags.tag(tag_name)
        except MissingFileError:
            names = table.tags.names()
            raise BranchError(
                f"tag {tag_name!r} does not exist"
                + ("" if table.branch == MAIN else f" on branch {table.branch}"),
                hint=f"existing tags: {', '.join(names) or 'none'}",
            ) from None
    dest = table.branches.path(name)
    schemas, snapshot, tag_file = _create_actions(table, dest, tag)
    finishing = _unfinished_create(table, name, dest, schemas + snapshot + tag_file)
    details = CreateBranchDetails(
        branch=name,
        from_branch=table.branch,
        from_tag=tag_name,
        snapshot_id=tag.snapshot.id if tag else None,
        snapshot_restored_from_tag=bool(snapshot) and "written from tag" in snapshot[0].reason,
        schemas=tuple(int(basename(a.path)[len("schema-") :]) for a in schemas),
        finishing=finishing,
        notes=(
            (f"finishing branch {name!r}, which an interrupted create-branch left incomplete",)
            if finishing
            else ()
        ),
    )
    return Plan(
        "create-branch",
        table.location,
        table.branch,
        now_ms,
        (
            Phase("schema-files", tuple(schemas), sequential=True),
            Phase("snapshot-files", tuple(snapshot), sequential=True),
            Phase("tag-files", tuple(tag_file), sequential=True),
        ),
        Requirements(
            table.snapshots.latest_id(),
            None,
            {f"{table.branch}/{tag.name}": tag.snapshot.id} if tag else {},
            tuple(table.branches.branches()),
            None,
        ),
        details,
    )


def _other_branch(planned: str, name: str) -> str | None:
    """A saved plan of a branch command is for the branch the command line names."""
    return None if planned == name else f"it is for branch {planned!r}, not {name!r}"


@dataclass(frozen=True)
class CreateBranch(Deletion[CreateBranchDetails]):
    """``branch/branch-<name>`` with the schemas and, from a tag, the tag and its snapshot."""

    command: ClassVar[str] = "create-branch"
    details_type: ClassVar[type[Record]] = CreateBranchDetails

    name: str
    tag: str | None = None

    def saved_plan_problem(self, plan: CreatePlan) -> str | None:
        return _other_branch(plan.details.branch, self.name)

    def __post_init__(self) -> None:
        parsed("name", lambda: validate_branch_name(self.name))
        if self.tag is not None:
            tag = self.tag
            parsed("tag", lambda: validate_tag_name(tag))

    def plan(self, table: PaimonTable, env: Env) -> CreatePlan:
        return plan_create_branch(table, self.name, self.tag, env.now_ms)

    def recheck(self, table: PaimonTable, plan: CreatePlan) -> CreatePlan:
        _check_source_tag(table, plan)
        return plan

    def apply(self, table: PaimonTable, plan: CreatePlan, env: Env) -> None:
        super().apply(table, plan, env)
        if env.report.failed:
            return
        try:
            _check_source_tag(table, plan)
        except StalePlanError as exc:
            # The tag went (an expiry or delete-tag) while its snapshot was copied: the new
            # branch could point at files being deleted. Remove what this run wrote.
            for phase in plan.phases:
                for action in phase.actions:
                    table.fileio.delete(action.path)
            table.fileio.delete_empty_dir(join(table.branches.path(self.name), "schema"))
            for sub in ("snapshot", "tag", ""):
                table.fileio.delete_empty_dir(join(table.branches.path(self.name), sub))
            raise BranchError(
                f"{exc.message}; the branch {self.name!r} was removed again",
                hint="branch from a tag that stays",
            ) from None


def _check_source_tag(table: PaimonTable, plan: CreatePlan) -> None:
    """The tag a branch is created from still holds the snapshot it was planned with."""
    for key, sid in plan.requirements.tags.items():
        name = key.split("/", 1)[1]
        try:
            now = table.tags.tag(name).snapshot.id
        except MissingFileError:
            raise StalePlanError(f"tag {name!r} was deleted while the branch was created") from None
        if now != sid:
            raise StalePlanError(f"tag {name!r} moved from snapshot {sid} to {now}")


# -- delete-branch --------------------------------------------------------------------------------
_ORDER = ("tag", "snapshot", "changelog", "other", "schema")


def _classify(branch_root: str, info: FileInfo) -> str:
    directory = basename(parent(info.path)) if parent(info.path) != branch_root else ""
    name = info.name
    for kind, prefix in (
        ("tag", "tag-"),
        ("snapshot", "snapshot-"),
        ("changelog", "changelog-"),
        ("schema", "schema-"),
    ):
        if directory == kind and name.startswith(prefix) and not name.startswith("."):
            suffix = name[len(prefix) :]
            if kind == "tag" or suffix.isdigit():
                return kind
    return "other"


def _identity(manager: SnapshotManager | TagManager, info: FileInfo, kind: str) -> Any:
    if kind == "tag":
        assert isinstance(manager, TagManager)
        return SnapshotIdentity.of(manager.tag(info.name[len("tag-") :]).snapshot)
    assert isinstance(manager, SnapshotManager)
    return SnapshotIdentity.of(manager.snapshot(int(info.name[len(manager.prefix) :])))


def plan_delete_branch(table: PaimonTable, name: str, now_ms: int) -> DeletePlan:
    """Every file and directory of ``branch/branch-<name>/``, pointers first."""
    validate_branch_name(name)
    _require_branch(table, name)
    for option in ("scan.fallback-branch", "scan.primary-branch"):
        if (table.options.get(option) or "").strip() == name:
            raise BranchError(
                f"cannot delete branch {name!r}: it is configured as {option!r}",
                hint=f"unset {option} first",
            )
    fileio, root = table.fileio, table.branches.path(name)
    snapshots = SnapshotManager(fileio, root)
    managers: dict[str, SnapshotManager | TagManager] = {
        "tag": TagManager(fileio, root),
        "snapshot": snapshots,
        "changelog": SnapshotManager(fileio, root, kind="changelog"),
    }
    files, dirs = _walk(fileio, root)
    grouped: dict[str, list[FileAction]] = {kind: [] for kind in _ORDER}
    for info in sorted(files, key=lambda f: f.path):
        kind = _classify(root, info)
        identity = _identity(managers[kind], info, kind) if kind in managers else None
        grouped[kind].append(
            FileAction(
                "delete",
                info.path,
                {"changelog": "changelog-json", "other": "branch-file"}.get(kind, kind),
                info.size,
                f"branch {name} deleted",
                identity=identity,
            )
        )
    for kind in ("snapshot", "changelog", "schema"):  # newest first: the ids stay contiguous
        grouped[kind].sort(key=lambda a: int(basename(a.path).split("-")[-1]), reverse=True)
    phases = tuple(
        Phase(f"{kind}-files", tuple(grouped[kind]), sequential=kind != "other") for kind in _ORDER
    ) + (
        Phase(
            "directories",
            tuple(
                FileAction("rmdir", d, "directory", None, f"branch {name} deleted") for d in dirs
            ),
            sequential=True,
        ),
    )
    ids = snapshots.ids()
    tags = managers["tag"]
    assert isinstance(tags, TagManager)
    details = DeleteBranchDetails(
        branch=name,
        snapshots=tuple(ids),
        tags=tuple(tags.names()),
        files=len(files),
        notes=(
            "only the branch directory goes, as Paimon's delete_branch: manifests and data "
            "files the branch wrote are left for delete-orphan-files, and those main or another "
            "branch uses are never touched",
        ),
    )
    return Plan(
        "delete-branch",
        table.location,
        table.branch,
        now_ms,
        phases,
        Requirements(
            ids[-1] if ids else None,
            None,
            {f"{name}/{t}": 0 for t in tags.names()},
            tuple(table.branches.branches()),
            None,
        ),
        details,
    )


def _branch_snapshots_now(table: PaimonTable, plan: DeletePlan) -> list[int]:
    root = table.branches.path(plan.details.branch)
    return SnapshotManager(table.fileio, root).ids()


def _new_branch_commits(table: PaimonTable, plan: DeletePlan) -> list[int]:
    planned = set(plan.details.snapshots)
    return [i for i in _branch_snapshots_now(table, plan) if i not in planned]


@dataclass(frozen=True)
class DeleteBranch(Deletion[DeleteBranchDetails]):
    """Paimon's delete_branch: the branch directory, journaled and quarantinable."""

    command: ClassVar[str] = "delete-branch"
    journaled: ClassVar[bool] = True
    quarantinable: ClassVar[bool] = True
    details_type: ClassVar[type[Record]] = DeleteBranchDetails

    name: str

    def __post_init__(self) -> None:
        parsed("name", lambda: validate_branch_name(self.name))

    def saved_plan_problem(self, plan: DeletePlan) -> str | None:
        return _other_branch(plan.details.branch, self.name)

    def committed_since(self, table: PaimonTable, plan: DeletePlan) -> str | None:
        """The plan was made on the branch it deletes: a commit there makes it stale."""
        now = _branch_snapshots_now(table, plan)
        if now == list(plan.details.snapshots):
            return None
        seen = list(plan.details.snapshots)
        return f"branch {self.name!r} has snapshots {now} now, the plan saw {seen}"

    def plan(self, table: PaimonTable, env: Env) -> DeletePlan:
        return plan_delete_branch(table, self.name, env.now_ms)

    def recheck(self, table: PaimonTable, plan: DeletePlan) -> DeletePlan:
        if _branch_snapshots_now(table, plan) != list(plan.details.snapshots):
            raise StalePlanError(f"branch {self.name!r} got a commit while planning")
        return plan

    def apply(self, table: PaimonTable, plan: DeletePlan, env: Env) -> None:
        def before_phase(phase: Phase) -> Phase:
            landed = _new_branch_commits(table, plan)
            if landed:
                raise BranchCommitRaced(
                    f"delete-branch {self.name} stopped: snapshot {landed[0]} was committed to "
                    "the branch while it was deleted; that commit and the files not yet "
                    "deleted stay",
                    hint="stop the branch's writers, then run delete-branch again",
                )
            return phase

        apply_phases(
            table,
            plan,
            executor=env.executor,
            progress=env.progress,
            report=env.report,
            run=env.run,
            quarantine=env.quarantine,
            journal=True,
            before_phase=before_phase,
        )

    @classmethod
    def resume_problem(cls, table: PaimonTable, plan: DeletePlan) -> str | None:
        landed = _new_branch_commits(table, plan)
        if landed:
            return (
                f"snapshot {landed[0]} was committed to branch {plan.details.branch} after "
                "the deletion was planned"
            )
        return None


# -- fast-forward ---------------------------------------------------------------------------------
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
            {i: _text(fileio, view.snapshots.path(i)) for i in ids if i >= start},
            {
                sid: _text(fileio, join(view.schemas.directory, f"schema-{sid}"))
                for sid in view.schemas.ids()
            },
            {name: _text(fileio, view.tags.path(name)) for name in view.tags.names()},
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
        if i in branch.schemas and not _same_json(target.schemas[i], branch.schemas[i])
    ]
    dropped = [i for i in target.schemas if i >= schema and i not in branch.schemas]
    identical = {
        n
        for n, text in target.tags.items()
        if n in branch.tags and _same_json(text, branch.tags[n])
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


def _fast_forward_phases(
    table: PaimonTable, name: str, target: _Side, branch: _Side, merge: _Merge
) -> tuple[Phase, ...]:
    if not merge.changes:
        return ()
    reason = f"fast-forward to branch {name}"
    schema_path = partial(join, table.schemas.directory)
    tag_deletes = tuple(
        FileAction(
            "delete",
            table.tags.path(n),
            "tag",
            None,
            reason,
            identity=SnapshotIdentity.of(Tag.from_json(n, json.loads(target.tags[n]), n).snapshot),
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
        FileAction(
            "delete",
            table.snapshots.path(i),
            "snapshot",
            None,
            reason,
            identity=SnapshotIdentity.of(table.snapshots.snapshot(i)),
        )
        for i in merge.doomed_snapshots
    )
    schema_deletes = tuple(
        FileAction("delete", schema_path(f"schema-{i}"), "schema", None, reason)
        for i in merge.schema_deletes
    )
    schema_creates = tuple(
        FileAction(
            "create",
            schema_path(f"schema-{i}"),
            "schema",
            None,
            f"schema {i} of branch {name}",
            branch.schemas[i],
        )
        for i in merge.schema_creates
    )
    snapshot_creates = tuple(
        FileAction(
            "create",
            table.snapshots.path(i),
            "snapshot",
            None,
            f"snapshot {i} of branch {name}",
            branch.texts[i],
        )
        for i in merge.copied_snapshots
    )
    tag_creates = tuple(
        FileAction("create", table.tags.path(n), "tag", None, f"tag {n} of branch {name}", text)
        for n, text in sorted(branch.tags.items())
        if n in merge.tag_creates
    )
    earliest = min([*merge.kept_snapshots, merge.earliest])
    hints = (
        FileAction("write", latest_hint, "hint", None, reason, str(branch.snapshots[-1])),
        FileAction(
            "write",
            join(table.snapshots.directory, "EARLIEST"),
            "hint",
            None,
            reason,
            str(earliest),
        ),
    )
    return (
        Phase("tag-files", tag_deletes, sequential=True),
        Phase("latest-hint", pointer, sequential=True),
        Phase("snapshot-files", snapshot_deletes, sequential=True),
        Phase("schema-files", schema_deletes, sequential=True),
        Phase("new-schema-files", schema_creates, sequential=True),
        Phase("new-snapshot-files", snapshot_creates, sequential=True),
        Phase("new-tag-files", tag_creates, sequential=True),
        Phase("hints", hints, sequential=True),
    )


def plan_fast_forward(table: PaimonTable, name: str, *, force: bool, now_ms: int) -> ForwardPlan:
    """What making branch ``name``'s history the target's (``table``'s branch) changes."""
    validate_branch_name(name)
    if name == table.branch:
        raise BranchError(f"fast-forward from the current branch {name!r} is not allowed")
    _require_branch(table, name)
    source = table.for_branch(name)
    branch = _Side.of(source)
    if not branch.snapshots:
        raise BranchError(f"cannot fast-forward branch {name!r}: it has no snapshot")
    earliest = branch.snapshots[0]
    schema = _schema_of(branch.texts[earliest])
    target = _Side.of(table, earliest)
    merge = _decide(target, branch, earliest, schema)
    _refuse_schema_swaps(table, target, merge)
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


def _creates(plan: ForwardPlan, *phases: str) -> dict[str, str]:
    return {a.path: a.content or "" for p in plan.phases if p.name in phases for a in p.actions}


def _holds(fileio: FileIO, path: str, content: str) -> bool:
    try:
        return _text(fileio, path) == content
    except FileNotFoundError:
        return False


def _is_planned_commit(table: PaimonTable, sid: int, identity: SnapshotIdentity | None) -> bool:
    snap = table.snapshots.try_snapshot(sid)
    return (
        snap is not None
        and identity is not None
        and not identity.differences(SnapshotIdentity.of(snap))
    )


def _foreign_snapshots(table: PaimonTable, plan: ForwardPlan, *, copied: bool) -> list[int]:
    """Target snapshots from the branch's earliest on that hold none of the commits the plan
    keeps, removes or copies in: a writer's. Before the copies (``copied`` False) every id
    the plan removes must be gone already."""
    d = plan.details
    copies = _creates(plan, "new-snapshot-files")
    doomed = {
        a.path: a.identity for p in plan.phases if p.name == "snapshot-files" for a in p.actions
    }
    unchanged = {i.id: i for i in d.snapshots_unchanged}
    out = []
    for sid in table.snapshots.ids():
        if sid < d.branch_earliest:
            continue
        path = table.snapshots.path(sid)
        if sid in unchanged and _is_planned_commit(table, sid, unchanged[sid]):
            continue
        if copied and path in copies and _holds(table.fileio, path, copies[path]):
            continue
        if copied and path in doomed and _is_planned_commit(table, sid, doomed[path]):
            continue
        out.append(sid)
    return out


def _raced(table: PaimonTable, plan: ForwardPlan, landed: list[int]) -> FastForwardRaced:
    who = []
    for sid in landed:
        snap = table.snapshots.try_snapshot(sid)
        who.append(f"snapshot {sid}" + (f" by {snap.commit_user!r}" if snap else ""))
    return FastForwardRaced(
        f"fast-forward of {table.branch} to branch {plan.details.branch} stopped: a writer "
        f"committed {', '.join(who)} to {table.branch} while it ran; that commit was kept, and "
        f"{table.branch} holds what was done so far",
        hint=f"stop the writers of {table.branch}, check it (paimon inspect TABLE --check) and "
        "run fast-forward again",
    )


class _RaceWatch:
    """Once the target's replaced snapshots went, before each later phase and at the end:
    any snapshot from the branch's earliest on that is neither kept nor copied by the plan
    is a writer's commit; stop there (it stays) and fail."""

    def __init__(self, table: PaimonTable, plan: ForwardPlan) -> None:
        self.table = table
        self.plan = plan
        self.deleted = False
        self.copied = False

    def before_phase(self, phase: Phase) -> Phase:
        if self.deleted:
            self.check()
        if phase.name == "snapshot-files":
            self.deleted = True
        if phase.name == "new-snapshot-files":
            self.copied = True
        return phase

    def check(self) -> None:
        landed = _foreign_snapshots(self.table, self.plan, copied=self.copied)
        if landed:
            raise _raced(self.table, self.plan, landed)


@dataclass(frozen=True)
class FastForward(Deletion[FastForwardDetails]):
    """Paimon's fast_forward: the branch's history replaces the target's from the branch's
    earliest snapshot on; journaled (every removed commit file with its identity)."""

    command: ClassVar[str] = "fast-forward"
    journaled: ClassVar[bool] = True
    details_type: ClassVar[type[Record]] = FastForwardDetails

    name: str
    force: bool = False

    def saved_plan_problem(self, plan: ForwardPlan) -> str | None:
        return _other_branch(plan.details.branch, self.name)

    def __post_init__(self) -> None:
        parsed("name", lambda: validate_branch_name(self.name))

    def plan(self, table: PaimonTable, env: Env) -> ForwardPlan:
        return plan_fast_forward(table, self.name, force=self.force, now_ms=env.now_ms)

    def recheck(self, table: PaimonTable, plan: ForwardPlan) -> ForwardPlan:
        ids = table.snapshots.ids()
        if (ids[-1] if ids else None) != plan.requirements.latest_snapshot:
            raise StalePlanError(f"{table.branch} got a commit while planning")
        tags = {f"{table.branch}/{t.name}": t.snapshot.id for t in table.tags.tags()}
        if tags != dict(plan.requirements.tags):
            raise StalePlanError(f"the tags of {table.branch} changed while planning")
        source = table.for_branch(plan.details.branch)
        if source.snapshots.ids() != list(plan.details.branch_snapshots):
            raise StalePlanError(f"branch {plan.details.branch} got a commit while planning")
        return plan

    def apply(self, table: PaimonTable, plan: ForwardPlan, env: Env) -> None:
        watch = _RaceWatch(table, plan)
        apply_phases(
            table,
            plan,
            executor=env.executor,
            progress=env.progress,
            report=env.report,
            run=env.run,
            quarantine=env.quarantine,
            journal=True,
            before_phase=watch.before_phase,
            guard=self.action_guard(table, plan),
        )
        if not env.report.failed and not plan.empty:
            watch.copied = True
            watch.check()

    @classmethod
    def action_guard(cls, table: PaimonTable, plan: ForwardPlan) -> ActionGuard:
        """Main's snapshots go newest first: stop before one whose successor is a writer's
        commit (no gap in the ids; that commit stays)."""
        return newest_first_guard(table, lambda landed: _raced(table, plan, landed))

    @classmethod
    def resume_problem(cls, table: PaimonTable, plan: ForwardPlan) -> str | None:
        """A journal is finished only while the target holds nothing but the commits it
        keeps, removes or copies in, and no schema newer than planned."""
        landed = _foreign_snapshots(table, plan, copied=True)
        if landed:
            return (
                f"snapshot {landed[0]} was committed to {table.branch} after the fast-forward "
                "was planned"
            )
        schemas = table.schemas.ids()
        planned = plan.details.latest_schema
        copied = max(plan.details.schemas_copied, default=-1)
        if schemas and planned is not None and schemas[-1] > max(planned, copied):
            return f"schema {schemas[-1]} was added to {table.branch} after planning"
        return None

    @classmethod
    def filter_for_resume(cls, table: PaimonTable, plan: ForwardPlan) -> ForwardPlan:
        """Deletes of files that already hold what the plan copies there are done: never
        delete (or quarantine over) the run's own copies."""
        copies = _creates(plan, "new-schema-files", "new-snapshot-files", "new-tag-files")
        phases = tuple(
            replace(
                p,
                actions=tuple(
                    a
                    for a in p.actions
                    if not (
                        a.op == "delete"
                        and a.path in copies
                        and _holds(table.fileio, a.path, copies[a.path])
                    )
                ),
            )
            for p in plan.phases
        )
        return replace(plan, phases=phases)


__all__ = [
    "BranchError",
    "CreateBranch",
    "DeleteBranch",
    "FastForward",
    "plan_create_branch",
    "plan_delete_branch",
    "plan_fast_forward",
]
