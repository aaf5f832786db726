"""JDBC catalogs (SQLite, what pypaimon writes, and a real PostgreSQL server): tables
written through pypaimon's JdbcCatalog are found by the catalog's own listing, every
command gives the same plan by name as by path, pypaimon reads them back after a real
run, and with lock.enabled a commit takes Paimon's distributed lock: a Java-style holder
makes it wait and then refuse, with nothing changed."""

from __future__ import annotations

import json
import shutil
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from support import jdbc_catalog as jc
from support.fixtures import Run
from support.golden import without_run_fields
from typer.testing import CliRunner

from paimon_cli.main import app

run = Run()

# pypaimon 2.1 opens a new JdbcCatalog (and connection) for each snapshot lookup of a table
# it got from its JDBC catalog (SnapshotLoader through the catalog loader) and never closes
# it: PostgreSQL connections then warn when collected. Ours are closed (each command is
# also run under -X dev -W error::ResourceWarning by hand, clean).
pytestmark = pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")


@dataclass
class Catalog:
    """A JDBC catalog with its tables, written by pypaimon."""

    kind: str
    warehouse: Path
    options: dict[str, str]
    yaml: Path
    connect: Callable[[], Any]  # a DB-API connection to the catalog's database
    rows: dict[str, list[dict[str, Any]]]

    def with_options(self, path: Path, **extra: str) -> Path:
        return jc.paimon_yaml(path, {**self.options, **extra})


_PG_DATABASES = iter(range(10_000))


@pytest.fixture(params=["sqlite", "postgresql"])
def catalog(request: pytest.FixtureRequest, tmp_path: Path) -> Catalog:
    warehouse = tmp_path / "wh"
    if request.param == "sqlite":
        db = tmp_path / "catalog.db"
        uri = f"jdbc:sqlite:{db}"
        opts = jc.options(uri, warehouse)

        def connect() -> Any:
            return sqlite3.connect(db)

    else:
        import psycopg

        server = request.getfixturevalue("postgres")
        # Each test its own database: catalogs of different tests never meet.
        name = f"cat{next(_PG_DATABASES)}_{abs(hash(tmp_path)) % 10**8}"
        with psycopg.connect(
            host="127.0.0.1",
            port=server.port,
            user="postgres",
            dbname="postgres",
            autocommit=True,
        ) as conn:
            conn.execute(f"CREATE DATABASE {name}")
        uri = f"jdbc:postgresql://127.0.0.1:{server.port}/{name}"
        opts = jc.options(uri, warehouse, **{"jdbc.user": "postgres"})

        def connect() -> Any:
            return psycopg.connect(host="127.0.0.1", port=server.port, user="postgres", dbname=name)

    rows = jc.write_tables(opts)
    yaml = jc.paimon_yaml(tmp_path / "paimon.yaml", opts)
    return Catalog(request.param, warehouse, opts, yaml, connect, rows)


def test_listing_is_the_catalogs(catalog: Catalog) -> None:
    # A table directory no catalog entry names is not selected by a glob.
    stray = catalog.warehouse / "db.db" / "stray" / "schema"
    stray.mkdir(parents=True)
    doc = run.json("inspect", "*.*", "--catalog", catalog.yaml)
    assert [t["identifier"] for t in doc["tables"]] == ["db.orders", "db.users"]
    summary = run.json("inspect", "db.orders", "--catalog", catalog.yaml)["summary"]
    assert summary["catalog"]["kind"] == "jdbc"
    assert summary["catalog"]["identifier"] == "db.orders"
    assert summary["location"] == str(catalog.warehouse / "db.db" / "orders")


