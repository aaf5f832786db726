"""The table lease: one changing paimon-cli run per table at a time.

Two cron lines, or a cron ``maintain`` and an on-call ``expire-snapshots``, must never
interleave on a table: each would plan against a table the other is changing. Every real
run of a changing command therefore holds the table's lease while it works (the lifecycle
takes it, ``core.ops.lifecycle``); dry runs and read-only commands take none.

The lease is a sequence of small JSON files, ``<table>/.paimon-cli/lease/<generation>.json``;
the highest generation is the lease's state (held by a run until its expiry, or released).
Every change of state (take, renew, release, take over) is the creation of the next
generation with the store's atomic create-if-absent (``FileIO.write_if_absent``: a hard
link on local and HDFS-like file systems, ``If-None-Match: *`` on S3). That one operation
is the compare-and-swap: of two runs that both read generation ``n`` (free, released or
stale) and both create ``n + 1``, exactly one succeeds; the other reads the winner's
lease and refuses or waits. A holder renews by creating the next generation too, so a
holder that stalled past its expiry and was taken over learns it at its next renewal (it
cannot create a generation that exists) and stops at its next safe point.

No generation is ever rewritten, and the highest one is never deleted (deleting it would
let the count start again below a live holder); older ones are removed once a newer one
exists. A run that lost a race long ago and recreates such a removed, lower generation
sees the higher one when it lists right after creating, and backs off. One exception: a
table's first lease (generation 1), released while fresh, is removed with its directories
when they are empty, so a run on a table nobody else touched (one that fails too) leaves
nothing behind. That is safe for generation 1 only: a taker that read the directory empty
creates generation 1 itself, and the create-if-absent decides between them; a removed
higher generation would let a taker that read the one below recreate it beside a new
generation 1. A lease renewed even once is no longer generation 1.

A lease is stale, and taken over, when it expired (its holder stopped renewing it:
killed, or its host is gone) or when its holder's process is gone and this run can tell:
only a holder recorded on this host, boot and PID namespace (``process_identity``: a
container sharing the host name numbers its processes apart) is judged, and a SIGKILLed
run there is taken over at once; any other holder is waited out. Expiry compares wall
clocks of different hosts: a holder renews every ``ttl / 4``, and a taker waits
``SKEW_GRACE_MS`` beyond the expiry, so clocks may differ by a minute.

The lease is a fence where the harm happens, not only between phases: before each phase
and commit, and before each chunk of a phase (``LeaseFence``: on this machine's threads
and on Spark executors alike), a run confirms that the lease file still names it,
renewed less than ``ttl / 2`` ago by the wall clock and by a local clock that never jumps
(``local_clock``); while a chunk works, the local clock alone is looked at before each
action, and the file is read again once the time the last confirmation left ran out or
``FENCE_CHUNK`` actions were done. A run paused past a takeover (SIGSTOP, a suspended VM)
therefore deletes nothing more once it resumes. What it cannot fence: an action already
on its way when the pause began, and a pause inside a chunk on a host whose clocks both
stood still through it (the next read of the file, at most ``FENCE_CHUNK`` actions on,
stops it); clocks of holder and taker that differ by more than ``SKEW_GRACE_MS``.

Stores without an atomic create-if-absent (GCS, Azure, OSS through fsspec): the lease is
taken best effort (check, write, read back; the same rule Java applies to tags there, and
``core.write.commit.create_if_absent`` follows), and a warning says so once: two runs that
start within the same moment can both believe they hold it. Commits on such stores are
still refused without ``--allow-unsafe-commit`` (``check_publishable``).
"""

from __future__ import annotations

import json
import logging
import os
import random
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace

from core.errors import PaimonError, StorageError
from core.io.fileio import FileIO, join, parent
from core.runtime import process_identity as identity
from core.runtime.timeparse import format_elapsed, format_utc, iso_utc

logger = logging.getLogger(__name__)

LEASE_DIR = (".paimon-cli", "lease")
LEASE_FORMAT = 2  # 2: the holder's boot id and PID namespace
DEFAULT_TTL_MS = 10 * 60 * 1000  # a holder that stopped renewing is stale after this
SKEW_GRACE_MS = 60 * 1000  # takers wait this long beyond an expiry (clocks of other hosts)
POLL_MS = 2000  # how often a waiting run looks at the lease again
_CREATE_RACES = 20  # lost create races in a row before a taker gives up (never in practice)

