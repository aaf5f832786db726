"""Details of snapshot and changelog expiry (expire-snapshots, expire-changelogs)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from core.retention.changelog_range import NEVER_MS, ChangelogConfig
from core.runtime.details import FLATTEN, OMIT_NONE, Record
from core.runtime.plans import SnapshotIdentity


@dataclass(frozen=True, slots=True)
class Sourced(Record):
    """A setting's value and where it came from (flag, dynamic, table, default, ...)."""

    value: int
    source: str


@dataclass(frozen=True, slots=True)
class SourcedBound(Record):
    """A bound that may be absent (None: no bound), and where it came from."""

    value: int | None
    source: str


@dataclass(frozen=True, slots=True)
class SnapshotExpiryConfig(Record):
    """The effective expiry settings; ``older_than_ms`` is now minus ``time_retained_ms``."""

    retain_min: Sourced
    retain_max: Sourced
    time_retained_ms: Sourced
    older_than_ms: int
    max_deletes: Sourced
    clean_empty_directories: bool
    changelog_decoupled: bool
    changelog_producer: str


@dataclass(frozen=True, slots=True)
class ChangelogExpiryConfig(Record):
    """The effective changelog expiry settings (``time_retained_ms`` None: no time bound)."""

    retain_max: Sourced
    retain_min: Sourced
    time_retained_ms: SourcedBound
    max_deletes: Sourced
    clean_empty_directories: bool


@dataclass(frozen=True, slots=True)
class KeptByTag(Record):
    path: str
    tag: str


@dataclass(frozen=True, slots=True)
class KeptByBranch(Record):
    path: str
    branch: str


@dataclass(frozen=True, slots=True)
class KeptByChangelog(Record):
    path: str
    changelog: int


@dataclass(frozen=True, slots=True)
class Kept(Record):
    """A file a changelog expiry keeps, and what keeps it (a tag, a branch, a changelog)."""

    path: str
    kept_by: str


@dataclass(frozen=True, slots=True)
class JournalGuard(Record):
    """What a resumed journal must find again: the oldest snapshot the plan keeps and the
    latest one, each as the commit it is (None: there was none)."""

    new_earliest: SnapshotIdentity | None
    latest: SnapshotIdentity | None


@dataclass(frozen=True, slots=True)
class ChangelogPartDetails(Record):
    """Which long-lived changelogs expire and why the range stopped where it did."""

    earliest_changelog: int | None
    latest_changelog: int | None
    changelogs: tuple[int, ...]
    stopped_by: str
    stop_detail: str
    kept: tuple[Kept, ...] = ()
    notes: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class DecoupledChangelogExpiry(Record):
    """The changelog expiry an expire-snapshots plan runs after its snapshots (decoupled
    tables): the part's keys, then its settings."""

    part: ChangelogPartDetails = field(metadata=FLATTEN)
    config: ChangelogExpiryConfig


@dataclass(frozen=True, slots=True)
class ExpireSnapshotsDetails(Record):
    config: SnapshotExpiryConfig
    now_ms: int
    earliest_snapshot: int | None
    latest_snapshot: int | None
    expire_until: int | None
    stopped_by: str
    stop_detail: str
    blocking_consumer: str | None
    stale_consumers: tuple[str, ...]
    snapshots: tuple[int, ...]  # ids expired
    journal_guard: JournalGuard
    # [begin, end) when snapshots expire; the decoupled tables' changelog expiry
    expire_range: tuple[int, int] | None = field(default=None, metadata=OMIT_NONE)
    changelog_expiry: DecoupledChangelogExpiry | None = field(default=None, metadata=OMIT_NONE)
    kept_by_tag: tuple[KeptByTag, ...] = ()
    kept_by_branch: tuple[KeptByBranch, ...] = ()
    kept_by_changelog: tuple[KeptByChangelog, ...] = ()
    kept_for_changelog: int = 0
    notes: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class ExpireChangelogsDetails(Record):
    config: ChangelogExpiryConfig
    delete_all: bool
    now_ms: int
    # plan_commit_changelog_expiry: whether the table's lifecycle is decoupled at all
    decoupled: bool | None = field(default=None, metadata=OMIT_NONE, kw_only=True)
    earliest_snapshot: int | None
    latest_snapshot: int | None
    consumer_floor: int | None  # the lowest consumer nextSnapshot at planning
    part: ChangelogPartDetails = field(metadata=FLATTEN)


def changelog_config(config: ChangelogConfig, sources: Mapping[str, str]) -> ChangelogExpiryConfig:
    """The settings a changelog expiry ran with, and where each came from."""
    no_bound = config.time_retained_ms >= NEVER_MS
    return ChangelogExpiryConfig(
        Sourced(config.retain_max, sources["retain_max"]),
        Sourced(config.retain_min, sources["retain_min"]),
        SourcedBound(None if no_bound else config.time_retained_ms, sources["time_retained_ms"]),
        Sourced(config.max_deletes, sources["max_deletes"]),
        config.clean_empty_directories,
    )
