"""The table lease against runs it cannot see and runs that pause (issue 33, defects 1
and 2), on pypaimon tables with real processes (``tests/support/held_run.py``).

The sequence of both defects: ``rollback --quarantine`` leaves the files of snapshots
21..30 as orphans in the table; ``delete-orphan-files`` holds the lease; ``restore --last``
beside it must not put those snapshots back while the cleaner can still delete their
files. Defect 1: the cleaner runs in a PID namespace of its own (a container sharing the
host name), where its pid means nothing to the restore. Defect 2: the cleaner is frozen
right before its first deletion for longer than its lease lives, the restore takes the
expired lease over, and the cleaner then resumes. Nothing may be lost: every snapshot and
tag present afterwards reads, and references only files that exist.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from support import pypaimon_writer as pw
from support.fixtures import Run
from support.held import Held
from support.invariants import (
    age_tree,
    assert_no_dangling_references,
    assert_rows_intact,
    copy_scenario,
    files_under,
)
from support.namespaces import IN_ANOTHER_PID_NAMESPACE, unshare_problem

import core.runtime.lease as lease_module
from core.io.fileio import FileIO
from core.runtime.lease import DEFAULT_TTL_MS, SKEW_GRACE_MS, read_lease
from core.table.table import open_table

RESTORED = list(range(1, 31))


def _rolled_back(
    scenarios: dict[str, pw.Scenario], tmp_path: Path, run: Run
) -> tuple[pw.Scenario, Path, Path]:
    """many_commits rolled back to snapshot 20 into the quarantine, every file 3 days old:
    the files only snapshots 21..30 used are orphans now, and ``restore --last`` can
    bring those snapshots back."""
    s, wh, root = copy_scenario(scenarios, "many_commits", tmp_path)
    done = run("rollback", root, "--to-snapshot", "20", "--quarantine")
    assert done.exit_code == 0, done.stderr
    assert open_table(str(root)).snapshots.ids() == list(range(1, 21))
    age_tree(root)
    return s, wh, root


def test_a_cleaner_in_another_pid_namespace_keeps_the_table(
    scenarios, tmp_path: Path, held: list[Held], run
) -> None:
    problem = unshare_problem()
    if problem is not None:
        pytest.skip(problem)
    s, wh, root = _rolled_back(scenarios, tmp_path, run)
    cleaner = Held("lease", root, "delete-orphan-files", root, wrap=IN_ANOTHER_PID_NAMESPACE)
    held.append(cleaner)
    cleaner.wait_for(cleaner.holds_lease)
    lease = read_lease(FileIO(), str(root))
    assert lease is not None
    if Path(f"/proc/{lease.pid}").exists():
        pytest.skip(f"pid {lease.pid} of the namespace is a live process here too")
    refused = run("restore", root, "--last")
    assert refused.exit_code == 1, refused.stdout
    assert f"{root} is busy: delete-orphan-files (run " in refused.stderr
    assert "Traceback" not in refused.stderr
    assert open_table(str(root)).snapshots.ids() == list(range(1, 21))
    code, _, err = cleaner.go_on()
    assert code == 0, err
    # The orphans are gone: the quarantined snapshots cannot come back, and restore says so.
    late = run("restore", root, "--last")
    assert late.exit_code == 1, late.stdout
    assert "Traceback" not in late.stderr
    assert open_table(str(root)).snapshots.ids() == list(range(1, 21))
    assert_no_dangling_references(root)
    assert_rows_intact(wh, s)


@pytest.mark.parametrize("paused_s", [0, 700], ids=["clocks-stood-still", "clocks-counted"])
def test_a_cleaner_paused_past_a_takeover_deletes_nothing_more(
    scenarios,
    tmp_path: Path,
    held: list[Held],
    run,
    monkeypatch: pytest.MonkeyPatch,
    paused_s: int,
) -> None:
    """Frozen as its first chunk starts (after its phase's checks and its re-read of the
    roots), for longer than the lease lives: ``paused_s`` is how far its own clocks moved
    meanwhile (0: a VM whose clocks stood still, so only the lease file can tell)."""
    s, wh, root = _rolled_back(scenarios, tmp_path, run)
    cleaner = Held("chunk", root, "delete-orphan-files", root)
    held.append(cleaner)
    cleaner.wait_for_line("held: stopped at a chunk")
    orphans = files_under(root)
    # The restore runs once the frozen cleaner's lease expired: its clock is past it.
    real = lease_module._wall_ms
    monkeypatch.setattr(
        lease_module, "_wall_ms", lambda: real() + DEFAULT_TTL_MS + SKEW_GRACE_MS + 1000
    )
    restored = run("restore", root, "--last")
    assert restored.exit_code == 0, restored.stderr
    assert "took over the lease of" in restored.stderr and "expired at" in restored.stderr
    monkeypatch.undo()
    assert open_table(str(root)).snapshots.ids() == RESTORED
    after_restore = files_under(root)
    assert orphans <= after_restore  # nothing was deleted before the freeze
    code, _, err = cleaner.go_on(str(paused_s))
    assert code == 1, err
    assert "stopped: this run no longer holds the lease of" in err
    assert "nothing more was deleted" in err
    assert "Traceback" not in err
    assert files_under(root) == after_restore
    assert open_table(str(root)).snapshots.ids() == RESTORED
    assert_no_dangling_references(root)
    assert_rows_intact(wh, s)


def test_a_resumed_journal_is_fenced_too(scenarios, tmp_path: Path) -> None:
    """A run that lost its lease finishes no journal of an interrupted run: the journal
    stays for the run that holds the lease now, and nothing of it is deleted."""
    import socket

    from core.ops.expiry.expire_snapshots import ExpireFlags, plan_expire_snapshots
    from core.ops.lifecycle import resumer_for
    from core.runtime.executors.local import LocalExecutor
    from core.runtime.journal import unfinished_journals, write_journal
    from core.runtime.lease import Holder, LeaseLostError, acquire
    from core.runtime.report import ExecutionReport
    from core.runtime.resume import finish_journals

    s, wh, root = copy_scenario(scenarios, "many_commits", tmp_path)
    fio = FileIO()
    table = open_table(str(root))
    with LocalExecutor(2) as ex:
        plan = plan_expire_snapshots(
            table, ExpireFlags(retain_min=2, retain_max=2), now_ms=4_000_000_000_000, executor=ex
        )
        write_journal(fio, str(root), plan)  # an expiry killed right after its journal
        lease = acquire(fio, str(root), Holder("maintain", "a" * 12, "u", socket.gethostname(), 1))
        later = lease_module.wall_now() + DEFAULT_TTL_MS + SKEW_GRACE_MS + 1
        taker = acquire(
            fio, str(root), Holder("restore", "b" * 12, "u", "elsewhere", 1), now=lambda: later
        )
        before = files_under(root)
        with pytest.raises(LeaseLostError, match="taken over by restore"):
            finish_journals(
                table,
                resumers=resumer_for,
                executor=ex,
                report=ExecutionReport(),
                fence=lease.fence(),
            )
        taker.release()
    assert files_under(root) == before
    assert unfinished_journals(fio, str(root))  # left for the run that holds the lease
    assert open_table(str(root)).snapshots.ids() == RESTORED
    assert_no_dangling_references(root)
    assert_rows_intact(wh, s)
