"""Run history: one small JSON record per run of a changing command.

``<table>/.paimon-cli/runs/<time>-<run-id>.json`` (one file per run: object stores cannot
append). The lifecycle (``core.ops.lifecycle.run``) starts a run for each real run of a
changing command and passes it down to where changes happen (``core.runtime.apply`` runs
planned actions, ``core.write.commit`` publishes snapshots), which add what they did; it
writes the record at the end (``record_run``). Paimon's own tools never list ``.paimon-cli``.

The history is bounded (DECISIONS D14): after writing a record, ``record_run`` deletes the
records beyond the newest ``paimon-cli.runs.num-retained`` (table option, default 100) and
those started before ``paimon-cli.runs.time-retained`` (default 90 d), except the record of
a run whose quarantine can still be restored (``inspect TABLE runs`` is where its id is
found) and the record just written.
"""

from __future__ import annotations

import calendar
import getpass
import hashlib
import json
import logging
import os
import re
import socket
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from core.errors import CorruptMetadataError, InvalidOptionError, StorageError
from core.format.options import RUNS_NUM_RETAINED, RUNS_TIME_RETAINED, TableOptions
from core.io.fileio import FileIO, join
from core.runtime.clock import now_ms as clock_now_ms
from core.runtime.timeparse import iso_utc

if TYPE_CHECKING:
    from core.runtime.lease import Lease, LeaseFence
    from core.runtime.plans import Plan
    from core.runtime.report import ExecutionReport
    from core.table.table import PaimonTable

logger = logging.getLogger(__name__)

RUNS_DIR = (".paimon-cli", "runs")
RECORD_FORMAT = 1

# Option values never written to a record: storage and Spark settings may hold credentials.
_SECRET_OPTIONS = frozenset({"fs_option", "spark_conf", "spark_remote"})


def runs_dir(table_root: str) -> str:
    return join(table_root, *RUNS_DIR)


def new_run_id() -> str:
    return uuid.uuid4().hex[:12]


def _utc_stamp(ms: int) -> str:
    """``20261125T161900123Z``: file names sort by start time."""
    return time.strftime("%Y%m%dT%H%M%S", time.gmtime(ms / 1000)) + f"{ms % 1000:03d}Z"


def _user() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return str(os.getuid()) if hasattr(os, "getuid") else "unknown"


def _plain_option(name: str, value: Any) -> Any:
    if name in _SECRET_OPTIONS and value:
        if isinstance(value, (list, tuple)):
            return [str(v).split("=", 1)[0] + "=***" for v in value]
        return "***"
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    if isinstance(value, (list, tuple)):
        return [_plain_option(name, v) for v in value]
    return str(getattr(value, "value", value))


@dataclass
class Run:
    """One run of a command on one table; filled in while it works."""

    id: str
    command: str
    options: dict[str, Any]
    started_ms: int
    quarantine: bool = False
    user: str = field(default_factory=_user)
    host: str = field(default_factory=socket.gethostname)
    by_kind: dict[str, dict[str, int]] = field(default_factory=dict)
    phases: list[dict[str, Any]] = field(default_factory=list)
    commits: list[int] = field(default_factory=list)
    resumed_journals: list[str] = field(default_factory=list)
    # The table lease the run holds while it works (``core.runtime.lease``): checked at
    # every safe point, so a run that lost it stops before its next phase or commit.
    lease: Lease | None = None
    lease_took_over: str | None = None  # the stale holder this run's lease replaced, and why
    _digest: Any = field(default_factory=hashlib.sha256)
    _plans: int = 0
    _acting: bool = False

    def add_plan(self, plan: Plan[Any]) -> None:
        """Fold a plan into the run's digest (one run may apply several: journals first)."""
        h = self._digest
        h.update(f"{plan.command}\0{plan.branch}\0".encode())
        for phase in plan.phases:
            h.update(f"[{phase.name}]".encode())
            for a in phase.actions:
                # surrogateescape: file names need not be UTF-8 (they pass through as is)
                line = f"{a.op}\0{a.path}\0{a.kind}\0{a.size}\n"
                h.update(line.encode("utf-8", "surrogateescape"))
        self._plans += 1

    def add_done(self, kind: str, size: int) -> None:
        slot = self.by_kind.setdefault(kind, {"files": 0, "bytes": 0})
        slot["files"] += 1
        slot["bytes"] += size

    def add_report(self, report: ExecutionReport) -> None:
        self.phases = [p.to_json() for p in report.phases]
        self.resumed_journals = list(report.resumed_journals)

    @property
    def acted(self) -> bool:
        """Began changing the table (a failure before that leaves no record)."""
        return bool(self._plans or self.commits or self._acting)

    def check_lease(self) -> None:
        """Raise ``LeaseLostError`` when the run no longer holds its table's lease."""
        if self.lease is not None:
            self.lease.check()

    def fence(self) -> LeaseFence | None:
        """What each chunk of this run's work checks before acting (the lease's fence)."""
        return self.lease.fence() if self.lease is not None else None

    def begin_changes(self) -> None:
        """Mark the run as changing the table from now on (a failure is recorded)."""
        self._acting = True

    @property
    def plan_digest(self) -> str | None:
        return f"sha256:{self._digest.hexdigest()}" if self._plans else None

    def record(
        self, *, table: str, branch: str, status: str, ended_ms: int, error: str | None
    ) -> dict[str, Any]:
        return {
            "format": RECORD_FORMAT,
            "run_id": self.id,
            "command": self.command,
            "options": self.options,
            "table": table,
            "branch": branch,
            "user": self.user,
            "host": self.host,
            "started": {"epoch_ms": self.started_ms, "utc": iso_utc(self.started_ms)},
            "ended": {"epoch_ms": ended_ms, "utc": iso_utc(ended_ms)},
            "status": status,
            "error": error,
            "quarantine": self.quarantine,
            "plan_digest": self.plan_digest,
            "totals": {
                "files": sum(v["files"] for v in self.by_kind.values()),
                "bytes": sum(v["bytes"] for v in self.by_kind.values()),
                "by_kind": dict(sorted(self.by_kind.items())),
            },
            "commits": list(self.commits),
            "resumed_journals": len(self.resumed_journals),
            "lease_took_over": self.lease_took_over,
            "phases": self.phases,
        }


