"""The table reader against real tables: Java fixtures and pypaimon-written scenarios."""

from __future__ import annotations

from pathlib import Path

import pytest
from support import pypaimon_writer as pw
from support.fixtures import JAVA_FIXTURES, java_table_params

from core.io.fileio import is_under
from core.ops.inspection.check import check_table
from core.runtime.executors.local import LocalExecutor
from core.table.table import open_table


@pytest.mark.parametrize("root", java_table_params())
def test_java_fixture_live_rows_match_total_record_count(root: Path) -> None:
    table = open_table(str(root))
    snaps = table.snapshots.snapshots()
    for snap in snaps:
        live = table.live_files(snap)
        if snap.total_record_count is not None:
            assert sum(e.file.row_count for e in live) == snap.total_record_count, snap.id
    for branch in table.branches.branches():
        view = table.for_branch(branch)
        for snap in view.snapshots.snapshots():
            assert sum(e.file.row_count for e in view.live_files(snap)) == snap.total_record_count


def _avro_manifests(root: Path) -> bool:
    """pypaimon reads Avro manifests only."""
    return (open_table(str(root)).options.get("manifest.format") or "avro") == "avro"


@pytest.mark.parametrize("root", java_table_params(_avro_manifests))
def test_java_fixture_live_set_equals_pypaimon_scan_where_readable(root: Path) -> None:
    table = open_table(str(root))
    for snap in table.snapshots.snapshots():
        expected = pw.scan_file_names_at_root(root, snapshot_id=snap.id)
        assert {e.file.file_name for e in table.live_files(snap)} == expected


@pytest.mark.parametrize("root", java_table_params())
def test_java_fixture_check_names_exactly_the_absent_files(root: Path) -> None:
    table = open_table(str(root))
    with LocalExecutor(4) as ex:
        report = check_table(table, executor=ex)
    # The corpus was copied without the external roots it recorded (e.g. /tmp/external):
    # those, and only those, are reported.
    outside = [p for p in report.problems if not is_under(p.path, str(JAVA_FIXTURES))]
    assert [p for p in report.problems if p not in outside] == []
    for problem in outside:
        assert problem.kind == "missing"
        assert not Path(problem.path).exists()


def _scenario_views(s: pw.Scenario) -> list[tuple[str | None, int]]:
    views: list[tuple[str | None, int]] = [(None, sid) for sid in s.snapshot_ids]
    for branch, ids in s.branch_snapshot_ids.items():
        views += [(branch, sid) for sid in ids]
    return views


@pytest.mark.parametrize("name", [*pw.BUILDERS, "external_paths"])
def test_pypaimon_live_set_equals_pypaimon_scan(
    scenarios: dict[str, pw.Scenario], name: str
) -> None:
    s = scenarios[name]
    table = open_table(str(s.root))
    assert table.snapshots.ids() == s.snapshot_ids
    for branch, sid in _scenario_views(s):
        view = table.for_branch(branch) if branch else table
        snap = view.snapshots.snapshot(sid)
        live = view.live_files(snap)
        expected = pw.scan_file_names(s.warehouse, s.identifier, snapshot_id=sid, branch=branch)
        assert {e.file.file_name for e in live} == expected, (branch, sid)
        assert sum(e.file.row_count for e in live) == snap.total_record_count
        # Every live file is where our path factory says it is.
        for entry in live:
            assert Path(view.paths.data_file_path(entry)).is_file(), entry.file.file_name


@pytest.mark.parametrize("name", [*pw.BUILDERS, "external_paths"])
def test_pypaimon_tables_check_clean(scenarios: dict[str, pw.Scenario], name: str) -> None:
    table = open_table(str(scenarios[name].root))
    with LocalExecutor(4) as ex:
        report = check_table(table, executor=ex)
    assert report.problems == ()
    assert report.roots >= len(scenarios[name].snapshot_ids)


def test_tags_consumers_branches_are_read(scenarios: dict[str, pw.Scenario]) -> None:
    s = scenarios["tags_consumers_branches"]
    table = open_table(str(s.root))
    assert {t.name: t.snapshot.id for t in table.tags.tags()} == s.tag_snapshots
    assert {c.id: c.next_snapshot for c in table.consumers.consumers()} == s.consumers
    assert table.branches.branches() == sorted(s.branches)
    retained = {t.name: t.time_retained_ms for t in table.tags.tags()}
    assert retained["t4"] == 86_400_000
    assert retained["t2"] is None


def test_awkward_partition_values_decode(scenarios: dict[str, pw.Scenario]) -> None:
    s = scenarios["awkward_partitions"]
    table = open_table(str(s.root))
    live = table.live_files(table.snapshots.latest())  # type: ignore[arg-type]
    specs = {tuple(table.paths.partition_spec(e.partition).values()) for e in live}
    expected = {(r["region"], r["city"]) for r in s.expected[s.snapshot_ids[-1]]}
    assert specs == {tuple(v if v is None else str(v) for v in pair) for pair in expected}
    dirs = {table.paths.partition_path(e.partition) for e in live}
    assert any("%2F" in d for d in dirs) and any("__DEFAULT_PARTITION__" in d for d in dirs)


def test_branch_that_does_not_exist_is_a_clear_error(scenarios: dict[str, pw.Scenario]) -> None:
    from core.errors import TableNotFoundError

    with pytest.raises(TableNotFoundError, match="branch 'nope' not found"):
        open_table(str(scenarios["tags_consumers_branches"].root), branch="nope")
