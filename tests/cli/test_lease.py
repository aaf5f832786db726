"""The table lease with real concurrent processes: two ``maintain`` runs, or a ``maintain``
and an on-call ``expire-snapshots``, never interleave on a table; a SIGKILLed holder's
lease is taken over and its journal finished. pypaimon tables.

The holder runs through ``tests/support/held_run.py``: a real ``paimon`` process that stops
while it holds the lease until the test writes a line to its stdin. Where it stands is read
from the files it leaves (the lease file, its journal), never from sleeps.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from support.held import Held
from support.invariants import assert_no_dangling_references, assert_rows_intact, copy_scenario

from core.io.fileio import FileIO
from core.runtime.journal import unfinished_journals
from core.runtime.lease import read_lease
from core.runtime.runs import read_records
from core.table.table import open_table

EXPIRE = ("--retain-max", "2", "--retain-min", "1")


def _paimon(*args: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "paimon_cli", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def test_expire_snapshots_refuses_while_maintain_holds_the_table(
    scenarios, tmp_path: Path, held: list[Held]
) -> None:
    s, wh, root = copy_scenario(scenarios, "many_commits", tmp_path)
    before = open_table(str(root)).snapshots.ids()
    first = Held("lease", root, "maintain", root)
    held.append(first)
    first.wait_for(first.holds_lease)
    oncall = _paimon("expire-snapshots", root, *EXPIRE)
    assert oncall.returncode == 1, oncall.stdout
    assert f"{root} is busy: maintain (run " in oncall.stderr
    assert f"pid {first.proc.pid}) holds its lease until " in oncall.stderr
    assert "--wait-lease" in oncall.stderr
    assert "Traceback" not in oncall.stderr
    assert open_table(str(root)).snapshots.ids() == before  # it changed nothing
    code, _, err = first.go_on()
    assert code == 0, err
    # The lease is free again: the on-call run goes ahead.
    again = _paimon("expire-snapshots", root, *EXPIRE, "--json")
    assert again.returncode == 0, again.stderr
    assert open_table(str(root)).snapshots.ids() == before[-2:]
    assert_no_dangling_references(root)
    assert_rows_intact(wh, s)


def test_a_second_maintain_skips_the_held_table_and_maintains_the_others(
    scenarios, tmp_path: Path, held: list[Held]
) -> None:
    _, wh, busy = copy_scenario(scenarios, "many_commits", tmp_path)
    _, _, other = copy_scenario(scenarios, "append_partitioned", tmp_path)
    first = Held("lease", busy, "maintain", busy)
    held.append(first)
    first.wait_for(first.holds_lease)
    second = _paimon("maintain", "*.*", "--warehouse", wh, "--json")
    assert second.returncode == 0, second.stderr
    doc = json.loads(second.stdout)
    assert [t["table"] for t in doc["tables"]] == [str(other)]
    assert doc["tables"][0]["status"] == "ok"
    (skipped,) = doc["skipped"]
    assert skipped["table"] == str(busy)
    # The table is named beside the reason (and once, db.table, in the warning).
    assert skipped["reason"].startswith("busy: maintain (run ")
    assert "warning: db.many_commits: skipped, busy: maintain (run " in second.stderr
    assert doc["summary"] == {"tables": 2, "maintained": 1, "failed": 0, "skipped": 1}
    # The busy table got no run record from the second run.
    fio = FileIO()
    assert read_records(fio, str(busy)) == []
    code, _, err = first.go_on()
    assert code == 0, err
    (record,) = read_records(fio, str(busy))
    assert record["command"] == "maintain" and record["status"] == "ok"


@pytest.mark.parametrize(
    ("holding", "waiting"),
    [
        (("expire-snapshots", *EXPIRE), ("maintain",)),
        (("maintain",), ("expire-snapshots", *EXPIRE)),
    ],
    ids=["maintain-waits", "expire-snapshots-waits"],
)
def test_a_run_waits_for_the_lease_with_wait_lease(
    scenarios, tmp_path: Path, held: list[Held], holding: tuple[str, ...], waiting: tuple[str, ...]
) -> None:
    _, _, root = copy_scenario(scenarios, "many_commits", tmp_path)
    first = Held("lease", root, holding[0], root, *holding[1:])
    held.append(first)
    first.wait_for(first.holds_lease)
    second = subprocess.Popen(
        [sys.executable, "-m", "paimon_cli", waiting[0], str(root), *waiting[1:]]
        + ["--wait-lease", "5m"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert second.stderr is not None
    line = second.stderr.readline()  # it says it waits before it waits
    if waiting[0] == "maintain":  # after its first line (run id, start)
        assert line.startswith("paimon maintain run "), line
        line = second.stderr.readline()
        assert line.startswith("warning: db.many_commits: waiting up to "), line
    assert "waiting up to 300 s for the lease of" in line
    assert f"held by {holding[0]} (run " in line
    code, _, err = first.go_on()
    assert code == 0, err
    _, err = second.communicate(timeout=300)
    assert second.returncode == 0, err
    records = read_records(FileIO(), str(root))
    assert [r["command"] for r in records] == [holding[0], waiting[0]]
    assert all(r["status"] == "ok" for r in records)


def test_wait_lease_takes_a_duration(run, tmp_path: Path) -> None:
    result = run("expire-snapshots", tmp_path, "--wait-lease", "soon")
    assert result.exit_code == 2
    assert "--wait-lease" in result.stderr


def test_a_sigkilled_holders_lease_is_taken_over_and_its_journal_finished(
    scenarios, tmp_path: Path, held: list[Held]
) -> None:
    s, wh, root = copy_scenario(scenarios, "many_commits", tmp_path)
    before = open_table(str(root)).snapshots.ids()
    fio = FileIO()
    crashed = Held("phase", root, "expire-snapshots", root, *EXPIRE)
    held.append(crashed)
    crashed.wait_for(lambda: unfinished_journals(fio, str(root)))
    assert crashed.holds_lease()
    crashed.kill()
    lease = read_lease(fio, str(root))
    assert lease is not None and lease.state == "held"  # a killed run releases nothing
    after = _paimon("expire-snapshots", root, *EXPIRE, "--json")
    assert after.returncode == 0, after.stderr
    assert "took over the lease of" in after.stderr
    assert f"pid {crashed.proc.pid}): its process {crashed.proc.pid} on this host" in after.stderr
    doc = json.loads(after.stdout)
    assert doc["report"]["resumed_journals"]  # the killed run's journal, finished
    assert not unfinished_journals(fio, str(root))
    (record,) = read_records(fio, str(root))
    assert record["command"] == "expire-snapshots"
    assert "is gone" in record["lease_took_over"]
    assert read_lease(fio, str(root)).state == "released"  # type: ignore[union-attr]
    assert open_table(str(root)).snapshots.ids() == before[-2:]
    assert_no_dangling_references(root)
    assert_rows_intact(wh, s)
    assert os.path.isdir(root / ".paimon-cli" / "lease")
