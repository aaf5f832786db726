"""Every command on tables pypaimon-rust (Apache paimon-rust) writes, read back by it.

pypaimon-rust is a current Paimon implementation independent of both pypaimon and Java
Paimon 0.9: its tables carry what current Paimon writes (thin primary-key files, row
tracking, data evolution, BLOB files, global indexes, postpone buckets). After each command,
every snapshot and tag still present reads the same rows (time travel included), nothing
referenced is missing (our check and the independent reference checker), and what the
command promises is true.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from support import reference_check
from support import rust_writer as rw
from support.fixtures import Run
from support.invariants import age_tree, assert_rust_reads_intact, plant

from core.table.table import open_table

Copy = Callable[[str], tuple[rw.RustWarehouse, rw.RustTable, Path]]

TABLES = sorted(
    [
        *rw.BUILDERS,
        *(f"codec_{c}_{k}" for c in ("zstd", "snappy", "none") for k in ("append", "pk")),
    ]
)


def _intact(wh: rw.RustWarehouse, table: rw.RustTable, root: Path) -> None:
    assert_rust_reads_intact(wh, table)
    assert reference_check.missing_references(root) == []


@pytest.mark.parametrize("name", TABLES)
def test_inspect_check_and_summary(
    run: Run, rust_tables: dict[str, rw.RustTable], name: str
) -> None:
    table = rust_tables[name]
    check = run("inspect", table.root, "--check")
    assert check.exit_code == 0, check.stdout + check.stderr
    summary = run.json("inspect", table.root)
    assert summary["summary"]["snapshots"]["latest"] == table.latest
    assert reference_check.missing_references(table.root) == []


@pytest.mark.parametrize("name", TABLES)
def test_inspect_reader_rows_are_what_pypaimon_rust_reads(
    run: Run, rust_tables: dict[str, rw.RustTable], name: str
) -> None:
    table = rust_tables[name]
    live = run.json("inspect", table.root)["summary"]["live"]
    assert live["rows"] == live["records"]  # the schema-1 name, kept
    read = len(table.snapshots[table.latest])
    if table.primary_keys:
        assert live["reader_rows"] is None  # merged on read: only reading data would say
    else:
        assert live["reader_rows"] == read
    assert live["records"] >= read


@pytest.mark.parametrize("name", TABLES)
def test_expire_snapshots_keeps_what_remains_readable(run: Run, rust_copy: Copy, name: str) -> None:
    wh, table, root = rust_copy(name)
    result = run("expire-snapshots", root, "--retain-min", "1", "--retain-max", "1")
    assert result.exit_code == 0, result.stderr
    assert open_table(str(root)).snapshots.ids() == [table.latest]
    _intact(wh, table, root)


@pytest.mark.parametrize("name", TABLES)
def test_delete_orphan_files_keeps_every_referenced_file(
    run: Run, rust_copy: Copy, name: str
) -> None:
    wh, table, root = rust_copy(name)
    age_tree(root)  # every file is old enough: only references protect them now
    orphan = plant(min(root.glob("**/bucket-*")) / "data-planted-orphan-0.parquet")
    foreign = plant(root / "README.md", content=b"not Paimon's")
    result = run("delete-orphan-files", root)
    assert result.exit_code == 0, result.stderr
    assert not orphan.exists()
    assert foreign.exists()
    _intact(wh, table, root)


@pytest.mark.parametrize("name", TABLES)
def test_tags_created_and_deleted(run: Run, rust_copy: Copy, name: str) -> None:
    wh, table, root = rust_copy(name)
    assert run("create-tag", root, "ours").exit_code == 0
    assert wh.read(name, version="ours") == table.snapshots[table.latest]
    for tag in table.tags:
        result = run("delete-tag", root, tag)
        assert result.exit_code == 0, result.stderr
    assert open_table(str(root)).tags.names() == ["ours"]
    _intact(wh, table, root)


@pytest.mark.parametrize("name", TABLES)
def test_rollback_to_tag(run: Run, rust_copy: Copy, name: str) -> None:
    wh, table, root = rust_copy(name)
    tag, (tag_snapshot, rows) = min(table.tags.items())
    result = run("rollback", root, "--to-tag", tag)
    assert result.exit_code == 0, result.stderr
    assert max(open_table(str(root)).snapshots.ids()) == tag_snapshot
    if not (root / "schema" / "schema-1").exists():
        # The latest read uses the table's current schema (Paimon's rollback keeps schemas):
        # after a schema change only time travel reads the tag's rows as they were.
        assert wh.read(name) == rows
    _intact(wh, table, root)


@pytest.mark.parametrize("name", TABLES)
def test_maintain_with_the_tables_own_options(run: Run, rust_copy: Copy, name: str) -> None:
    wh, table, root = rust_copy(name)
    result = run("maintain", root)
    assert result.exit_code == 0, result.stdout + result.stderr
    _intact(wh, table, root)


def test_expire_partitions_by_value(run: Run, rust_copy: Copy) -> None:
    wh, table, root = rust_copy("append_unaware")
    result = run(
        "expire-partitions", root, "--expiration-time", "1 d", "--timestamp-formatter", "yyyy-MM-dd"
    )
    assert result.exit_code == 0, result.stderr
    assert wh.read(table.name) == []  # both 2024 partitions are long past a day
    _intact(wh, table, root)


def test_external_paths(run: Run, tmp_path: Path) -> None:
    """Built per test: its data files live outside the table root, so copies would share them."""
    external = tmp_path / "external"
    wh = rw.RustWarehouse(tmp_path / "wh")
    table = rw.external_paths(wh, external)
    assert any(external.rglob("data-*"))
    assert run("inspect", table.root, "--check").exit_code == 0
    result = run("expire-snapshots", table.root, "--retain-min", "1", "--retain-max", "1")
    assert result.exit_code == 0, result.stderr
    assert run("rollback", table.root, "--to-tag", "t1").exit_code == 0
    _intact(wh, table, table.root)


@pytest.mark.parametrize("name", TABLES)
def test_compact_manifests_keeps_every_snapshot_and_tag(
    run: Run, rust_copy: Copy, name: str
) -> None:
    wh, table, root = rust_copy(name)
    before = open_table(str(root))
    manifests = len(before.data_manifests(before.snapshots.latest()))  # type: ignore[arg-type]
    doc = run.json("compact", root, "--manifests")
    after = open_table(str(root))
    if doc["plan"]["details"]["changed"]:
        latest = after.snapshots.latest()
        assert latest is not None and latest.commit_kind == "COMPACT"
        assert latest.id == table.latest + 1
        assert len(after.data_manifests(latest)) <= manifests
        assert wh.read(name) == table.snapshots[table.latest]
    else:
        assert after.snapshots.latest_id() == table.latest
    _intact(wh, table, root)


@pytest.mark.parametrize("name", TABLES)
def test_rename_and_expire_tags(run: Run, rust_copy: Copy, name: str) -> None:
    """The tag alone holds its snapshot's files once the snapshots are expired: renamed, it
    reads the same by time travel; expired, it takes them along and the latest still reads."""
    wh, table, root = rust_copy(name)
    tag, (_tag_snapshot, rows) = min(table.tags.items())
    expired = run("expire-snapshots", root, "--retain-min", "1", "--retain-max", "1")
    assert expired.exit_code == 0, expired.stderr
    result = run("rename-tag", root, tag, "renamed")
    assert result.exit_code == 0, result.stderr
    assert open_table(str(root)).tags.names() == sorted({*table.tags, "renamed"} - {tag})
    assert wh.read(name, version="renamed") == rows
    result = run("expire-tags", root, "--older-than", "0 s")  # every tag was created before now
    assert result.exit_code == 0, result.stderr
    assert open_table(str(root)).tags.names() == []
    _intact(wh, table, root)


@pytest.mark.parametrize("name", TABLES)
def test_branch_from_tag_fast_forward_and_delete(run: Run, rust_copy: Copy, name: str) -> None:
    wh, table, root = rust_copy(name)
    tag, (tag_snapshot, rows) = min(table.tags.items())
    result = run("create-branch", root, "b", "--tag", tag)
    assert result.exit_code == 0, result.stderr
    assert rw.sort_rows(wh.sql(f"SELECT * FROM {wh.qualified(name + '$branch_b')}")) == rows
    # main's snapshots after the tag are commits the branch does not hold: --force drops them
    refused = run("fast-forward", root, "b")
    newer = open_table(str(root)).snapshots.latest_id() != tag_snapshot
    assert refused.exit_code == (1 if newer else 0), refused.stderr
    result = run("fast-forward", root, "b", "--force")
    assert result.exit_code == 0, result.stderr
    assert open_table(str(root)).snapshots.latest_id() == tag_snapshot
    assert wh.read(name) == rows  # main is the branch now, schema included
    result = run("delete-branch", root, "b")
    assert result.exit_code == 0, result.stderr
    assert not (root / "branch" / "branch-b").exists()
    _intact(wh, table, root)


@pytest.mark.parametrize("name", TABLES)
def test_quarantined_expiry_restored_then_purged(run: Run, rust_copy: Copy, name: str) -> None:
    wh, table, root = rust_copy(name)
    args = ("--retain-min", "1", "--retain-max", "1", "--quarantine")
    result = run("expire-snapshots", root, *args)
    assert result.exit_code == 0, result.stderr
    assert open_table(str(root)).snapshots.ids() == [table.latest]
    result = run("restore", root, "--last")
    assert result.exit_code == 0, result.stderr
    assert open_table(str(root)).snapshots.ids() == sorted(table.snapshots)
    _intact(wh, table, root)  # every snapshot reads again
    result = run("purge-quarantine", root)
    assert result.exit_code == 0, result.stderr
    assert not any(p.is_file() for p in (root / ".paimon-cli" / "quarantine").rglob("*"))
    _intact(wh, table, root)


@pytest.mark.parametrize("name", TABLES)
def test_long_lived_changelogs_expired(run: Run, rust_copy: Copy, name: str) -> None:
    """Snapshot expiry with changelog.num-retained.max above the snapshots' keeps each
    expired snapshot's changelog (decoupled); expire-changelogs --delete-all removes them."""
    wh, table, root = rust_copy(name)
    decoupled = (
        "snapshot.num-retained.min=1,snapshot.num-retained.max=1,changelog.num-retained.max=100"
    )
    result = run("expire-snapshots", root, "--options", decoupled)
    assert result.exit_code == 0, result.stderr
    kept = sorted((root / "changelog").glob("changelog-*"))
    assert len(kept) == table.latest - 1
    result = run("expire-changelogs", root, "--delete-all")
    assert result.exit_code == 0, result.stderr
    assert not any((root / "changelog").iterdir())
    _intact(wh, table, root)


@pytest.mark.parametrize("name", TABLES)
def test_remove_unexisting_files_after_a_lost_data_file(
    run: Run, rust_copy: Copy, name: str
) -> None:
    wh, table, root = rust_copy(name)
    before = open_table(str(root))
    lost = before.live_files(before.snapshots.latest())[0]  # type: ignore[arg-type]
    Path(before.paths.data_file_path(lost)).unlink()
    result = run("remove-unexisting-files", root)
    assert result.exit_code == 0, result.stderr
    after = open_table(str(root))
    assert after.snapshots.latest_id() == table.latest + 1
    names = {e.file.file_name for e in after.live_files(after.snapshots.latest())}  # type: ignore[arg-type]
    assert lost.file.file_name not in names
    assert run("inspect", root, "--check", "--snapshot", "latest").exit_code == 0
    rows = wh.read(name)  # readable again
    if not table.primary_keys and "data-evolution.enabled" not in after.options.table:
        # Append rows are the files' rows: exactly the lost file's are gone.
        assert len(rows) == len(table.snapshots[table.latest]) - lost.file.row_count
        assert all(r in table.snapshots[table.latest] for r in rows)
