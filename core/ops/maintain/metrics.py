"""Prometheus text exposition of maintenance results and table gauges, for node_exporter's
textfile collector (or anything that scrapes the format).

The file is replaced atomically (a temp file in the same directory, then rename), so a
reader never sees half of it; series of tables not in this run are carried over from the
previous file, so an alert on a stale ``paimon_maintenance_last_success_timestamp_seconds``
keeps working for a table that stopped being maintained.
"""

from __future__ import annotations

import contextlib
import logging
import math
import os
import re
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from core.ops.inspection.check import CheckReport
    from core.ops.inspection.inspect import Summary
    from core.ops.maintain.maintain import TableResult

logger = logging.getLogger(__name__)

# name -> (type, help); the order is the order in the file.
FAMILIES: dict[str, tuple[str, str]] = {
    "paimon_maintenance_success": (
        "gauge",
        "1 if the last paimon maintain run of the table succeeded, 0 if it failed.",
    ),
    "paimon_maintenance_skipped": (
        "gauge",
        "1 if the last paimon maintain run selected the table but did not maintain it "
        "(--max-duration reached, or another run held its lease), 0 if it maintained it.",
    ),
    "paimon_maintenance_last_success_timestamp_seconds": (
        "gauge",
        "Unix time of the last successful paimon maintain run of the table (0: never).",
    ),
    "paimon_maintenance_duration_seconds": (
        "gauge",
        "Duration of the last paimon maintain run of the table.",
    ),
    "paimon_maintenance_files_deleted": (
        "gauge",
        "Files deleted by each step of the last paimon maintain run of the table.",
    ),
    "paimon_maintenance_bytes_deleted": (
        "gauge",
        "Bytes deleted by each step of the last paimon maintain run of the table.",
    ),
    "paimon_maintenance_snapshots_expired": (
        "gauge",
        "Snapshots expired by the last paimon maintain run of the table.",
    ),
    "paimon_maintenance_partitions_unexpirable": (
        "gauge",
        "Partitions the last paimon maintain run kept because partition.expiration-strategy "
        "values-time can never read a time from their values (they never expire).",
    ),
    "paimon_maintenance_integrity_problems": (
        "gauge",
        "Missing, wrongly sized or unreadable files the last paimon maintain run's integrity "
        "check found in the table (every branch).",
    ),
    "paimon_table_snapshots": ("gauge", "Snapshot files of the table."),
    "paimon_table_oldest_snapshot_age_seconds": (
        "gauge",
        "Age of the table's earliest snapshot.",
    ),
    "paimon_table_live_bytes": (
        "gauge",
        "Bytes of the data files the latest snapshot reads.",
    ),
    "paimon_table_total_bytes": (
        "gauge",
        "Bytes of every file under the table root (when storage was listed).",
    ),
    "paimon_table_integrity_ok": (
        "gauge",
        "1 if the last paimon inspect --check of the table found no problem, 0 otherwise.",
    ),
    "paimon_table_integrity_problems": (
        "gauge",
        "Problems the last paimon inspect --check of the table found, by kind (missing, "
        "size-mismatch, unreadable).",
    ),
    "paimon_table_integrity_files_checked": (
        "gauge",
        "Files the last paimon inspect --check of the table checked.",
    ),
    "paimon_table_integrity_last_check_timestamp_seconds": (
        "gauge",
        "Unix time of the last paimon inspect --check of the table.",
    ),
}

TABLE_GAUGES = (
    "paimon_table_snapshots",
    "paimon_table_oldest_snapshot_age_seconds",
    "paimon_table_live_bytes",
    "paimon_table_total_bytes",
)


@dataclass(frozen=True, slots=True)
class Sample:
    name: str
    labels: tuple[tuple[str, str], ...]  # sorted by label name
    value: float

    @classmethod
    def of(cls, name: str, value: float, **labels: str) -> Sample:
        return cls(name, tuple(sorted(labels.items())), float(value))

    @property
    def table(self) -> str | None:
        return dict(self.labels).get("table")


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _unescape(value: str) -> str:
    return re.sub(r"\\(.)", lambda m: "\n" if m.group(1) == "n" else m.group(1), value)


def _number(value: float) -> str:
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    return str(int(value)) if value.is_integer() and abs(value) < 2**53 else repr(value)


def render(samples: Iterable[Sample]) -> str:
    """The exposition text: each family with # HELP and # TYPE, series sorted by labels."""
    by_family: dict[str, list[Sample]] = {}
    for s in samples:
        by_family.setdefault(s.name, []).append(s)
    lines: list[str] = []
    for name, (kind, help_text) in FAMILIES.items():
        series = sorted(by_family.get(name, ()), key=lambda s: s.labels)
        if not series:
            continue
        lines.append(f"# HELP {name} {help_text}")
        lines.append(f"# TYPE {name} {kind}")
        for s in series:
            labels = ",".join(f'{k}="{_escape(v)}"' for k, v in s.labels)
            lines.append(
                f"{name}{{{labels}}} {_number(s.value)}" if labels else f"{name} {_number(s.value)}"
            )
    return "\n".join(lines) + "\n" if lines else ""


_LINE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)(?:\s+-?\d+)?$")
_LABEL = re.compile(r'\s*([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"\s*,?')


def parse(text: str) -> list[Sample]:
    """Samples of the families above in a file this module wrote (others are dropped)."""
    out = []
    for line in text.splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        m = _LINE.match(line.strip())
        if m is None or m.group(1) not in FAMILIES:
            logger.warning("metrics file: ignoring line %r", line[:200])
            continue
        labels = tuple(sorted((k, _unescape(v)) for k, v in _LABEL.findall(m.group(2) or "")))
        try:
            value = float(m.group(3))
        except ValueError:
            logger.warning("metrics file: ignoring line %r", line[:200])
            continue
        out.append(Sample(m.group(1), labels, value))
    return out


