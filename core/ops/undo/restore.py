"""Restore a quarantined run: every file back where it was, in the reverse of the safe order.

The run's phases ran pointers first (snapshot/tag files, then manifests, then data); the
restore goes the other way (data, then manifests, then snapshot, tag and changelog files),
and overwritten files (hints) come back last. At every instant a snapshot or tag present
references only files that exist. Nothing is overwritten: a file that exists again at its
old place with other content, a snapshot id taken again, or a gap between the restored
snapshots and the table's current ones refuses the whole restore before the first move; so
does a file a restored snapshot, tag or changelog needs that is neither in the table nor in
the run's quarantine (orphan cleaning or a later run removed it since: issue 22). The record
is read against the table at hand (``bind_record``): a copied or renamed table restores its
own files, and no path outside the table is ever followed.

A restore is journaled like every deletion (DECISIONS D2): its moves are a plan of phases
(the run's own phases, reversed), written as a journal before the first move; the next run
of any command finishes an interrupted restore after planning it again from the record
(``Restore.resume_problem``: any conflict, gap or missing file discards the journal
instead), and every move is re-validated when it happens: a file back already or gone from
the quarantine is no error, a file at its place with other content is never replaced.
The record is closed as the plan's last step, before its journal goes.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from itertools import groupby
from typing import Any, ClassVar

from core.errors import StorageError
from core.io.fileio import join
from core.ops.undo.restore_plan import (
    RestoreError,
    RestoreItem,
    RestorePlan,
    RestoreReport,
    plan_restore,
)
from core.runtime.clock import now_ms as clock_now_ms
from core.runtime.details import Record
from core.runtime.operation import Env, Operation
from core.runtime.plans import FileAction, Phase, Plan, Requirements, typed
from core.runtime.quarantine import (
    Quarantine,
    check_run_id,
    quarantine_dir,
    read_record,
    record_path,
    remove_empty_tree,
)
from core.runtime.report import PhaseReport
from core.runtime.requests import refuse
from core.table.table import PaimonTable

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class RestoreDetails(Record):
    """The details of a restore's journal: the quarantined run it undoes."""

    run_id: str


def moves(table: PaimonTable, plan: RestorePlan, now_ms: int) -> Plan[RestoreDetails]:
    """The restore as phases of file actions, as a journal holds them: each phase of the
    run undone in the reverse order (a phase is a barrier, so data and manifests are back
    before a snapshot, tag or changelog that needs them), hints last."""
    phases = []
    todo = [i for i in plan.items if i.state in ("move", "duplicate")]
    for (name, sequential), group in groupby(todo, key=lambda i: (i.phase, i.sequential)):
        actions = tuple(_action(item) for item in group)
        phases.append(Phase(f"restore {name}", actions, sequential))
    return Plan(
        Restore.command,
        table.location,
        table.branch,
        now_ms,
        tuple(phases),
        Requirements(table.snapshots.latest_id(), None, {}, (), None),
        RestoreDetails(plan.run_id),
    )


def _action(item: RestoreItem) -> FileAction:
    reason = f"quarantined at {item.source}"
    if item.op == "remove":  # a file the run wrote where there was none
        return FileAction("delete", item.path, item.kind, None, "written by the run")
    if item.op == "put-back":  # over what the run wrote there, and only over that
        return FileAction(
            "put-back", item.path, item.kind, item.size, reason, item.written, source=item.source
        )
    return FileAction("move", item.path, item.kind, item.size, reason, source=item.source)


def restore_report(plan: RestorePlan, done: Sequence[PhaseReport], seconds: float) -> RestoreReport:
    """What the restore's own phases did (``done``: not those of journals finished first)."""
    gone = sum(p.already_absent for p in done)
    return RestoreReport(
        restored=sum(p.done for p in done),
        already_in_place=sum(i.state == "in-place" for i in plan.items) + gone,
        missing=sum(i.state == "missing" for i in plan.items),
        bytes=sum(p.bytes for p in done),
        seconds=seconds,
        notes=list(plan.notes),
    )


def close_record(table: PaimonTable, run_id: str) -> None:
    """Mark the run restored and remove its emptied quarantine directories (a record closed
    already is left as it is: a resumed restore's last step may run twice)."""
    fileio = table.fileio
    path = record_path(table.paths.root, run_id)
    record = read_record(fileio, path)
    if record is None or record.get("status") == "restored":
        return
    for root in Quarantine.of(table, run_id).roots:
        remove_empty_tree(table, join(quarantine_dir(root), run_id))
    record["status"] = "restored"
    record["restored_ms"] = clock_now_ms()
    try:
        fileio.write_bytes(path, json.dumps(record).encode("utf-8"))
    except StorageError as exc:
        logger.warning("could not mark %s restored: %s", path, exc.message)


