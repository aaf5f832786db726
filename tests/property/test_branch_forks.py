"""fast-forward over drawn fork histories (issue 33, defect 6): main commits before and after
the tag a branch is created from, the branch commits and expires its snapshots (down past
its fork or not), main may roll back, the branch's base tag may be deleted; then
``fast-forward`` with or without ``--force``, on pypaimon-written tables.

Without ``--force`` no commit of main may leave its history: either main's head afterwards
holds every row main's writers committed, or the run refused and changed nothing. With or
without it, a run that exits 0 leaves the branch's rows as main's head, every root whole and
no snapshot id missing.
"""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pyarrow as pa
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support import pypaimon_writer as pw
from support.fixtures import Run
from support.invariants import assert_no_dangling_references, tree_state

IDENT = "db.forks"


def _key(rows: list[dict[str, Any]]) -> set[tuple[Any, ...]]:
    return {(r["id"], r["v"]) for r in rows}


@settings(
    max_examples=30,
    deadline=None,
    database=None,
    derandomize=True,  # the same histories every run: a regression fails alike everywhere
    suppress_health_check=list(HealthCheck),
)
@given(
    before=st.integers(1, 3),
    main_between=st.integers(0, 2),
    branch_commits=st.integers(1, 4),
    branch_retain=st.none() | st.integers(1, 3),
    main_after=st.integers(0, 2),
    rollback_main=st.booleans(),
    drop_base_tag=st.booleans(),
    force=st.booleans(),
)
def test_fast_forward_never_drops_main_commits_without_force(
    tmp_path: Path,
    before: int,
    main_between: int,
    branch_commits: int,
    branch_retain: int | None,
    main_after: int,
    rollback_main: bool,
    drop_base_tag: bool,
    force: bool,
) -> None:
    run = Run()
    wh = tmp_path / uuid.uuid4().hex[:8]
    table = pw.create_table(wh, IDENT, pa.schema([("id", pa.int64()), ("v", pa.string())]))
    n = 0

    def commit(where: Any, who: str) -> None:
        nonlocal n
        n += 1
        pw.append(where, [{"id": n, "v": who}])

    for _ in range(before):
        commit(table, "main")
    fork = pw.latest_snapshot_id(table)
    pw.create_tag(table, "base", fork)
    branch = pw.create_branch(table, "b", "base")
    for _ in range(main_between):
        commit(pw.open_table(wh, IDENT), "main")
    for _ in range(branch_commits):
        commit(branch, "branch")
    root = pw.table_root(wh, IDENT)
    if branch_retain is not None:
        args = ("--branch", "b", "--retain-max", branch_retain, "--retain-min", 1)
        assert run("expire-snapshots", root, *args).exit_code == 0
    if rollback_main and fork is not None and fork > 1:
        pw.open_table(wh, IDENT).rollback_to(fork - 1)  # below the fork: main forgets it
    for _ in range(main_after):
        commit(pw.open_table(wh, IDENT), "main")
    if drop_base_tag:
        assert run("delete-tag", root, "base", "--branch", "b").exit_code == 0
    main_rows = _key(pw.read_rows(wh, IDENT))
    branch_rows = _key(pw.read_rows(wh, IDENT, branch="b"))
    state = tree_state(root)

    result = run("fast-forward", root, "b", *(["--force"] if force else []))
    assert result.exit_code in (0, 1), result.stdout + result.stderr
    assert "Traceback" not in result.stderr, result.stderr
    if result.exit_code == 1:
        assert tree_state(root) == state, "a refused fast-forward changed the table"
        return
    head = _key(pw.read_rows(wh, IDENT))
    assert head == branch_rows
    if not force:
        lost = main_rows - head
        assert not lost, f"main's committed rows left its head without --force: {lost}"
    assert_no_dangling_references(root)
    check = run("inspect", root, "--check")
    assert check.exit_code == 0, check.stdout + check.stderr
