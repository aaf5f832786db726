"""Acting on a plan: lock paths, journal, run phases in order (a barrier each), report.
Finishing the journals of interrupted runs (D2) is ``resume.py``."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from functools import partial
from typing import Any

from core.errors import PaimonError, SafetyRefusalError, StorageError
from core.io.fileio import FileIO, parent
from core.runtime.executors.base import Executor, Work
from core.runtime.journal import (
    remove_journal,
    write_journal,
)
from core.runtime.lease import LOST_HINT, FenceWatch, LeaseFence, LeaseLostError
from core.runtime.plans import (
    FileAction,
    Phase,
    Plan,
)
from core.runtime.progress import Progress
from core.runtime.quarantine import Quarantine
from core.runtime.quarantine import write_record as write_quarantine_record
from core.runtime.races import ActionGuard
from core.runtime.report import ExecutionReport, PhaseReport
from core.runtime.runs import Run
from core.runtime.wording import plural
from core.table.table import PaimonTable

logger = logging.getLogger(__name__)

Recheck = Callable[[PaimonTable, Plan[Any]], Plan[Any]]


def lock_paths(table: PaimonTable, plan: Plan[Any]) -> None:
    """Second lock: every action must stay inside the table root or declared external roots."""
    for phase in plan.phases:
        for action in phase.actions:
            for path in (action.path, action.source):
                if path is not None and not table.paths.is_inside_table(path):
                    raise SafetyRefusalError(
                        f"refusing to touch {path}: outside the table root and its "
                        "declared external paths"
                    )


def _run_action(
    table: PaimonTable, action: FileAction, quarantine: Quarantine | None = None
) -> tuple[str, int]:
    """Returns (outcome, bytes); outcome is done | absent | skipped. With a quarantine a
    delete is a move into it (the same order, the same outcomes)."""
    fileio = table.fileio
    if action.op == "delete":
        if quarantine is not None:
            moved = quarantine.move_in(fileio, action.path)
            return ("done", action.size or 0) if moved else ("absent", 0)
        return ("done", action.size or 0) if fileio.delete(action.path) else ("absent", 0)
    if action.op == "write":
        fileio.write_bytes(action.path, (action.content or "").encode("utf-8"))
        return "done", 0
    if action.op == "create":
        return _create(fileio, action), 0
    if action.op in ("move", "put-back"):
        outcome = _move_back(fileio, action)
        return outcome, (action.size or 0) if outcome == "done" else 0
    if not fileio.exists(action.path):
        return "absent", 0
    return ("done", 0) if fileio.delete_empty_dir(action.path) else ("skipped", 0)


class CreateRefusedError(StorageError):
    """A file a plan creates exists with other content: another writer's, never replaced."""

    kind = "create_refused"


def _create(fileio: FileIO, action: FileAction) -> str:
    """Create ``action.path`` with its content only where absent (atomically where the store
    can); the same content there already (an earlier try) is done too."""
    if not create_only_if_absent(fileio, action.path, (action.content or "").encode("utf-8")):
        raise CreateRefusedError(
            f"{action.path} exists with other content (another writer's); it was kept"
        )
    return "done"


def create_only_if_absent(fileio: FileIO, path: str, data: bytes) -> bool:
    """Create ``path`` holding ``data`` only where absent: the commit path's create (a
    compare-and-swap where the store has one, an answer lost after the store applied it read
    back as ours), then read back on stores without one, where a writer's PUT can still land
    over ours. True when ``path`` holds ``data`` now; False when it holds a writer's file."""
    if fileio.conditional_create_supported(path):
        return fileio.write_if_absent(path, data)
    try:
        return fileio.read_bytes(path) == data
    except FileNotFoundError:
        fileio.write_bytes(path, data)
    try:
        return fileio.read_bytes(path) == data
    except FileNotFoundError:
        return False


class MoveRefusedError(StorageError):
    """A file a plan moves back is at its place again with other content: never replaced."""

    kind = "move_refused"