def start_run(
    command: str,
    options: Mapping[str, Any],
    *,
    quarantine: bool = False,
    run_id: str | None = None,
) -> Run:
    """A run starting now; ``run_id``: one id a run over many tables gives each of their
    records (``maintain``), else a new one."""
    return Run(
        run_id or new_run_id(),
        command,
        {k: _plain_option(k, v) for k, v in sorted(options.items())},
        clock_now_ms(),
        quarantine=quarantine,
    )


def write_record(
    fileio: FileIO,
    table_root: str,
    run: Run,
    *,
    branch: str,
    status: str,
    error: str | None = None,
) -> str | None:
    """Write the run's record; a storage failure is a warning (the work itself is done)."""
    ended = clock_now_ms()
    doc = run.record(table=table_root, branch=branch, status=status, ended_ms=ended, error=error)
    path = join(runs_dir(table_root), f"{_utc_stamp(run.started_ms)}-{run.id}.json")
    try:
        fileio.write_bytes(path, json.dumps(doc, indent=1).encode("utf-8"))
    except StorageError as exc:
        logger.warning("could not write the run record %s: %s", path, exc.message)
        return None
    return path


def record_run(
    table: PaimonTable, run: Run, *, status: str, error: str | None = None
) -> str | None:
    """Write the run's record, then prune the table's run history (module doc)."""
    path = write_record(
        table.fileio, table.location, run, branch=table.branch, status=status, error=error
    )
    if path is not None:
        prune_records(table.fileio, table.location, RunHistory.of(table.options), keep=run.id)
    return path


_DAY_MS = 86_400_000


@dataclass(frozen=True, slots=True)
class RunHistory:
    """How many run records a table keeps, and for how long."""

    num_retained: int = 100
    time_retained_ms: int = 90 * _DAY_MS

    @classmethod
    def of(cls, options: TableOptions) -> RunHistory:
        """From the table options; a value that cannot be read keeps its default (the
        run is done by now: a typo in an option never fails it)."""
        default = cls()
        try:
            count = options.get_int(RUNS_NUM_RETAINED)
        except InvalidOptionError as exc:
            logger.warning("%s; keeping %d run records", exc.message, default.num_retained)
            count = None
        try:
            age = options.get_duration_ms(RUNS_TIME_RETAINED)
        except InvalidOptionError as exc:
            logger.warning("%s; keeping run records for 90 d", exc.message)
            age = None
        if count is not None and count < 1:
            logger.warning("%s must be at least 1, got %d; 1 is used", RUNS_NUM_RETAINED, count)
            count = 1
        return cls(
            default.num_retained if count is None else count,
            default.time_retained_ms if age is None else age,
        )