Now = Callable[[], int]


def _wall_ms() -> int:
    return int(time.time() * 1000)


def wall_now() -> int:
    """The lease's wall clock (real time, never a command's ``PAIMON_CLI_NOW``); looked up
    at each call, so a test can move it for every run of a process (``_wall_ms``)."""
    return _wall_ms()


_BOOTTIME = getattr(time, "CLOCK_BOOTTIME", None)


def _local_s() -> float:
    """Seconds on this host's clock that never jumps and, where the system has one, keeps
    counting while the host is suspended (CLOCK_BOOTTIME): how old a renewal is here."""
    if _BOOTTIME is not None:
        return time.clock_gettime(_BOOTTIME)
    return time.monotonic()


def local_clock() -> float:
    """``_local_s``, looked up at each call (tests move it as they move ``_wall_ms``)."""
    return _local_s()


def lease_dir(table_root: str) -> str:
    return join(table_root, *LEASE_DIR)


def _path(table_root: str, generation: int) -> str:
    return join(lease_dir(table_root), f"{generation:020d}.json")


class LeaseHeldError(PaimonError):
    """Another run holds the table's lease (and did not release it within the wait)."""

    kind = "lease_held"

    def __init__(self, table_root: str, holder: LeaseRecord | None, waited_ms: int) -> None:
        who = holder.describe() if holder is not None else "an unreadable lease file"
        until = f" until {format_utc(holder.expires_ms)}" if holder is not None else ""
        waited = ""
        if waited_ms:
            waited = f" (waited {format_elapsed(waited_ms)})"
        super().__init__(
            f"{table_root} is busy: {who} holds its lease{until}{waited}",
            hint="run again when it is done, or wait for it with --wait-lease (e.g. 15m); a "
            "crashed holder's lease is taken over once it expires (at once by a run on its "
            "own host, boot and PID namespace)",
        )
        self.holder = holder


class LeaseLostError(PaimonError):
    """This run's lease was taken over (it stalled past its expiry, or could not renew)."""

    kind = "lease_lost"


LOST_HINT = (
    "a run stalls past its lease when its process, container or VM is paused, or storage "
    "fails for minutes; run it again"
)


def lease_lost(table_root: str, why: str) -> LeaseLostError:
    return LeaseLostError(
        f"stopped: this run no longer holds the lease of {table_root} ({why}); nothing more "
        "was deleted or changed, what was done stands, and an unfinished deletion's journal "
        "is finished by the next run",
        hint=LOST_HINT,
    )


@dataclass(frozen=True, slots=True)
class LeaseRecord:
    """One generation of a table's lease."""

    generation: int
    state: str  # held | released
    token: str  # one per acquisition: renewals keep it, a taker has another
    command: str
    run_id: str
    user: str
    host: str
    pid: int
    pid_start: int | None  # the process's start (Linux clock ticks): a reused pid differs
    acquired_ms: int
    renewed_ms: int
    expires_ms: int
    took_over: str | None = None  # whom this acquisition replaced, and why
    # Where ``pid`` is numbered (core.runtime.process_identity); None in leases of older
    # paimon-cli versions, whose holders are then waited out, never judged gone.
    boot_id: str | None = None
    pid_ns: int | None = None

    def to_bytes(self) -> bytes:
        doc = {"format": LEASE_FORMAT, **asdict(self)}
        doc["expires"] = iso_utc(self.expires_ms)
        return json.dumps(doc, indent=1).encode("utf-8")

    @classmethod
    def from_bytes(cls, data: bytes, generation: int) -> LeaseRecord:
        doc = json.loads(data)
        if not isinstance(doc, dict):
            raise ValueError("not an object")
        start = doc.get("pid_start")
        took = doc.get("took_over")
        boot, ns = doc.get("boot_id"), doc.get("pid_ns")
        return cls(
            generation=generation,
            state=str(doc["state"]),
            token=str(doc["token"]),
            command=str(doc["command"]),
            run_id=str(doc["run_id"]),
            user=str(doc["user"]),
            host=str(doc["host"]),
            pid=int(doc["pid"]),
            pid_start=None if start is None else int(start),
            acquired_ms=int(doc["acquired_ms"]),
            renewed_ms=int(doc["renewed_ms"]),
            expires_ms=int(doc["expires_ms"]),
            took_over=None if took is None else str(took),
            boot_id=None if boot is None else str(boot),
            pid_ns=None if ns is None else int(ns),
        )

    def describe(self) -> str:
        """``maintain (run 3f9a1c2b7d4e, user bob on host h1, pid 4242)``"""
        return (
            f"{self.command} (run {self.run_id}, user {self.user} on host {self.host}, "
            f"pid {self.pid})"
        )


