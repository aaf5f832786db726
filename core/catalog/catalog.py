"""The catalog interface every run goes through to find and load its tables."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass
from types import TracebackType
from typing import ClassVar

from core.catalog.identifier import Identifier, close_names
from core.errors import TableNotFoundError
from core.io.fileio import FileIO
from core.table.catalog_env import CatalogEnvironment
from core.table.table import PaimonTable, open_table


@dataclass(frozen=True)
class TableRef:
    """A table the command line selected: its name as shown, and where it lives."""

    name: str  # ``db.table`` in a catalog; the location for a table given by its path
    location: str
    identifier: Identifier | None = None


class Catalog(ABC):
    """Lists and loads tables; its tables' environments carry what it owns of a commit.

    Opened once per run (``core.catalog.factory.open_catalog``) and closed at its end.
    Subclasses list databases and tables and say where a table lives; resolution of
    ``db.table`` and globs, suggestions for unknown names and loading are shared."""

    kind: ClassVar[str]
    #: the root under which the catalog's tables live as ``<db>.db/<table>``, when it has one
    warehouse: str | None = None

    def __init__(self, name: str, fileio: FileIO) -> None:
        self.name = name  # as the user gave it: a paimon.yaml path or a configured name
        self.fileio = fileio  # storage, with the catalog's credentials
        #: named by --catalog (or the user's default), not --warehouse or a path: its tables'
        #: documents then carry their identifier (--warehouse documents stay as they were)
        self.configured = True

    # -- what each catalog answers --------------------------------------------------------
    @abstractmethod
    def list_databases(self) -> list[str]:
        """The catalog's databases, sorted."""

    @abstractmethod
    def list_tables(self, database: str) -> list[str]:
        """The tables of ``database``, sorted (none for an unknown database)."""

    @abstractmethod
    def table_location(self, identifier: Identifier) -> str | None:
        """Where the table lives; None when the catalog has no such table."""

    @property
    @abstractmethod
    def where(self) -> str:
        """Where the catalog keeps its entries (warehouse, JDBC uri, REST endpoint)."""

    def environment(self, identifier: Identifier | None) -> CatalogEnvironment:
        """What the catalog's tables carry: by default, its name and no lock."""
        return CatalogEnvironment(
            catalog=self.name,
            kind=self.kind,
            identifier=str(identifier) if identifier else None,
            where=self.where,
        )

    def storage(self, identifier: Identifier | None) -> FileIO:
        """The FileIO a table's files are reached with: the catalog's, unless it vends
        credentials per table (REST)."""
        return self.fileio

    def snapshot_drift(self, identifier: Identifier, location: str) -> str | None:
        """How the catalog's latest snapshot of a table differs from its files' (None: in
        step, or the catalog keeps no snapshots)."""
        return None

    def close(self) -> None:  # noqa: B027 - most catalogs hold nothing to release
        """Release connections (a JDBC catalog's)."""

    # -- shared -----------------------------------------------------------------------------
    def resolve(self, spec: str) -> list[TableRef]:
        """The tables ``spec`` names: ``db.table``, or a glob (``db.*``, ``*.*``) matched
        against the catalog's own listing. An unknown table suggests close names."""
        wanted = Identifier.parse(spec)
        if not wanted.is_glob:
            location = self.table_location(wanted)
            if location is None:
                raise self.not_found(wanted)
            return [TableRef(str(wanted), location, wanted)]
        refs = []
        for db in self.list_databases():
            if not wanted.matches_database(db):
                continue
            for table in self.list_tables(db):
                ident = Identifier(db, table)
                if wanted.matches(db, table):
                    location = self.table_location(ident)
                    if location is not None:
                        refs.append(TableRef(str(ident), location, ident))
        if not refs:
            raise TableNotFoundError(f"no table in catalog {self.name} matches {spec!r}")
        return refs

    def not_found(self, wanted: Identifier) -> TableNotFoundError:
        """``wanted`` is not in the catalog: say so, with the closest names it has."""
        databases = self.list_databases()
        if wanted.database not in databases:
            near = close_names(wanted.database, databases)
            what = f"database {wanted.database!r}"
        else:
            tables = [
                str(Identifier(wanted.database, t)) for t in self.list_tables(wanted.database)
            ]
            near = close_names(str(wanted), tables)
            what = f"table {str(wanted)!r}"
        hint = (
            f"did you mean {', '.join(near)}?"
            if near
            else f"list the catalog's tables with: paimon inspect '*.*' --catalog {self.name}"
        )
        return TableNotFoundError(f"catalog {self.name} has no {what}", hint=hint)

    def load_table(
        self, ref: TableRef, *, branch: str = "main", dynamic_options: Mapping[str, str] | None
    ) -> PaimonTable:
        """Open the table ``ref`` names, carrying this catalog's environment."""
        return open_table(
            ref.location,
            fileio=self.fileio,
            branch=branch,
            dynamic_options=dynamic_options,
            catalog=self.environment(ref.identifier),
        )

    def __enter__(self) -> Catalog:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
