"""Tables written through pypaimon's JdbcCatalog (SQLite or PostgreSQL), the paimon.yaml
that names the catalog, and a Java-style holder of Paimon's JDBC lock."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pyarrow as pa
from pypaimon import CatalogFactory, Schema

from support import pypaimon_writer as pw

ORDERS = pa.schema([("id", pa.int64()), ("dt", pa.string()), ("v", pa.string())])
USERS = pa.schema([pa.field("id", pa.int64(), nullable=False), ("name", pa.string())])
COMMITS = 4


def options(uri: str, warehouse: Path, **extra: str) -> dict[str, str]:
    return {"metastore": "jdbc", "uri": uri, "warehouse": str(warehouse), **extra}


def paimon_yaml(path: Path, opts: Mapping[str, str]) -> Path:
    path.write_text("".join(f"{k}: {v}\n" for k, v in opts.items()), encoding="utf-8")
    return path


def write_tables(opts: Mapping[str, str]) -> dict[str, list[dict[str, Any]]]:
    """db.orders (append, partitioned by dt) and db.users (primary key), each with
    ``COMMITS`` snapshots and a tag, created and written through pypaimon's JdbcCatalog;
    returns the rows pypaimon reads from each."""
    cat = CatalogFactory.create(dict(opts))
    try:
        cat.create_database("db", True)
        cat.create_table(
            "db.orders", Schema.from_pyarrow_schema(ORDERS, partition_keys=["dt"]), True
        )
        cat.create_table(
            "db.users",
            Schema.from_pyarrow_schema(USERS, primary_keys=["id"], options={"bucket": "1"}),
            True,
        )
        orders, users = cat.get_table("db.orders"), cat.get_table("db.users")
        for i in range(COMMITS):
            pw.append(
                orders, [{"id": 10 * i + k, "dt": f"d{k % 2}", "v": f"c{i}"} for k in range(3)]
            )
            pw.append(users, [{"id": k, "name": f"n{i}"} for k in range(2 + i)])
        pw.create_tag(orders, "t2", 2)
    finally:
        _close(cat)
    return {name: read(opts, f"db.{name}") for name in ("orders", "users")}


def read(opts: Mapping[str, str], identifier: str) -> list[dict[str, Any]]:
    """The table's rows as pypaimon reads them through its JDBC catalog."""
    cat = CatalogFactory.create(dict(opts))
    try:
        table = cat.get_table(identifier)
        builder = table.new_read_builder()
        splits = builder.new_scan().plan().splits()
        rows = builder.new_read().to_arrow(splits).to_pylist()
        return pw.sort_rows(rows)
    finally:
        _close(cat)


def _close(cat: Any) -> None:
    close = getattr(cat, "close", None)
    if close is not None:
        close()


@contextmanager
def java_lock_holder(connect: Any, lock_id: str, *, expire_seconds: int = 3600) -> Iterator[None]:
    """A writer holding Paimon's JDBC lock as Java's JdbcCatalogLock does: its row in
    paimon_distributed_locks, inserted on a connection of its own, deleted at the end."""
    conn = connect()
    try:
        cur = conn.cursor()
        mark = "?" if isinstance(conn, sqlite3.Connection) else "%s"
        cur.execute(
            "CREATE TABLE IF NOT EXISTS paimon_distributed_locks ("
            "lock_id VARCHAR(255) NOT NULL, "
            "acquired_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP NOT NULL, "
            "expire_time_seconds BIGINT DEFAULT 0 NOT NULL, PRIMARY KEY (lock_id))"
        )
        cur.execute(
            "INSERT INTO paimon_distributed_locks (lock_id, expire_time_seconds) "
            f"VALUES ({mark}, {mark})",
            (lock_id, expire_seconds),
        )
        conn.commit()
        yield
        cur.execute(f"DELETE FROM paimon_distributed_locks WHERE lock_id = {mark}", (lock_id,))
        conn.commit()
    finally:
        conn.close()
