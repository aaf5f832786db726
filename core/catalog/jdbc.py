"""Paimon's JDBC catalog, read as Java's JdbcCatalog and pypaimon's lay it out.

Tables are rows of ``paimon_tables`` (``catalog_key``, ``database_name``, ``table_name``);
databases are those names plus those of ``paimon_database_properties``; a table lives at
``<warehouse>/<db>.db/<table>``. The catalog's rows are only read here: maintenance never
creates, drops or renames tables. Commits take Paimon's distributed lock when
``lock.enabled`` is true, or, unset, when the warehouse is on an object store (Java's
default), see ``jdbc_lock``.
"""

from __future__ import annotations

from core.catalog.catalog import Catalog
from core.catalog.config import CatalogConfig, require
from core.catalog.identifier import Identifier
from core.catalog.jdbc_connect import JdbcSettings
from core.catalog.jdbc_lock import JdbcLock
from core.catalog.options import duration_ms, flag
from core.errors import CatalogConfigError, CatalogUnreachableError
from core.io.fileio import FileIO, join, normalize_path
from core.io.locations import protocol_of
from core.table.catalog_env import NO_LOCK, CatalogEnvironment

# Paimon's CatalogOptions defaults
_ACQUIRE_TIMEOUT_MS = 8 * 60 * 1000
_CHECK_MAX_SLEEP_MS = 8 * 1000
_FILE_SYSTEMS = frozenset({"", "file", "local", "hdfs", "viewfs"})


class JdbcCatalog(Catalog):
    kind = "jdbc"

    def __init__(self, config: CatalogConfig, fileio: FileIO) -> None:
        super().__init__(config.name, fileio)
        opts, source = config.options, config.source
        self.root = normalize_path(require(config, "warehouse"))
        self.warehouse = self.root
        require(config, "uri")
        self.settings = JdbcSettings.of(opts, source)
        self.catalog_key = opts.get("catalog-key") or "jdbc"
        enabled = flag(opts, "lock.enabled", source)
        lock_type = (opts.get("lock.type") or "jdbc").strip().lower()
        if enabled is not False and lock_type != "jdbc":
            # Java then locks through that service (Hive, ZooKeeper), not the JDBC lock.
            raise CatalogConfigError(
                f"{source}: lock.type {lock_type} is a lock paimon-cli cannot take",
                hint="paimon-cli takes the JDBC catalog's own lock (lock.type jdbc or unset)",
            )
        # Java: lock.enabled, else whether the warehouse is on an object store.
        self.lock_enabled = (
            enabled if enabled is not None else protocol_of(self.root) not in _FILE_SYSTEMS
        )
        self.timeout_ms = duration_ms(opts, "lock-acquire-timeout", _ACQUIRE_TIMEOUT_MS, source)
        self.max_sleep_ms = duration_ms(opts, "lock-check-max-sleep", _CHECK_MAX_SLEEP_MS, source)
        self.key_max_length = int(opts.get("lock-key-max-length") or 255)
        self.conn = self.settings.connect()

    @property
    def where(self) -> str:
        return f"{self.settings.shown}, warehouse {self.root}"

    def _rows(self, sql: str, *args: str) -> list[str]:
        any_error = self.conn.errors[0]
        try:
            return [str(r[0]) for r in self.conn.query(sql, [self.catalog_key, *args])]
        except any_error as exc:
            raise CatalogUnreachableError(
                f"the JDBC catalog {self.settings.shown} could not be read: "
                f"{str(exc).strip().splitlines()[0]}",
                hint="is it a Paimon JDBC catalog (its tables paimon_tables and "
                "paimon_database_properties), and may this user read it?",
            ) from None

    def list_databases(self) -> list[str]:
        tables = self._rows(
            "SELECT DISTINCT database_name FROM paimon_tables WHERE catalog_key = ?"
        )
        props = self._rows(
            "SELECT DISTINCT database_name FROM paimon_database_properties WHERE catalog_key = ?"
        )
        return sorted(set(tables) | set(props))

    def list_tables(self, database: str) -> list[str]:
        return sorted(
            self._rows(
                "SELECT table_name FROM paimon_tables WHERE catalog_key = ? AND database_name = ?",
                database,
            )
        )

    def table_location(self, identifier: Identifier) -> str | None:
        found = self._rows(
            "SELECT table_name FROM paimon_tables "
            "WHERE catalog_key = ? AND database_name = ? AND table_name = ?",
            identifier.database,
            identifier.table,
        )
        if not found:
            return None
        return join(self.root, f"{identifier.database}.db", identifier.table)

    def environment(self, identifier: Identifier | None) -> CatalogEnvironment:
        env = super().environment(identifier)
        if identifier is None or not self.lock_enabled:
            return env
        lock = JdbcLock(
            self.settings,
            f"{self.catalog_key}.{identifier.database}.{identifier.table}",
            timeout_ms=self.timeout_ms,
            max_sleep_ms=self.max_sleep_ms,
            key_max_length=self.key_max_length,
        )
        return CatalogEnvironment(
            catalog=env.catalog,
            kind=env.kind,
            identifier=env.identifier,
            where=env.where,
            lock=lock if self.lock_enabled else NO_LOCK,
        )

    def close(self) -> None:
        self.conn.close()
