"""The table lease (core.runtime.lease): one changing run per table; stale leases (expired,
or a same-host holder whose process is gone) are taken over by exactly one taker; a holder
that lost its lease learns it and stops at its next safe point."""

from __future__ import annotations

import json
import multiprocessing
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from support.namespaces import IN_ANOTHER_PID_NAMESPACE, unshare_problem

import core.runtime.lease as lease_module
from core.io.fileio import FileIO
from core.runtime import process_identity as identity
from core.runtime.lease import (
    DEFAULT_TTL_MS,
    SKEW_GRACE_MS,
    Holder,
    LeaseHeldError,
    LeaseLostError,
    LeaseRecord,
    acquire,
    lease_dir,
    read_lease,
)

HOST = socket.gethostname()
HERE = identity.here(HOST)
# A holder recorded on this host, boot and PID namespace: the only kind judged gone here.
SAME_PLACE = {"host": HOST, "boot_id": HERE.boot_id, "pid_ns": HERE.pid_ns}
needs_proc = pytest.mark.skipif(
    not HERE.known, reason="needs Linux /proc (boot id and PID namespace) to judge a holder"
)


def _holder(command: str = "expire-snapshots", run_id: str = "aaaaaaaaaaaa") -> Holder:
    return Holder(command, run_id, "alice", HOST, os.getpid())


def _files(root: Path) -> list[str]:
    return sorted(p.name for p in Path(lease_dir(str(root))).glob("*.json"))


def _plant(root: Path, generation: int, **fields: object) -> None:
    """A lease file another run left: held by default, by a process on another host."""
    doc: dict[str, object] = {
        "format": 1,
        "state": "held",
        "token": "t" * 32,
        "command": "maintain",
        "run_id": "bbbbbbbbbbbb",
        "user": "bob",
        "host": "elsewhere",
        "pid": 4242,
        "pid_start": None,
        "acquired_ms": 1_000,
        "renewed_ms": 1_000,
        "expires_ms": 4_102_444_800_000,  # 2100
        "took_over": None,
    }
    doc.update(fields)
    directory = Path(lease_dir(str(root)))
    directory.mkdir(parents=True, exist_ok=True)
    (directory / f"{generation:020d}.json").write_text(json.dumps(doc))


def test_one_holder_at_a_time_and_release_frees_it(tmp_path: Path) -> None:
    fio = FileIO()
    lease = acquire(fio, str(tmp_path), _holder())
    held = read_lease(fio, str(tmp_path))
    assert held is not None and held.state == "held" and held.pid == os.getpid()
    with pytest.raises(LeaseHeldError) as refused:
        acquire(fio, str(tmp_path), _holder("maintain", "cccccccccccc"))
    message = refused.value.message
    assert "is busy: expire-snapshots (run aaaaaaaaaaaa, user alice on host" in message
    assert f"pid {os.getpid()}) holds its lease until " in message
    lease.release()
    # The table's first lease, released while fresh, leaves nothing behind.
    assert not (tmp_path / ".paimon-cli").exists()
    again = acquire(fio, str(tmp_path), _holder("maintain", "cccccccccccc"))
    assert again.took_over is None and again.record.generation == 1
    assert again.renew()  # a long run: its lease moved on, so it is released by a marker
    again.release()
    released = read_lease(fio, str(tmp_path))
    assert released is not None and released.state == "released"
    assert released.generation == 3 and released.run_id == "cccccccccccc"
    assert _files(tmp_path) == [f"{3:020d}.json"]  # only the newest generation stays
    third = acquire(fio, str(tmp_path), _holder("maintain", "dddddddddddd"))
    assert third.took_over is None  # a released lease is simply taken
    third.release()
    assert _files(tmp_path) == [f"{5:020d}.json"]


def test_an_expired_lease_of_another_host_is_taken_over(tmp_path: Path) -> None:
    _plant(tmp_path, 7, expires_ms=2_000)
    lease = acquire(FileIO(), str(tmp_path), _holder())
    assert lease.record.generation == 8
    assert lease.took_over is not None
    assert "maintain (run bbbbbbbbbbbb, user bob on host elsewhere, pid 4242)" in lease.took_over
    assert "expired at" in lease.took_over
    lease.release()
    assert _files(tmp_path) == [f"{9:020d}.json"]