SAME_CONTENT_LIMIT = 1 << 20  # compare bytes of small files (metadata), sizes of big ones


def same_file(fileio: FileIO, a: str, b: str, size_a: int, size_b: int) -> bool:
    """Whether two present files are one (a half-done move leaves two names of it)."""
    if size_a != size_b:
        return False
    if size_a > SAME_CONTENT_LIMIT:
        return True
    try:
        return fileio.read_bytes(a) == fileio.read_bytes(b)
    except FileNotFoundError:
        return False


# Kinds whose names carry a writer's uuid (data, manifests, index files): no writer can
# create one of those names, so a plain move puts them back. Every other file (snapshot,
# changelog, tag and schema files, hints, consumers) is a name a writer creates.
UNIQUE_NAME_KINDS = frozenset(
    {"data", "manifest", "manifest-list", "index-manifest", "index", "statistics", "changelog"}
)


def _move_back(fileio: FileIO, action: FileAction) -> str:
    """Move ``action.source`` to ``action.path``, validated at the moment it happens, so a
    resumed journal is as safe as a fresh run: a source already gone (moved back before the
    interruption, or never there) is absent, not an error; the same file at both names (a
    move cut halfway) is done by dropping the source; another file at ``path`` is never
    replaced. ``put-back``: the old content of a file the run overwrote (``_put_back``)."""
    source = action.source or ""
    if action.op == "put-back":
        return _put_back(fileio, action, source)
    there = fileio.info(source)
    if there is None:
        return "absent"
    here = fileio.info(action.path)
    if here is None:
        if fileio.is_local(action.path) or action.kind in UNIQUE_NAME_KINDS:
            # local: a hard link, which never replaces a file created meanwhile
            return "done" if fileio.move(source, action.path) else "absent"
        return _create_back(fileio, action, source)
    if not same_file(fileio, action.path, source, here.size, there.size):
        raise MoveRefusedError(
            f"{action.path} exists again with other content; it was kept, and the file "
            f"stays at {source}"
        )
    fileio.delete(source)
    return "done"


def _create_back(fileio: FileIO, action: FileAction, source: str) -> str:
    """Put a file a writer could create back with the commit path's create-if-absent: on an
    object store a move is an unconditional copy, which would replace a writer's snapshot
    committed while it was in flight (issue 33). The quarantined copy goes only once
    ``path`` holds its bytes."""
    try:
        data = fileio.read_bytes(source)
    except FileNotFoundError:
        return "absent"
    if not create_only_if_absent(fileio, action.path, data):
        raise MoveRefusedError(
            f"{action.path} was created by another writer while the restore ran; the "
            f"writer's file was kept, and the file stays at {source}"
        )
    fileio.delete(source)
    return "done"


def _put_back(fileio: FileIO, action: FileAction, source: str) -> str:
    """The old content of a file the run overwrote, back over what the run wrote there
    (``action.content``; None in an older journal: replaced whatever it holds). A file
    changed since by someone else is theirs: a hint (only a hint, which every writer
    rewrites) stays as it is, anything else stops the restore; a file gone since is created
    only where absent."""
    try:
        old = fileio.read_bytes(source)
    except FileNotFoundError:
        return "absent"
    try:
        now: bytes | None = fileio.read_bytes(action.path)
    except FileNotFoundError:
        now = None
    if now is None:
        if not create_only_if_absent(fileio, action.path, old):
            return _changed_since(action, source)
    elif now != old:
        if action.content is not None and now != action.content.encode("utf-8"):
            return _changed_since(action, source)
        fileio.write_bytes(action.path, old)
    fileio.delete(source)
    return "done"


def _changed_since(action: FileAction, source: str) -> str:
    if action.kind == "hint":
        return "skipped"  # a writer's newer hint; readers probe past a stale one anyway
    raise MoveRefusedError(
        f"{action.path} was changed by another writer since the run; it was kept, and its "
        f"old content stays at {source}"
    )


