"""Tables registered in the test metastore as Paimon's Java HiveCatalog registers them
(``HiveCatalog.newHmsTable`` / ``updateHmsTable`` / ``createPartitionsUtil``), through
paimon-cli's own Thrift client: the database with its ``<warehouse>/<db>.db`` location, the
table as a MANAGED_TABLE with Paimon's input/output formats, serde and storage handler,
``table_type=PAIMON``, its columns in Hive types, and, when the table mirrors its partitions
(``metastore.partitioned-table``), the partition keys and one partition per live partition
(``.done`` ones as ``partition.mark-done-action = done-partition`` adds them)."""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from core.catalog.hive import INPUT_FORMAT, OUTPUT_FORMAT, SERDE, STORAGE_HANDLER
from core.catalog.hive_client import MetastoreClient, thrift
from core.table.table import open_table

_HIVE_TYPES = {
    "BOOLEAN": "boolean",
    "TINYINT": "tinyint",
    "SMALLINT": "smallint",
    "INT": "int",
    "INTEGER": "int",
    "BIGINT": "bigint",
    "FLOAT": "float",
    "DOUBLE": "double",
    "DATE": "date",
    "STRING": "string",
    "BYTES": "binary",
}


def _hive_type(paimon_type: str) -> str:
    root = paimon_type.split("(")[0].replace(" NOT NULL", "").strip().upper()
    return _HIVE_TYPES.get(root, "string")


def register(
    uri: str,
    root: Path,
    database: str,
    name: str,
    *,
    partitioned: bool = False,
    location: str | None = None,
    done: Iterable[Sequence[str]] = (),
) -> None:
    """Register the Paimon table at ``root`` as ``database.name``; ``partitioned`` mirrors
    its partitions (the table should set ``metastore.partitioned-table``)."""
    hms = thrift()
    table = open_table(str(root))
    schema = table.schema
    fields = schema.raw.get("fields", [])
    keys = list(schema.partition_keys) if partitioned else []
    cols = [
        hms.FieldSchema(name=f["name"], type=_hive_type(str(f["type"])), comment=None)
        for f in fields
        if f["name"] not in keys
    ]
    part_cols = [
        hms.FieldSchema(name=f["name"], type=_hive_type(str(f["type"])), comment=None)
        for k in keys
        for f in fields
        if f["name"] == k
    ]
    now = int(time.time())
    sd = hms.StorageDescriptor(
        cols=cols,
        location=location or root.as_uri(),
        inputFormat=INPUT_FORMAT,
        outputFormat=OUTPUT_FORMAT,
        compressed=False,
        numBuckets=-1,
        serdeInfo=hms.SerDeInfo(name=None, serializationLib=SERDE, parameters={}),
        bucketCols=[],
        parameters={},
    )
    hms_table = hms.Table(
        tableName=name,
        dbName=database,
        owner="paimon",
        createTime=now,
        lastAccessTime=now,
        retention=2**31 - 1,
        sd=sd,
        partitionKeys=part_cols,
        parameters={"table_type": "PAIMON", "storage_handler": STORAGE_HANDLER},
        tableType="MANAGED_TABLE",
    )
    with MetastoreClient(uri) as client:
        if database not in client.databases():
            db_location = root.parent.as_uri()
            client.create_database(
                hms.Database(
                    name=database, description=None, locationUri=db_location, parameters={}
                )
            )
        client.create_table(hms_table)
        if partitioned:
            live = [tuple(_values(table, p)) for p in _live_partitions(table)]
            for values in [*live, *(tuple(d) for d in done)]:
                add_partition(uri, root, database, name, values, client=client, sd=sd)


def add_partition(
    uri: str,
    root: Path,
    database: str,
    name: str,
    values: Sequence[str],
    *,
    client: MetastoreClient | None = None,
    sd: Any = None,
) -> None:
    """One metastore partition, as HiveCatalog.createPartitions adds it (the table's storage
    descriptor with the partition's own location)."""
    hms = thrift()
    if client is None:
        with MetastoreClient(uri) as own:
            add_partition(uri, root, database, name, values, client=own)
        return
    if sd is None:
        found = client.table(database, name)
        assert found is not None
        sd = found.raw.sd
    keys = open_table(str(root)).schema.partition_keys
    path = "/".join(f"{k}={v}" for k, v in zip(keys, values, strict=True))
    now = int(time.time())
    part_sd = hms.StorageDescriptor(**{**vars(sd), "location": f"{root.as_uri()}/{path}"})
    client.add_partition(
        hms.Partition(
            values=list(values),
            dbName=database,
            tableName=name,
            createTime=now,
            lastAccessTime=now,
            sd=part_sd,
            parameters={},
        )
    )


def partitions(uri: str, database: str, name: str) -> list[tuple[str, ...]]:
    with MetastoreClient(uri) as client:
        return sorted(tuple(p) for p in client.partitions(database, name))


def _live_partitions(table: Any) -> list[bytes]:
    latest = table.snapshots.latest()
    if latest is None:
        return []
    return sorted({f.partition for f in table.live_files(latest)})


def _values(table: Any, partition: bytes) -> list[str]:
    default = table.options.default_partition_name
    return [
        default if v is None or not v.strip() else v
        for v in table.paths.partition_spec(partition).values()
    ]
