"""The table lease on S3 (moto on loopback, through s3fs): taken with If-None-Match, so a
second run refuses, racing takers of one stale lease never both win, and commands leave
their lease released."""

from __future__ import annotations

import json
import threading

import pytest

from core.io.fileio import FileIO
from core.runtime.lease import Holder, LeaseHeldError, acquire, lease_dir, read_lease

pytestmark = pytest.mark.s3


def _holder(run_id: str) -> Holder:
    return Holder("expire-snapshots", run_id, "alice", "host-a", 1)


def test_a_second_run_refuses_while_the_lease_is_held(s3_server, s3_prefix) -> None:
    fio = FileIO(s3_server.fs_options)
    root = f"s3://{s3_server.bucket}/{s3_prefix}/leased"
    lease = acquire(fio, root, _holder("aaaaaaaaaaaa"))
    with pytest.raises(LeaseHeldError, match="expire-snapshots \\(run aaaaaaaaaaaa"):
        acquire(fio, root, _holder("bbbbbbbbbbbb"))
    assert lease.renew()
    lease.release()
    released = read_lease(fio, root)
    assert released is not None and released.state == "released"
    acquire(fio, root, _holder("bbbbbbbbbbbb")).release()


def test_racing_takers_of_a_stale_lease_never_both_win(s3_server, s3_prefix) -> None:
    fio = FileIO(s3_server.fs_options)
    root = f"s3://{s3_server.bucket}/{s3_prefix}/stale"
    stale = {
        "format": 1,
        "state": "held",
        "token": "t" * 32,
        "command": "maintain",
        "run_id": "cccccccccccc",
        "user": "bob",
        "host": "gone-host",
        "pid": 7,
        "pid_start": None,
        "acquired_ms": 1000,
        "renewed_ms": 1000,
        "expires_ms": 2000,
        "took_over": None,
    }
    fio.write_bytes(f"{lease_dir(root)}/{3:020d}.json", json.dumps(stale).encode())
    takers = 4
    barrier = threading.Barrier(takers)
    outcomes: list[str] = []

    def take(i: int) -> None:
        barrier.wait()
        try:
            lease = acquire(FileIO(s3_server.fs_options), root, _holder(f"{i:012d}"))
        except LeaseHeldError:
            outcomes.append("refused")
            return
        outcomes.append(f"won {lease.record.generation}")

    threads = [threading.Thread(target=take, args=(i,)) for i in range(takers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(outcomes) == ["refused"] * (takers - 1) + ["won 4"]


def test_commands_on_s3_leave_their_lease_released(run, s3_server, s3_prefix, scenarios) -> None:
    uri = s3_server.upload(scenarios["many_commits"].root, f"{s3_prefix}/many_commits")
    opts = s3_server.cli_options()
    first = run("expire-snapshots", uri, "--retain-max", "5", "--retain-min", "1", *opts)
    assert first.exit_code == 0, first.stderr
    fio = FileIO(s3_server.fs_options)
    assert read_lease(fio, uri) is None  # the table's first lease leaves nothing behind
    held = acquire(fio, uri, Holder("maintain", "dddddddddddd", "bob", "host-b", 2))
    busy = run("expire-snapshots", uri, "--retain-max", "2", "--retain-min", "1", *opts)
    assert busy.exit_code == 1
    assert "is busy: maintain (run dddddddddddd, user bob on host host-b, pid 2)" in busy.stderr
    held.release()
    again = run("expire-snapshots", uri, "--retain-max", "2", "--retain-min", "1", *opts)
    assert again.exit_code == 0, again.stderr
