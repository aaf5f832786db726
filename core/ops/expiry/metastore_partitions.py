"""Keeping a metastore's copy of a table's partitions in step with the table
(``metastore.partitioned-table``, Hive): the metastore follows the table, never the reverse.

A command that removes partitions (``expire-partitions``, and ``maintain``'s partition
step; rollback, fast-forward and remove-unexisting-files through ``following``) drops the
same partitions from the metastore after its commit succeeded, and their
``.done`` markers (``partition.mark-done-action = done-partition`` adds ``dt=X.done``
beside ``dt=X``): Paimon's HiveCatalog drops them before committing, so a failed commit
there leaves Hive without partitions that still hold data; here a failed commit leaves the
metastore as it was.

Which partitions a run drops is written first, as an intent under
``<table>/.paimon-cli/metastore/`` (ours, DECISIONS D6). A drop the metastore refused, an
unreachable metastore or an interrupt leave the intent; the next run of a partition-removing
command finishes it. Only partitions with no live data on any branch of the table are ever
dropped (Java's ``removePartitionsExistsInOtherBranches``), judged after the metastore was
read: a writer adds a partition to the metastore only after committing its data, so a
partition listed there with data committed meanwhile is seen live and kept. Partitions the
metastore holds for other reasons (added by hand, for a load to come) are never dropped:
``inspect --check`` reports them.
"""

from __future__ import annotations

import json
import logging
import uuid
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass

from core.errors import PaimonError
from core.format.options import parse_bool
from core.io.fileio import join
from core.ops.details.partitions import MetastoreChanges, MetastoreDrop
from core.ops.inspection.check_report import Problem
from core.runtime.clock import now_ms
from core.table.catalog_env import MetastorePartitions
from core.table.table import PaimonTable

logger = logging.getLogger(__name__)

OPTION = "metastore.partitioned-table"
DONE_SUFFIX = ".done"
INTENT_DIR = (".paimon-cli", "metastore")
# Hive keeps a partition's name (k1=v1/k2=v2, escaped) in a column of 767 characters.
MAX_NAME = 767

Values = tuple[str, ...]


class UnrepresentablePartitionError(PaimonError):
    """A partition value the metastore cannot hold: refused before any change."""

    kind = "metastore_partition_value"


def mirror(table: PaimonTable) -> MetastorePartitions | None:
    """The metastore's copy of the table's partitions, when the table mirrors them."""
    found = table.catalog.partitions
    if found is None or not table.schema.partition_keys:
        return None
    value = table.options.get(OPTION)
    return found if value is not None and parse_bool(value, OPTION) else None


def hive_values(table: PaimonTable, partition: bytes) -> Values:
    """The partition's values as the metastore holds them (Paimon's partition computer:
    null and blank values are the table's default partition name)."""
    default = table.options.default_partition_name
    return tuple(
        default if v is None or not v.strip() else v
        for v in table.paths.partition_spec(partition).values()
    )


def check_representable(table: PaimonTable, values: Values) -> None:
    keys = table.schema.partition_keys
    name = "/".join(f"{k}={v}" for k, v in zip(keys, values, strict=True))
    bad = next((v for v in values if any(ord(c) < 0x20 or ord(c) == 0x7F for c in v)), None)
    if bad is not None:
        problem = f"value {bad!r} holds a control character"
    elif len(name) > MAX_NAME:
        problem = f"its name is {len(name)} characters long (Hive holds at most {MAX_NAME})"
    else:
        return
    raise UnrepresentablePartitionError(
        f"partition {name!r} of {table.location} cannot be represented in the metastore: "
        f"{problem}; nothing was changed",
        hint=f"drop it by hand, or set {OPTION}=false if Hive must not mirror the table",
    )


def done_marker(values: Values) -> Values:
    return (*values[:-1], values[-1] + DONE_SUFFIX)


def base_of(values: Values) -> Values:
    """The partition a ``.done`` marker marks (itself for a plain partition)."""
    last = values[-1]
    return (*values[:-1], last[: -len(DONE_SUFFIX)]) if last.endswith(DONE_SUFFIX) else values


def live_partitions(table: PaimonTable) -> set[Values]:
    """Partitions with live data in the latest snapshot of the table or any branch."""
    live: set[Values] = set()
    views = [table if table.branch == "main" else table.for_branch("main")]
    views += [views[0].for_branch(b) for b in sorted(views[0].branches.branches())]
    for view in views:
        latest = view.snapshots.latest()
        if latest is None:
            continue
        for partition in {e.partition for e in view.live_files(latest)}:
            live.add(hive_values(view, partition))
    return live


# -- intents -------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class Intent:
    path: str
    partitions: tuple[Values, ...]


def _intent_dir(table: PaimonTable) -> str:
    return join(table.location, *INTENT_DIR)