def test_a_live_lease_of_another_host_is_respected_until_it_expires(tmp_path: Path) -> None:
    _plant(tmp_path, 3)
    with pytest.raises(LeaseHeldError, match="until 2100-01-01"):
        acquire(FileIO(), str(tmp_path), _holder())
    assert _files(tmp_path) == [f"{3:020d}.json"]  # a refusal leaves nothing


@needs_proc
def test_a_same_host_holder_whose_process_is_gone_is_taken_over_at_once(tmp_path: Path) -> None:
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    _plant(tmp_path, 1, **SAME_PLACE, pid=gone.pid)
    lease = acquire(FileIO(), str(tmp_path), _holder())
    assert lease.took_over is not None
    assert f"its process {gone.pid} on this host" in lease.took_over
    lease.release()


def test_a_same_host_holder_that_is_alive_is_respected(tmp_path: Path) -> None:
    with subprocess.Popen(
        [sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE
    ) as alive:
        _plant(tmp_path, 1, **SAME_PLACE, pid=alive.pid)
        with pytest.raises(LeaseHeldError):
            acquire(FileIO(), str(tmp_path), _holder())
        alive.communicate(b"")


@needs_proc
def test_a_reused_pid_does_not_keep_a_dead_holders_lease(tmp_path: Path) -> None:
    """Same pid, other process start time: the holder is gone (its pid was reused)."""
    _plant(tmp_path, 1, **SAME_PLACE, pid=os.getppid(), pid_start=1)
    lease = acquire(FileIO(), str(tmp_path), _holder())
    assert lease.took_over is not None and "is gone" in lease.took_over
    lease.release()


@needs_proc
def test_the_lease_records_where_its_holder_runs(tmp_path: Path) -> None:
    lease = acquire(FileIO(), str(tmp_path), _holder())
    (path,) = Path(lease_dir(str(tmp_path))).glob("*.json")
    doc = json.loads(path.read_text())
    assert doc["format"] == 2
    assert (doc["boot_id"], doc["pid_ns"]) == (HERE.boot_id, HERE.pid_ns)
    assert doc["pid_start"] == identity.start_ticks(os.getpid())
    lease.release()


@pytest.mark.parametrize(
    "place",
    [
        {"pid_ns": (HERE.pid_ns or 0) + 1},  # another container sharing the host name
        {"boot_id": "00000000-0000-0000-0000-000000000000"},  # a clone, or another boot
        {"boot_id": None, "pid_ns": None},  # a lease of an older paimon-cli
        {"pid_ns": None},  # a holder that could not tell its namespace
    ],
    ids=["other-pid-namespace", "other-boot", "older-format", "unknown-namespace"],
)
def test_a_holder_this_run_cannot_see_is_waited_out(
    tmp_path: Path, place: dict[str, object]
) -> None:
    """Issue 33 defect 1: a same-host holder whose pid is gone *here* may be alive in
    another PID namespace or boot; it keeps the table until its lease expires."""
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    fields = {**SAME_PLACE, **place}
    if "boot_id" in place and place["boot_id"] is None:
        del fields["boot_id"], fields["pid_ns"]  # an older lease file has no such keys
    _plant(tmp_path, 4, **fields, pid=gone.pid)
    with pytest.raises(LeaseHeldError, match="holds its lease until 2100"):
        acquire(FileIO(), str(tmp_path), _holder())
    assert _files(tmp_path) == [f"{4:020d}.json"]


def _race(
    root: str, barrier: multiprocessing.synchronize.Barrier, results: multiprocessing.Queue
) -> None:  # type: ignore[type-arg]
    holder = Holder("expire-snapshots", f"{os.getpid():012x}"[-12:], "racer", HOST, os.getpid())
    barrier.wait()
    try:
        lease = acquire(FileIO(), root, holder)
    except LeaseHeldError:
        results.put("refused")
        return
    results.put(f"won {lease.record.generation}")
    barrier.wait()  # hold it until every racer has tried


def test_of_many_takers_of_one_stale_lease_exactly_one_wins(tmp_path: Path) -> None:
    _plant(tmp_path, 41, expires_ms=2_000)
    racers = 6
    ctx = multiprocessing.get_context("fork")
    barrier = ctx.Barrier(racers)
    results: multiprocessing.Queue = ctx.Queue()  # type: ignore[type-arg]
    procs = [
        ctx.Process(target=_race, args=(str(tmp_path), barrier, results)) for _ in range(racers)
    ]
    for p in procs:
        p.start()
    outcomes = sorted(results.get(timeout=60) for _ in range(racers))
    barrier.abort()  # the winner waits for nobody now
    for p in procs:
        p.join(timeout=60)
    assert outcomes == ["refused"] * (racers - 1) + ["won 42"]


def test_a_waiting_run_gets_the_lease_once_its_holder_releases_it(tmp_path: Path) -> None:
    fio = FileIO()
    first = acquire(fio, str(tmp_path), _holder())
    naps: list[float] = []

    def nap(seconds: float) -> None:  # the holder finishes while the other run waits
        naps.append(seconds)
        first.release()

    second = acquire(
        fio, str(tmp_path), _holder("maintain", "dddddddddddd"), wait_ms=60_000, sleep=nap
    )
    assert len(naps) == 1
    assert second.record.run_id == "dddddddddddd"
    second.release()


def test_waiting_ends_with_a_refusal_naming_the_wait(tmp_path: Path) -> None:
    _plant(tmp_path, 1)
    with pytest.raises(LeaseHeldError, match=r"\(waited 1 ms\)"):
        acquire(FileIO(), str(tmp_path), _holder(), wait_ms=1, sleep=lambda _s: None)


def test_renewal_extends_the_lease_and_a_taken_over_holder_stops(tmp_path: Path) -> None:
    fio = FileIO()
    clock = [1_000_000]
    lease = acquire(fio, str(tmp_path), _holder(), now=lambda: clock[0])
    assert lease.record.expires_ms == 1_000_000 + DEFAULT_TTL_MS
    clock[0] += DEFAULT_TTL_MS // 4
    assert lease.renew()
    assert lease.record.expires_ms == clock[0] + DEFAULT_TTL_MS
    assert read_lease(fio, str(tmp_path)) == lease.record
    lease.check()
    # The holder stalls past its expiry; another run takes the lease over meanwhile.
    clock[0] += 2 * DEFAULT_TTL_MS
    taker = acquire(
        fio,
        str(tmp_path),
        Holder("maintain", "eeeeeeeeeeee", "bob", "elsewhere", 1),
        now=lambda: clock[0],
    )
    with pytest.raises(LeaseLostError):
        lease.check()  # at its next safe point the stalled run stops, before renewing
    assert not lease.renew()
    with pytest.raises(LeaseLostError, match="taken over by maintain \\(run eeeeeeeeeeee"):
        lease.check()
    lease.release()  # nothing to release: the lease is the taker's
    assert read_lease(fio, str(tmp_path)) == taker.record
    taker.release()


def test_a_run_that_cannot_renew_stops_before_its_lease_runs_out(tmp_path: Path) -> None:
    clock = [1_000_000]
    lease = acquire(FileIO(), str(tmp_path), _holder(), now=lambda: clock[0])
    clock[0] += DEFAULT_TTL_MS // 2 - 1
    lease.check()
    clock[0] += 1
    with pytest.raises(LeaseLostError, match="could not be renewed"):
        lease.check()
    lease.release()


def test_a_stalled_holder_that_recreates_a_released_generation_has_lost(tmp_path: Path) -> None:
    """A holder paused past a takeover renews after the taker released: the taker's
    generation was cleaned up, so creating it again succeeds; the generation above it
    (the release) says the lease is not ours, and the run stops."""
    fio = FileIO()
    clock = [1_000_000]
    lease = acquire(fio, str(tmp_path), _holder(), now=lambda: clock[0])
    assert lease.renew()  # generation 2
    clock[0] += 2 * DEFAULT_TTL_MS
    taker = acquire(
        fio,
        str(tmp_path),
        Holder("restore", "eeeeeeeeeeee", "bob", "elsewhere", 1),
        now=lambda: clock[0],
    )
    taker.release()  # generation 4 (released); 3 is removed
    assert _files(tmp_path) == [f"{4:020d}.json"]
    clock[0] = 1_000_000 + DEFAULT_TTL_MS // 8  # the paused run's view of time
    assert not lease.renew()
    assert _files(tmp_path) == [f"{4:020d}.json"]  # its recreated generation 3 went again
    with pytest.raises(LeaseLostError, match="taken over by the release by restore"):
        lease.check()
    third = acquire(fio, str(tmp_path), _holder("maintain", "ffffffffffff"))
    assert third.record.generation == 5
    third.release()


def test_the_fence_reads_the_lease_file_and_stops_a_chunk_taken_over(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 33 defect 2: a chunk confirms the lease file before it acts, and again every
    FENCE_CHUNK actions; a takeover the holder's own clocks cannot see (a VM whose clocks
    stood still while it was suspended) stops it there."""
    fio = FileIO()
    lease = acquire(fio, str(tmp_path), _holder())
    fence = lease.fence()
    watch = fence.watch()
    assert watch.stop_reason() is None
    monkeypatch.setattr(lease_module, "FENCE_CHUNK", 2)
    later = lease_module.wall_now() + DEFAULT_TTL_MS + SKEW_GRACE_MS + 1
    taker = acquire(
        fio,
        str(tmp_path),
        Holder("restore", "eeeeeeeeeeee", "bob", "elsewhere", 1),
        now=lambda: later,
    )
    assert watch.stop_reason() is None  # the second action: no read yet
    reason = watch.stop_reason()
    assert reason is not None and "taken over by restore (run eeeeeeeeeeee" in reason
    assert "nothing more was deleted" in reason
    with pytest.raises(LeaseLostError, match="taken over by restore"):
        fence.watch()
    # A copy on another machine (a Spark executor) judges by the lease file alone.
    import pickle

    remote = pickle.loads(pickle.dumps(fence))
    assert remote.holder is None
    with pytest.raises(LeaseLostError, match="taken over by restore"):
        remote.confirm()
    assert not lease.renew()  # the fence told the lease it is lost
    taker.release()


def test_a_chunk_stops_once_its_clocks_say_the_run_was_paused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """SIGSTOP for longer than half the lease: the local clock (which never jumps) says
    so before the next action, even when nobody took the lease over yet."""
    lease = acquire(FileIO(), str(tmp_path), _holder())
    watch = lease.fence().watch()
    real = lease_module._local_s
    monkeypatch.setattr(lease_module, "_local_s", lambda: real() + DEFAULT_TTL_MS / 2000)
    reason = watch.stop_reason()
    assert reason is not None and "could not be renewed, or this run was paused" in reason
    with pytest.raises(LeaseLostError, match="this run was paused"):
        lease.check()
    monkeypatch.setattr(lease_module, "_local_s", real)
    lease.release()


def test_a_remote_chunk_stops_when_the_holder_stopped_renewing(tmp_path: Path) -> None:
    clock = [1_000_000]
    lease = acquire(FileIO(), str(tmp_path), _holder(), now=lambda: clock[0])
    fence = lease_module.LeaseFence(
        FileIO(), str(tmp_path), lease.record.token, DEFAULT_TTL_MS, lambda: clock[0]
    )
    assert fence.confirm() == DEFAULT_TTL_MS // 2
    clock[0] += DEFAULT_TTL_MS // 2
    with pytest.raises(LeaseLostError, match="could not be renewed"):
        fence.confirm()
    lease.release()


def test_a_taker_that_recreates_a_cleaned_up_generation_backs_off(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A run that read generation 2 long ago creates 3, which a newer holder (at 9) had
    removed: the listing right after shows 9, so it removes its 3 and refuses."""
    import core.runtime.lease as lease_module

    _plant(tmp_path, 9)
    real = lease_module._read_current
    stale_view = lease_module._Current(
        2,
        LeaseRecord.from_bytes(
            json.dumps(
                {
                    "state": "released",
                    "token": "x",
                    "command": "c",
                    "run_id": "r",
                    "user": "u",
                    "host": "h",
                    "pid": 1,
                    "acquired_ms": 1,
                    "renewed_ms": 1,
                    "expires_ms": 1,
                }
            ).encode(),
            2,
        ),
    )
    views = iter([stale_view])
    monkeypatch.setattr(lease_module, "_read_current", lambda f, r: next(views, None) or real(f, r))
    with pytest.raises(LeaseHeldError, match="maintain \\(run bbbbbbbbbbbb"):
        acquire(FileIO(), str(tmp_path), _holder())
    assert _files(tmp_path) == [f"{9:020d}.json"]


class _NoConditionalCreate(FileIO):
    """A store like GCS or Azure through fsspec: no atomic create-if-absent."""

    def conditional_create_supported(self, path: str) -> bool:
        return False


def test_stores_without_conditional_create_take_the_lease_best_effort(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    fio = _NoConditionalCreate()
    lease = acquire(fio, str(tmp_path), _holder())
    assert "taken best effort" in caplog.text
    with pytest.raises(LeaseHeldError):
        acquire(fio, str(tmp_path), _holder("maintain", "ffffffffffff"))
    lease.release()
    acquire(fio, str(tmp_path), _holder("maintain", "ffffffffffff")).release()


def test_an_unreadable_lease_file_is_trusted_for_one_lease_time(tmp_path: Path) -> None:
    directory = Path(lease_dir(str(tmp_path)))
    directory.mkdir(parents=True)
    broken = directory / f"{5:020d}.json"
    broken.write_text("{not json")
    with pytest.raises(LeaseHeldError, match="an unreadable lease file holds"):
        acquire(FileIO(), str(tmp_path), _holder())
    os.utime(broken, (0, 0))
    lease = acquire(FileIO(), str(tmp_path), _holder())
    assert lease.took_over is not None and "unreadable" in lease.took_over
    lease.release()


@needs_proc
def test_a_live_holder_in_another_pid_namespace_keeps_the_lease(tmp_path: Path) -> None:
    """Issue 33 defect 1, with a real second PID namespace: the holder's pid is gone in
    ours, but it is alive in its own, so the lease is not taken over."""
    problem = unshare_problem()
    if problem is not None:
        pytest.skip(problem)
    script = (
        "import os, socket, sys; from core.io.fileio import FileIO; "
        "from core.runtime.lease import Holder, acquire; "
        f"lease = acquire(FileIO(), {str(tmp_path)!r}, "
        "Holder('delete-orphan-files', 'nsnsnsnsnsns', 'carol', socket.gethostname(), "
        "os.getpid())); print(lease.record.pid, flush=True); sys.stdin.readline(); "
        "lease.release()"
    )
    with subprocess.Popen(
        [*IN_ANOTHER_PID_NAMESPACE, sys.executable, "-c", script],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    ) as inner:
        assert inner.stdout is not None
        pid = int(inner.stdout.readline())
        if Path(f"/proc/{pid}").exists():
            inner.communicate("\n", timeout=60)
            pytest.skip(f"pid {pid} of the namespace is a live process here too")
        held = read_lease(FileIO(), str(tmp_path))
        assert held is not None and held.host == HOST and held.pid_ns != HERE.pid_ns
        with pytest.raises(LeaseHeldError, match="delete-orphan-files \\(run nsnsnsnsnsns"):
            acquire(FileIO(), str(tmp_path), _holder())
        inner.communicate("\n", timeout=60)
        assert inner.returncode == 0
    acquire(FileIO(), str(tmp_path), _holder()).release()