def restore_summary(plan: RestorePlan) -> Mapping[str, int]:
    counts: dict[str, int] = {}
    for item in plan.items:
        counts[item.state] = counts.get(item.state, 0) + 1
    return counts


@dataclass(frozen=True)
class Restore(Operation[RestorePlan, RestoreReport]):
    """Undo a quarantined run: every file back where it was (refused on conflicts)."""

    command: ClassVar[str] = "restore"
    rewrites_history = True
    journaled: ClassVar[bool] = True

    run_id: str | None = None  # None: the newest quarantined run

    @classmethod
    def of(cls, run_id: str | None, last: bool) -> Restore:
        """``RUN_ID`` or ``--last``, exactly one of them."""
        if (run_id is None) == (not last):
            raise refuse(None, "give a RUN_ID or --last (one of them)")
        return cls(None if last else run_id)

    def plan(self, table: PaimonTable, env: Env) -> RestorePlan:
        return self._finished_first(table, env) or plan_restore(table, self.run_id)

    def _finished_first(self, table: PaimonTable, env: Env) -> RestorePlan | None:
        """The restore of this run that the lifecycle finished from its journal a moment
        ago (an interrupted ``restore`` run again): done, nothing left to move."""
        for journal in reversed(env.report.journal_plans):
            if journal.command != self.command:
                continue
            run_id = typed(journal, RestoreDetails, source="restore journal").details.run_id
            record = read_record(table.fileio, record_path(table.paths.root, run_id))
            if record is None or record.get("status") != "restored":
                continue
            if self.run_id in (None, run_id):
                return RestorePlan(
                    run_id,
                    str(record.get("command")),
                    int(record.get("created_ms") or 0),
                    record_path(table.paths.root, run_id),
                    (),
                    (),
                    (),
                    (),
                    (f"the interrupted restore of run {run_id} was finished first",),
                )
        return None

    def apply(self, table: PaimonTable, plan: RestorePlan, env: Env) -> RestoreReport:
        """Move everything back (refused if the plan has conflicts), then close the record."""
        if plan.conflicts:
            raise RestoreError(
                f"refusing to restore run {plan.run_id}: " + "; ".join(plan.conflicts[:5]),
                hint="nothing was moved",
            )
        start = time.monotonic()
        if env.run is not None:
            env.run.begin_changes()
        journal = moves(table, plan, env.now_ms)
        first = len(env.report.phases)  # those before are journals finished first
        env.apply_phases(
            table,
            journal,
            journal=True,
            quarantined=False,
            finish=lambda: self.finish(table, journal),
        )
        own = env.report.phases[first:]
        failures = [f for p in own for f in p.failures]
        if failures:
            path, error = failures[0]
            raise RestoreError(
                f"restore of run {plan.run_id} stopped at {path}: {error}",
                hint="what was moved back stays; the next run of any command finishes the "
                "restore from its journal, or discards it saying why",
            )
        return restore_report(plan, own, time.monotonic() - start)

    # -- resuming an interrupted restore ---------------------------------------------------
    @classmethod
    def resume_problem(cls, table: PaimonTable, plan: Plan[Any]) -> str | None:
        """Plan the restore again from the record: a file back at its place with other
        content, a snapshot gap, or a file the restored roots need that is gone since (an
        orphan cleaner may have taken the data files already back) discards the journal."""
        run_id = cls._run_of(plan)
        record = read_record(table.fileio, record_path(table.paths.root, run_id))
        if record is None:
            return f"the quarantine record of run {run_id} is gone"
        status = record.get("status")
        if status == "restored":
            return None  # only the last steps were left; they are idempotent
        if status != "quarantined":
            return f"run {run_id} is {status} now"
        try:
            again = plan_restore(table, run_id)
        except RestoreError as exc:
            return exc.message
        if again.conflicts:
            return "; ".join(again.conflicts[:3])
        return None

    @classmethod
    def finish(cls, table: PaimonTable, plan: Plan[Any]) -> None:
        close_record(table, cls._run_of(plan))

    @classmethod
    def _run_of(cls, plan: Plan[Any]) -> str:
        details = typed(plan, RestoreDetails, source="restore journal").details
        return check_run_id(details.run_id, where="restore journal")
