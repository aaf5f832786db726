"""A warehouse of pypaimon-written tables with different maintenance options (shared by the
maintain tests of both engines)."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pyarrow as pa

from support import pypaimon_writer as pw
from support.invariants import age, set_snapshot_times

DAY_MS = 86_400_000
SCHEMA = pa.schema([("id", pa.int64())])


def now_ms() -> int:
    return int(time.time() * 1000)


def _append_table(
    wh: Path, name: str, commits: int, options: dict[str, str]
) -> dict[int, list[dict[str, Any]]]:
    """``commits`` appends of one row each; returns the rows of every snapshot."""
    table = pw.create_table(wh, f"db.{name}", SCHEMA, options=options)
    rows: dict[int, list[dict[str, Any]]] = {}
    for i in range(commits):
        rows[pw.append(table, [{"id": i}])] = [{"id": k} for k in range(i + 1)]
    return rows


def build_warehouse(wh: Path) -> dict[str, dict[int, list[dict[str, Any]]]]:
    """Tables with different maintenance options (each documented inline)."""
    expected: dict[str, dict[int, list[dict[str, Any]]]] = {}
    now = now_ms()
    # Retention by count: 6 snapshots, keep 3.
    expected["by_count"] = _append_table(
        wh,
        "by_count",
        6,
        {"snapshot.num-retained.max": "3", "snapshot.num-retained.min": "1"},
    )
    # Retention by time: snapshots 1..4 a day old, 5 and 6 fresh; keep 2 h.
    expected["by_time"] = _append_table(
        wh, "by_time", 6, {"snapshot.time-retained": "2 h", "snapshot.num-retained.min": "1"}
    )
    set_snapshot_times(
        pw.table_root(wh, "db.by_time"), {i: now - DAY_MS + i * 60_000 for i in range(1, 5)}
    )
    # Tags with and without retention (one already past it), count retention on snapshots.
    expected["tagged"] = _append_table(
        wh, "tagged", 5, {"snapshot.num-retained.max": "1", "snapshot.num-retained.min": "1"}
    )
    tagged = pw.open_table(wh, "db.tagged")
    pw.create_tag(tagged, "keep", 2)
    pw.create_tag(tagged, "short", 3, time_retained="1ms")
    pw.create_tag(tagged, "long", 4, time_retained="1d")
    # Automatic daily tags over five past days, at most two kept.
    expected["auto"] = _append_table(
        wh,
        "auto",
        5,
        {
            "tag.automatic-creation": "process-time",
            "sink.process-time-zone": "UTC",
            "tag.num-retained-max": "2",
            "snapshot.num-retained.max": "3",
            "snapshot.num-retained.min": "1",
        },
    )
    midnight = (now // DAY_MS - 6) * DAY_MS
    set_snapshot_times(
        pw.table_root(wh, "db.auto"),
        {i: midnight + (i - 1) * DAY_MS + 3_600_000 for i in range(1, 6)},
    )
    # Consumers: one dead for 3 days (expires), one alive (bounds snapshot expiry).
    expected["consumers"] = _append_table(
        wh,
        "consumers",
        6,
        {
            "consumer.expiration-time": "1 d",
            "snapshot.num-retained.max": "2",
            "snapshot.num-retained.min": "1",
        },
    )
    croot = pw.table_root(wh, "db.consumers")
    pw.set_consumer(croot, "dead", 2)
    pw.set_consumer(croot, "alive", 4)
    age(croot / "consumer" / "consumer-dead", days=3)
    # Decoupled changelog lifecycle: changelog-N files are written as snapshots go.
    expected["decoupled"] = _append_table(
        wh,
        "decoupled",
        5,
        {
            "snapshot.num-retained.max": "2",
            "snapshot.num-retained.min": "1",
            "changelog.num-retained.max": "3",
        },
    )
    # Partition expiry over old date partitions (2024), then snapshot expiry by count (every
    # value a date: a partition values-time cannot judge fails the run, see
    # tests/rust/test_rust_date_partitions.py).
    scenario = pw.dated_partitions(wh, "partitions", undated=False)
    expected["partitions"] = scenario.expected
    schema_file = sorted((scenario.root / "schema").glob("schema-*"))[-1]
    schema = json.loads(schema_file.read_text())
    schema["options"].update(
        {
            "partition.expiration-time": "30 d",
            "partition.timestamp-formatter": "yyyy-MM-dd",
            "snapshot.num-retained.max": "1",
            "snapshot.num-retained.min": "1",
        }
    )
    schema_file.write_text(json.dumps(schema))
    # No maintenance options at all: Paimon's defaults keep everything here.
    expected["plain"] = _append_table(wh, "plain", 3, {})
    return expected