@dataclass(frozen=True, slots=True)
class Holder:
    """Who asks for the lease: a command's run in this process."""

    command: str
    run_id: str
    user: str
    host: str
    pid: int


def stale_reason(record: LeaseRecord, now_ms: int, host: str) -> str | None:
    """Why ``record`` no longer holds the table (released, expired, holder gone), or None."""
    if record.state == "released":
        return "released"
    if now_ms > record.expires_ms + SKEW_GRACE_MS:
        return f"it expired at {format_utc(record.expires_ms)}"
    # Only a holder of this very host, boot and PID namespace can be found gone here: a pid
    # of another container sharing the host name means nothing in ours (process_identity).
    place = identity.Place(record.host, record.boot_id, record.pid_ns)
    mine = record.pid == os.getpid()
    if not mine and identity.is_gone(place, record.pid, record.pid_start, host=host):
        return f"its process {record.pid} on this host ({host}) is gone"
    return None


@dataclass(frozen=True, slots=True)
class _Current:
    generation: int  # 0: no lease was ever taken
    record: LeaseRecord | None  # None: never taken, or unreadable
    unreadable_since_ms: int | None = None  # an unreadable highest generation's mtime


def _generations(fileio: FileIO, table_root: str) -> list[tuple[int, str, int | None]]:
    """(generation, path, modified) of every lease file, lowest first."""
    out = []
    for info in fileio.list_dir(lease_dir(table_root)):
        stem = info.name.removesuffix(".json")
        if not info.is_dir and info.name.endswith(".json") and stem.isdigit():
            out.append((int(stem), info.path, info.mtime_ms))
    return sorted(out)


def read_lease(fileio: FileIO, table_root: str) -> LeaseRecord | None:
    """The table's lease as it stands (held or released); None when none was ever taken
    or the newest generation is unreadable."""
    return _read_current(fileio, table_root).record


def _read_current(fileio: FileIO, table_root: str) -> _Current:
    for _ in range(_CREATE_RACES):
        found = _generations(fileio, table_root)
        if not found:
            return _Current(0, None)
        generation, path, modified = found[-1]
        try:
            data = fileio.read_bytes(path)
        except FileNotFoundError:
            continue  # replaced and cleaned up between listing and reading: look again
        try:
            return _Current(generation, LeaseRecord.from_bytes(data, generation))
        except (ValueError, KeyError, TypeError):
            logger.warning("unreadable lease file %s", path)
            return _Current(generation, None, modified or 0)
    raise StorageError(f"the lease files under {lease_dir(table_root)} keep changing")