# <start, UTC, to the millisecond>-<run id>.json, as write_record names them.
_RECORD_NAME = re.compile(r"(\d{8}T\d{6})(\d{3})Z-([0-9a-f]{12})\.json")


def _started_ms(name: str) -> tuple[int, str] | None:
    """(start time, run id) of a record file name; None for any other name."""
    m = _RECORD_NAME.fullmatch(name)
    if m is None:
        return None
    seconds = calendar.timegm(time.strptime(m.group(1), "%Y%m%dT%H%M%S"))
    return seconds * 1000 + int(m.group(2)), m.group(3)


def prune_records(
    fileio: FileIO,
    table_root: str,
    history: RunHistory,
    *,
    keep: str,
    now_ms: int | None = None,
) -> list[str]:
    """Delete the records beyond the newest ``history.num_retained`` and those started
    before ``history.time_retained_ms`` ago; never ``keep``'s record nor one of a run
    whose quarantine can still be restored. Returns the paths deleted; a storage failure
    is a warning (the next run prunes again)."""
    now_ms = clock_now_ms() if now_ms is None else now_ms
    try:
        listed = fileio.list_dir(runs_dir(table_root))
    except StorageError as exc:
        logger.warning("could not list the run history of %s: %s", table_root, exc.message)
        return []
    named = []  # (start, run id, path), newest first; other files are left alone
    for info in listed:
        parsed = None if info.is_dir else _started_ms(info.name)
        if parsed is not None:
            named.append((*parsed, info.path))
    named.sort(reverse=True)
    cutoff = now_ms - history.time_retained_ms
    doomed = [
        (run_id, path)
        for n, (started, run_id, path) in enumerate(named)
        if run_id != keep and (n >= history.num_retained or started < cutoff)
    ]
    if not doomed:
        return []
    restorable = _restorable_runs(fileio, table_root)
    if restorable is None:
        return []
    deleted = []
    for run_id, path in doomed:
        if run_id in restorable:
            continue
        try:
            fileio.delete(path)
        except StorageError as exc:
            logger.warning("could not delete the old run record %s: %s", path, exc.message)
            break
        deleted.append(path)
    if deleted:
        logger.info("run history of %s: %d old records deleted", table_root, len(deleted))
    return deleted


def _restorable_runs(fileio: FileIO, table_root: str) -> frozenset[str] | None:
    """Run ids whose quarantine ``restore`` can still bring back; None when the quarantine
    records cannot be read (then no run record is deleted)."""
    from core.runtime.quarantine import records

    try:
        found = records(fileio, table_root)
    except (CorruptMetadataError, StorageError) as exc:
        logger.warning("run history of %s not pruned: %s", table_root, exc.message)
        return None
    return frozenset(str(r.get("run_id")) for r in found if r.get("status") == "quarantined")


def read_records(fileio: FileIO, table_root: str) -> list[dict[str, Any]]:
    """Every run record of the table, oldest first; unreadable ones are reported as such."""
    out = []
    infos = [
        i
        for i in fileio.list_dir(runs_dir(table_root))
        if not i.is_dir and i.name.endswith(".json") and not i.name.startswith(".")
    ]
    for info in sorted(infos, key=lambda i: i.name):
        try:
            data = json.loads(fileio.read_text(info.path))
        except FileNotFoundError:
            continue
        except (json.JSONDecodeError, StorageError) as exc:
            logger.warning("skipping unreadable run record %s: %s", info.path, exc)
            continue
        if isinstance(data, dict):
            out.append(data)
    return out


def last_run_ms(fileio: FileIO, table_root: str, command: str) -> int | None:
    """When the newest recorded run of ``command`` on the table started (the record file
    names sort by start; records are read newest first until one is that command's), or
    None when none is recorded or the history cannot be listed."""
    try:
        listed = fileio.list_dir(runs_dir(table_root))
    except StorageError as exc:
        logger.info("no run history of %s: %s", table_root, exc.message)
        return None
    named = sorted(
        ((parsed[0], info.path) for info in listed if (parsed := _started_ms(info.name))),
        reverse=True,
    )
    for started, path in named:
        try:
            data = json.loads(fileio.read_text(path))
        except (FileNotFoundError, json.JSONDecodeError, StorageError):
            continue
        if isinstance(data, dict) and data.get("command") == command:
            return started
    return None


def find_record(fileio: FileIO, table_root: str, run_id: str) -> dict[str, Any] | None:
    for record in read_records(fileio, table_root):
        if record.get("run_id") == run_id:
            return record
    return None