def _run_one(
    table: PaimonTable, action: FileAction, quarantine: Quarantine | None = None
) -> tuple[FileAction, str, int, str | None]:
    try:
        outcome, size = _run_action(table, action, quarantine)
        return action, outcome, size, None
    except StorageError as exc:
        return action, "failed", 0, exc.message


DELETE_BATCH = 1000  # keys per S3 DeleteObjects request


def _batchable(table: PaimonTable, phase: Phase, quarantine: Quarantine | None) -> bool:
    """Plain deletes on an object store with batch delete: one request per 1,000 keys."""
    return (
        quarantine is None
        and bool(phase.actions)
        and all(
            a.op == "delete" and table.fileio.supports_batch_delete(a.path) for a in phase.actions
        )
    )


Row = tuple[FileAction, str, int, str | None]
#: an action a chunk left untouched because its run lost the lease (the error slot says why)
FENCED = "fenced"


def _fenced(actions: tuple[FileAction, ...], reason: str) -> list[Row]:
    return [(a, FENCED, 0, reason) for a in actions]


def _watch(fence: LeaseFence | None) -> tuple[FenceWatch | None, str | None]:
    """The chunk's fence watch, confirmed before its first action; or why it must not start."""
    if fence is None:
        return None, None
    try:
        return fence.watch(), None
    except LeaseLostError as exc:
        return None, exc.message


def _delete_chunk(
    table: PaimonTable, fence: LeaseFence | None, actions: tuple[FileAction, ...]
) -> list[Row]:
    """One batch: each key the store refused (or did not confirm) is a failure of its own,
    never counted as done or freed. One request: the fence is confirmed before it."""
    _, refused = _watch(fence)
    if refused is not None:
        return _fenced(actions, refused)
    failed = table.fileio.delete_many([a.path for a in actions])
    return [
        (a, "failed", 0, failed[a.path].message)
        if a.path in failed
        else (a, "done", a.size or 0, None)
        for a in actions
    ]


def _delete_each(
    table: PaimonTable, fence: LeaseFence | None, actions: tuple[FileAction, ...]
) -> list[Row]:
    """Plain deletes, one FileIO call for the chunk: the outcomes ``_run_one`` gives."""
    watch, refused = _watch(fence)
    if refused is not None:
        return _fenced(actions, refused)
    stopped: list[str] = []

    def keep_going() -> bool:
        assert watch is not None
        reason = watch.stop_reason()
        if reason is not None:
            stopped.append(reason)
        return reason is None

    outcomes = table.fileio.delete_each(
        [a.path for a in actions], keep_going if watch is not None else None
    )
    rows: list[Row] = [
        (a, "done", a.size or 0, None)
        if outcome is True
        else (a, "absent", 0, None)
        if outcome is False
        else (a, "failed", 0, outcome.message)
        for a, outcome in zip(actions, outcomes, strict=False)
    ]
    if stopped:
        rows += _fenced(actions[len(outcomes) :], stopped[0])
    return rows


def _run_many(
    table: PaimonTable,
    quarantine: Quarantine | None,
    fence: LeaseFence | None,
    actions: tuple[FileAction, ...],
) -> list[Row]:
    watch, refused = _watch(fence)
    if refused is not None:
        return _fenced(actions, refused)
    rows: list[Row] = []
    for i, action in enumerate(actions):
        reason = watch.stop_reason() if watch is not None else None
        if reason is not None:
            return rows + _fenced(actions[i:], reason)
        rows.append(_run_one(table, action, quarantine))
    return rows


