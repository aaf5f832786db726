"""Consumer expiry (consumer.expiration-time): idle consumer files go, live ones stay."""

from __future__ import annotations

import os
import time
from pathlib import Path

from support.invariants import DAY, age, copy_scenario
from support.lifecycle import apply

from core.ops.expiry.consumer_expire import plan_consumer_expire, recheck
from core.ops.expiry.expire_snapshots import ExpireFlags, plan_expire_snapshots
from core.runtime.executors.local import LocalExecutor
from core.table.table import open_table

EXPIRE_1D = {"consumer.expiration-time": "1 d"}


def consumer_file(root: Path, cid: str) -> Path:
    return root / "consumer" / f"consumer-{cid}"


def test_idle_consumers_are_deleted_and_stop_pinning_snapshots(scenarios, tmp_path: Path) -> None:
    _, _, root = copy_scenario(scenarios, "tags_consumers_branches", tmp_path)
    age(consumer_file(root, "slow"), days=2)
    table = open_table(str(root), dynamic_options=EXPIRE_1D)
    now = int(time.time() * 1000)
    plan = plan_consumer_expire(table, now_ms=now)
    assert [a.path for a in plan.phases[0].actions] == [str(consumer_file(root, "slow"))]
    assert {c.id: c.expired for c in plan.details.consumers} == {
        "fast": False,
        "slow": True,
    }
    with LocalExecutor(1) as ex:
        report = apply(table, plan, recheck=recheck, executor=ex, journal=False)
    assert report.phases[0].done == 1
    assert not consumer_file(root, "slow").exists()
    assert consumer_file(root, "fast").exists()
    # The branch's consumer is the branch's business (Paimon expires per branch).
    assert (root / "branch" / "branch-b1" / "consumer" / "consumer-on-branch").exists()
    with LocalExecutor(1) as ex:
        expiry = plan_expire_snapshots(
            open_table(str(root)),
            ExpireFlags(retain_min=1, older_than_ms=now),
            now_ms=now,
            executor=ex,
        )
    assert expiry.details.blocking_consumer == "fast"


def test_a_consumer_written_after_planning_is_kept(scenarios, tmp_path: Path) -> None:
    _, _, root = copy_scenario(scenarios, "tags_consumers_branches", tmp_path)
    age(consumer_file(root, "slow"), days=2)
    table = open_table(str(root), dynamic_options=EXPIRE_1D)
    plan = plan_consumer_expire(table, now_ms=int(time.time() * 1000))
    os.utime(consumer_file(root, "slow"))  # the reader checkpointed meanwhile: a heartbeat
    with LocalExecutor(1) as ex:
        apply(table, plan, recheck=recheck, executor=ex, journal=False)
    assert consumer_file(root, "slow").exists()


def test_without_the_option_nothing_expires(scenarios, tmp_path: Path) -> None:
    _, _, root = copy_scenario(scenarios, "tags_consumers_branches", tmp_path)
    age(consumer_file(root, "slow"), days=400)
    plan = plan_consumer_expire(open_table(str(root)), now_ms=int(time.time() * 1000))
    assert plan.empty
    assert plan.details.cutoff_ms is None


def test_cutoff_is_strict(scenarios, tmp_path: Path) -> None:
    _, _, root = copy_scenario(scenarios, "tags_consumers_branches", tmp_path)
    mtime_ms = consumer_file(root, "fast").stat().st_mtime_ns // 1_000_000
    table = open_table(str(root), dynamic_options=EXPIRE_1D)
    at_cutoff = plan_consumer_expire(table, now_ms=mtime_ms + DAY * 1000)
    assert "fast" not in [a.path.rsplit("-", 1)[1] for a in at_cutoff.phases[0].actions]
    past = plan_consumer_expire(table, now_ms=mtime_ms + DAY * 1000 + 1)
    assert str(consumer_file(root, "fast")) in [a.path for a in past.phases[0].actions]


def test_a_consumer_deletion_has_the_file_size_and_a_time_in_the_table_zone(
    scenarios, tmp_path: Path
) -> None:
    import datetime as dt

    _, _, root = copy_scenario(scenarios, "tags_consumers_branches", tmp_path)
    age(consumer_file(root, "slow"), days=2)
    table = open_table(str(root), dynamic_options=EXPIRE_1D)
    zone = dt.timezone(dt.timedelta(hours=5, minutes=30))
    plan = plan_consumer_expire(table, now_ms=int(time.time() * 1000), zone=zone)
    (action,) = plan.phases[0].actions
    assert action.size == consumer_file(root, "slow").stat().st_size > 0
    assert "+05:30, before the cut-off" in action.reason
