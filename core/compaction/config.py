"""The compactor's configuration: what the user asked for (``CompactFlags``) over the
table's options over Paimon's defaults (``CompactConfig``, each value with its source for the
plan), the options under which a rewrite would not be Paimon's (refused before anything is
read), and the ``--partition`` filters."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from core.compaction import compact_changelog, postpone
from core.compaction.details import CompactSetting, MergeDetails, SequenceGroup
from core.compaction.file_index import FileIndexSpec
from core.compaction.merge_engines import MergeSpec
from core.compaction.postpone import POSTPONE_BUCKET, PostponeSpec
from core.compaction.task import MB
from core.errors import InvalidOptionError, SafetyRefusalError
from core.format.data_files import unsupported_types
from core.format.options import parse_memory_size
from core.table.table import PaimonTable

STRATEGIES = ("full", "minor")


class UnsupportedTableError(SafetyRefusalError):
    """The table uses a feature whose compaction paimon-cli cannot reproduce exactly."""

    kind = "unsupported_table"


@dataclass(frozen=True, slots=True)
class CompactFlags:
    """What the user asked for; None falls back to table options, then Paimon defaults."""

    partitions: tuple[Mapping[str, str], ...] = ()
    strategy: str | None = None
    target_file_size: str | None = None
    # At most this many input bytes per run (maintain --compact-max-bytes); None: no bound.
    max_bytes: int | None = None


@dataclass(frozen=True, slots=True)
class CompactConfig:
    mode: str  # unaware-append | bucketed-append | primary-key
    strategy: str
    target_file_size: int
    small_file_ratio: float
    open_file_cost: int
    min_file_num: int
    file_num_limit: int
    max_level: int
    sources: Mapping[str, CompactSetting]  # option key -> value and where it came from
    merge: MergeSpec | None = None  # primary-key tables only
    # changelog-producer = full-compaction: the changelog the compaction writes
    changelog: compact_changelog.ChangelogSpec | None = None
    deletion_vectors: bool = False
    delete_ratio_threshold: float = 0.2  # unaware-bucket append tables with vectors
    index_target_size: int = 2 * MB  # deletion-vector.index-file.target-size
    postpone: PostponeSpec | None = None  # postpone-bucket tables: how records are routed

    @property
    def small_file_size(self) -> int:
        """CoreOptions.compactionFileSize: target × compaction.small-file-ratio."""
        return int(self.target_file_size * self.small_file_ratio)


def option_true(table: PaimonTable, key: str) -> bool:
    """A boolean table option (dynamic options included) that is set to true."""
    value = table.options.get(key)
    return value is not None and value.strip().lower() == "true"


def refusals(table: PaimonTable) -> list[str]:
    """Options under which a Python rewrite would not be Paimon's (each names the option)."""
    opts = table.options
    out = []
    if option_true(table, "deletion-vectors.enabled") and not table.is_primary_key:
        external = opts.get("global-index.external-path")
        if external:
            out.append(f"global-index.external-path={external} (new vector index files)")
    # Paimon master compacts these through machinery paimon-cli does not reproduce yet;
    # each refusal says what a rewrite would have to carry (issue 23.3).
    if option_true(table, "data-evolution.enabled"):
        out.append(
            "data-evolution.enabled=true (partial-column files are merged by row-id range, "
            "with their BLOB files, deletion vectors and global indexes)"
        )
    if option_true(table, "row-tracking.enabled"):
        out.append(
            "row-tracking.enabled=true (compacted files must carry each row's _ROW_ID and "
            "_SEQUENCE_NUMBER columns)"
        )
    if opts.bucket == POSTPONE_BUCKET and not table.is_primary_key:
        out.append("bucket=-2 without a primary key (postpone buckets need one in Paimon)")
    elif opts.bucket == POSTPONE_BUCKET:
        out += postpone.refusals(table)
    for key in (
        "record-level.expire-time",
        "file.format.per.level",
        "file.compression.per.level",
        "clustering.columns",
        "chain-table.enabled",
    ):
        value = opts.get(key)
        if value and value.strip().lower() not in ("false", ""):
            out.append(f"{key}={value}")
    file_index = FileIndexSpec.of({**opts.table, **opts.dynamic}, table.schema.fields)
    if file_index is not None:
        out += file_index.refusals()
    if table.is_primary_key:
        spec = merge_spec(table)
        out += spec.refusals()
        out += compact_changelog.refusals({**opts.table, **opts.dynamic}, spec.engine)
    fmt = (opts.get("file.format") or "parquet").strip().lower()
    bad = unsupported_types(table.schema.fields, fmt)
    if bad:
        out.append(f"column types {'; '.join(bad)}")
    return out