def _run_phase(
    table: PaimonTable,
    phase: Phase,
    executor: Executor,
    progress: Progress,
    quarantine: Quarantine | None,
    record: Run | None,
    guard: ActionGuard | None = None,
    fence: LeaseFence | None = None,
) -> tuple[PhaseReport, PaimonError | None]:
    """The phase's report, and the error ``guard`` (or ``fence``: the run lost its lease)
    stopped it with, or None. Every chunk confirms the lease before it acts and watches it
    while it works, sequential phases too (DECISIONS D13)."""
    report = PhaseReport(phase.name)
    start = time.monotonic()
    progress.start(phase.name, len(phase.actions))
    one = partial(_run_one, table, quarantine=quarantine)
    stopped: PaimonError | None = None
    if phase.sequential:
        results = []
        watch: FenceWatch | None = None
        for action in phase.actions:
            try:
                if fence is not None:
                    if watch is None:
                        watch = fence.watch()
                    else:
                        reason = watch.stop_reason()
                        if reason is not None:
                            raise LeaseLostError(reason, hint=LOST_HINT)
                if guard is not None:
                    guard.before(action)
                results.append(one(action))
                if guard is not None and results[-1][3] is None:
                    guard.after(action)
            except PaimonError as exc:
                stopped = exc  # what was done so far is reported, then the run stops
                break
            progress.advance()
            if results[-1][3] is not None:
                break  # strict order: never skip ahead of a failed step
    else:
        run: Callable[[tuple[FileAction, ...]], list[Row]]
        work: Work
        if _batchable(table, phase, quarantine):
            run, step, work = partial(_delete_chunk, table, fence), DELETE_BATCH, "io"
        else:
            # Chunks, not one task per file: a million futures cost more than the deletes.
            plain = quarantine is None and all(a.op == "delete" for a in phase.actions)
            run = (
                partial(_delete_each, table, fence)
                if plain
                else partial(_run_many, table, quarantine, fence)
            )
            step = max(1, min(256, len(phase.actions) // (executor.parallelism * 4) or 1))
            local = all(table.fileio.is_local(a.path) for a in phase.actions)
            work = "local" if local else "io"
        chunks = [phase.actions[i : i + step] for i in range(0, len(phase.actions), step)]
        results = [
            row
            for rows in executor.map(
                run, chunks, on_result=lambda rows: progress.advance(len(rows)), work=work
            )
            for row in rows
        ]
    fenced: list[str] = []
    for action, outcome, size, error in results:
        if outcome == FENCED:
            fenced.append(error or "")
        elif error is not None:
            report.failures.append((action.path, error))
        elif outcome == "done":
            report.done += 1
            report.bytes += size
            if record is not None and action.op in ("delete", "move", "put-back"):
                record.add_done(action.kind, size)
        elif outcome == "absent":
            report.already_absent += 1
        else:
            report.skipped += 1
    if fenced and stopped is None:
        stopped = LeaseLostError(fenced[0], hint=LOST_HINT)
    if fenced:
        report.skipped += len(fenced)  # left untouched: the run lost its lease
    progress.finish()
    report.seconds = time.monotonic() - start
    logger.info(
        "%s: %d done, %d already absent, %d failed in %.2fs",
        phase.name,
        report.done,
        report.already_absent,
        len(report.failures),
        report.seconds,
    )
    return report, stopped


BeforePhase = Callable[[Phase], Phase]
#: What is left once every phase of a plan ran, before its journal goes (restore closes the
#: quarantine record it undid): part of the plan's work, so a resumed journal does it too.
Finish = Callable[[], None]


def run_plan(
    table: PaimonTable,
    plan: Plan[Any],
    *,
    executor: Executor,
    progress: Progress,
    journal_path: str | None,
    report: ExecutionReport,
    before_phase: BeforePhase | None = None,
    quarantine: Quarantine | None = None,
    run: Run | None = None,
    guard: ActionGuard | None = None,
    finish: Finish | None = None,
    fence: LeaseFence | None = None,
) -> None:
    """Run the phases; the journal stays if anything failed (the next run finishes it).

    ``before_phase`` may drop actions right before a phase runs (last-moment re-checks);
    ``guard`` may stop a sequential phase at an action (a race seen);
    with ``quarantine`` every delete is a move into it; ``run`` records what was done;
    ``finish`` runs after the last phase, before the journal is removed; ``fence`` (by
    default ``run``'s lease) is confirmed before each phase and by each chunk of it."""
    if run is not None:
        run.add_plan(plan)
    if fence is None and run is not None:
        fence = run.fence()
    execution = _Execution(
        executor, progress, report, quarantine, run, before_phase, guard, finish, fence
    )
    try:
        _run_phases(table, plan, journal_path, execution)
    finally:
        if run is not None:
            run.add_report(report)


@dataclass(frozen=True)
class _Execution:
    """Where one run of a plan's phases works, what it reports to, and its hooks."""

    executor: Executor
    progress: Progress
    report: ExecutionReport
    quarantine: Quarantine | None
    run: Run | None
    before_phase: BeforePhase | None
    guard: ActionGuard | None
    finish: Finish | None
    fence: LeaseFence | None


def _run_phases(
    table: PaimonTable, plan: Plan[Any], journal_path: str | None, ex: _Execution
) -> None:
    report = ex.report
    for planned in plan.phases:
        # a phase is a safe point: a run that lost its lease stops here
        if ex.run is not None:
            ex.run.check_lease()
        elif ex.fence is not None:
            ex.fence.confirm()
        phase = planned
        if ex.before_phase is not None and planned.actions:
            phase = ex.before_phase(planned)
            planned_ids = {id(a) for a in planned.actions}
            if not all(id(a) in planned_ids for a in phase.actions):
                lock_paths(table, replace(plan, phases=(phase,)))  # new actions: lock them too
            dropped = len(planned.actions) - len(phase.actions)
            if dropped:
                report.notes.append(
                    f"{phase.name}: {plural(dropped, 'file')} kept: they became referenced or "
                    "changed after planning"
                )
        if not phase.actions:
            continue
        phase_report, stopped = _run_phase(
            table, phase, ex.executor, ex.progress, ex.quarantine, ex.run, ex.guard, ex.fence
        )
        report.phases.append(phase_report)
        if stopped is not None:
            raise stopped
        if phase_report.failures:
            return  # a phase is a barrier: never start the next one after a failure
    if ex.finish is not None:
        ex.finish()
    if journal_path is not None:
        remove_journal_file(table, journal_path, report)


def remove_journal_file(table: PaimonTable, path: str, report: ExecutionReport) -> None:
    try:
        remove_journal(table.fileio, path)
        directory = parent(path)
        table.fileio.delete_empty_dir(directory)
        table.fileio.delete_empty_dir(parent(directory))
    except StorageError as exc:
        # All work is done; a leftover journal is only re-finished (a no-op) next time.
        report.notes.append(f"could not remove journal {path}: {exc.message}")


def apply_phases(
    table: PaimonTable,
    plan: Plan[Any],
    *,
    executor: Executor,
    progress: Progress,
    report: ExecutionReport,
    run: Run | None,
    quarantine: Quarantine | None,
    journal: bool,
    before_phase: BeforePhase | None = None,
    guard: ActionGuard | None = None,
    finish: Finish | None = None,
) -> None:
    """Act on a re-checked plan: lock its paths, record the quarantine, write the journal,
    then run the phases. Without a journal an interruption leaves only what a rerun plans
    again (orphans)."""
    start = time.monotonic()
    lock_paths(table, plan)
    if not plan.empty:
        if quarantine is not None:
            write_quarantine_record(table.fileio, table, quarantine, plan)
        journal_path = None
        if journal:
            journal_path = write_journal(
                table.fileio,
                table.location,
                plan,
                quarantine_run=quarantine.run_id if quarantine else None,
            )
        run_plan(
            table,
            plan,
            executor=executor,
            progress=progress,
            journal_path=journal_path,
            report=report,
            before_phase=before_phase,
            quarantine=quarantine,
            run=run,
            guard=guard,
            finish=finish,
        )
    elif finish is not None:
        finish()  # nothing to move or delete: what is left after the phases still is
    report.seconds += time.monotonic() - start
