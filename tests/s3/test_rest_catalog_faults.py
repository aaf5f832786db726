"""A REST catalog that cannot be reached, refuses our token, lacks the table, refuses a
commit or loses its answer; and a run outliving its data token. One clear line and exit 1
(never a traceback), a stable ``kind`` with --json, and nothing changed unless the server
holds our commit."""

from __future__ import annotations

import json
import socket
import time
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from support import rest_writer as rw
from support.fault_proxy import Rule
from support.fixtures import Run
from support.rest_catalog_server import CommitFault, RestCatalogServer

run = Run()
SCHEMA = pa.schema([("id", pa.int64()), ("dt", pa.string())])


@pytest.fixture
def orders(rest_catalog: RestCatalogServer) -> RestCatalogServer:
    table = rw.create_table(rest_catalog, "db.orders", SCHEMA, partition_keys=["dt"])
    for c in range(3):
        rw.append(table, [{"id": c, "dt": "d0"}])
    return rest_catalog


def _yaml(tmp_path: Path, options: dict[str, str]) -> Path:
    path = tmp_path / "rest.yaml"
    path.write_text("".join(f"{k}: {v}\n" for k, v in options.items()), encoding="utf-8")
    return path


def _error(*args: object) -> dict[str, Any]:
    result = run(*args, "--json")
    assert result.exit_code == 1, (result.stdout, result.stderr)
    assert "Traceback" not in result.stderr
    lines = result.stderr.strip().splitlines()
    error: dict[str, Any] = json.loads(lines[-1])["error"]
    human = run(*args)
    assert human.exit_code == 1 and "Traceback" not in human.stderr
    # one Error line (warnings about kept files may come before it)
    assert sum(line.startswith("Error: ") for line in human.stderr.splitlines()) == 1
    return error


def _files(server: RestCatalogServer) -> list[str]:
    root = server.tables[("db", "orders")].path
    return sorted(p for p in server.fs().find(root) if "/.paimon-cli/" not in p)


def _compact(yaml: Path) -> tuple[str, ...]:
    return ("compact", "db.orders", "--catalog", yaml, "--options", "compaction.min.file-num=3")


def test_unreachable_server(tmp_path: Path) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # closed again: nothing listens there
    yaml = _yaml(
        tmp_path,
        {"metastore": "rest", "uri": f"http://127.0.0.1:{port}", "warehouse": "w"},
    )
    error = _error("expire-snapshots", "db.orders", "--catalog", yaml)
    assert error["kind"] == "catalog_unreachable" and f"127.0.0.1:{port}" in error["message"]


def test_wrong_token(tmp_path: Path, rest_catalog: RestCatalogServer) -> None:
    yaml = _yaml(tmp_path, rest_catalog.catalog_options(token="not-the-token"))
    error = _error("expire-snapshots", "db.orders", "--catalog", yaml)
    assert error["kind"] == "catalog_auth" and "401" in error["message"]


def test_unknown_table_names_close_ones(tmp_path: Path, orders: RestCatalogServer) -> None:
    yaml = _yaml(tmp_path, orders.catalog_options())
    error = _error("expire-snapshots", "db.ordres", "--catalog", yaml)
    assert error["kind"] == "table_not_found" and "db.orders" in error["hint"]


def test_refused_commit_changes_nothing(tmp_path: Path, orders: RestCatalogServer) -> None:
    yaml = _yaml(tmp_path, orders.catalog_options())
    files = _files(orders)
    # twice: once for the --json run, once for the human one
    orders.commit_faults += [CommitFault("error", 409, "commits are frozen")] * 2
    error = _error(*_compact(yaml))
    assert error["kind"] == "catalog_refused" and "commits are frozen" in error["message"]
    assert orders.tables[("db", "orders")].latest["id"] == 3  # type: ignore[index]
    assert _files(orders) == files  # the attempt's data files and manifests are gone


@pytest.mark.parametrize("action", ["error-after", "drop-after"])
def test_lost_answer_settled_by_reading_back(
    tmp_path: Path, orders: RestCatalogServer, action: str
) -> None:
    """The server applied the commit and its answer was lost: the latest snapshot it holds
    carries our uuid, so the commit is ours, and the run succeeds."""
    yaml = _yaml(tmp_path, orders.catalog_options())
    rows = rw.read_rows(orders, "db.orders")
    orders.commit_faults.append(CommitFault(action))
    result = run(*_compact(yaml), "--json")
    assert result.exit_code == 0, result.stderr
    latest = orders.tables[("db", "orders")].latest
    assert latest is not None and latest["id"] == 4 and latest["commitKind"] == "COMPACT"
    assert rw.read_rows(orders, "db.orders") == rows


def test_unapplied_answer_keeps_files(tmp_path: Path, orders: RestCatalogServer) -> None:
    """A 503 the server did not apply: reading back shows no commit of ours, but it could
    still land, so the run stops (exit 1) keeping what it would reference."""
    yaml = _yaml(tmp_path, orders.catalog_options())
    orders.commit_faults += [CommitFault("error", 503)] * 2
    error = _error(*_compact(yaml))
    assert error["kind"] == "commit_outcome_unknown"
    assert orders.tables[("db", "orders")].latest["id"] == 3  # type: ignore[index]


def test_token_renewed_during_a_long_run(tmp_path: Path, orders: RestCatalogServer) -> None:
    """Tokens live 8 s and every manifest read takes 1.5 s: a run that kept its first token
    would be refused by the gate (ExpiredToken) half-way through. (Renewal is due at half a
    token's life here: the margin leaves room for a loaded machine's delays.)"""
    yaml = _yaml(tmp_path, orders.catalog_options())
    orders.token_ttl_ms = 8_000
    assert orders.data_proxy is not None
    orders.data_proxy.add(
        Rule("GET", r"/manifest/", "call", times=12, callback=lambda _c: time.sleep(1.5))
    )
    vended = orders.tokens_vended
    started = time.monotonic()
    result = run(
        "expire-snapshots",
        "db.orders",
        "--catalog",
        yaml,
        "--retain-max",
        "1",
        "--retain-min",
        "1",
        "--json",
    )
    assert result.exit_code == 0, result.stderr
    assert time.monotonic() - started > 8.5  # outlived the first token
    assert orders.tokens_vended - vended >= 2
    assert orders.gate.refused == []


@pytest.mark.parametrize(
    ("options", "says"),
    [
        ({"token.provider": "dlf"}, "token.provider 'dlf' is not supported"),
        ({"token.provider": "bear", "token": ""}, "needs 'token'"),
        ({"uri": ""}, "needs 'uri'"),
    ],
)
def test_unusable_configuration_is_a_usage_error(
    tmp_path: Path, options: dict[str, str], says: str
) -> None:
    config = {"metastore": "rest", "uri": "http://127.0.0.1:9", "warehouse": "w"}
    config.update(options)
    yaml = _yaml(tmp_path, {k: v for k, v in config.items() if v})
    result = run("expire-snapshots", "db.orders", "--catalog", yaml, "--json")
    assert result.exit_code == 2 and "Traceback" not in result.stderr
    error = json.loads(result.stderr.strip().splitlines()[-1])["error"]
    assert error["kind"] == "catalog_config" and says in error["message"]
