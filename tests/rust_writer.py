"""Test-table factory: real Paimon tables written by pypaimon-rust (Apache paimon-rust).

pypaimon-rust is a second, current Paimon implementation beside pypaimon and Java Paimon:
it writes through DataFusion SQL (``CREATE TABLE ... WITH (...)``, ``INSERT``,
``INSERT OVERWRITE``, ``MERGE INTO``, ``ALTER TABLE``, ``TRUNCATE``, ``CALL sys.*``), and
reads back any snapshot or tag with ``SELECT ... VERSION AS OF <id | 'tag'>``.

pypaimon-rust behaviour worth knowing (0.4.0):

* Procedures need named arguments (``CALL paimon.sys.create_tag(table => 'db.t', tag =>
  't1', snapshot_id => 2)``); it has ``create_tag``, ``delete_tag``, ``rename_tag``,
  ``create_tag_from_timestamp``, ``rollback_to`` (``snapshot_id`` or ``tag``) and
  ``rollback_to_timestamp``, and no expiry, compaction or orphan cleaning.
* Avro manifests honour ``manifest.compression`` zstd (default), snappy, deflate and none;
  lz4, bzip2 and xz are refused.

Run as a script (``python tests/rust_writer.py codec-tables OUT``) it writes the tables
``scripts/plain_install_check.py`` maintains with a plain install.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, TypeAlias

import pyarrow as pa
from pypaimon_rust.datafusion import SQLContext

Row: TypeAlias = dict[str, Any]

CATALOG = "paimon"
DB = "db"
#: every manifest.compression pypaimon-rust writes (each an Avro codec fastavro must read)
MANIFEST_CODECS = ("zstd", "snappy", "deflate", "none")
#: an orphan planted with this age is past delete-orphan-files' default one-day floor
ORPHAN_AGE_SECONDS = 3 * 24 * 3600


def sort_rows(rows: Iterable[Row]) -> list[Row]:
    """Rows in a stable order (None before values, column by column)."""
    return sorted(rows, key=lambda r: tuple((v is not None, repr(v)) for v in r.values()))


class RustWarehouse:
    """One pypaimon-rust filesystem catalog (database ``db``) at ``root``."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)
        self.ctx = SQLContext()
        self.ctx.register_catalog(CATALOG, {"warehouse": str(self.root)})
        self.sql(f"CREATE SCHEMA IF NOT EXISTS {CATALOG}.{DB}")

    def sql(self, statement: str) -> list[Row]:
        """Run one statement; its result rows."""
        batches = self.ctx.sql(statement)
        return pa.Table.from_batches(batches).to_pylist() if batches else []

    def table_root(self, name: str) -> Path:
        return self.root / f"{DB}.db" / name

    def qualified(self, name: str) -> str:
        return f"{CATALOG}.{DB}.{name}"

    def call(self, procedure: str, name: str, **args: object) -> None:
        """``CALL paimon.sys.<procedure>(table => 'db.<name>', ...)``."""
        named = ", ".join(
            [f"table => '{DB}.{name}'", *(f"{k} => {_sql(v)}" for k, v in args.items())]
        )
        self.sql(f"CALL {CATALOG}.sys.{procedure}({named})")

    def read(self, name: str, *, version: int | str | None = None) -> list[Row]:
        """The rows pypaimon-rust reads at the latest snapshot, a snapshot id or a tag."""
        travel = "" if version is None else f" VERSION AS OF {_sql(version)}"
        return sort_rows(self.sql(f"SELECT * FROM {self.qualified(name)}{travel}"))


def _sql(value: object) -> str:
    """A SQL literal for an int or a string."""
    if isinstance(value, int):
        return str(value)
    return "'" + str(value).replace("'", "''") + "'"


def values(rows: Sequence[Sequence[object]]) -> str:
    """``(1, 'a'), (2, 'b')`` for an INSERT."""
    return ", ".join("(" + ", ".join(_sql(v) for v in row) + ")" for row in rows)


def plant_orphan(table_root: Path, name: str = "data-orphan-0.parquet") -> Path:
    """A stray data file (a failed writer's leftover) in the table's first bucket directory,
    old enough for orphan cleaning."""
    path = min(table_root.glob("**/bucket-*")) / name
    path.write_bytes(b"orphan")
    old = time.time() - ORPHAN_AGE_SECONDS
    os.utime(path, (old, old))
    return path


def codec_tables(warehouse: Path) -> list[Path]:
    """Per manifest codec, an append table and a primary-key table with a few snapshots, a
    tag, an overwrite and a planted orphan: what the plain-install check maintains."""
    wh = RustWarehouse(warehouse)
    roots = []
    for codec in MANIFEST_CODECS:
        options = f"'manifest.compression' = '{codec}'"
        append = f"codec_{codec}_append"
        wh.sql(
            f"CREATE TABLE {wh.qualified(append)} (id INT, v STRING, dt STRING) "
            f"PARTITIONED BY (dt) WITH ({options})"
        )
        pk = f"codec_{codec}_pk"
        wh.sql(
            f"CREATE TABLE {wh.qualified(pk)} (id INT, v STRING, PRIMARY KEY (id)) "
            f"WITH ({options}, 'bucket' = '2')"
        )
        for i in range(4):
            rows = [(i, f"v{i}", f"d{i % 2}"), (i + 10, f"w{i}", "d0")]
            wh.sql(f"INSERT INTO {wh.qualified(append)} VALUES {values(rows)}")
            wh.sql(f"INSERT INTO {wh.qualified(pk)} VALUES {values([(i % 3, f'v{i}')])}")
        for name in (append, pk):
            wh.call("create_tag", name, tag="t2", snapshot_id=2)
        wh.sql(f"INSERT OVERWRITE {wh.qualified(append)} VALUES {values([(99, 'x', 'd1')])}")
        for name in (append, pk):
            plant_orphan(wh.table_root(name))
            roots.append(wh.table_root(name))
    return roots


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] != "codec-tables":
        sys.exit("usage: rust_writer.py codec-tables WAREHOUSE")
    for root in codec_tables(Path(sys.argv[2])):
        print(root)
