"""Which long-lived changelogs expire: the settings of Paimon's ``expire_changelogs``
procedure and of its commit-time path, the table state they are judged on, and the range
(Paimon's ExpireChangelogImpl bounds: retain-min/-max, time, the oldest snapshot, consumers,
the expire limit)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass

from core.errors import InvalidOptionError
from core.format.model import Snapshot
from core.format.options import INT_MAX, ExpireConfig
from core.retention.expire_range import expire_config
from core.runtime.requests import at_least, ordered, refuse
from core.table.table import PaimonTable

NEVER_MS = 2**63 - 1  # Paimon's Duration.ofMillis(Long.MAX_VALUE): no time bound


@dataclass(frozen=True, slots=True)
class ChangelogFlags:
    """The ``expire_changelogs`` request, validated; None means the procedure's default."""

    retain_max: int | None = None
    retain_min: int | None = None
    older_than_ms: int | None = None  # an instant: changelogs committed before it may go
    max_deletes: int | None = None
    delete_all: bool = False

    def __post_init__(self) -> None:
        at_least("retain_min", self.retain_min)
        at_least("retain_max", self.retain_max)
        at_least("max_deletes", self.max_deletes)
        ordered("retain_min", self.retain_min, "retain_max", self.retain_max)
        given = (self.retain_max, self.retain_min, self.older_than_ms, self.max_deletes)
        if self.delete_all and any(v is not None for v in given):
            raise refuse("delete_all", "--delete-all takes no retention options")


@dataclass(frozen=True, slots=True)
class ChangelogConfig:
    retain_max: int
    retain_min: int
    time_retained_ms: int  # NEVER_MS: no time bound
    max_deletes: int
    clean_empty_directories: bool = False


def procedure_config(
    table: PaimonTable, flags: ChangelogFlags, now_ms: int
) -> tuple[ChangelogConfig, dict[str, str]]:
    """The procedure's builder: max unlimited, min 1, no time bound, deletes unlimited
    (``flags`` validated themselves, and these defaults never cross them)."""
    config = ChangelogConfig(
        retain_max=INT_MAX if flags.retain_max is None else flags.retain_max,
        retain_min=1 if flags.retain_min is None else flags.retain_min,
        time_retained_ms=NEVER_MS if flags.older_than_ms is None else now_ms - flags.older_than_ms,
        max_deletes=INT_MAX if flags.max_deletes is None else flags.max_deletes,
        clean_empty_directories=table.options.get_bool("snapshot.clean-empty-directories"),
    )
    sources = {
        k: "flag" if v is not None else "default"
        for k, v in (
            ("retain_max", flags.retain_max),
            ("retain_min", flags.retain_min),
            ("time_retained_ms", flags.older_than_ms),
            ("max_deletes", flags.max_deletes),
        )
    }
    return config, sources


def commit_config(
    table: PaimonTable, snap: ExpireConfig | None = None, *, limit_flag: bool = False
) -> tuple[ChangelogConfig, dict[str, str]]:
    """The commit path: ``changelog.*`` options, each falling back to the (effective)
    snapshot setting ``snap`` (default: the table's own); the limit is
    ``snapshot.expire.limit`` (``limit_flag``: given as a flag)."""
    if snap is None:
        snap = expire_config(table.options)
    opts = table.options
    cl_max, cl_min = (
        opts.get_int("changelog.num-retained.max"),
        opts.get_int("changelog.num-retained.min"),
    )
    cl_time = opts.get_duration_ms("changelog.time-retained")
    config = ChangelogConfig(
        retain_max=snap.retain_max if cl_max is None else cl_max,
        retain_min=snap.retain_min if cl_min is None else cl_min,
        time_retained_ms=snap.time_retained_ms if cl_time is None else cl_time,
        max_deletes=snap.expire_limit,
        clean_empty_directories=snap.clean_empty_directories,
    )
    if config.retain_max < config.retain_min:
        raise InvalidOptionError(
            f"changelog retain-max ({config.retain_max}) must not be less than changelog "
            f"retain-min ({config.retain_min})"
        )

    def source(value: int | None, key: str) -> str:
        return opts.lookup(key).source if value is not None else "snapshot setting"

    sources = {
        "retain_max": source(cl_max, "changelog.num-retained.max"),
        "retain_min": source(cl_min, "changelog.num-retained.min"),
        "time_retained_ms": source(cl_time, "changelog.time-retained"),
        "max_deletes": "flag" if limit_flag else opts.lookup("snapshot.expire.limit").source,
    }
    return config, sources


