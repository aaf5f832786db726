"""The subset of Paimon's CoreOptions the tool reads: keys, defaults, value parsers.

Every effective value remembers where it came from (flag, --options, table option or
Paimon default) so plans can show it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

from core.errors import InvalidOptionError

Source = Literal["flag", "dynamic", "table", "default"]

INT_MAX = 2**31 - 1

_DURATION_UNITS: dict[str, int] = {}
for _names, _ms in (
    (("d", "day", "days"), 86_400_000),
    (("h", "hour", "hours"), 3_600_000),
    (("min", "m", "minute", "minutes"), 60_000),
    (("s", "sec", "secs", "second", "seconds"), 1000),
    (("ms", "milli", "millis", "millisecond", "milliseconds", ""), 1),
):
    for _n in _names:
        _DURATION_UNITS[_n] = _ms
_SUB_MS_UNITS = {
    "µs",
    "us",
    "micro",
    "micros",
    "microsecond",
    "microseconds",
    "ns",
    "nano",
    "nanos",
    "nanosecond",
    "nanoseconds",
}

_MEMORY_UNITS: dict[str, int] = {}
for _names, _mult in (
    (("", "b", "bytes"), 1),
    (("k", "kb", "kibibytes"), 1024),
    (("m", "mb", "mebibytes"), 1024**2),
    (("g", "gb", "gibibytes"), 1024**3),
    (("t", "tb", "tebibytes"), 1024**4),
):
    for _n in _names:
        _MEMORY_UNITS[_n] = _mult

_NUM_UNIT = re.compile(r"^\s*(\d+)\s*([^\d\s]*)\s*$")


def parse_duration_ms(text: str) -> int:
    """Paimon TimeUtils.parseDuration: integer + optional unit, no unit = milliseconds."""
    m = _NUM_UNIT.match(text)
    if not m:
        raise InvalidOptionError(f"invalid duration {text!r} (examples: 1 h, 30 min, 7 d)")
    value, unit = int(m.group(1)), m.group(2).lower()
    if unit in _SUB_MS_UNITS:
        return value // (1000 if unit.startswith(("µ", "u", "micro")) else 1_000_000)
    if unit not in _DURATION_UNITS:
        raise InvalidOptionError(f"invalid duration unit {unit!r} in {text!r}")
    return value * _DURATION_UNITS[unit]


def parse_memory_size(text: str) -> int:
    """Paimon MemorySize: integer + optional unit in powers of 1024."""
    m = _NUM_UNIT.match(text)
    if not m or m.group(2).lower() not in _MEMORY_UNITS:
        raise InvalidOptionError(f"invalid size {text!r} (examples: 128 mb, 1 gb)")
    return int(m.group(1)) * _MEMORY_UNITS[m.group(2).lower()]


def parse_bool(text: str, key: str) -> bool:
    low = text.strip().lower()
    if low in ("true", "false"):
        return low == "true"
    raise InvalidOptionError(f"option {key} must be true or false, got {text!r}")


def parse_int(text: str, key: str) -> int:
    try:
        return int(text.strip())
    except ValueError:
        raise InvalidOptionError(f"option {key} must be an integer, got {text!r}") from None


def parse_dynamic_options(text: str) -> dict[str, str]:
    """The procedures' ``options`` argument: ``k1=v1,k2=v2`` (split at the first '=')."""
    out: dict[str, str] = {}
    for part in text.split(","):
        if not part.strip():
            continue
        if "=" not in part:
            raise InvalidOptionError(f"dynamic option {part.strip()!r} is not key=value")
        key, value = part.split("=", 1)
        out[key.strip()] = value.strip()
    return out


#: Table options of paimon-cli itself: how much run history a table keeps (DECISIONS D14).
RUNS_NUM_RETAINED = "paimon-cli.runs.num-retained"
RUNS_TIME_RETAINED = "paimon-cli.runs.time-retained"

# Paimon defaults for the keys the tool reads (CoreOptions at the matched version, D1).
DEFAULTS: dict[str, str | None] = {
    "snapshot.num-retained.min": "10",
    "snapshot.num-retained.max": str(INT_MAX),
    "snapshot.time-retained": "1 h",
    "snapshot.expire.limit": "50",
    "snapshot.clean-empty-directories": "false",
    "changelog.num-retained.min": None,
    "changelog.num-retained.max": None,
    "changelog.time-retained": None,
    "changelog-producer": "none",
    "consumer.expiration-time": None,
    "consumer.changelog-only": "false",
    "bucket": "-1",
    "file.format": "parquet",
    "manifest.format": "avro",
    "manifest.compression": "zstd",
    "partition.default-name": "__DEFAULT_PARTITION__",
    "partition.legacy-name": "true",
    "data-file.path-directory": None,
    "data-file.external-paths": None,
    "data-file.external-paths.strategy": "none",
    "index-file-in-data-file-dir": "false",
    "deletion-vectors.enabled": "false",
    "merge-engine": "deduplicate",
    "partition.expiration-time": None,
    "partition.expiration-strategy": "values-time",
    "partition.expiration-max-num": "100",
    "partition.timestamp-formatter": None,
    "partition.timestamp-pattern": None,
    "tag.num-retained-max": None,
    "tag.default-time-retained": None,
    "target-file-size": None,
    "compaction.min.file-num": "5",
    "manifest.merge-min-count": "30",
    # ours, not Paimon's (Paimon keeps keys it does not know): the run history's bounds
    RUNS_NUM_RETAINED: "100",
    RUNS_TIME_RETAINED: "90 d",
}

