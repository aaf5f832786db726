"""The filesystem catalog: tables are directories under a warehouse (``<db>.db/<table>``),
or are given by their location. Today's addressing, unchanged: a path, ``db.table`` and
globs with ``--warehouse`` (or a paimon.yaml with ``metastore: filesystem``)."""

from __future__ import annotations

from collections.abc import Mapping

from core.catalog.catalog import Catalog, TableRef
from core.catalog.identifier import Identifier
from core.errors import TableNotFoundError
from core.io.fileio import FileIO, join, normalize_path
from core.table.catalog_env import PATH, CatalogEnvironment
from core.table.table import PaimonTable
from core.table.warehouse import looks_like_location, resolve_tables

_DB_SUFFIX = ".db"


class FileSystemCatalog(Catalog):
    kind = "filesystem"

    def __init__(self, name: str, fileio: FileIO, warehouse: str | None) -> None:
        super().__init__(name, fileio)
        self.warehouse = normalize_path(warehouse) if warehouse else None

    @property
    def where(self) -> str:
        return self.warehouse or "the table's location"

    def list_databases(self) -> list[str]:
        if self.warehouse is None:
            return []
        return sorted(
            i.name[: -len(_DB_SUFFIX)]
            for i in self.fileio.list_dir(self.warehouse)
            if i.is_dir and i.name.endswith(_DB_SUFFIX)
        )

    def list_tables(self, database: str) -> list[str]:
        if self.warehouse is None:
            return []
        db_path = join(self.warehouse, database + _DB_SUFFIX)
        return sorted(
            i.name
            for i in self.fileio.list_dir(db_path)
            if i.is_dir and self.fileio.exists(join(i.path, "schema"))
        )

    def table_location(self, identifier: Identifier) -> str | None:
        if self.warehouse is None:
            return None
        location = join(self.warehouse, identifier.database + _DB_SUFFIX, identifier.table)
        return location if self.fileio.exists(join(location, "schema")) else None

    def environment(self, identifier: Identifier | None) -> CatalogEnvironment:
        # A table given by its location belongs to no catalog but its directory; under
        # --warehouse it is shown as it always was (its location).
        if identifier is None or not self.configured:
            return PATH
        return super().environment(identifier)

    def resolve(self, spec: str) -> list[TableRef]:
        # Exactly today's resolution (core.table.warehouse): locations, DB.TABLE, globs over
        # the warehouse's directories (the filesystem catalog's own listing).
        located = looks_like_location(spec)
        refs = []
        for location in resolve_tables(spec, self.warehouse, self.fileio):
            ident = None if located else self._identifier_of(location)
            refs.append(TableRef(str(ident) if ident else location, location, ident))
        return refs

    def load_table(
        self, ref: TableRef, *, branch: str = "main", dynamic_options: Mapping[str, str] | None
    ) -> PaimonTable:
        try:
            return super().load_table(ref, branch=branch, dynamic_options=dynamic_options)
        except TableNotFoundError as exc:
            # db.table under a warehouse that has no such directory: name the close ones.
            if ref.identifier is None or exc.hint or self.fileio.exists(ref.location):
                raise
            raise self.not_found(ref.identifier) from None

    def _identifier_of(self, location: str) -> Identifier | None:
        """``db.table`` of a directory ``<warehouse>/<db>.db/<table>``."""
        if self.warehouse is None:
            return None
        parts = location.rstrip("/").split("/")
        if len(parts) < 2 or not parts[-2].endswith(_DB_SUFFIX):
            return None
        if join(self.warehouse, parts[-2], parts[-1]) != location.rstrip("/"):
            return None
        return Identifier(parts[-2][: -len(_DB_SUFFIX)], parts[-1])
