"""Tables written and read back through pypaimon's own RESTCatalog (its public API), against
the tests' REST catalog server (``support.rest_catalog_server``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pyarrow as pa
from pypaimon import CatalogFactory
from pypaimon.catalog.catalog import Catalog
from pypaimon.table.file_store_table import FileStoreTable

from support.pypaimon_writer import commit_batch, create_table_in, read_all
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
    return create_table_in(
        catalog(server),
        identifier,
        schema,
        partition_keys=partition_keys,
        primary_keys=primary_keys,
        options=options,
    )


def append(table: FileStoreTable, rows: Sequence[Row] | pa.Table) -> None:
    commit_batch(table, rows, None)


def read_rows(server: RestCatalogServer, identifier: str) -> list[Row]:
    """Every row, read through a fresh RESTCatalog (a reader that saw nothing before)."""
    return read_all(catalog(server).get_table(identifier))