class Lease:
    """A table lease this process holds; renewed by a background thread until released."""

    def __init__(
        self,
        fileio: FileIO,
        table_root: str,
        record: LeaseRecord,
        *,
        ttl_ms: int,
        now: Now,
    ) -> None:
        self.fileio = fileio
        self.table_root = table_root
        self.record = record
        self.ttl_ms = ttl_ms
        self.now = now
        self.lost: str | None = None  # who took it over, once known
        # When the newest generation was confirmed ours, on the local clock (local_clock)
        self._confirmed_s = local_clock()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    @property
    def took_over(self) -> str | None:
        return self.record.took_over

    # -- renewal ----------------------------------------------------------------------------
    def start_renewing(self) -> None:
        """Renew every ``ttl / 4`` in a daemon thread (a long run keeps its lease)."""
        interval = self.ttl_ms / 4000

        def loop() -> None:
            while not self._stop.wait(interval):
                try:
                    if not self.renew():
                        return
                except StorageError as exc:
                    logger.warning("could not renew the lease of %s: %s", self.table_root, exc)

        self._thread = threading.Thread(target=loop, name="paimon-lease", daemon=True)
        self._thread.start()

    def renew(self) -> bool:
        """Extend the lease by creating its next generation; False once it is lost."""
        with self._lock:
            if self.lost is not None or self._stop.is_set():
                return False
            mine = self._next_generation(self.ttl_ms, ": this run stops at its next safe point")
            if mine is None:
                return False
        _remove_below(self.fileio, self.table_root, mine.generation)
        return True

    def _next_generation(
        self, ttl_ms: int, if_lost: str, state: str | None = None
    ) -> LeaseRecord | None:
        """Create the lease's next generation, renewed now and valid ``ttl_ms`` more (with
        ``state``, when given), and hold it; None when another run's generation is there
        first: the lease is lost (logged, ``if_lost`` saying what that means here). Called
        with the lock held."""
        now = self.now()
        mine = replace(
            self.record,
            generation=self.record.generation + 1,
            state=state or self.record.state,
            renewed_ms=now,
            expires_ms=now + ttl_ms,
        )
        theirs = _create(self.fileio, self.table_root, mine)
        if theirs is None and _highest(self.fileio, self.table_root) != mine.generation:
            # We recreated a generation a taker had already cleaned up (we stalled past a
            # takeover and its release): the newer one holds the table, never ours.
            self.fileio.delete(_path(self.table_root, mine.generation))
            newest = read_lease(self.fileio, self.table_root)
            theirs = _whose(newest) if newest is not None else "a newer run"
        if theirs is not None:
            self.lost = theirs
            logger.warning(
                "the lease of %s was taken over by %s" + if_lost, self.table_root, self.lost
            )
            return None
        self.record = mine
        self._confirmed_s = local_clock()
        return mine

    def fence(self) -> LeaseFence:
        """What each chunk of this run's work checks before it acts (``LeaseFence``)."""
        return LeaseFence(
            self.fileio, self.table_root, self.record.token, self.ttl_ms, self.now, self
        )

    def left_ms(self) -> int:
        """How long this run may act before it must see its lease renewed, by this
        process's own view (no storage read): half the lease time minus the age of the
        last renewal, on the wall clock and on the local clock (one that jumps back or
        stood still through a suspend is caught by the other). Raises
        :class:`LeaseLostError` when that is nothing, or the lease is known lost."""
        with self._lock:
            lost, renewed, confirmed = self.lost, self.record.renewed_ms, self._confirmed_s
        if lost is not None:
            raise lease_lost(self.table_root, f"it was taken over by {lost}")
        wall_age = self.now() - renewed
        local_age = int((local_clock() - confirmed) * 1000)
        left = self.ttl_ms // 2 - max(wall_age, local_age)
        if left <= 0:
            raise lease_lost(
                self.table_root,
                f"it was last renewed {max(wall_age, local_age) // 1000} s ago, more than "
                f"half its {self.ttl_ms // 60000} min: it could not be renewed, or this run "
                "was paused",
            )
        return left

    def check(self) -> None:
        """Raise :class:`LeaseLostError` when this run must stop (called at safe points:
        before each phase and each commit): its own view, then the lease file."""
        self.fence().confirm()

    # -- release ----------------------------------------------------------------------------
    def release(self) -> None:
        """Stop renewing and mark the lease released (nothing to do once it was lost)."""
        self._stop.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join()
        with self._lock:
            if self.lost is not None or self._remove_first():
                return
            done = self._next_generation(0, " before this run released it", "released")
            if done is None:
                return
        _remove_below(self.fileio, self.table_root, done.generation)

    def _remove_first(self) -> bool:
        """Release a table's first lease, still fresh, by removing it (and its directories
        when empty): a run on a table nobody else touched leaves nothing behind."""
        if self.record.generation != 1 or self.now() >= self.record.expires_ms - self.ttl_ms // 2:
            return False
        found = _generations(self.fileio, self.table_root)
        if [gen for gen, _, _ in found] != [1]:
            return False
        path = found[0][1]
        try:
            there = LeaseRecord.from_bytes(self.fileio.read_bytes(path), 1)
        except (FileNotFoundError, ValueError, KeyError, TypeError):
            return False
        if there.token != self.record.token:
            return False
        self.fileio.delete(path)
        directory = lease_dir(self.table_root)
        if self.fileio.delete_empty_dir(directory):
            self.fileio.delete_empty_dir(parent(directory))
        return True


FENCE_CHUNK = 1000  # actions a chunk does before it reads the lease file again


