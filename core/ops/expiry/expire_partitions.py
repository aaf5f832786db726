"""plan_partition_expire() / apply_partition_expire(): Paimon's partition expiration.

Which partitions expire follows ``NormalPartitionExpire``: only partitions
with live files in the latest snapshot count; ``values-time`` parses the partition values
(``core.retention.partition_time``), ``update-time`` compares the newest ``_CREATION_TIME`` of any
entry of the partition; expired partitions are sorted by their comma-joined values and
capped by ``partition.expiration-max-num``. The drop is an OVERWRITE commit marking every
live file of those partitions DELETE (``core.write.commit``), rebuilt from the new latest snapshot
whenever another writer commits first. Files go later, with ``expire-snapshots``.
"""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, ClassVar

from core.errors import InvalidOptionError, PaimonError
from core.format import binary_row
from core.format.manifest import merge_entries
from core.format.model import FileKind, ManifestEntry, Snapshot
from core.format.options import parse_duration_ms, parse_int
from core.ops.details.partitions import (
    ExpiredPartition,
    PartitionExpiryConfig,
    PartitionExpiryDetails,
    SkippedPartition,
)
from core.ops.expiry import metastore_partitions as metastore
from core.retention.partition_time import (
    Formatter,
    PartitionTimeError,
    TimeExtractor,
    java_internal_text,
)
from core.runtime.details import Record
from core.runtime.operation import Env, Operation
from core.runtime.plans import Phase, Plan, Requirements
from core.runtime.requests import at_least, duration, one_of, parsed
from core.runtime.runs import Run
from core.runtime.timeparse import local_datetime, local_wall_clock_ms
from core.runtime.wording import plural
from core.table.table import PaimonTable
from core.write.commit import Changes, CommitResult, commit
from core.write.live_entries import live_raw_entries

logger = logging.getLogger(__name__)

COMMAND = "expire-partitions"
PartitionPlan = Plan[PartitionExpiryDetails]
STRATEGIES = ("values-time", "update-time")


@dataclass(frozen=True, slots=True)
class PartitionExpireFlags:
    """The request, validated; None falls back to table options, then Paimon defaults
    (checked when resolved, ``partition_expire_config``)."""

    expiration_time: str | None = None
    timestamp_formatter: str | None = None
    timestamp_pattern: str | None = None
    strategy: str | None = None  # the --expire-strategy option
    max_expires: int | None = None

    def __post_init__(self) -> None:
        duration("expiration_time", self.expiration_time)
        if self.timestamp_formatter is not None:
            formatter = self.timestamp_formatter
            parsed("timestamp_formatter", lambda: Formatter.of(formatter))
        one_of("expire_strategy", self.strategy, STRATEGIES, "strategy")
        at_least("max_expires", self.max_expires)


@dataclass(frozen=True, slots=True)
class PartitionExpireConfig:
    expiration_ms: int
    strategy: str
    formatter: str | None
    pattern: str | None
    max_num: int
    sources: Mapping[str, Any]


def partition_expire_config(
    table: PaimonTable, flags: PartitionExpireFlags
) -> PartitionExpireConfig:
    """Flags over table options over Paimon defaults; InvalidOptionError when unusable."""
    opts = table.options
    sources: dict[str, Any] = {}

    def pick(flag: Any, key: str, name: str) -> Any:
        if flag is not None:
            sources[name] = {"value": flag, "source": "flag"}
            return flag
        found = opts.lookup(key)
        sources[name] = {"value": found.value, "source": found.source}
        return found.value

    expiration = pick(flags.expiration_time, "partition.expiration-time", "expiration_time")
    strategy = pick(flags.strategy, "partition.expiration-strategy", "strategy")
    formatter = pick(flags.timestamp_formatter, "partition.timestamp-formatter", "formatter")
    pattern = pick(flags.timestamp_pattern, "partition.timestamp-pattern", "pattern")
    max_num = pick(flags.max_expires, "partition.expiration-max-num", "max_expires")
    if not table.schema.partition_keys:
        raise InvalidOptionError(f"{table.location} is not partitioned: nothing can expire")
    if expiration is None:
        raise InvalidOptionError(
            "no expiration time: pass --expiration-time or set the table option "
            "partition.expiration-time"
        )
    if strategy not in STRATEGIES:
        raise InvalidOptionError(
            f"unknown expire strategy {strategy!r} (use {' or '.join(STRATEGIES)})"
        )
    max_value = max_num if isinstance(max_num, int) else parse_int(str(max_num), "max_expires")
    sources["max_expires"]["value"] = max_value
    if max_value < 1:
        raise InvalidOptionError(f"max expires must be at least 1, got {max_value}")
    return PartitionExpireConfig(
        # the flag in the command line's grammar (a unit required), the option in Paimon's
        expiration_ms=duration("expiration_time", flags.expiration_time) or 0
        if flags.expiration_time is not None
        else parse_duration_ms(str(expiration)),
        strategy=str(strategy),
        formatter=formatter or None,
        pattern=pattern or None,
        max_num=max_value,
        sources=sources,
    )


