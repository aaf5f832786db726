"""``inspect --check`` over a catalog: where the catalog and storage disagree.

- an entry whose location is gone: the catalog names a table whose directory holds no
  schema (dropped on storage behind the catalog's back, or a mistyped warehouse);
- a table directory no entry names: ``<warehouse>/<db>.db/<table>`` holds a schema, yet the
  catalog lists no such table (dropped from the catalog and left on storage, or written by
  another catalog into this warehouse). Its files are invisible to every reader of the
  catalog, and a glob over the catalog never maintains it.

Both are reported, never acted on: which side is right is a person's call. A filesystem
catalog lists the directories themselves, so only its entries' schemas can be gone.
"""

from __future__ import annotations

from dataclasses import dataclass

from core.catalog.catalog import Catalog
from core.catalog.identifier import Identifier
from core.io.fileio import join

_DB_SUFFIX = ".db"
LOCATION_GONE = "location-gone"
UNLISTED_TABLE = "unlisted-table"
SNAPSHOT_DRIFT = "snapshot-drift"  # REST: the server's latest snapshot is not the files'


@dataclass(frozen=True, slots=True)
class Drift:
    kind: str  # LOCATION_GONE | UNLISTED_TABLE | SNAPSHOT_DRIFT
    identifier: str
    location: str
    detail: str = ""

    @property
    def message(self) -> str:
        if self.kind == SNAPSHOT_DRIFT:
            return f"catalog entry {self.identifier}: {self.detail}"
        if self.kind == LOCATION_GONE:
            return f"catalog entry {self.identifier}: its location {self.location} holds no table"
        return f"{self.location} holds a table the catalog has no entry for ({self.identifier})"


def catalog_drift(catalog: Catalog, spec: str) -> list[Drift]:
    """Drift between ``catalog`` and its warehouse, over the tables ``spec`` (a glob or a
    ``db.table``) covers."""
    wanted = Identifier.parse(spec)
    fileio = catalog.fileio
    listed: set[Identifier] = set()
    drift = []
    for db in catalog.list_databases():
        if not wanted.matches_database(db):
            continue
        for table in catalog.list_tables(db):
            ident = Identifier(db, table)
            if not wanted.matches(db, table):
                continue
            listed.add(ident)
            location = catalog.table_location(ident)
            storage = catalog.storage(ident)  # a REST table's own vended credentials
            if location is None:
                continue
            if not storage.exists(join(location, "schema")):
                drift.append(Drift(LOCATION_GONE, str(ident), location))
                continue
            differs = catalog.snapshot_drift(ident, location)
            if differs is not None:
                drift.append(Drift(SNAPSHOT_DRIFT, str(ident), location, differs))
    root = catalog.warehouse
    if root is None or not fileio.exists(root):
        return drift
    for db_dir in sorted(fileio.list_dir(root), key=lambda i: i.name):
        if not (db_dir.is_dir and db_dir.name.endswith(_DB_SUFFIX)):
            continue
        db = db_dir.name[: -len(_DB_SUFFIX)]
        if not wanted.matches_database(db):
            continue
        for entry in sorted(fileio.list_dir(db_dir.path), key=lambda i: i.name):
            ident = Identifier(db, entry.name)
            if (
                entry.is_dir
                and wanted.matches(db, entry.name)
                and ident not in listed
                and fileio.exists(join(entry.path, "schema"))
            ):
                drift.append(Drift(UNLISTED_TABLE, str(ident), entry.path))
    return drift