@pytest.mark.parametrize(
    "command",
    [
        ["expire-snapshots", "--retain-max", "2", "--retain-min", "1", "--dry-run"],
        ["delete-orphan-files", "--dry-run"],
        ["expire-tags", "--dry-run"],
        ["compact", "--dry-run"],
        ["rollback", "--to-snapshot", "2", "--dry-run"],
        ["remove-unexisting-files", "--dry-run"],
        ["create-tag", "x", "--dry-run"],
        ["create-branch", "b", "--dry-run"],
        ["expire-changelogs", "--dry-run"],
        ["compact", "--manifests", "--dry-run"],
    ],
    ids=lambda c: c[0],
)
def test_same_plan_by_name_as_by_path(catalog: Catalog, command: list[str]) -> None:
    for name in ("orders", "users"):
        root = catalog.warehouse / "db.db" / name
        by_path = run.json(command[0], root, *command[1:])
        by_name = run.json(command[0], f"db.{name}", "--catalog", catalog.yaml, *command[1:])
        assert by_name["identifier"] == f"db.{name}"
        assert without_run_fields(by_name) == without_run_fields(by_path), (command[0], name)


def test_real_runs_by_name_then_pypaimon_reads_back(catalog: Catalog) -> None:
    for command in (
        ["expire-snapshots", "db.orders", "--retain-max", "2", "--retain-min", "1"],
        ["rename-tag", "db.orders", "t2", "t3"],
        ["create-branch", "db.users", "b"],
        ["rollback", "db.users", "--to-snapshot", "3"],
        ["delete-orphan-files", "db.*", "--older-than", "0 ms", "--allow-recent"],
    ):
        result = run(*command, "--catalog", catalog.yaml, "--json")
        assert result.exit_code == 0, (command, result.stderr)
    assert jc.read(catalog.options, "db.orders") == catalog.rows["orders"]
    users = jc.read(catalog.options, "db.users")
    assert users == [{"id": k, "name": "n2"} for k in range(4)]  # the 3rd commit's rows


def test_maintain_the_whole_catalog_then_pypaimon_reads_it(
    catalog: Catalog, tmp_path: Path
) -> None:
    locked = catalog.with_options(tmp_path / "locked.yaml", **{"lock.enabled": "true"})
    result = run("maintain", "*.*", "--catalog", locked, "-q")
    assert result.exit_code == 0, result.stderr
    compacted = run("compact", "db.users", "--catalog", locked, "--json")
    assert compacted.exit_code == 0, compacted.stderr
    for name, rows in catalog.rows.items():
        assert jc.read(catalog.options, f"db.{name}") == rows
    # The lock was taken and given back: its table exists, and holds no row.
    conn = catalog.connect()
    try:
        cur = conn.cursor()
        cur.execute("SELECT COUNT(*) FROM paimon_distributed_locks")
        assert cur.fetchone()[0] == 0
    finally:
        conn.close()


def _snapshots(root: Path) -> list[str]:
    return sorted(p.name for p in (root / "snapshot").iterdir())


def _manifests(root: Path) -> list[str]:
    return sorted(p.name for p in (root / "manifest").iterdir())


def test_a_held_lock_makes_the_commit_wait_then_refuse(catalog: Catalog, tmp_path: Path) -> None:
    locked = catalog.with_options(
        tmp_path / "locked.yaml",
        **{"lock.enabled": "true", "lock-acquire-timeout": "1 s", "lock-check-max-sleep": "200 ms"},
    )
    root = catalog.warehouse / "db.db" / "users"
    before = (_snapshots(root), _manifests(root))
    with jc.java_lock_holder(catalog.connect, "jdbc.db.users"):
        result = run("compact", "db.users", "--catalog", locked, "--json")
    assert result.exit_code == 1, result.stdout
    error = json.loads(result.stderr)["error"]
    assert error["kind"] == "catalog_lock"
    assert "JDBC lock jdbc.db.users" in error["message"]
    assert "nothing was committed" in error["message"]
    # Nothing changed: no snapshot, and the attempt's manifests were removed again.
    assert (_snapshots(root), _manifests(root)) == before
    assert jc.read(catalog.options, "db.users") == catalog.rows["users"]