def merge_spec(table: PaimonTable) -> MergeSpec:
    """The merge engine settings of a primary-key table (dynamic options included)."""
    opts = table.options
    return MergeSpec.of(
        table.schema.fields, table.schema.primary_keys, {**opts.table, **opts.dynamic}
    )


def merge_details(spec: MergeSpec | None) -> MergeDetails | None:
    """How records of a key are merged (the plan's ``merge``); None for append tables."""
    if spec is None:
        return None
    return MergeDetails(
        engine=spec.engine,
        sequence_fields=tuple(spec.sequence_fields),
        sequence_order="ascending" if spec.sequence_ascending else "descending",
        ignore_delete=spec.ignore_delete,
        remove_record_on_delete=spec.remove_on_delete,
        sequence_groups=tuple(
            SequenceGroup(
                ordered_by=tuple(spec.fields[i].name for i in g.ordering),
                fields=tuple(spec.fields[i].name for i in g.protected),
            )
            for g in spec.groups
        ),
        aggregate_functions={
            f.name: name
            for i, f in enumerate(spec.fields)
            if spec.engine in ("aggregation", "partial-update")
            and (name := spec.agg_name(i)) is not None
        },
    )


class _Settings:
    """Option values as the plan shows them: each with where it came from."""

    def __init__(self, table: PaimonTable) -> None:
        self.options = table.options
        self.sources: dict[str, CompactSetting] = {}

    def pick(self, flag: Any, key: str, default: str) -> str:
        """The flag, else the table's option, else Paimon's default."""
        if flag is not None:
            self.sources[key] = CompactSetting(flag, "flag")
            return str(flag)
        found = self.options.lookup(key)
        if found.value is None:
            self.sources[key] = CompactSetting(default, "default")
            return default
        self.sources[key] = CompactSetting(found.value, found.source)
        return found.value

    def optional(self, key: str) -> str | None:
        """An option without a default: shown only when set."""
        found = self.options.lookup(key)
        if found.value is not None:
            self.sources[key] = CompactSetting(found.value, found.source)
        return found.value

    def number(self, key: str, default: str) -> float:
        try:
            return float(self.pick(None, key, default))
        except ValueError:
            raise InvalidOptionError(f"{key} must be a number") from None


