"""remove-unexisting-files: Paimon's ``remove_unexisting_files`` procedure (1.1+).

The repair after a failed ``inspect --check``: the data files the latest snapshot references
that do not exist (``ListUnexistingFiles``: one existence check per file of the scan, every
level) are marked DELETE in one new snapshot, so readers work again. As Paimon commits it:
an APPEND commit whose data increment deletes exactly those files, identifier
``Long.MAX_VALUE``. The plan names every file with the rows it held (manifest row count).

Safer than Paimon (issue 22): only a definite "not found" is missing (permission denied,
a stale handle or an I/O error stops the run); a file whose whole bucket or partition
directory is missing while the directory above it exists (an unmounted, renamed or briefly
unreadable directory looks like that) refuses the run; and right before committing, every
file is checked again.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import ClassVar

from core.compaction.config import (
    check_partition_filters,
    parse_partition_filter,
    partition_matches,
)
from core.errors import SafetyRefusalError, StalePlanError
from core.format.model import ManifestEntry, Snapshot
from core.io.fileio import FileIO, parent
from core.ops.details.repair import MissingFile, RemoveUnexistingDetails
from core.runtime.clock import now_ms as clock_now_ms
from core.runtime.details import Record
from core.runtime.executors.base import Executor
from core.runtime.operation import Env, Operation
from core.runtime.plans import Phase, Plan, Requirements
from core.runtime.progress import NullProgress, Progress
from core.runtime.requests import parsed
from core.runtime.runs import Run
from core.runtime.wording import plural
from core.table.table import PaimonTable
from core.write.commit import (
    BATCH_COMMIT_IDENTIFIER,
    Changes,
    CommitResult,
    commit,
)
from core.write.live_entries import live_raw_entries

RepairPlan = Plan[RemoveUnexistingDetails]
COMMAND = "remove-unexisting-files"


def _missing(fileio: FileIO, paths: Sequence[str]) -> list[bool]:
    return [not fileio.exists(p) for p in paths]


def _missing_directories(fileio: FileIO, paths: Sequence[str]) -> dict[str, list[str]]:
    """For each missing file whose own directory is gone too: the topmost missing directory
    above it, with the file directories below it. Only where directories exist on their own
    (on object stores a directory is nothing but its keys)."""
    out: dict[str, list[str]] = {}
    for directory in sorted({parent(p) for p in paths if fileio.has_directories(p)}):
        top = next((d for d in out if directory.startswith(d + "/") or directory == d), None)
        if top is None:
            if fileio.exists(directory):
                continue
            top = directory
            while parent(top) != top and not fileio.exists(parent(top)):
                top = parent(top)
        out.setdefault(top, []).append(directory)
    return out


def _refuse_missing_directories(fileio: FileIO, paths: Sequence[str]) -> None:
    gone = _missing_directories(fileio, paths)
    if not gone:
        return
    top, below = next(iter(gone.items()))
    more = sum(len(v) for v in gone.values()) - 1
    raise SafetyRefusalError(
        f"refusing to mark the files of {top} DELETE: that whole directory is missing "
        f"while {parent(top)} exists (an unmounted, renamed or briefly unreadable directory "
        "looks like this)"
        + (f"; {len(gone) - 1} more such directories" if len(gone) > 1 else "")
        + "; nothing was committed",
        hint="check the storage; if the files were really lost, create their directories "
        f"empty (mkdir -p {below[0]}" + (f" and {more} more" if more else "") + ") and run again",
    )


def _check_still_missing(fileio: FileIO, paths: Sequence[str]) -> None:
    """Right before committing: every file the plan marks DELETE is still missing, and in a
    directory that is there."""
    back = [p for p in paths if fileio.exists(p)]
    if back:
        raise StalePlanError(
            f"{len(back)} of the {plural(len(paths), 'file')} planned as missing exist now (first: "
            f"{back[0]}); nothing was committed",
            hint="plan again: paimon remove-unexisting-files TABLE --dry-run",
        )
    _refuse_missing_directories(fileio, paths)


def _candidates(
    table: PaimonTable, latest: Snapshot, partitions: Sequence[Mapping[str, str]]
) -> list[tuple[ManifestEntry, dict[str, str | None]]]:
    """The latest snapshot's live data files in the partitions, each with its partition."""
    postpone = table.options.bucket == -2
    specs: dict[bytes, dict[str, str | None]] = {}
    out = []
    for e in table.live_files(latest):
        if e.bucket < 0 and not postpone:
            continue
        spec = specs.get(e.partition)
        if spec is None:
            spec = specs[e.partition] = dict(table.paths.partition_spec(e.partition))
        if partition_matches(spec, partitions):
            out.append((e, spec))
    return out