@dataclass
class _PartitionState:
    partition: bytes
    values: tuple[Any, ...]
    net_files: int = 0
    files: int = 0
    rows: int = 0
    bytes: int = 0
    last_creation: dt.datetime | None = None


def _wall_clock(value: dt.datetime | None) -> dt.datetime | None:
    # _CREATION_TIME holds local wall-clock time encoded as if UTC (format pitfall 18).
    return None if value is None else value.replace(tzinfo=None)


def partition_states(
    table: PaimonTable, snapshot: Snapshot
) -> dict[tuple[Any, ...], _PartitionState]:
    """Per partition: net file count, live files/rows/bytes, newest creation time of any entry."""
    entries: list[ManifestEntry] = list(table.entries(table.data_manifests(snapshot)))
    types = table.schema.partition_types
    states: dict[tuple[Any, ...], _PartitionState] = {}
    decoded: dict[bytes, tuple[Any, ...]] = {}

    def state(partition: bytes) -> _PartitionState:
        values = decoded.get(partition)
        if values is None:
            values = decoded[partition] = binary_row.decode(partition, types)
        found = states.get(values)
        if found is None:
            found = states[values] = _PartitionState(partition, values)
        return found

    for e in entries:
        s = state(e.partition)
        s.net_files += 1 if e.kind is FileKind.ADD else -1
        created = _wall_clock(e.file.creation_time)
        if created is not None and (s.last_creation is None or created > s.last_creation):
            s.last_creation = created
    for e in merge_entries(entries).values():
        if e.kind is FileKind.ADD:
            s = state(e.partition)
            s.files += 1
            s.rows += e.file.row_count
            s.bytes += e.file.file_size
    return {k: v for k, v in states.items() if v.net_files > 0}


def _value_texts(table: PaimonTable, values: Sequence[Any]) -> list[str | None]:
    return [
        java_internal_text(v, t.root)
        for v, t in zip(values, table.schema.partition_types, strict=True)
    ]


def plan_partition_expire(
    table: PaimonTable,
    flags: PartitionExpireFlags,
    *,
    now_ms: int,
    zone: dt.tzinfo,
) -> Plan[PartitionExpiryDetails]:
    """Pure planner: which partitions expire now, with their files, rows and last update."""
    config = partition_expire_config(table, flags)
    keys = list(table.schema.partition_keys)
    extractor = TimeExtractor.of(config.pattern, config.formatter, keys)
    expire_before = local_datetime(now_ms, zone) - dt.timedelta(milliseconds=config.expiration_ms)
    expire_before_ms = local_wall_clock_ms(expire_before, zone)
    latest = table.snapshots.latest()
    details = PartitionExpiryDetails(
        config=PartitionExpiryConfig.of(config.sources),
        now_ms=now_ms,
        expire_before_local=expire_before.isoformat(sep=" "),
        expire_before_ms=expire_before_ms,
        latest_snapshot=latest.id if latest else None,
    )
    requirements = Requirements.latest(latest.id if latest else None)
    if latest is None:
        return Plan(COMMAND, table.location, table.branch, now_ms, (), requirements, details)
    skipped: list[SkippedPartition] = []
    expired = _expired(table, latest, config, extractor, expire_before, zone, skipped)
    expired.sort(key=lambda item: item[0])
    details = replace(
        details,
        partitions=tuple(
            _partition_row(table, st, when, zone) for _, st, when in expired[: config.max_num]
        ),
        skipped=tuple(skipped),
        skipped_hint=skipped_hint(table) if skipped else None,
        capped=max(len(expired) - config.max_num, 0),
    )
    expired = expired[: config.max_num]
    # metastore.partitioned-table: the metastore's partitions go too, after the commit.
    details = replace(
        details,
        metastore=metastore.plan_changes(
            table, [metastore.hive_values(table, st.partition) for _, st, _ in expired]
        ),
    )
    phases: tuple[Phase, ...] = ()
    if expired:
        files = sum(st.files for _, st, _ in expired)
        phases = (
            Phase.commit(
                table.snapshots.path(latest.id + 1),
                f"OVERWRITE commit dropping {len(expired)} partition(s) "
                f"({plural(files, 'file')} marked DELETE)",
            ),
        )
    return Plan(COMMAND, table.location, table.branch, now_ms, phases, requirements, details)