@dataclass(frozen=True, slots=True)
class TableState:
    """What changelog expiry looks at: snapshot ids and the changelogs (after a snapshot
    expiry in the same plan: its new ``changelog-N`` included)."""

    earliest_snapshot: Snapshot | None
    latest_snapshot_id: int | None
    changelogs: Mapping[int, Snapshot]  # id -> changelog, present or about to be written

    @property
    def changelog_ids(self) -> list[int]:
        return sorted(self.changelogs)


class LazyChangelogs(Mapping[int, Snapshot]):
    """Changelogs by id, read on first access: the range formula reads only the ids it
    probes (a listing of a long changelog history costs one request, its files many)."""

    def __init__(self, table: PaimonTable, ids: Iterable[int], extra: Mapping[int, Snapshot]):
        self._table = table
        self._ids = sorted({*ids, *extra})
        self._read: dict[int, Snapshot | None] = dict(extra)

    def __getitem__(self, cid: int) -> Snapshot:
        if cid not in self._read:
            self._read[cid] = self._table.changelogs.try_snapshot(cid) if cid in self._ids else None
        snap = self._read[cid]
        if snap is None:
            raise KeyError(cid)
        return snap

    def __iter__(self) -> Iterator[int]:
        return iter(self._ids)

    def __len__(self) -> int:
        return len(self._ids)


@dataclass(frozen=True, slots=True)
class ChangelogRange:
    earliest: int | None
    latest: int | None
    end: int | None  # changelogs [earliest, end) expire
    stop: str  # retain-min | consumer | limit | latest-changelog | time | empty | delete-all
    detail: str

    @property
    def ids(self) -> list[int]:
        if self.earliest is None or self.end is None:
            return []
        return list(range(self.earliest, self.end))


def compute_changelog_range(
    state: TableState, config: ChangelogConfig, min_next_snapshot: int | None, now_ms: int
) -> ChangelogRange:
    """ExpireChangelogImpl.expire(), exactly: a changelog's own time decides (not its
    successor's), consumers always apply, and the newest changelog is never expired."""
    ids = state.changelog_ids
    latest_snap, earliest_snap = state.latest_snapshot_id, state.earliest_snapshot
    if latest_snap is None or earliest_snap is None or not ids:
        return ChangelogRange(None, None, None, "empty", "no long-lived changelogs")
    earliest, latest = ids[0], ids[-1]
    older_than = now_ms - config.time_retained_ms
    min_id = max(latest_snap - config.retain_max + 1, earliest)
    max_exclusive = latest_snap - config.retain_min + 1
    stop, detail = "retain-min", f"the newest {config.retain_min} snapshot ids keep theirs"
    if min_next_snapshot is not None and min_next_snapshot < max_exclusive:
        max_exclusive = min_next_snapshot
        stop, detail = "consumer", f"a consumer still needs snapshot {min_next_snapshot}"
    if earliest + config.max_deletes < max_exclusive:
        max_exclusive = earliest + config.max_deletes
        stop, detail = "limit", f"at most {config.max_deletes} changelogs per run"
    if latest < max_exclusive:
        max_exclusive = latest
        stop, detail = "latest-changelog", f"the newest changelog ({latest}) is kept"
    if max_exclusive <= earliest:
        return ChangelogRange(earliest, latest, None, stop, detail)
    for cid in range(min_id, max_exclusive + 1):
        cl = state.changelogs.get(cid)
        if cl is not None and older_than <= cl.time_millis:
            if cid == min_id and min_id > earliest:
                stop, detail = (
                    "retain-max",
                    (f"changelogs of the newest {config.retain_max} snapshot ids are kept"),
                )
            else:
                stop, detail = "time", f"changelog {cid} is newer than the retention"
            return ChangelogRange(earliest, latest, cid, stop, detail)
    return ChangelogRange(earliest, latest, max_exclusive, stop, detail)


# -- planning the deletions --------------------------------------------------------------------
def delete_all_range(state: TableState) -> ChangelogRange:
    ids = state.changelog_ids
    if not ids or state.earliest_snapshot is None:
        return ChangelogRange(None, None, None, "empty", "no long-lived changelogs")
    if ids[-1] >= state.earliest_snapshot.id:
        raise InvalidOptionError(
            f"latest changelog {ids[-1]} is not older than the earliest snapshot "
            f"{state.earliest_snapshot.id}; refusing --delete-all (Paimon refuses too)"
        )
    return ChangelogRange(ids[0], ids[-1], ids[-1] + 1, "delete-all", "every changelog expires")


def current_state(table: PaimonTable) -> TableState:
    ids = table.snapshots.ids()
    changelogs = {c.id: c for c in table.changelogs.snapshots()}
    earliest = None
    for sid in ids:
        earliest = table.snapshots.try_snapshot(sid)
        if earliest is not None:
            break
    return TableState(earliest, ids[-1] if ids else None, changelogs)
