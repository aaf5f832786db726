"""Finishing the journals interrupted runs left (D2): each plan is re-validated against the
table as it is now, at least as strictly as planning (issue 12), then run again through
``apply.run_plan``, or discarded saying why. A snapshot, changelog or tag file a journal
would still delete must hold the very commit it planned to delete (``commit_problem``).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from functools import partial
from typing import Any, Protocol

from core.errors import CorruptMetadataError, SafetyRefusalError
from core.format.model import Snapshot, load_json
from core.io.fileio import FileIO, basename
from core.runtime.apply import lock_paths, remove_journal_file, run_plan
from core.runtime.details import Record
from core.runtime.executors.base import Executor
from core.runtime.journal import (
    Journal,
    remove_stale_temps,
    unfinished_journals,
)
from core.runtime.lease import LeaseFence
from core.runtime.plans import (
    COMMIT_FILE_KINDS,
    Plan,
    SnapshotIdentity,
    typed,
)
from core.runtime.progress import NullProgress, Progress
from core.runtime.quarantine import Quarantine, check_run_id
from core.runtime.races import ActionGuard
from core.runtime.report import ExecutionReport
from core.runtime.timeparse import format_instant
from core.table.table import PaimonTable

logger = logging.getLogger(__name__)


class Resumer(Protocol):
    """How journals of one command are re-validated: an Operation class is one."""

    @property
    def details_type(self) -> type[Record] | None: ...

    def resume_problem(self, table: PaimonTable, plan: Plan[Any]) -> str | None: ...

    def filter_for_resume(self, table: PaimonTable, plan: Plan[Any]) -> Plan[Any]: ...

    def action_guard(self, table: PaimonTable, plan: Plan[Any]) -> ActionGuard | None: ...

    def finish(self, table: PaimonTable, plan: Plan[Any]) -> None: ...


ResumerLookup = Callable[[str], "Resumer | None"]


def finish_journals(
    table: PaimonTable,
    *,
    resumers: ResumerLookup,
    executor: Executor,
    progress: Progress | None = None,
    report: ExecutionReport,
    fence: LeaseFence | None = None,
) -> None:
    """Complete journals left by interrupted runs, after re-checking each against the table;
    ``fence``: the finishing run's lease, confirmed before each phase and chunk, as in a
    fresh run (a run that paused past a takeover finishes no journal)."""
    progress = progress or NullProgress()
    for temp in remove_stale_temps(table.fileio, table.location, int(time.time() * 1000)):
        report.notes.append(f"removed {temp}, left by a run killed while writing its journal")
    for journal in unfinished_journals(table.fileio, table.location):
        finish_journal(
            table,
            journal,
            resumers(journal.plan.command),
            executor=executor,
            progress=progress,
            report=report,
            fence=fence,
        )


def finish_journal(
    table: PaimonTable,
    journal: Journal,
    resumer: Resumer | None,
    *,
    executor: Executor,
    progress: Progress,
    report: ExecutionReport,
    fence: LeaseFence | None = None,
) -> None:
    """Finish one journal, or discard it (and say why) when the table moved in a way its
    plan did not foresee: resuming re-validates at least as strictly as planning (issue 12)."""
    if resumer is None:
        report.journal_plans.append(journal.plan)
        raise SafetyRefusalError(
            f"unfinished journal {journal.path} is from an unknown command "
            f"{journal.plan.command!r}; refusing to guess"
        )
    plan, unreadable = _read_details(journal, resumer)
    report.journal_plans.append(plan)
    lock_paths(table, plan)  # a path outside the table is corrupt or forged: an error
    # The quarantine's run id names directories: only one paimon-cli makes is followed.
    quarantine_run = journal.quarantine_run
    if quarantine_run is not None:
        check_run_id(quarantine_run, where=f"journal {journal.path}")
    problem = _journal_problem(table, plan) or unreadable
    if problem is not None:
        discard_journal(table, journal, problem, report)
        return
    view = table if plan.branch == table.branch else table.for_branch(plan.branch)
    problem = resumer.resume_problem(view, plan) or replaced_commit(view, plan)
    if problem is not None:
        discard_journal(table, journal, problem, report)
        return
    checked = resumer.filter_for_resume(view, plan)
    lock_paths(view, checked)
    dropped = _count(plan) - _count(checked)
    logger.warning("finishing unfinished %s run from journal %s", plan.command, journal.path)
    report.resumed_journals.append(journal.path)
    if dropped:
        report.notes.append(
            f"journal {journal.path}: {dropped} of its deletions skipped: a tag, branch, "
            "changelog or consumer created since uses those files"
        )
    quarantine = None
    if quarantine_run is not None:
        # An interrupted quarantining run keeps moving into its own quarantine.
        quarantine = Quarantine.of(view, quarantine_run)
        report.notes.append(f"journal {journal.path}: quarantine run {journal.quarantine_run}")
    run_plan(
        view,
        checked,
        executor=executor,
        progress=progress,
        journal_path=journal.path,
        report=report,
        quarantine=quarantine,
        guard=resumer.action_guard(view, checked),
        finish=partial(resumer.finish, view, checked),
        fence=fence,
    )


def _read_details(journal: Journal, resumer: Resumer) -> tuple[Plan[Any], str | None]:
    """The journal's plan with its details read as its operation's type, or as written
    and why they cannot be read (an older paimon-cli's journal: it is discarded)."""
    if resumer.details_type is None:
        return journal.plan, None
    try:
        return typed(journal.plan, resumer.details_type, source=journal.path), None
    except CorruptMetadataError as exc:
        return journal.plan, (
            f"it was written by an older paimon-cli and cannot be re-validated ({exc.reason})"
        )


def commit_at(fileio: FileIO, path: str) -> SnapshotIdentity | None:
    """The commit a snapshot, changelog or tag file holds now; None when it is absent."""
    try:
        text = fileio.read_text(path)
    except FileNotFoundError:
        return None
    return SnapshotIdentity.of(Snapshot.from_json(load_json(text, path), path))


def describe_commit_file(path: str) -> str:
    """``snapshot 10``, ``changelog 4``, ``tag 't1'`` (branches by their directory)."""
    name = basename(path)
    for prefix, what in (("snapshot-", "snapshot"), ("changelog-", "changelog")):
        if name.startswith(prefix) and name[len(prefix) :].isdigit():
            return f"{what} {name[len(prefix) :]}"
    if name.startswith("tag-"):
        return f"tag {name[4:]!r}"
    return path


def commit_problem(
    fileio: FileIO, path: str, expected: SnapshotIdentity, *, must_exist: bool, role: str = ""
) -> str | None:
    """Why ``path`` no longer holds the commit a plan saw there, or None: the one comparison
    every resume makes, so a commit that reused an id is never taken for the planned one."""
    what = describe_commit_file(path) + (f", {role}," if role else "")
    now = commit_at(fileio, path)
    if now is None:
        return f"{what} is gone" if must_exist else None
    changed = expected.differences(now)
    if not changed:
        return None
    return f"{what} was replaced by another commit ({'; '.join(changed)})"


def replaced_commit(table: PaimonTable, plan: Plan[Any]) -> str | None:
    """Why a journal must not be finished because a snapshot, changelog or tag file it would
    still delete holds another commit than it planned to delete (a writer committed after a
    rollback and reused the id), or None. A journal whose deletes carry no identity comes
    from an older paimon-cli and cannot be re-validated. A file that holds what the same
    plan creates there (fast-forward copies a branch's commits in) is the plan's own work."""
    creates = {a.path: a.content for p in plan.phases for a in p.actions if a.op == "create"}
    for phase in plan.phases:
        for action in phase.actions:
            if action.op != "delete" or action.kind not in COMMIT_FILE_KINDS:
                continue
            if action.path in creates and _holds_text(
                table.fileio, action.path, creates[action.path]
            ):
                continue
            if action.identity is None:
                return "it was written by an older paimon-cli and cannot be re-validated"
            problem = commit_problem(table.fileio, action.path, action.identity, must_exist=False)
            if problem is not None:
                return problem
    return None


def _holds_text(fileio: FileIO, path: str, content: str | None) -> bool:
    try:
        return fileio.read_text(path) == (content or "")
    except FileNotFoundError:
        return False


def _journal_problem(table: PaimonTable, plan: Plan[Any]) -> str | None:
    if plan.table.rstrip("/") != table.location.rstrip("/"):
        return f"it was written for table {plan.table}"
    if plan.branch != "main" and plan.branch not in table.branches.branches():
        return f"branch {plan.branch} no longer exists"
    return None


def discard_journal(
    table: PaimonTable, journal: Journal, reason: str, report: ExecutionReport
) -> None:
    """Drop a journal's remaining deletions: what it already did left at worst orphans
    (pointers first, D2), which a fresh plan or orphan cleaning finds again."""
    when = format_instant(journal.plan.created_ms)
    logger.warning("discarding journal %s: %s", journal.path, reason)
    report.discarded_journals.append(
        {"path": journal.path, "created_ms": journal.plan.created_ms, "reason": reason}
    )
    report.notes.append(
        f"unfinished {journal.plan.command} run from {when} discarded, nothing of it is "
        f"finished: {reason}; planning afresh"
    )
    remove_journal_file(table, journal.path, report)


def _count(plan: Plan[Any]) -> int:
    return sum(len(p.actions) for p in plan.phases)
