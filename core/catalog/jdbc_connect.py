"""Connections to a JDBC catalog's database through Python DB-API drivers: SQLite (the
standard library; what pypaimon's JdbcCatalog writes) and PostgreSQL (psycopg 3, the
``postgres`` extra). The catalog's ``uri`` is the JDBC URL Paimon Java uses
(``jdbc:sqlite:/path/catalog.db``, ``jdbc:postgresql://host:5432/db``), its ``jdbc.*``
options the driver properties (``jdbc.user``, ``jdbc.password``)."""

from __future__ import annotations

import contextlib
import sqlite3
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs, urlparse

from core.errors import CatalogConfigError, CatalogUnreachableError, MissingDependencyError

_PREFIX = "jdbc:"
_CONNECT_TIMEOUT_S = 10


@dataclass(frozen=True)
class JdbcSettings:
    """How to reach the catalog's database (picklable: no live connection)."""

    uri: str
    properties: Mapping[str, str] = field(default_factory=dict)

    @classmethod
    def of(cls, options: Mapping[str, str], source: str) -> JdbcSettings:
        uri = options.get("uri", "").strip()
        if not uri.startswith(_PREFIX):
            raise CatalogConfigError(
                f"{source}: uri {uri!r} is not a JDBC URL",
                hint="e.g. jdbc:sqlite:/path/catalog.db or jdbc:postgresql://host:5432/db",
            )
        props = {k[len("jdbc.") :]: v for k, v in options.items() if k.startswith("jdbc.")}
        settings = cls(uri, props)
        if settings.protocol not in ("sqlite", "postgresql"):
            raise CatalogConfigError(
                f"{source}: JDBC catalogs on {settings.protocol} are not supported",
                hint="supported: jdbc:sqlite:..., jdbc:postgresql://...",
            )
        return settings

    @property
    def protocol(self) -> str:
        return self.uri[len(_PREFIX) :].split(":", 1)[0].lower()

    @property
    def shown(self) -> str:
        """The URL without credentials a query string may carry."""
        return self.uri.split("?", 1)[0]

    def connect(self) -> Connection:
        try:
            if self.protocol == "sqlite":
                return Connection("sqlite", _sqlite(self.uri[len(_PREFIX + "sqlite:") :]))
            return Connection("postgresql", _postgresql(self.uri, self.properties))
        except CatalogUnreachableError:
            raise
        except Exception as exc:  # noqa: BLE001 - each driver raises its own errors
            raise CatalogUnreachableError(
                f"cannot reach the JDBC catalog {self.shown}: {_first_line(exc)}",
                hint="check the catalog's uri and jdbc.user/jdbc.password, and that the "
                "database is up",
            ) from None


def _sqlite(target: str) -> Any:
    # Never create a database: a mistyped path must not look like an empty catalog.
    if target.startswith("file:"):
        return sqlite3.connect(target, uri=True, check_same_thread=False, isolation_level=None)
    uri = f"file:{target}?mode=rw"
    return sqlite3.connect(uri, uri=True, check_same_thread=False, isolation_level=None)


def _postgresql(uri: str, properties: Mapping[str, str]) -> Any:
    try:
        import psycopg
    except ImportError as exc:
        raise MissingDependencyError(
            "a JDBC catalog on PostgreSQL needs the psycopg driver",
            hint="pip install 'paimon-cli[postgres]'",
        ) from exc
    url = urlparse(uri[len(_PREFIX) :])
    props = {**properties, **{k: v[0] for k, v in parse_qs(url.query).items()}}
    kwargs: dict[str, Any] = {
        "host": props.pop("host", url.hostname or "localhost"),
        "port": int(props.pop("port", url.port or 5432)),
        "dbname": url.path.lstrip("/") or props.pop("dbname", ""),
        "user": props.pop("user", props.pop("username", None)),
        "password": props.pop("password", None),
        "connect_timeout": _CONNECT_TIMEOUT_S,
        "autocommit": True,
    }
    return psycopg.connect(**kwargs)


class Connection:
    """One autocommitting connection; statements are written with ``?`` placeholders and
    serialized (maintain may use the catalog from several threads)."""

    def __init__(self, protocol: str, raw: Any) -> None:
        self.protocol = protocol
        self.raw = raw
        self._lock = threading.Lock()

    def _sql(self, sql: str) -> str:
        return sql if self.protocol == "sqlite" else sql.replace("?", "%s")

    def query(self, sql: str, args: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        with self._lock:
            cursor = self.raw.cursor()
            try:
                cursor.execute(self._sql(sql), tuple(args))
                return list(cursor.fetchall())
            finally:
                cursor.close()

    def execute(self, sql: str, args: Sequence[Any] = ()) -> int:
        with self._lock:
            cursor = self.raw.cursor()
            try:
                cursor.execute(self._sql(sql), tuple(args))
                return int(cursor.rowcount)
            finally:
                cursor.close()

    @property
    def errors(self) -> tuple[type[Exception], type[Exception]]:
        """(any error of the driver, a unique-key violation)."""
        if self.protocol == "sqlite":
            return sqlite3.Error, sqlite3.IntegrityError
        import psycopg

        return psycopg.Error, psycopg.errors.UniqueViolation

    def close(self) -> None:
        # Closing a broken connection may fail too; nothing is left to release then.
        with contextlib.suppress(Exception):
            self.raw.close()


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip() or type(exc).__name__
    return text.splitlines()[0]