def merge(previous: Iterable[Sample], current: Iterable[Sample]) -> list[Sample]:
    """This run's series replace, per table, the families this run wrote; every other
    previous series stays (tables not run, a failed table's last success time, the total
    bytes only ``inspect`` lists)."""
    now = list(current)
    written = {(s.table, s.name) for s in now}
    return [s for s in previous if (s.table, s.name) not in written] + now


def write_metrics(path: str, samples: Iterable[Sample], defaults: Iterable[Sample] = ()) -> None:
    """Merge with the file at ``path`` (local) and replace it atomically. ``defaults`` are
    written only where neither the file nor ``samples`` has that table's series: an alert
    on a series never sees it absent."""
    previous: list[Sample] = []
    try:
        with open(path, encoding="utf-8") as fh:
            previous = parse(fh.read())
    except FileNotFoundError:
        pass
    merged = merge(previous, samples)
    present = {(s.table, s.name) for s in merged}
    merged += [d for d in defaults if (d.table, d.name) not in present]
    text = render(merged)
    directory = os.path.dirname(os.path.abspath(path))
    # Same directory (a rename within one file system is atomic); a hidden name that the
    # textfile collector ignores (it reads *.prom only).
    fd, tmp = tempfile.mkstemp(prefix=f".{os.path.basename(path)}.", suffix=".tmp", dir=directory)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


@dataclass(frozen=True, slots=True)
class TableGauges:
    snapshots: int
    oldest_snapshot_age_s: float | None
    live_bytes: int
    total_bytes: int | None

    def samples(self, table: str) -> list[Sample]:
        out = [
            Sample.of("paimon_table_snapshots", self.snapshots, table=table),
            Sample.of("paimon_table_live_bytes", self.live_bytes, table=table),
        ]
        if self.oldest_snapshot_age_s is not None:
            out.append(
                Sample.of(
                    "paimon_table_oldest_snapshot_age_seconds",
                    self.oldest_snapshot_age_s,
                    table=table,
                )
            )
        if self.total_bytes is not None:
            out.append(Sample.of("paimon_table_total_bytes", self.total_bytes, table=table))
        return out


def table_gauges(summary: Summary, *, now_ms: int) -> TableGauges:
    """The ``paimon_table_*`` gauges of an ``inspect`` summary."""
    oldest = None
    if summary.earliest is not None:
        snap = summary.table.snapshots.try_snapshot(summary.earliest)
        if snap is not None:
            oldest = max(now_ms - snap.time_millis, 0) / 1000
    return TableGauges(summary.snapshot_count, oldest, summary.live_bytes, summary.storage_bytes)


def maintenance_samples(result: TableResult, *, finished_ms: int) -> list[Sample]:
    """The ``paimon_maintenance_*`` series of one table's run."""
    table = result.name
    ok = not result.failed
    out = [
        Sample.of("paimon_maintenance_success", 1 if ok else 0, table=table),
        Sample.of("paimon_maintenance_skipped", 0, table=table),
        Sample.of("paimon_maintenance_duration_seconds", round(result.seconds, 3), table=table),
    ]
    if ok:
        out.append(
            Sample.of(
                "paimon_maintenance_last_success_timestamp_seconds",
                finished_ms / 1000,
                table=table,
            )
        )
    out.append(
        Sample.of(
            "paimon_maintenance_snapshots_expired",
            result.count("expire-snapshots"),
            table=table,
        )
    )
    partitions = [s for s in result.steps_named("expire-partitions") if s.ran]
    if partitions:
        out.append(
            Sample.of(
                "paimon_maintenance_partitions_unexpirable",
                sum(s.unexpirable_partitions for s in partitions),
                table=table,
            )
        )
    if result.integrity_problems is not None:
        out.append(
            Sample.of(
                "paimon_maintenance_integrity_problems", result.integrity_problems, table=table
            )
        )
    # One series per step, summed over the branches it ran on.
    deleted: dict[str, tuple[int, int]] = {}
    for step in result.steps:
        if step.ran:
            files, size = deleted.get(step.name, (0, 0))
            deleted[step.name] = (files + step.files_deleted, size + step.bytes_deleted)
    for name, (files, size) in deleted.items():
        out.append(Sample.of("paimon_maintenance_files_deleted", files, table=table, step=name))
        out.append(Sample.of("paimon_maintenance_bytes_deleted", size, table=table, step=name))
    return out


def skipped_samples(table: str) -> list[Sample]:
    """A table maintain selected and did not start: it keeps its other series."""
    return [Sample.of("paimon_maintenance_skipped", 1, table=table)]


def never_samples(table: str) -> list[Sample]:
    """Defaults (``write_metrics``) for a table maintain selected: never succeeded, so a
    staleness alert fires for a table that was never maintained too."""
    return [Sample.of("paimon_maintenance_last_success_timestamp_seconds", 0, table=table)]


def integrity_samples(report: CheckReport, table: str, *, now_ms: int) -> list[Sample]:
    """The ``paimon_table_integrity_*`` gauges of an ``inspect --check``: every problem
    kind is written, zero included, so an alert on ``> 0`` never sees a series vanish."""
    from core.ops.inspection.check import PROBLEM_KINDS

    out = [
        Sample.of("paimon_table_integrity_ok", 1 if report.ok else 0, table=table),
        Sample.of("paimon_table_integrity_files_checked", report.files_checked, table=table),
        Sample.of(
            "paimon_table_integrity_last_check_timestamp_seconds", now_ms / 1000, table=table
        ),
    ]
    out += [
        Sample.of("paimon_table_integrity_problems", report.count(kind), table=table, kind=kind)
        for kind in PROBLEM_KINDS
    ]
    return out
