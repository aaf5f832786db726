"""The tag commands as operations: create-tag, rename-tag, delete-tag and expire-tags.

Creating and renaming write one tag file with create-if-absent (a concurrent creator wins
and we fail); deleting and expiring are journaled, quarantinable deletions of the tag files
and of the files only those tags kept alive (Paimon's TagDeletion, branch-safe).
"""

from __future__ import annotations

import datetime as dt
import difflib
from dataclasses import dataclass, field
from functools import partial
from typing import Any, ClassVar

from core.errors import CorruptMetadataError
from core.io.fileio import file_size
from core.ops.details.tags import (
    CreateTagDetails,
    DeletedTag,
    RenameTagDetails,
    TagDeletionDetails,
)
from core.ops.tags.tags import (
    TagError,
    apply_create_tag,
    expired_tag_names,
    filter_for_resume,
    plan_create_tag,
    plan_delete_tags,
    rename_tag,
    select_expired_tags,
    validate_tag_name,
)
from core.runtime.details import Record
from core.runtime.journal import unfinished_journals
from core.runtime.operation import Deletion, Env, Operation
from core.runtime.plans import FileAction, Phase, Plan, Requirements, typed
from core.runtime.requests import at_least, parsed, refuse
from core.runtime.timeparse import local_datetime
from core.table.table import PaimonTable


@dataclass(frozen=True)
class CreateTag(Operation[Plan[CreateTagDetails], None]):
    """``tag/tag-<name>`` on a snapshot (the latest by default), written as Paimon writes it."""

    command: ClassVar[str] = "create-tag"
    details_type: ClassVar[type[Record]] = CreateTagDetails

    name: str
    zone: dt.tzinfo
    snapshot_id: int | None = None
    time_retained_ms: int | None = None
    replace: bool = False
    from_timestamp_ms: int | None = None  # --from-timestamp, resolved (DECISIONS D4)

    def saved_plan_problem(self, plan: Plan[CreateTagDetails]) -> str | None:
        if plan.details.tag != self.name:
            return f"it creates tag {plan.details.tag!r}, not {self.name!r}"
        return None

    def __post_init__(self) -> None:
        parsed("name", lambda: validate_tag_name(self.name))
        at_least("snapshot", self.snapshot_id)
        if self.time_retained_ms is not None and self.time_retained_ms <= 0:
            raise refuse("time_retained", "must be positive")
        if self.snapshot_id is not None and self.from_timestamp_ms is not None:
            raise refuse("from_timestamp", "give --snapshot or --from-timestamp, not both")

    def plan(self, table: PaimonTable, env: Env) -> Plan[CreateTagDetails]:
        return plan_create_tag(
            table,
            self.name,
            snapshot_id=self.snapshot_id,
            time_retained_ms=self.time_retained_ms,
            replace_existing=self.replace,
            now_local=local_datetime(env.now_ms, self.zone),
            now_ms=env.now_ms,
            from_time_ms=self.from_timestamp_ms,
        )

    def apply(self, table: PaimonTable, plan: Plan[CreateTagDetails], env: Env) -> None:
        apply_create_tag(table, plan)


@dataclass(frozen=True, slots=True)
class Renamed:
    old_path: str
    new_path: str


@dataclass(frozen=True)
class RenameTag(Operation[Plan[RenameTagDetails], Renamed]):
    """A new tag file with the old one's content (create-if-absent), then the old one goes."""

    command: ClassVar[str] = "rename-tag"

    old: str
    new: str

    def __post_init__(self) -> None:
        parsed("old", lambda: validate_tag_name(self.old))
        parsed("new", lambda: validate_tag_name(self.new))

    def plan(self, table: PaimonTable, env: Env) -> Plan[RenameTagDetails]:
        names = table.tags.names()
        possible = self.old in names and self.new not in names
        src, dst = table.tags.path(self.old), table.tags.path(self.new)
        size = file_size(table.tags.listing(), self.old)
        actions = (
            (
                FileAction("write", dst, "tag", size, f"tag {self.old!r} renamed"),
                FileAction("delete", src, "tag", size, f"renamed to {self.new!r}"),
            )
            if possible
            else ()
        )
        return Plan(
            self.command,
            table.location,
            table.branch,
            env.now_ms,
            (Phase("tag", actions, sequential=True),),
            Requirements.latest(table.snapshots.latest_id()),
            RenameTagDetails(self.old, self.new, possible),
        )

    def apply(self, table: PaimonTable, plan: Plan[RenameTagDetails], env: Env) -> Renamed:
        return Renamed(*rename_tag(table, self.old, self.new))