def _missing_files(
    table: PaimonTable,
    candidates: list[tuple[ManifestEntry, dict[str, str | None]]],
    executor: Executor,
    progress: Progress,
) -> list[tuple[ManifestEntry, MissingFile]]:
    """The candidates whose data file does not exist (a definite "not found")."""
    paths = [table.paths.data_file_path(e) for e, _ in candidates]
    chunks = [paths[i : i + 256] for i in range(0, len(paths), 256)]
    progress.start("existence checks", len(paths))
    flags = [
        flag
        for chunk in executor.map(
            partial(_missing, table.fileio), chunks, on_result=lambda r: progress.advance(len(r))
        )
        for flag in chunk
    ]
    progress.finish()
    missing = [
        (e, MissingFile(p, spec, e.bucket, e.file.level, e.file.row_count, e.file.file_size))
        for (e, spec), p, gone in zip(candidates, paths, flags, strict=True)
        if gone
    ]
    _refuse_missing_directories(table.fileio, [m.path for _, m in missing])
    return missing


def plan_remove_unexisting(
    table: PaimonTable,
    *,
    partitions: Sequence[Mapping[str, str]] = (),
    executor: Executor,
    progress: Progress | None = None,
    now_ms: int | None = None,
) -> RepairPlan:
    """Every data file of the latest snapshot (in the partitions) that does not exist."""
    check_partition_filters(table, partitions)
    latest = table.snapshots.latest()
    files: tuple[MissingFile, ...] = ()
    identifiers: tuple[tuple[str, int, int, str], ...] | None = None
    phases: tuple[Phase, ...] = ()
    if latest is not None:
        candidates = _candidates(table, latest, partitions)
        missing = _missing_files(table, candidates, executor, progress or NullProgress())
        files = tuple(m for _, m in missing)
        identifiers = tuple(
            (e.partition.hex(), e.bucket, e.file.level, e.file.file_name) for e, _ in missing
        )
        if missing:
            rows = sum(m.rows for m in files)
            phases = (
                Phase.commit(
                    table.snapshots.path(latest.id + 1),
                    f"APPEND commit marking {plural(len(missing), 'missing data file')} "
                    f"({plural(rows, 'row')}) DELETE",
                ),
            )
    details = RemoveUnexistingDetails(
        latest.id if latest else None, files, identifiers, sum(f.rows for f in files)
    )
    requirements = Requirements.latest(latest.id if latest else None)
    return Plan(
        COMMAND,
        table.location,
        table.branch,
        now_ms if now_ms is not None else clock_now_ms(),
        phases,
        requirements,
        details,
    )


def _builder(table: PaimonTable, plan: RepairPlan) -> Callable[[Snapshot], Changes]:
    wanted = {
        (bytes.fromhex(p), b, level, name) for p, b, level, name in plan.details.identifiers or ()
    }
    paths = [f.path for f in plan.details.files]

    def build(latest: Snapshot) -> Changes:
        _check_still_missing(table.fileio, paths)
        deletes = []
        for row in live_raw_entries(table, latest):
            f = row["_FILE"]
            key = (bytes(row["_PARTITION"]), row["_BUCKET"], f["_LEVEL"], f["_FILE_NAME"])
            if key in wanted:
                deletes.append({**row, "_KIND": 1})
        # Every DELETE is one of latest's own live rows: nothing to re-check.
        return Changes(tuple(deletes), frozenset(), {"based_on": latest.id}, deletes_verified=True)

    return build


def apply_remove_unexisting(
    table: PaimonTable,
    plan: RepairPlan,
    *,
    allow_unsafe: bool = False,
    run: Run | None = None,
) -> CommitResult | None:
    """Commit the plan's DELETEs; None when nothing is missing."""
    if not plan.details.identifiers:
        return None
    return commit(
        table,
        _builder(table, plan),
        commit_kind="APPEND",
        identifier=BATCH_COMMIT_IDENTIFIER,
        allow_unsafe=allow_unsafe,
        run=run,
    )


@dataclass(frozen=True)
class RemoveUnexistingFiles(Operation[RepairPlan, CommitResult]):
    """Paimon's remove_unexisting_files: one APPEND commit marking missing files DELETE."""

    command: ClassVar[str] = COMMAND
    removes_partitions: ClassVar[bool] = True
    details_type: ClassVar[type[Record]] = RemoveUnexistingDetails

    partitions: tuple[Mapping[str, str], ...] = field(default_factory=tuple)
    allow_unsafe: bool = False

    @classmethod
    def of(cls, partitions: list[str] | None, *, allow_unsafe: bool) -> RemoveUnexistingFiles:
        """From the command line's ``--partition k=v[,k2=v2]`` values."""
        specs = tuple(
            parsed("partition", partial(parse_partition_filter, p)) for p in partitions or ()
        )
        return cls(specs, allow_unsafe)

    def plan(self, table: PaimonTable, env: Env) -> RepairPlan:
        return plan_remove_unexisting(
            table,
            partitions=self.partitions,
            executor=env.executor,
            progress=env.progress,
            now_ms=env.now_ms,
        )

    def apply(self, table: PaimonTable, plan: RepairPlan, env: Env) -> CommitResult | None:
        return apply_remove_unexisting(table, plan, allow_unsafe=self.allow_unsafe, run=env.run)
