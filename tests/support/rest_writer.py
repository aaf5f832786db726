"""Tables written and read back through pypaimon's own RESTCatalog (its public API), against
the tests' REST catalog server (``support.rest_catalog_server``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pyarrow as pa
from pypaimon import CatalogFactory, Schema
from pypaimon.catalog.catalog import Catalog
from pypaimon.table.file_store_table import FileStoreTable

from support.pypaimon_writer import arrow_schema, sort_rows
from support.rest_catalog_server import RestCatalogServer

Row = dict[str, Any]


def catalog(server: RestCatalogServer) -> Catalog:
    return CatalogFactory.create(server.catalog_options())


def create_table(
    server: RestCatalogServer,
    identifier: str,
    schema: pa.Schema,
    *,
    partition_keys: Sequence[str] = (),
    primary_keys: Sequence[str] = (),
    options: Mapping[str, str] | None = None,
) -> FileStoreTable:
    cat = catalog(server)
    cat.create_database(identifier.split(".", 1)[0], True)
    cat.create_table(
        identifier,
        Schema.from_pyarrow_schema(
            schema,
            partition_keys=list(partition_keys),
            primary_keys=list(primary_keys),
            options=dict(options or {}),
        ),
        False,
    )
    table: FileStoreTable = cat.get_table(identifier)
    return table


def append(table: FileStoreTable, rows: Sequence[Row] | pa.Table) -> None:
    builder = table.new_batch_write_builder()
    write, commit = builder.new_write(), builder.new_commit()
    try:
        data = (
            rows
            if isinstance(rows, pa.Table)
            else pa.Table.from_pylist(list(rows), schema=arrow_schema(table))
        )
        write.write_arrow(data)
        commit.commit(write.prepare_commit())
    finally:
        write.close()
        commit.close()


def read_rows(server: RestCatalogServer, identifier: str) -> list[Row]:
    """Every row, read through a fresh RESTCatalog (a reader that saw nothing before)."""
    table = catalog(server).get_table(identifier)
    builder = table.new_read_builder()
    splits = builder.new_scan().plan().splits()
    return sort_rows(builder.new_read().to_arrow(splits).to_pylist())