# Older keys Paimon still reads when the new one is absent.
FALLBACK_KEYS: dict[str, str] = {
    "snapshot.clean-empty-directories": "snapshot.expire.clean-empty-directories",
}


@dataclass(frozen=True, slots=True)
class OptionValue:
    key: str
    value: str | None
    source: Source


class TableOptions:
    """Table options overlaid with dynamic ones; answers typed values with their source."""

    def __init__(self, table: Mapping[str, str], dynamic: Mapping[str, str] | None = None) -> None:
        self.table = dict(table)
        self.dynamic = dict(dynamic or {})

    def with_dynamic(self, dynamic: Mapping[str, str]) -> TableOptions:
        return TableOptions(self.table, {**self.dynamic, **dynamic})

    def lookup(self, key: str) -> OptionValue:
        for candidate in (key, FALLBACK_KEYS.get(key)):
            if candidate is None:
                continue
            if candidate in self.dynamic:
                return OptionValue(key, self.dynamic[candidate], "dynamic")
            if candidate in self.table:
                return OptionValue(key, self.table[candidate], "table")
        return OptionValue(key, DEFAULTS.get(key), "default")

    def get(self, key: str) -> str | None:
        return self.lookup(key).value

    def get_bool(self, key: str) -> bool:
        value = self.get(key)
        return parse_bool(value, key) if value is not None else False

    def get_int(self, key: str) -> int | None:
        value = self.get(key)
        return parse_int(value, key) if value is not None else None

    def get_duration_ms(self, key: str) -> int | None:
        value = self.get(key)
        if value is None:
            return None
        try:
            return parse_duration_ms(value)
        except InvalidOptionError as exc:
            raise InvalidOptionError(f"option {key}: {exc.message}") from None

    def effective(self) -> dict[str, OptionValue]:
        """Every known key plus every table/dynamic key, with value and source."""
        keys = set(DEFAULTS) | set(self.table) | set(self.dynamic)
        return {k: self.lookup(k) for k in sorted(keys)}

    # Convenience accessors for layout-affecting options.
    @property
    def bucket(self) -> int:
        value = self.get_int("bucket")
        return -1 if value is None else value

    @property
    def default_partition_name(self) -> str:
        return self.get("partition.default-name") or "__DEFAULT_PARTITION__"

    @property
    def legacy_partition_name(self) -> bool:
        return self.get_bool("partition.legacy-name")

    @property
    def path_directory(self) -> str | None:
        return self.get("data-file.path-directory") or None

    @property
    def external_paths(self) -> tuple[str, ...]:
        raw = self.get("data-file.external-paths") or ""
        return tuple(p.strip() for p in raw.split(",") if p.strip())

    @property
    def index_file_in_data_dir(self) -> bool:
        return self.get_bool("index-file-in-data-file-dir")


@dataclass(frozen=True, slots=True)
class ExpireConfig:
    retain_min: int
    retain_max: int
    time_retained_ms: int
    expire_limit: int
    clean_empty_directories: bool
    changelog_decoupled: bool
    changelog_producer: str
    consumer_changelog_only: bool
    consumer_expiration_ms: int | None


# Keys Paimon builds at run time from a name (a column, a format, a file index type) or
# hands through to a library, and keys of ours: never reported as unknown.
_KNOWN_PREFIXES = (
    "fields.",  # fields.<column>.aggregate-function, .sequence-group, .default-value, ...
    "file-index.",  # file-index.<type>.columns, ...
    "blob-descriptor.",
    "metadata.iceberg.",  # Paimon's Iceberg compatibility (IcebergOptions)
    "parquet.",  # options of a file format, passed to its writer and reader
    "orc.",
    "avro.",
    "csv.",
    "json.",
    "lance.",
    "fs.",  # file system settings (catalog options, also accepted per table)
    "hadoop.",
)


@dataclass(frozen=True, slots=True)
class UnknownOption:
    key: str
    closest: str | None  # the known key it was probably meant to be


def unknown_options(keys: Mapping[str, str] | list[str]) -> list[UnknownOption]:
    """The keys Apache Paimon does not define (``paimon_option_keys``), each with the
    closest key it does; a warning, never a refusal: a newer Paimon may define more."""
    import difflib

    from core.format.paimon_option_keys import PAIMON_OPTION_KEYS

    known = PAIMON_OPTION_KEYS | set(DEFAULTS)
    out = []
    for key in keys:
        if key in known or key.startswith(_KNOWN_PREFIXES):
            continue
        close = difflib.get_close_matches(key, sorted(known), n=1, cutoff=0.75)
        out.append(UnknownOption(key, close[0] if close else None))
    return out
