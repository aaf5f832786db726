"""The partitions the Hive Metastore mirrors for a Paimon table
(``metastore.partitioned-table``), read and dropped as Paimon's HiveCatalog does: by their
values in the order of the table's partition keys, ``deleteData`` false (the metastore never
touches the table's files)."""

from __future__ import annotations

from collections.abc import Sequence

from core.catalog.hive_client import MetastoreClient
from core.table.catalog_env import MetastorePartitions


class HivePartitions(MetastorePartitions):
    def __init__(self, uri: str, database: str, table: str) -> None:
        self.uri = uri
        self.database = database
        self.table = table
        self.description = f"Hive Metastore {uri}, table {database}.{table}"

    def held(self) -> list[tuple[str, ...]]:
        with MetastoreClient(self.uri) as client:
            return sorted(tuple(v) for v in client.partitions(self.database, self.table))

    def drop(self, partitions: Sequence[tuple[str, ...]]) -> list[tuple[str, ...]]:
        dropped = []
        with MetastoreClient(self.uri) as client:
            for values in partitions:
                if client.drop_partition(self.database, self.table, list(values)):
                    dropped.append(tuple(values))
        return dropped
