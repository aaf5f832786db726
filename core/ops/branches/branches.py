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
  uses is never a candidate. A commit that lands in the branch meanwhile stops the run:
  found by commit identity, not id (``_BranchDeletionGuard``), and no schema goes while a
  snapshot, changelog or tag file is left to read it.
* **fast-forward** makes the branch's history the target's (main, or ``--branch``): the
  target's snapshots from the branch's earliest snapshot on, its schemas from that
  snapshot's schema on and its tags on those snapshots are removed, then the branch's
  schemas, snapshots and tags are copied in (created only where absent). Pointers first,
  journaled: a writer's commit that lands meanwhile is never removed or overwritten (the
  run fails naming it, as a raced rollback does). Planned in ``fast_forward_plan.py``, run
  and watched for races in ``fast_forward.py``; the errors and helpers all three commands
  share are here.

Safer than Paimon (D3), each said in the plan: fast-forward refuses, unless ``--force``,
while a consumer has read a target snapshot that goes, another branch was created from a
target tag that goes, or the target holds commits made after the branch forked from it; it
refuses when a snapshot or tag the target keeps reads a schema the branch's would replace
with another; and it writes ``EARLIEST``/``LATEST`` from what is there instead of copying
the branch's hints. create-branch ``--snapshot`` is not offered:
Paimon removed it (#3934) because nothing protects such a branch's files from main's
expiry; tag the snapshot and branch from the tag.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from core.errors import MissingFileError, PaimonError, StalePlanError
from core.format.model import Tag
from core.io.fileio import FileInfo, FileIO, basename, join, parent
from core.ops.details.branches import CreateBranchDetails, DeleteBranchDetails
from core.ops.tags.tags import validate_tag_name
from core.runtime.apply import BeforePhase, create_only_if_absent
from core.runtime.details import Record
from core.runtime.operation import Deletion, Env
from core.runtime.plans import FileAction, Phase, Plan, Requirements, SnapshotIdentity
from core.runtime.races import ActionGuard
from core.runtime.requests import parsed
from core.runtime.resume import commit_problem
from core.table.branch_manager import MAIN, validate_branch_name
from core.table.snapshot_manager import SnapshotManager
from core.table.table import PaimonTable
from core.table.tag_manager import TagManager
from core.write.commit import snapshot_json

CreatePlan = Plan[CreateBranchDetails]
DeletePlan = Plan[DeleteBranchDetails]


class BranchError(PaimonError):
    """A branch command that cannot be done as asked (exists, missing, no snapshot)."""

    kind = "branch_error"


class FastForwardRaced(BranchError):
    kind = "fast_forward_raced"


class BranchCommitRaced(BranchError):
    kind = "branch_commit_raced"


def _text(fileio: FileIO, path: str) -> str:
    return fileio.read_text(path)


def same_json(a: str, b: str) -> bool:
    """Two metadata files hold the same JSON (whatever the whitespace a writer used)."""
    try:
        return bool(json.loads(a) == json.loads(b))
    except ValueError:
        return a == b


def require_branch(table: PaimonTable, name: str) -> None:
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
        if f.path not in wanted or not same_json(_text(table.fileio, f.path), wanted[f.path])
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


def other_branch(planned: str, name: str) -> str | None:
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
        return other_branch(plan.details.branch, self.name)

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
        if table.catalog.version_managed:  # the catalog creates it (REST), as in Paimon
            from core.ops.branches.catalog_branches import create_branch_through_catalog

            return create_branch_through_catalog(table, self.name, plan.details.from_tag, env)
        return super().apply(table, plan, env)

    def after_phases(
        self, table: PaimonTable, plan: CreatePlan, env: Env, before_phase: BeforePhase | None
    ) -> None:
        if env.report.failed:
            return
        try:
            _check_source_tag(table, plan)
        except StalePlanError as exc:
            # The tag went (an expiry or delete-tag) while its snapshot was copied: the new
            # branch could point at files being deleted. Remove what this run wrote, and
            # only that: a writer's commit to the new branch keeps it whole (issue 33).
            fileio = table.fileio
            ours = {a.path: a.content or "" for p in plan.phases for a in p.actions}
            foreign = [
                f.path
                for f in _walk(fileio, table.branches.path(self.name))[0]
                if f.path not in ours or not same_json(_text(fileio, f.path), ours[f.path])
            ]
            if foreign:
                raise BranchError(
                    f"{exc.message}; the branch {self.name!r} was kept: {foreign[0]} was "
                    "written to it meanwhile (a writer's)",
                    hint="check the branch (paimon inspect TABLE --branch NAME --check)",
                ) from None
            for phase in plan.phases:
                for action in phase.actions:
                    fileio.delete(action.path)
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
    require_branch(table, name)
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


def _planned_commits(plan: DeletePlan) -> dict[str, SnapshotIdentity]:
    """The commit each snapshot, changelog and tag file of the plan held when planned."""
    return {
        a.path: a.identity
        for phase in plan.phases
        for a in phase.actions
        if a.op == "delete" and a.identity is not None
    }


def _new_branch_commits(table: PaimonTable, plan: DeletePlan) -> list[str]:
    """Snapshot files of the branch that hold no commit the plan deletes: a writer's commit
    at a new id, or at an id the run removed already (a writer's next commit reuses it, in
    a file of the same name). Compared by commit identity, never by id alone (issue 33)."""
    root = table.branches.path(plan.details.branch)
    snapshots = SnapshotManager(table.fileio, root)
    planned = _planned_commits(plan)
    landed = []
    for sid in snapshots.ids():
        path = snapshots.path(sid)
        expected = planned.get(path)
        if expected is None:
            landed.append(f"snapshot {sid}")
            continue
        problem = commit_problem(table.fileio, path, expected, must_exist=False)
        if problem is not None:
            landed.append(f"snapshot {sid} (another commit than planned)")
    return landed


def _commit_files_left(table: PaimonTable, name: str) -> list[str]:
    """Every snapshot, changelog and tag file in the branch: while one is there, something
    reads the branch's schemas."""
    root = table.branches.path(name)
    fileio = table.fileio
    found: list[str] = []
    for manager in (
        SnapshotManager(fileio, root),
        SnapshotManager(fileio, root, kind="changelog"),
    ):
        found += [f"{manager.kind} {i}" for i in manager.ids()]
    found += [f"tag {t!r}" for t in TagManager(fileio, root).names()]
    return found


def _raced(name: str, landed: Sequence[str]) -> BranchCommitRaced:
    return BranchCommitRaced(
        f"delete-branch {name} stopped: a writer committed to the branch while it was "
        f"deleted ({', '.join(landed[:3])}); that commit, the schemas and the files not yet "
        "deleted stay",
        hint="stop the branch's writers, check it (paimon inspect TABLE --branch "
        f"{name} --check), then run delete-branch again",
    )


class _BranchDeletionGuard:
    """Around each deletion of delete-branch (a run and its resume): a snapshot, changelog
    or tag file goes only while it holds the commit planned; a snapshot only while no
    writer committed above it or at an id the run removed already (checked again after
    it went: a commit that landed on it meanwhile gets it back); a schema only while no
    snapshot, changelog or tag file is left in the branch, and the schemas go back when one
    appears while they are removed. Any of these stops the run: the writer's commit stays
    readable."""

    def __init__(self, table: PaimonTable, plan: DeletePlan) -> None:
        self.table = table
        self.plan = plan
        self.name = plan.details.branch
        self.snapshots = SnapshotManager(table.fileio, table.branches.path(self.name))
        self.planned = _planned_commits(plan)
        self._content: dict[str, bytes] = {}
        self._schemas: dict[str, bytes] = {}

    def before(self, action: FileAction) -> None:
        fileio = self.table.fileio
        if action.op != "delete":
            return
        expected = self.planned.get(action.path)
        if expected is not None:
            problem = commit_problem(fileio, action.path, expected, must_exist=False)
            if problem is not None:
                raise _raced(self.name, [problem])
        sid = self._snapshot_id(action)
        if sid is not None:
            self._check_above(sid)
            self._keep(action.path, self._content)
        elif action.kind == "schema":
            left = _commit_files_left(self.table, self.name)
            if left:
                raise _raced(self.name, left)
            self._keep(action.path, self._schemas)

    def after(self, action: FileAction) -> None:
        if action.op != "delete":
            return
        sid = self._snapshot_id(action)
        if sid is not None:
            content = self._content.pop(action.path, None)
            landed = self._present_from(sid)
            if landed:
                if content is not None and landed[0] != sid:  # a commit on it: it goes back
                    create_only_if_absent(self.table.fileio, action.path, content)
                raise _raced(self.name, [f"snapshot {i}" for i in landed])
        elif action.kind == "schema":
            left = _commit_files_left(self.table, self.name)
            if left:
                for path, content in self._schemas.items():
                    create_only_if_absent(self.table.fileio, path, content)
                raise _raced(self.name, left)

    def _snapshot_id(self, action: FileAction) -> int | None:
        name = basename(action.path)
        if action.kind != "snapshot" or parent(action.path) != self.snapshots.directory:
            return None
        suffix = name[len(self.snapshots.prefix) :]
        return int(suffix) if name.startswith(self.snapshots.prefix) and suffix.isdigit() else None

    def _present_from(self, sid: int) -> list[int]:
        """Snapshot ids present from ``sid`` on, probing up as a writer finds its latest."""
        found = []
        while self.table.fileio.exists(self.snapshots.path(sid)):
            found.append(sid)
            sid += 1
        return found

    def _check_above(self, sid: int) -> None:
        """Snapshots go newest first: any above ``sid`` now is a writer's."""
        landed = self._present_from(sid + 1)
        if landed:
            raise _raced(self.name, [f"snapshot {i}" for i in landed])

    def _keep(self, path: str, into: dict[str, bytes]) -> None:
        try:
            into[path] = self.table.fileio.read_bytes(path)
        except FileNotFoundError:
            into.pop(path, None)  # gone already (a resumed run)


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
        return other_branch(plan.details.branch, self.name)

    def apply(self, table: PaimonTable, plan: DeletePlan, env: Env) -> None:
        if table.catalog.version_managed:  # the catalog drops it (REST), as in Paimon
            from core.ops.branches.catalog_branches import drop_branch_through_catalog

            return drop_branch_through_catalog(table, self.name, env)
        return super().apply(table, plan, env)

    def committed_since(self, table: PaimonTable, plan: DeletePlan) -> str | None:
        """The plan was made on the branch it deletes: a commit there makes it stale."""
        now = _branch_snapshots_now(table, plan)
        seen = list(plan.details.snapshots)
        if now != seen:
            return f"branch {self.name!r} has snapshots {now} now, the plan saw {seen}"
        landed = _new_branch_commits(table, plan)
        return f"branch {self.name!r} holds {landed[0]} now" if landed else None

    def plan(self, table: PaimonTable, env: Env) -> DeletePlan:
        return plan_delete_branch(table, self.name, env.now_ms)

    def recheck(self, table: PaimonTable, plan: DeletePlan) -> DeletePlan:
        if _branch_snapshots_now(table, plan) != list(plan.details.snapshots) or (
            _new_branch_commits(table, plan)
        ):
            raise StalePlanError(f"branch {self.name!r} got a commit while planning")
        return plan

    def before_phase(self, table: PaimonTable, plan: DeletePlan, env: Env) -> BeforePhase:
        def before_phase(phase: Phase) -> Phase:
            landed = _new_branch_commits(table, plan)
            if not landed and phase.name in ("schema-files", "directories"):
                # a schema goes only once no commit file is left to read it (issue 33)
                landed = _commit_files_left(table, self.name)
            if landed:
                raise _raced(self.name, landed)
            return phase

        return before_phase

    @classmethod
    def action_guard(cls, table: PaimonTable, plan: DeletePlan) -> ActionGuard:
        return _BranchDeletionGuard(table, plan)

    @classmethod
    def resume_problem(cls, table: PaimonTable, plan: DeletePlan) -> str | None:
        landed = _new_branch_commits(table, plan)
        if landed:
            return (
                f"{landed[0]} was committed to branch {plan.details.branch} after the "
                "deletion was planned"
            )
        return None


__all__ = [
    "BranchError",
    "BranchCommitRaced",
    "CreateBranch",
    "DeleteBranch",
    "FastForwardRaced",
    "other_branch",
    "plan_create_branch",
    "plan_delete_branch",
    "require_branch",
    "same_json",
]
