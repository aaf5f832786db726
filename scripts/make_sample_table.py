#!/usr/bin/env python3
"""Write a small sample Paimon warehouse with pypaimon.

Usage: python scripts/make_sample_table.py DIR

Creates DIR/demo.db/orders: an append-only table partitioned by ``dt`` with 12
snapshots (snapshot 8 is an INSERT OVERWRITE of dt=2024-01-01), tags ``v3``
and ``v10`` and consumer ``reporting`` (nextSnapshot 5). An existing
DIR/demo.db is deleted first. Prints the table root as the only stdout line.
Needs only pypaimon and pyarrow.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path
from typing import Any

import pyarrow as pa
from pypaimon import CatalogFactory, Schema
from pypaimon.consumer.consumer import Consumer
from pypaimon.table.file_store_table import FileStoreTable

SCHEMA = pa.schema(
    [
        ("order_id", pa.int64()),
        ("dt", pa.string()),
        ("customer", pa.string()),
        ("amount", pa.float64()),
    ]
)
DAYS = ("2024-01-01", "2024-01-02", "2024-01-03")
OVERWRITE_AT = 8


def _commit(
    table: FileStoreTable, rows: list[dict[str, Any]], overwrite: dict[str, str] | None = None
) -> None:
    builder = table.new_batch_write_builder()
    if overwrite is not None:
        builder.overwrite(overwrite)
    write, commit = builder.new_write(), builder.new_commit()
    try:
        write.write_arrow(pa.Table.from_pylist(rows, schema=SCHEMA))
        commit.commit(write.prepare_commit())
    finally:
        write.close()
        commit.close()


def make_sample(warehouse: Path) -> Path:
    warehouse.mkdir(parents=True, exist_ok=True)
    shutil.rmtree(warehouse / "demo.db", ignore_errors=True)
    catalog = CatalogFactory.create({"warehouse": str(warehouse)})
    catalog.create_database("demo", True)
    catalog.create_table(
        "demo.orders", Schema.from_pyarrow_schema(SCHEMA, partition_keys=["dt"]), False
    )
    table = catalog.get_table("demo.orders")
    for i in range(1, 13):
        if i == OVERWRITE_AT:
            rows = [
                {"order_id": 9000 + k, "dt": DAYS[0], "customer": "restated", "amount": 1.0}
                for k in range(2)
            ]
            _commit(table, rows, {"dt": DAYS[0]})
        else:
            rows = [
                {
                    "order_id": 100 * i + k,
                    "dt": DAYS[(i + k) % 3],
                    "customer": f"c{k}",
                    "amount": i + k / 4,
                }
                for k in range(3)
            ]
            _commit(table, rows)
    table.create_tag("v3", 3)
    table.create_tag("v10", 10)
    table.consumer_manager().reset_consumer("reporting", Consumer(5))
    return Path(table.table_path)


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    print(make_sample(Path(argv[0]).resolve()))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