def pending(table: PaimonTable) -> list[Intent]:
    """Drops earlier runs left unfinished (an unreadable intent is kept and said once)."""
    out = []
    for info in sorted(table.fileio.list_dir(_intent_dir(table)), key=lambda i: i.name):
        if info.is_dir or not info.name.endswith(".json"):
            continue
        try:
            data = json.loads(table.fileio.read_text(info.path))
            parts = tuple(tuple(str(v) for v in p) for p in data["partitions"])
        except (ValueError, KeyError, TypeError) as exc:
            logger.warning("ignoring the unreadable metastore intent %s: %s", info.path, exc)
            continue
        out.append(Intent(info.path, parts))
    return out


def write_intent(table: PaimonTable, partitions: Iterable[Values]) -> Intent:
    parts = tuple(sorted(set(partitions)))
    path = join(_intent_dir(table), f"drop-{now_ms()}-{uuid.uuid4().hex[:12]}.json")
    body = {"table": table.catalog.identifier, "partitions": [list(p) for p in parts]}
    table.fileio.write_bytes(path, json.dumps(body, indent=1).encode())
    return Intent(path, parts)


def _forget(table: PaimonTable, intents: Sequence[Intent]) -> None:
    for intent in intents:
        table.fileio.delete(intent.path)
    table.fileio.delete_empty_dir(_intent_dir(table))


# -- plan and sync -------------------------------------------------------------------------
def plan_changes(table: PaimonTable, expired: Sequence[Values]) -> MetastoreChanges | None:
    """The metastore partitions a run will drop: the expired ones and their ``.done``
    markers, and what earlier runs left (those only where no branch holds data now)."""
    found = mirror(table)
    if found is None:
        return None
    for values in expired:
        check_representable(table, values)
    held = set(found.held())
    earlier = {p for intent in pending(table) for p in intent.partitions}
    live = live_partitions(table) if earlier else set()
    drops: list[MetastoreDrop] = []
    keys = table.schema.partition_keys
    for reason, candidates in (("expired", expired), ("left by an earlier run", earlier)):
        for base in sorted(set(candidates)):
            if reason != "expired" and base in live:
                continue
            for values in (base, done_marker(base)):
                if values in held:
                    why = reason if values == base else f"done marker; {reason}"
                    drops.append(MetastoreDrop(dict(zip(keys, values, strict=True)), why))
                    held.discard(values)
    return MetastoreChanges(found.description, tuple(drops), len(earlier))


def begin(table: PaimonTable, expired: Sequence[Values]) -> list[Intent]:
    """Before the commit: the run's own intent (when it drops anything) and the earlier
    ones it will finish."""
    intents = pending(table)
    if expired:
        intents.append(write_intent(table, expired))
    return intents


def finish(table: PaimonTable, intents: Sequence[Intent]) -> list[Values]:
    """After the commit: drop every intended partition (and marker) the metastore holds
    and no branch holds data of; the intents go once the metastore took every drop."""
    found = mirror(table)
    if found is None or not intents:
        return []
    wanted = {p for intent in intents for p in intent.partitions}
    held = found.held()  # before reading the table: see the module doc
    live = live_partitions(table)
    drops = [v for v in held if base_of(v) in wanted and base_of(v) not in live]
    dropped: list[Values] = found.drop(drops) if drops else []
    _forget(table, intents)
    if dropped:
        logger.info("dropped %d partition(s) from %s", len(dropped), found.description)
    return dropped


@contextmanager
def following(table: PaimonTable) -> Iterator[None]:
    """Around a command that can leave partitions without data (rollback, fast-forward,
    remove-unexisting-files): the partitions live before it are the intent, and those it
    left without data leave the metastore after it (earlier runs' intents finish too)."""
    if mirror(table) is None:
        yield
        return
    intents = begin(table, sorted(live_partitions(table)))
    yield
    finish(table, intents)


# -- inspect --check -----------------------------------------------------------------------
def drift(table: PaimonTable) -> list[Problem]:
    """Where the metastore and the table disagree: metastore partitions with no live data
    on any branch (``.done`` markers count with the partition they mark), and partitions
    with live data the metastore does not hold."""
    found = mirror(table)
    if found is None:
        return []
    held = found.held()
    live = live_partitions(table)
    keys = table.schema.partition_keys
    where = found.description

    def name(values: Values) -> str:
        return "/".join(f"{k}={v}" for k, v in zip(keys, values, strict=True))

    problems = [
        Problem(
            name(v),
            "metastore-extra",
            "partition",
            where,
            "the metastore holds this partition, but no branch of the table has live data "
            "in it (a drop a run left unfinished is finished by the next expire-partitions)",
        )
        for v in held
        if base_of(v) not in live
    ]
    held_set = set(held)
    problems += [
        Problem(
            name(v),
            "metastore-missing",
            "partition",
            where,
            "the table has live data in this partition, but the metastore does not hold it: "
            "Hive, Trino and Spark reading through the metastore do not see its rows",
        )
        for v in sorted(live)
        if v not in held_set
    ]
    return problems
