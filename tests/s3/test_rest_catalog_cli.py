"""Every command by name through a REST catalog (``--catalog rest.yaml``, pypaimon's
paimon.yaml keys), on tables pypaimon's RESTCatalog wrote to moto, with storage reached only
with the credentials the server vends; commits go through the server's commit endpoint, and
pypaimon's RESTCatalog reads the table back after each command."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from pypaimon import CatalogFactory
from support import rest_writer as rw
from support.fixtures import Run
from support.pypaimon_writer import sort_rows
from support.rest_catalog_server import RestCatalogServer

run = Run()

SCHEMA = pa.schema([("id", pa.int64()), ("dt", pa.string()), ("s", pa.string())])
TODAY = dt.date.today().isoformat()
OLD = "2020-01-01"


@pytest.fixture
def orders(rest_catalog: RestCatalogServer) -> RestCatalogServer:
    """db.orders: four appends over an old and a current partition, written through
    pypaimon's RESTCatalog."""
    table = rw.create_table(rest_catalog, "db.orders", SCHEMA, partition_keys=["dt"])
    for c in range(4):
        rw.append(table, [{"id": c * 2 + j, "dt": (OLD, TODAY)[j], "s": f"s{c}"} for j in range(2)])
    return rest_catalog


@pytest.fixture
def rest_yaml(tmp_path: Path, rest_catalog: RestCatalogServer) -> Path:
    path = tmp_path / "rest.yaml"
    options = rest_catalog.catalog_options()
    path.write_text("".join(f"{k}: {v}\n" for k, v in options.items()), encoding="utf-8")
    return path


def _rows(server: RestCatalogServer) -> list[dict[str, Any]]:
    return rw.read_rows(server, "db.orders")


def _commits(server: RestCatalogServer) -> int:
    return sum(1 for m, p, s in server.requests if p.endswith("/commit") and s == 200)


def _latest(server: RestCatalogServer) -> dict[str, Any]:
    latest = server.tables[("db", "orders")].latest
    assert latest is not None
    return latest


def _ok(*args: object) -> dict[str, Any]:
    result = run(*args, "--json")
    assert result.exit_code == 0, result.stderr
    doc: dict[str, Any] = json.loads(result.stdout)
    return doc


def _error(*args: object, exit_code: int = 1) -> dict[str, Any]:
    result = run(*args, "--json")
    assert result.exit_code == exit_code, (result.stdout, result.stderr)
    assert "Traceback" not in result.stderr
    error: dict[str, Any] = json.loads(result.stderr.strip().splitlines()[-1])["error"]
    return error


def test_expire_snapshots_through_the_catalog(orders: RestCatalogServer, rest_yaml: Path) -> None:
    rows = _rows(orders)
    doc = _ok(
        "expire-snapshots",
        "db.orders",
        "--catalog",
        rest_yaml,
        "--retain-max",
        "2",
        "--retain-min",
        "1",
    )
    assert doc["identifier"] == "db.orders"
    fs = orders.fs()
    root = orders.tables[("db", "orders")].path
    left = sorted(p.rsplit("/", 1)[-1] for p in fs.ls(f"{root}/snapshot"))
    assert left == ["EARLIEST", "LATEST", "snapshot-3", "snapshot-4"]
    assert _rows(orders) == rows
    assert orders.gate.refused == []  # every storage request carried a vended key


def test_commits_go_through_the_server(orders: RestCatalogServer, rest_yaml: Path) -> None:
    rows = _rows(orders)
    before = _commits(orders)
    _ok("compact", "db.orders", "--catalog", rest_yaml, "--options", "compaction.min.file-num=4")
    assert _commits(orders) == before + 1
    latest = _latest(orders)
    assert latest["id"] == 5 and latest["commitKind"] == "COMPACT"
    assert _rows(orders) == rows
    partitions = orders.tables[("db", "orders")].partitions.values()
    assert {p["spec"]["dt"]: p["fileCount"] for p in partitions} == {OLD: 1, TODAY: 1}

    _ok("expire-partitions", "db.orders", "--catalog", rest_yaml, "--expiration-time", "1 d")
    assert _commits(orders) == before + 2
    assert [r["dt"] for r in _rows(orders)] == [TODAY] * 4
    partitions = orders.tables[("db", "orders")].partitions.values()
    assert [p["spec"]["dt"] for p in partitions] == [TODAY]  # the statistics we sent


def test_every_command_by_name(orders: RestCatalogServer, rest_yaml: Path) -> None:
    """One table through every command that works on REST tables, in turn, each followed by
    pypaimon's RESTCatalog reading it back."""
    rows = _rows(orders)
    for name, *rest in (
        ["inspect", "snapshots"],
        ["create-tag", "t1", "--snapshot", "2"],
        ["rename-tag", "t1", "t2"],
        ["expire-snapshots", "--retain-max", "3", "--retain-min", "1"],
        ["expire-changelogs"],
        ["expire-tags"],
        ["delete-tag", "t2"],
        ["compact", "--manifests"],
        ["remove-unexisting-files"],
        ["delete-orphan-files", "--older-than", "1 ms", "--allow-recent"],
        ["maintain"],
    ):
        _ok(name, "db.orders", *rest, "--catalog", rest_yaml)
        assert _rows(orders) == rows, name
        if name == "rename-tag":
            table = rw.catalog(orders).get_table("db.orders")
            assert [r["id"] for r in sort_rows(_read_tag(table, "t2"))] == list(range(4))
    assert orders.gate.refused == []  # every storage request carried a live vended key