Expired = list[tuple[str, _PartitionState, dt.datetime | None]]


def _expired(
    table: PaimonTable,
    latest: Snapshot,
    config: PartitionExpireConfig,
    extractor: TimeExtractor,
    expire_before: dt.datetime,
    zone: dt.tzinfo,
    skipped: list[SkippedPartition],
) -> Expired:
    """Every partition of the latest snapshot past the cut-off, with its sort key and time;
    values-time partitions no time can be read from are kept and listed as skipped."""
    keys = list(table.schema.partition_keys)
    expire_before_ms = local_wall_clock_ms(expire_before, zone)
    default_name = table.options.default_partition_name
    expired: Expired = []
    for values, st in partition_states(table, latest).items():
        texts = _value_texts(table, values)
        spec = table.paths.partition_spec(st.partition)
        when: dt.datetime | None
        if config.strategy == "values-time":
            try:
                when = extractor.extract(keys, texts)
            except PartitionTimeError as exc:
                # Said once for them all, by the plan and the run's error (not one warning
                # per partition); each one's reason is in the plan's details.
                logger.info("partition %s kept: no time in it (%s)", _spec_text(spec), exc)
                skipped.append(SkippedPartition(dict(spec), str(exc)))
                continue
            if not expire_before > when:
                continue
        else:
            when = st.last_creation
            if when is None or not expire_before_ms > local_wall_clock_ms(when, zone):
                continue
        order_key = ",".join(default_name if t is None else t for t in texts)
        expired.append((order_key, st, when))
    return expired


def _partition_row(
    table: PaimonTable, st: _PartitionState, when: dt.datetime | None, zone: dt.tzinfo
) -> ExpiredPartition:
    last = st.last_creation
    return ExpiredPartition(
        partition=dict(table.paths.partition_spec(st.partition)),
        partition_hex=st.partition.hex(),
        path=table.paths.partition_path(st.partition),
        time_local=when.isoformat(sep=" ") if when else None,
        last_update_local=last.isoformat(sep=" ") if last else None,
        # the wall clocks above read in the table zone (epoch ms), as every other time
        time_ms=local_wall_clock_ms(when, zone) if when else None,
        last_update_ms=local_wall_clock_ms(last, zone) if last else None,
        files=st.files,
        rows=st.rows,
        bytes=st.bytes,
    )


# Partition types whose values Paimon hands its time extractor as internal text (a DATE is
# its day number, dt=18262): values-time never reads them as a time, in Paimon or here.
_TYPED_TIME = ("DATE", "TIMESTAMP", "TIMESTAMP_LTZ")


def skipped_hint(table: PaimonTable) -> str:
    """What to do about partitions values-time keeps because no time can be read from them:
    they would otherwise stay forever, run after run."""
    typed = [
        k
        for k, t in zip(table.schema.partition_keys, table.schema.partition_types, strict=True)
        if t.root in _TYPED_TIME
    ]
    if typed:
        why = (
            f"partition key {', '.join(typed)} is typed {table.schema.partition_types[0].root}"
            if len(typed) == 1 and table.schema.partition_keys[0] == typed[0]
            else f"partition keys {', '.join(typed)} are typed dates/timestamps"
        )
        return (
            f"{why}: Paimon's values-time strategy reads partition values as their internal "
            "text (a DATE is its day number, dt=18262), never as a time, so these partitions "
            "never expire (Paimon keeps them too, with a log warning). Set "
            "partition.expiration-strategy = update-time to expire partitions by their last "
            "update, or drop them by hand"
        )
    return (
        "their values do not form a time with partition.timestamp-pattern and "
        "partition.timestamp-formatter (or are null), so they never expire: fix those options, "
        "set partition.expiration-strategy = update-time, or drop them by hand"
    )