@dataclass(frozen=True)
class LeaseFence:
    """The lease as a fence where the harm happens: each chunk of a phase (on this
    machine's threads or on a Spark executor, which gets a pickled copy) confirms before
    it acts that the lease file still names this run, renewed less than half the lease
    time ago, and a run that paused (SIGSTOP, a suspended VM or container) past a
    takeover stops before its next deletion instead of after its phase. ``holder``: the
    run's own lease, in its own process (its clocks are checked too; never pickled)."""

    fileio: FileIO
    table_root: str
    token: str
    ttl_ms: int
    now: Now = wall_now
    holder: Lease | None = field(default=None, compare=False, repr=False)

    def __reduce__(self) -> tuple[object, ...]:
        return (LeaseFence, (self.fileio, self.table_root, self.token, self.ttl_ms, self.now))

    def confirm(self) -> int:
        """How many ms this run may act before it must confirm again; raises
        :class:`LeaseLostError` when the lease is not this run's, or not renewed for half
        its time. One read of the lease file (a listing and a small GET on object stores).
        Where the holder's own view is at hand, a read that fails leaves that view to
        judge; elsewhere it stops the chunk."""
        left = self.ttl_ms // 2
        if self.holder is not None:
            left = min(left, self.holder.left_ms())
        try:
            current = _read_current(self.fileio, self.table_root)
        except StorageError as exc:
            if self.holder is None:
                raise lease_lost(self.table_root, f"its lease file cannot be read: {exc}") from exc
            logger.info("could not read the lease of %s: %s", self.table_root, exc.message)
            return left
        there = current.record
        if there is None or there.token != self.token or there.state != "held":
            if there is None:
                who = "an unreadable lease file" if current.generation else "nobody"
            else:
                who = _whose(there)
            if self.holder is not None:
                with self.holder._lock:
                    self.holder.lost = self.holder.lost or who
            raise lease_lost(self.table_root, f"it was taken over by {who}")
        age = self.now() - there.renewed_ms
        left = min(left, self.ttl_ms // 2 - age)
        if left <= 0:
            raise lease_lost(
                self.table_root,
                f"it was last renewed {age // 1000} s ago, more than half its "
                f"{self.ttl_ms // 60000} min: it could not be renewed, or this run was paused",
            )
        return left

    def watch(self) -> FenceWatch:
        """A chunk's watch: confirmed now (raises :class:`LeaseLostError`)."""
        return FenceWatch(self)


class FenceWatch:
    """One chunk's fence: confirmed when made, then before each action by the local clock
    alone, and confirmed again (the lease file read) once the time the last confirmation
    gave ran out or ``FENCE_CHUNK`` actions were done."""

    def __init__(self, fence: LeaseFence) -> None:
        self.fence = fence
        self._until = 0.0
        self._count = 0
        self._confirm()

    def _confirm(self) -> None:
        left = self.fence.confirm()
        self._until = local_clock() + left / 1000
        self._count = 0

    def stop_reason(self) -> str | None:
        """None while the chunk may do its next action; else why it must stop."""
        self._count += 1
        if self._count <= FENCE_CHUNK and local_clock() < self._until:
            return None
        try:
            self._confirm()
        except LeaseLostError as exc:
            return exc.message
        self._count = 1
        return None


def _create(fileio: FileIO, table_root: str, record: LeaseRecord) -> str | None:
    """Create ``record``'s generation if absent. None when it is ours now (also when an
    earlier try of ours landed); else who created it first."""
    path = _path(table_root, record.generation)
    data = record.to_bytes()
    if fileio.conditional_create_supported(path):
        if fileio.write_if_absent(path, data):
            return None
    else:
        _warn_best_effort(path)
        if not fileio.exists(path):
            fileio.write_bytes(path, data)
    try:
        there = LeaseRecord.from_bytes(fileio.read_bytes(path), record.generation)
    except FileNotFoundError:
        # Gone again: removed as a lower generation by a holder further on. Not ours.
        return "a newer run"
    except (ValueError, KeyError, TypeError):
        return "an unreadable lease file"
    if there.token == record.token and there.state == record.state:
        return None
    return _whose(there)


def _whose(record: LeaseRecord) -> str:
    """Who holds (or last released) a lease, as a lost holder is told."""
    return record.describe() if record.state == "held" else f"the release by {record.describe()}"


_warned: set[str] = set()


def _warn_best_effort(path: str) -> None:
    scheme = path.split("://", 1)[0] if "://" in path else "file"
    if scheme not in _warned:
        _warned.add(scheme)
        logger.warning(
            "%s:// has no atomic create-if-absent: the table lease is taken best effort "
            "(two runs starting at the same moment could both take it)",
            scheme,
        )


def _remove_below(fileio: FileIO, table_root: str, generation: int) -> None:
    """Remove generations below ``generation`` (never the current one); best effort."""
    try:
        for gen, path, _ in _generations(fileio, table_root):
            if gen < generation:
                fileio.delete(path)
    except StorageError as exc:
        logger.info("could not clean old lease files of %s: %s", table_root, exc.message)


def _highest(fileio: FileIO, table_root: str) -> int:
    found = _generations(fileio, table_root)
    return found[-1][0] if found else 0


def acquire(
    fileio: FileIO,
    table_root: str,
    holder: Holder,
    *,
    wait_ms: int = 0,
    ttl_ms: int = DEFAULT_TTL_MS,
    now: Now = wall_now,
    sleep: Callable[[float], None] = time.sleep,
) -> Lease:
    """Take the table's lease for ``holder``, waiting up to ``wait_ms`` for a live holder to
    release it; a stale one is taken over. Raises :class:`LeaseHeldError`."""
    deadline = time.monotonic() + wait_ms / 1000
    token = uuid.uuid4().hex
    announced = False
    races = 0
    while True:
        current = _read_current(fileio, table_root)
        t = now()
        reason = _free_reason(current, t, holder.host)
        if reason is not None:
            record = _record(holder, token, current.generation + 1, t, ttl_ms, reason, current)
            theirs = _create(fileio, table_root, record)
            if theirs is None:
                if _highest(fileio, table_root) == record.generation:
                    if record.took_over is not None:
                        logger.warning(
                            "took over the lease of %s: %s", table_root, record.took_over
                        )
                    _remove_below(fileio, table_root, record.generation)
                    lease = Lease(fileio, table_root, record, ttl_ms=ttl_ms, now=now)
                    lease.start_renewing()
                    return lease
                # We recreated a generation a newer run had already cleaned up: not ours.
                fileio.delete(_path(table_root, record.generation))
            races += 1
            if races < _CREATE_RACES:
                continue  # another run created that generation first: read it
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise LeaseHeldError(table_root, current.record, wait_ms)
        if not announced and current.record is not None:
            announced = True
            logger.warning(
                "waiting up to %d s for the lease of %s, held by %s until %s",
                wait_ms // 1000,
                table_root,
                current.record.describe(),
                format_utc(current.record.expires_ms),
            )
        races = 0
        # Jitter: waiters of one lease should not all look at the same instant.
        sleep(min(remaining, POLL_MS / 1000 * random.uniform(0.5, 1.0)))


def _free_reason(current: _Current, now_ms: int, host: str) -> str | None:
    """Why the lease can be taken now (never taken, released, stale), or None."""
    if current.generation == 0:
        return "free"
    if current.record is None:
        # An unreadable lease file (written by hand, or a broken store): trusted as a lease
        # for one lease time from its modification, then taken over.
        since = current.unreadable_since_ms or 0
        if now_ms > since + DEFAULT_TTL_MS + SKEW_GRACE_MS:
            return "its lease file was unreadable"
        return None
    return stale_reason(current.record, now_ms, host)


def _record(
    holder: Holder,
    token: str,
    generation: int,
    now_ms: int,
    ttl_ms: int,
    reason: str,
    current: _Current,
) -> LeaseRecord:
    took_over = None
    if current.record is None and current.generation:
        took_over = f"an unreadable lease file (generation {current.generation}): {reason}"
    elif current.record is not None and current.record.state == "held":
        took_over = f"{current.record.describe()}: {reason}"
    place = identity.here(holder.host)
    return LeaseRecord(
        generation=generation,
        state="held",
        token=token,
        command=holder.command,
        run_id=holder.run_id,
        user=holder.user,
        host=holder.host,
        pid=holder.pid,
        pid_start=identity.start_ticks(holder.pid),
        acquired_ms=now_ms,
        renewed_ms=now_ms,
        expires_ms=now_ms + ttl_ms,
        took_over=took_over,
        boot_id=place.boot_id,
        pid_ns=place.pid_ns,
    )
