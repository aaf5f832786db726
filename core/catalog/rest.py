"""Paimon's REST catalog (the API Alibaba DLF and other servers implement), as a client.

The server owns a table's name, location, schema and options, its latest snapshot and its
partition statistics: tables are found and loaded through it, storage is reached with the
credentials it vends for each table (renewed before they expire), and commits go through
its commit endpoint (``core.write.commit``, through the table's :class:`RestEnvironment`).
A table whose files hold a snapshot the server never committed (or lack one it did) is
refused before anything runs: something wrote past the catalog (DECISIONS D18).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from core.catalog.catalog import Catalog, TableRef
from core.catalog.config import CatalogConfig
from core.catalog.identifier import Identifier
from core.catalog.rest_http import RestHttp, RestNotFoundError, path_of
from core.catalog.rest_table import RestEnvironment, RestTable
from core.catalog.rest_token import VendedFileIO
from core.errors import CatalogConfigError, CatalogDriftError
from core.format.model import Snapshot
from core.io.fileio import FileIO
from core.table.table import PaimonTable, open_table

# Authentication Paimon's REST catalog defines; only the bearer token is offered here.
_BEARER = "bear"


class RestCatalog(Catalog):
    kind = "rest"

    def __init__(self, config: CatalogConfig, fileio: FileIO, *, uri: str, warehouse: str):
        super().__init__(config.name, fileio)
        options = config.options
        provider = (options.get("token.provider") or "").strip().lower()
        token = options.get("token")
        if provider and provider != _BEARER:
            raise CatalogConfigError(
                f"{config.source}: token.provider {provider!r} is not supported",
                hint="use 'token.provider: bear' with 'token: <bearer token>'",
            )
        if provider == _BEARER and not token:
            raise CatalogConfigError(
                f"{config.source}: token.provider bear needs 'token'",
                hint="add 'token: <bearer token>' to the catalog's options",
            )
        headers = {k[len("header.") :]: v for k, v in options.items() if k.startswith("header.")}
        self.uri = uri
        self.http = RestHttp(uri, token=token, headers=headers)
        # The server's defaults, then ours, then its overrides (Paimon's ConfigResponse.merge).
        answer = self.http.get(path_of("v1", "config"), {"warehouse": warehouse}) or {}
        self.options: dict[str, str] = {
            **_strings(answer.get("defaults")),
            **options,
            **_strings(answer.get("overrides")),
        }
        self.prefix = self.options.get("prefix", "")
        self.data_token = self.options.get("data-token.enabled", "").lower() == "true"
        self._tables: dict[Identifier, dict[str, Any]] = {}

    @property
    def where(self) -> str:
        return self.uri

    # -- listing ------------------------------------------------------------------------------
    def _paged(self, path: str, key: str) -> list[str]:
        names: list[str] = []
        token: str | None = None
        while True:
            answer = self.http.get(path, {"pageToken": token} if token else None) or {}
            names += [str(n) for n in answer.get(key) or []]
            token = answer.get("nextPageToken")
            if not token:
                return sorted(names)

    def list_databases(self) -> list[str]:
        return self._paged(path_of("v1", self.prefix, "databases"), "databases")

    def list_tables(self, database: str) -> list[str]:
        try:
            return self._paged(
                path_of("v1", self.prefix, "databases", database, "tables"), "tables"
            )
        except RestNotFoundError:
            return []

    def _table(self, identifier: Identifier) -> dict[str, Any] | None:
        if identifier not in self._tables:
            path = path_of(
                "v1", self.prefix, "databases", identifier.database, "tables", identifier.table
            )
            try:
                self._tables[identifier] = self.http.get(path) or {}
            except RestNotFoundError:
                return None
        return self._tables[identifier]

    def table_location(self, identifier: Identifier) -> str | None:
        answer = self._table(identifier)
        return None if answer is None else str(answer.get("path") or "") or None

    # -- loading ------------------------------------------------------------------------------
    def server_table(self, identifier: Identifier) -> RestTable:
        answer = self._table(identifier) or {}
        return RestTable(
            self.http, self.prefix, identifier.database, identifier.table, answer.get("id")
        )

    def storage(self, identifier: Identifier | None) -> FileIO:
        if not self.data_token or identifier is None:
            return self.fileio
        return VendedFileIO(
            self.fileio.storage_options,
            self.server_table(identifier).data_token,
            max_requests_per_second=self.fileio.max_requests_per_second,
        )

    def environment(self, identifier: Identifier | None) -> RestEnvironment:
        return RestEnvironment(
            catalog=self.name,
            kind=self.kind,
            identifier=str(identifier) if identifier else None,
            where=self.where,
            server=self.server_table(identifier) if identifier else None,
        )

    def load_table(
        self, ref: TableRef, *, branch: str = "main", dynamic_options: Mapping[str, str] | None
    ) -> PaimonTable:
        if ref.identifier is None:
            return super().load_table(ref, branch=branch, dynamic_options=dynamic_options)
        env = self.environment(ref.identifier)
        fileio = self.storage(ref.identifier)
        table = open_table(
            ref.location, fileio=fileio, branch=branch, dynamic_options=dynamic_options, catalog=env
        )
        if branch == "main":  # the server keeps the main branch's latest snapshot only
            check_in_step(table, env)
        return table

    def snapshot_drift(self, identifier: Identifier, location: str) -> str | None:
        env = self.environment(identifier)
        table = open_table(location, fileio=self.storage(identifier), catalog=env)
        return drift_between(table, env)


def drift_between(table: PaimonTable, env: RestEnvironment) -> str | None:
    """How the server's latest snapshot and the table's files' differ; None when in step.
    Asked twice before answering: a writer committing between the two reads is no drift."""
    for _ in range(2):
        theirs = env.latest_snapshot("main")
        ours = table.snapshots.latest()
        if _in_step(theirs, ours):
            return None
    server_says = "none" if theirs is None else f"snapshot {theirs.get('id')}"
    files_say = "none" if ours is None else f"snapshot {ours.id}"
    return (
        f"the REST catalog's latest snapshot is {server_says}, the table's files hold "
        f"{files_say}: a commit went past the catalog (or the catalog lost one)"
    )


def _in_step(theirs: Mapping[str, Any] | None, ours: Snapshot | None) -> bool:
    if theirs is None or ours is None:
        return theirs is None and ours is None
    same_uuid = theirs.get("uuid") in (None, ours.raw.get("uuid"))
    return int(theirs.get("id", -1)) == ours.id and same_uuid


def check_in_step(table: PaimonTable, env: RestEnvironment) -> None:
    """Refuse a table whose latest snapshot on storage is not the server's: a commit went
    past the catalog (a writer that created a snapshot file itself), or the catalog lost
    one. Acting on either would build on a history one of the two does not have."""
    differs = drift_between(table, env)
    if differs is None:
        return
    raise CatalogDriftError(
        f"{table.name}: {differs}; nothing was changed",
        hint="find the writer that committed without the catalog and repair the table through "
        "the catalog's server (e.g. roll back with Paimon) before maintaining it",
    )


def _strings(value: Any) -> dict[str, str]:
    if not isinstance(value, dict):
        return {}
    return {str(k): str(v) for k, v in value.items() if v is not None}