class UnexpirablePartitionsError(PaimonError):
    """values-time kept partitions it can never read a time from. The run did everything
    else it could; the error makes a scheduled run fail instead of passing forever."""

    kind = "partitions_never_expire"
    blocks_later_steps = False

    def __init__(self, location: str, details: PartitionExpiryDetails) -> None:
        skipped = details.skipped
        names = ", ".join(_spec_text(s.partition) for s in skipped[:5])
        more = f" and {len(skipped) - 5} more" if len(skipped) > 5 else ""
        super().__init__(
            f"{plural(len(skipped), 'partition')} of {location} can never expire by their "
            f"values ({names}{more})",
            hint=details.skipped_hint,
        )


def unexpirable_error(plan: Plan[PartitionExpiryDetails]) -> UnexpirablePartitionsError | None:
    """The error a run ends with when the plan kept partitions it cannot judge (a real run
    after dropping the rest; a dry run, so that it exits as the real run will)."""
    if not plan.details.skipped:
        return None
    return UnexpirablePartitionsError(plan.table, plan.details)


def _spec_text(spec: Mapping[str, str | None]) -> str:
    """``p0=0/p1=1``, as the partition's directory: commas separate partitions in a list."""
    return "/".join(f"{k}={v}" for k, v in spec.items())


def drop_partitions_builder(
    table: PaimonTable, partitions: Sequence[bytes]
) -> Callable[[Snapshot], Changes]:
    """DELETE every live file (and index entry) of the partitions, from any latest snapshot."""
    types = table.schema.partition_types
    targets = {binary_row.decode(p, types) for p in partitions}
    postpone = table.options.bucket == -2
    cache: dict[bytes, bool] = {}

    def hit(partition: bytes) -> bool:
        found = cache.get(partition)
        if found is None:
            found = cache[partition] = binary_row.decode(partition, types) in targets
        return found

    def build(latest: Snapshot) -> Changes:
        deletes = []
        for row in live_raw_entries(table, latest):
            # Paimon scans bucket >= 0 only, unless the table is a postpone-bucket table.
            if hit(bytes(row["_PARTITION"])) and (row["_BUCKET"] >= 0 or postpone):
                deletes.append({**row, "_KIND": 1})
        index = frozenset(
            (e.partition, e.bucket, e.index_type, e.file_name)
            for e in table.index_files(latest)
            if hit(e.partition)
        )
        # Every DELETE comes from latest's own live files: the commit need not re-check them.
        return Changes(tuple(deletes), index, {"based_on": latest.id}, deletes_verified=True)

    return build


def apply_partition_expire(
    table: PaimonTable,
    plan: Plan[PartitionExpiryDetails],
    *,
    allow_unsafe: bool = False,
    sleep: Callable[[float], None] | None = None,
    run: Run | None = None,
) -> CommitResult | None:
    """Commit the plan's drop; None when it drops nothing."""
    partitions = [bytes.fromhex(p.partition_hex) for p in plan.details.partitions]
    if not partitions:
        return None
    kwargs: dict[str, Any] = {"allow_unsafe": allow_unsafe, "run": run}
    if sleep is not None:
        kwargs["sleep"] = sleep
    return commit(
        table,
        drop_partitions_builder(table, partitions),
        commit_kind="OVERWRITE",
        **kwargs,
    )


@dataclass(frozen=True)
class ExpirePartitions(Operation[PartitionPlan, CommitResult]):
    """Paimon's partition expiry: one OVERWRITE commit dropping the expired partitions."""

    command: ClassVar[str] = COMMAND
    details_type: ClassVar[type[Record]] = PartitionExpiryDetails

    flags: PartitionExpireFlags
    zone: dt.tzinfo
    allow_unsafe: bool = False

    def plan(self, table: PaimonTable, env: Env) -> PartitionPlan:
        return plan_partition_expire(table, self.flags, now_ms=env.now_ms, zone=self.zone)

    def apply(self, table: PaimonTable, plan: PartitionPlan, env: Env) -> CommitResult | None:
        if metastore.mirror(table) is None:
            return apply_partition_expire(table, plan, allow_unsafe=self.allow_unsafe, run=env.run)
        # The intent is written before the commit, the metastore changed after it: a drop
        # the metastore refused or an interrupt leaves the intent for the next run.
        expired = [
            metastore.hive_values(table, bytes.fromhex(p.partition_hex))
            for p in plan.details.partitions
        ]
        intents = metastore.begin(table, expired)
        result = apply_partition_expire(table, plan, allow_unsafe=self.allow_unsafe, run=env.run)
        dropped = metastore.finish(table, intents)
        if result is not None and dropped:
            note = f"dropped {plural(len(dropped), 'partition')} from the metastore"
            result = replace(result, notes=(*result.notes, note))
        return result
