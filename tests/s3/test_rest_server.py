"""The tests' REST catalog server is a catalog pypaimon's own RESTCatalog works with: it
creates, writes (committing through the server) and reads back; its data is reached only
with credentials the server vends, and those expire."""

from __future__ import annotations

import pyarrow as pa
import pytest
from support import rest_writer as rw
from support.rest_catalog_server import RestCatalogServer

SCHEMA = pa.schema([("id", pa.int64()), ("dt", pa.string()), ("v", pa.string())])


def test_pypaimon_writes_and_reads_through_the_server(rest_catalog: RestCatalogServer) -> None:
    table = rw.create_table(rest_catalog, "db.orders", SCHEMA, partition_keys=["dt"])
    rw.append(table, [{"id": 1, "dt": "a", "v": "x"}, {"id": 2, "dt": "b", "v": "y"}])
    rw.append(table, [{"id": 3, "dt": "a", "v": "z"}])

    assert [r["id"] for r in rw.read_rows(rest_catalog, "db.orders")] == [1, 2, 3]
    entry = rest_catalog.tables[("db", "orders")]
    assert entry.latest is not None and entry.latest["id"] == 2
    commits = [p for m, p, s in rest_catalog.requests if p.endswith("/commit") and s == 200]
    assert len(commits) == 2
    assert {p["spec"]["dt"]: p["recordCount"] for p in entry.partitions.values()} == {
        "a": 2,
        "b": 1,
    }
    assert rest_catalog.tokens_vended >= 1


def test_expired_credentials_are_refused(rest_catalog: RestCatalogServer) -> None:
    import s3fs

    key, secret, session, _ = rest_catalog.gate.issue(ttl_ms=-1)
    fs = s3fs.S3FileSystem(
        key=key,
        secret=secret,
        token=session,
        endpoint_url=rest_catalog.data_endpoint,
        skip_instance_cache=True,
    )
    with pytest.raises(PermissionError):
        fs.ls("lake")
    assert key in rest_catalog.gate.refused