def _read_tag(table: Any, tag: str) -> list[dict[str, Any]]:
    tagged = table.copy({"scan.tag-name": tag})
    builder = tagged.new_read_builder()
    rows: list[dict[str, Any]] = (
        builder.new_read().to_arrow(builder.new_scan().plan().splits()).to_pylist()
    )
    return rows


@pytest.mark.parametrize(
    "command",
    [["restore", "r1"]],
    ids=lambda c: c[0],
)
def test_history_rewrites_are_refused(
    orders: RestCatalogServer, rest_yaml: Path, command: list[str]
) -> None:
    name, *rest = command
    error = _error(name, "db.orders", *rest, "--catalog", rest_yaml)
    assert error["kind"] == "safety_refusal" and "keeps this table's snapshots" in error["message"]
    assert _latest(orders)["id"] == 4


def test_rollback_goes_through_the_server(orders: RestCatalogServer, rest_yaml: Path) -> None:
    expected = [r for r in _rows(orders) if r["s"] in ("s0", "s1")]  # the first two appends
    _ok("create-tag", "db.orders", "late", "--catalog", rest_yaml)
    plan = _ok("rollback", "db.orders", "--to-snapshot", "2", "--catalog", rest_yaml, "--dry-run")
    assert plan["plan"]["details"]["snapshots"] == [3, 4]
    _ok("rollback", "db.orders", "--to-snapshot", "2", "--catalog", rest_yaml)
    assert any(p.endswith("/rollback") and s == 200 for m, p, s in orders.requests)
    assert _latest(orders)["id"] == 2
    root = orders.tables[("db", "orders")].path
    fs = orders.fs()
    assert not fs.exists(f"{root}/snapshot/snapshot-3") and not fs.exists(f"{root}/tag/tag-late")
    assert _rows(orders) == expected
    _ok(
        "expire-snapshots",
        "db.orders",
        "--catalog",
        rest_yaml,
        "--retain-max",
        "1",
        "--retain-min",
        "1",
    )


def test_branches_go_through_the_server(orders: RestCatalogServer, rest_yaml: Path) -> None:
    _ok("create-tag", "db.orders", "v2", "--snapshot", "2", "--catalog", rest_yaml)
    _ok("create-branch", "db.orders", "b1", "--tag", "v2", "--catalog", rest_yaml)
    assert any(p.endswith("/branches") and m == "POST" for m, p, s in orders.requests)
    table = rw.catalog(orders).get_table("db.orders$branch_b1")
    builder = table.new_read_builder()
    ids = sorted(
        r["id"] for r in builder.new_read().to_arrow(builder.new_scan().plan().splits()).to_pylist()
    )
    assert ids == [0, 1, 2, 3]  # the tag's snapshot, read by pypaimon on the branch
    _ok("fast-forward", "db.orders", "b1", "--catalog", rest_yaml, "--force")
    assert any(p.endswith("/branches/b1/forward") for m, p, s in orders.requests)
    assert _latest(orders)["id"] == 2  # main is the branch now: the tag's snapshot
    assert sorted(r["id"] for r in _rows(orders)) == [0, 1, 2, 3]
    _ok("delete-branch", "db.orders", "b1", "--catalog", rest_yaml)
    assert any(p.endswith("/branches/b1") and m == "DELETE" for m, p, s in orders.requests)
    root = orders.tables[("db", "orders")].path
    assert not orders.fs().exists(f"{root}/branch/branch-b1")


def test_a_commit_past_the_catalog_is_caught(orders: RestCatalogServer, rest_yaml: Path) -> None:
    """pypaimon's filesystem catalog on the same warehouse commits by creating the snapshot
    file itself; the server never saw it: every command refuses, nothing changes."""
    entry = orders.tables[("db", "orders")]
    bypass = CatalogFactory.create(
        {
            "warehouse": orders.root,
            "fs.s3.endpoint": orders.storage_options["endpoint_url"],
            "fs.s3.accessKeyId": "testing",
            "fs.s3.accessKeySecret": "testing",
            "fs.s3.region": "us-east-1",
            "fs.s3.path-style-access": "true",
        }
    )
    rw.append(bypass.get_table("db.orders"), [{"id": 99, "dt": TODAY, "s": "x"}])
    fs = orders.fs()
    assert fs.exists(f"{entry.path}/snapshot/snapshot-5")
    files = sorted(fs.find(entry.path))
    error = _error(
        "expire-snapshots",
        "db.orders",
        "--catalog",
        rest_yaml,
        "--retain-max",
        "1",
        "--retain-min",
        "1",
    )
    assert error["kind"] == "catalog_drift"
    assert "snapshot 4" in error["message"] and "snapshot 5" in error["message"]
    assert sorted(fs.find(entry.path)) == files
    assert _latest(orders)["id"] == 4
    check = run("inspect", "*.*", "--check", "--catalog", rest_yaml, "--json")
    assert check.exit_code == 3 and "Traceback" not in check.stderr  # drift: damaged
    (drift,) = json.loads(check.stdout)["catalog_drift"]
    assert drift["kind"] == "snapshot-drift" and drift["identifier"] == "db.orders"
    assert "snapshot 5" in drift["detail"]