_TAG_DELETIONS = ("delete-tag", "expire-tags")


def _deleted_by_journals(table: PaimonTable, env: Env) -> set[str]:
    """Tags an interrupted tag deletion already removed (tag files go first): its journal,
    unfinished, or finished or discarded by this run a moment ago, names them."""
    plans = [j.plan for j in unfinished_journals(table.fileio, table.location)]
    plans += env.report.journal_plans
    return {
        tag.tag
        for plan in plans
        if plan.branch == table.branch and plan.command in _TAG_DELETIONS
        for tag in _deleted_tags(plan)
    }


def _deleted_tags(plan: Plan[Any]) -> tuple[DeletedTag, ...]:
    """The tags a tag deletion's plan deletes (none when its details do not read)."""
    try:
        return typed(plan, TagDeletionDetails).details.tags
    except CorruptMetadataError:
        return ()


def refuse_missing(table: PaimonTable, missing: list[str], env: Env) -> None:
    """A tag name that does not exist is a typo, not success (Paimon's deleteTag fails too):
    refuse before anything is deleted, and suggest the closest existing names. A tag an
    interrupted deletion removed is no typo: finishing that deletion is what was asked."""
    if missing:
        gone = _deleted_by_journals(table, env)
        missing = [name for name in missing if name not in gone]
    if not missing:
        return
    existing = table.tags.names()
    close = [m for name in missing for m in difflib.get_close_matches(name, existing, n=1)]
    names = ", ".join(repr(n) for n in missing)
    raise TagError(
        f"tag {names} does not exist" if len(missing) == 1 else f"tags {names} do not exist",
        hint=f"did you mean {', '.join(repr(c) for c in close)}?"
        if close
        else f"existing tags: {', '.join(existing) or 'none'}",
    )


TagDeletionPlan = Plan[TagDeletionDetails]


class _TagDeletion(Deletion[TagDeletionDetails]):
    """Journaled, quarantinable deletion of tags and the files only they kept alive."""

    journaled: ClassVar[bool] = True
    quarantinable: ClassVar[bool] = True
    details_type: ClassVar[type[Record]] = TagDeletionDetails

    def recheck(self, table: PaimonTable, plan: TagDeletionPlan) -> TagDeletionPlan:
        return filter_for_resume(table, plan)

    @classmethod
    def filter_for_resume(cls, table: PaimonTable, plan: TagDeletionPlan) -> TagDeletionPlan:
        return filter_for_resume(table, plan)


@dataclass(frozen=True)
class DeleteTags(_TagDeletion):
    command: ClassVar[str] = "delete-tag"

    names: tuple[str, ...] = field(default_factory=tuple)
    force: bool = False

    def saved_plan_problem(self, plan: Plan[TagDeletionDetails]) -> str | None:
        planned = {t.tag for t in plan.details.tags} | set(plan.details.missing)
        if planned != set(self.names):
            return f"it deletes tags {sorted(planned)}, not {sorted(self.names)}"
        return None

    def __post_init__(self) -> None:
        if not self.names:
            raise refuse("names", "give at least one tag name")
        for name in self.names:
            parsed("names", partial(validate_tag_name, name))

    def plan(self, table: PaimonTable, env: Env) -> TagDeletionPlan:
        plan = plan_delete_tags(
            table, list(self.names), executor=env.executor, now_ms=env.now_ms, force=self.force
        )
        refuse_missing(table, list(plan.details.missing), env)
        return plan


@dataclass(frozen=True)
class ExpireTags(_TagDeletion):
    """Tags whose ``tagTimeRetained`` passed (or created before ``older_than_ms``), then
    those beyond ``tag.num-retained-max``."""

    command: ClassVar[str] = "expire-tags"

    zone: dt.tzinfo = dt.timezone.utc
    older_than_ms: int | None = None

    def plan(self, table: PaimonTable, env: Env) -> TagDeletionPlan:
        older = None
        if self.older_than_ms is not None:
            older = local_datetime(self.older_than_ms, self.zone)
        chosen = select_expired_tags(
            table,
            now_local=local_datetime(env.now_ms, self.zone),
            older_than_local=older,
            zone=self.zone,
        )
        reasons = expired_tag_names(chosen)
        return plan_delete_tags(
            table,
            list(reasons),
            executor=env.executor,
            now_ms=env.now_ms,
            force=True,
            command=self.command,
            reasons=reasons,
        )