def compact_config(table: PaimonTable, flags: CompactFlags) -> CompactConfig:
    """Flags over table options over Paimon defaults; refuses unsupported tables."""
    problems = refusals(table)
    if problems:
        raise UnsupportedTableError(
            f"cannot compact {table.location}: " + "; ".join(problems),
            hint="compact this table with Paimon itself (Spark/Flink sys.compact)",
        )
    opts = table.options
    settings = _Settings(table)
    pick = settings.pick
    pk = table.is_primary_key
    mode = "primary-key" if pk else "unaware-append" if opts.bucket == -1 else "bucketed-append"
    default_strategy = "full"
    if option_true(table, "clustering.incremental"):
        default_strategy = "minor"
    strategy = pick(flags.strategy, "compact-strategy", default_strategy).strip().lower()
    if strategy not in STRATEGIES:
        raise InvalidOptionError(f"unknown compact strategy {strategy!r} (use full or minor)")
    if pk and strategy == "minor":
        raise InvalidOptionError(
            "minor compaction of primary-key tables is not supported: use --compact-strategy full"
        )
    target = parse_memory_size(
        pick(flags.target_file_size, "target-file-size", "128 mb" if pk else "256 mb")
    )
    if target <= 0:
        raise InvalidOptionError(f"target file size must be positive, got {target}")
    ratio = settings.number("compaction.small-file-ratio", "0.7")
    num_levels = opts.get_int("num-levels")
    if num_levels is None:
        trigger = opts.get_int("num-sorted-run.compaction-trigger") or 5
        num_levels = trigger + 1
    settings.sources["num-levels"] = CompactSetting(num_levels, "derived")
    dv = option_true(table, "deletion-vectors.enabled")
    dv_extra: dict[str, Any] = {}
    if dv and not pk:
        dv_extra["delete_ratio_threshold"] = settings.number(
            "compaction.delete-ratio-threshold", "0.2"
        )
        dv_extra["index_target_size"] = parse_memory_size(
            pick(None, "deletion-vector.index-file.target-size", "2 mb")
        )
    return CompactConfig(
        mode=mode,
        strategy=strategy,
        target_file_size=target,
        small_file_ratio=ratio,
        open_file_cost=parse_memory_size(pick(None, "source.split.open-file-cost", "4 mb")),
        min_file_num=int(pick(None, "compaction.min.file-num", "5")),
        file_num_limit=int(pick(None, "compaction.file-num-limit", "100000")),
        max_level=num_levels - 1,
        sources=settings.sources,
        merge=merge_spec(table) if pk else None,
        changelog=(
            compact_changelog.ChangelogSpec.of({**opts.table, **opts.dynamic}, num_levels - 1)
            if pk
            else None
        ),
        deletion_vectors=dv,
        postpone=_postpone_spec(table, settings) if pk and opts.bucket == POSTPONE_BUCKET else None,
        **dv_extra,
    )


def _postpone_spec(table: PaimonTable, settings: _Settings) -> PostponeSpec:
    values = {
        key: settings.optional(key)
        for key in ("postpone.default-bucket-num", "postpone.target-row-num-per-bucket")
    }
    target = parse_memory_size(settings.pick(None, "postpone.target-size-per-bucket", "1 gb"))
    if target <= 0:
        raise InvalidOptionError("Option 'postpone.target-size-per-bucket' must be greater than 0.")
    return postpone.spec_of(table, values, target)


def parse_partition_filter(text: str) -> dict[str, str]:
    """``k=v[,k2=v2]``: one partition spec (all keys must match)."""
    spec: dict[str, str] = {}
    for part in text.split(","):
        if "=" not in part:
            raise InvalidOptionError(
                f"partition filter {text!r}: {part.strip()!r} is not key=value"
            )
        key, value = part.split("=", 1)
        spec[key.strip()] = value.strip()
    return spec


def check_partition_filters(table: PaimonTable, specs: Sequence[Mapping[str, str]]) -> None:
    """Every ``--partition`` filter names partition keys of a partitioned table."""
    keys = table.schema.partition_keys
    for spec in specs:
        if not keys:
            raise InvalidOptionError(
                f"{table.location} is not partitioned: --partition cannot be used"
            )
        unknown = [k for k in spec if k not in keys]
        if unknown:
            raise InvalidOptionError(
                f"partition filter names {', '.join(unknown)}, not a partition key "
                f"(partition keys: {', '.join(keys)})"
            )


def partition_matches(
    spec_text: Mapping[str, str | None], filters: Sequence[Mapping[str, str]]
) -> bool:
    """A partition (its values as text) passes the filters: no filter, or one that matches."""
    if not filters:
        return True
    return any(all(spec_text.get(k) == v for k, v in f.items()) for f in filters)


__all__ = [
    "STRATEGIES",
    "CompactConfig",
    "CompactFlags",
    "UnsupportedTableError",
    "check_partition_filters",
    "compact_config",
    "merge_details",
    "merge_spec",
    "option_true",
    "parse_partition_filter",
    "partition_matches",
    "refusals",
]