def test_an_expired_lock_is_taken_over_as_java_does(catalog: Catalog, tmp_path: Path) -> None:
    locked = catalog.with_options(
        tmp_path / "locked.yaml", **{"lock.enabled": "true", "lock-acquire-timeout": "5 s"}
    )
    # A holder that died: its row's expiry (0 s) has passed.
    with jc.java_lock_holder(catalog.connect, "jdbc.db.users", expire_seconds=-1):
        result = run("compact", "db.users", "--catalog", locked, "--json")
        assert result.exit_code == 0, result.stderr
    assert jc.read(catalog.options, "db.users") == catalog.rows["users"]


def test_lock_off_commits_without_it(catalog: Catalog, tmp_path: Path) -> None:
    unlocked = catalog.with_options(tmp_path / "unlocked.yaml", **{"lock.enabled": "false"})
    with jc.java_lock_holder(catalog.connect, "jdbc.db.users"):
        result = run("compact", "db.users", "--catalog", unlocked, "--json")
    assert result.exit_code == 0, result.stderr


def test_unknown_table_and_unreachable_catalog(catalog: Catalog, tmp_path: Path) -> None:
    unknown = run("inspect", "db.order", "--catalog", catalog.yaml)
    assert unknown.exit_code == 1
    assert "has no table 'db.order'" in unknown.stderr
    assert "did you mean db.orders" in unknown.stderr
    if catalog.kind == "sqlite":
        bad_uri = f"jdbc:sqlite:{tmp_path / 'missing.db'}"
    else:
        bad_uri = "jdbc:postgresql://127.0.0.1:1/nowhere"
    gone = jc.paimon_yaml(tmp_path / "gone.yaml", {**catalog.options, "uri": bad_uri})
    result = run("expire-snapshots", "*.*", "--catalog", gone, "--json")
    assert result.exit_code == 1
    assert json.loads(result.stderr)["error"]["kind"] == "catalog_unreachable"
    assert not (tmp_path / "missing.db").exists()  # never created
    assert "Traceback" not in result.stderr


def test_a_path_is_refused_with_a_catalog(catalog: Catalog) -> None:
    root = catalog.warehouse / "db.db" / "orders"
    result = run("inspect", root, "--catalog", catalog.yaml)
    assert result.exit_code == 2
    assert "is not DB.TABLE" in result.stderr


def test_check_reports_drift_between_catalog_and_warehouse(catalog: Catalog) -> None:
    clean = run("inspect", "*.*", "--catalog", catalog.yaml, "--check", "--json")
    assert clean.exit_code == 0, clean.stderr
    assert json.loads(clean.stdout)["catalog_drift"] == []
    db_dir = catalog.warehouse / "db.db"
    # A table left on storage that no entry names, and an entry whose table is gone.
    shutil.copytree(db_dir / "users", db_dir / "stray")
    shutil.rmtree(db_dir / "orders")
    result = run("inspect", "*.*", "--catalog", catalog.yaml, "--check", "--json")
    assert result.exit_code == 3  # checked: damaged (drift), not "could not check"
    doc = json.loads(result.stdout)
    assert doc["catalog_drift"] == [
        {"kind": "location-gone", "identifier": "db.orders", "location": str(db_dir / "orders")},
        {"kind": "unlisted-table", "identifier": "db.stray", "location": str(db_dir / "stray")},
    ]
    human = run("inspect", "db.*", "--catalog", catalog.yaml, "--check")
    assert human.exit_code == 3
    assert "2 drifts from its warehouse" in human.stdout
    assert f"{db_dir / 'stray'} holds a table the catalog has no entry for" in human.stdout
    assert (db_dir / "stray" / "schema").exists()  # reported, never acted on


def test_tag_completion_through_the_catalog(catalog: Catalog) -> None:
    line = f"paimon delete-tag db.orders --catalog {catalog.yaml} "
    env = {
        "_PAIMON_COMPLETE": "complete_bash",
        "COMP_WORDS": line,
        "COMP_CWORD": str(len(line.split(" ")) - 1),
    }
    result = CliRunner().invoke(app, [], env=env, prog_name="paimon")
    assert result.exit_code == 0, result.output
    assert result.stdout.split() == ["t2"]
