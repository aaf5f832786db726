"""A Hive Metastore connection: the few calls paimon-cli makes, typed, with every failure
turned into one clear error.

Thrift over a plain socket with the binary protocol and a buffered transport, the
metastore's defaults (no SASL: a kerberized metastore is refused when it drops the
connection). thriftpy2 is the optional extra ``paimon-cli[hive]``; without it, opening a
``metastore: hive`` catalog says how to install it.
"""

from __future__ import annotations

import contextlib
import io
import logging
import socket
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, TypeVar
from urllib.parse import urlsplit

from core.catalog.hive_idl import IDL
from core.errors import CatalogConfigError, CatalogUnreachableError, MissingDependencyError

logger = logging.getLogger(__name__)

T = TypeVar("T")
DEFAULT_TIMEOUT_MS = 60_000  # thriftpy2's read timeout; Hive's client default is 600 s
_THRIFT: Any = None


def thrift() -> Any:
    """The metastore's Thrift module (loaded once), or a missing-dependency error."""
    global _THRIFT
    if _THRIFT is None:
        try:
            import thriftpy2
        except ImportError:
            raise MissingDependencyError(
                "a Hive Metastore catalog (metastore: hive) needs the thriftpy2 package",
                hint="pip install 'paimon-cli[hive]'",
            ) from None
        _THRIFT = thriftpy2.load_fp(io.StringIO(IDL), module_name="paimon_cli_hms_thrift")
    return _THRIFT


class MetastoreRefusedError(CatalogUnreachableError):
    """The metastore answered, with an error (a MetaException, an unknown object)."""

    kind = "metastore_refused"


@dataclass(frozen=True)
class HiveTable:
    """A table as the metastore holds it: what paimon-cli reads of it."""

    database: str
    name: str
    location: str | None
    parameters: dict[str, str]
    input_format: str | None
    table_type: str | None
    partition_keys: tuple[str, ...]
    raw: Any = field(repr=False, compare=False)


def parse_uris(value: str) -> list[tuple[str, int]]:
    """``thrift://host:port[,thrift://host2:port2]`` (Hive's hive.metastore.uris)."""
    out = []
    for part in (p.strip() for p in value.split(",")):
        if not part:
            continue
        parsed = urlsplit(part)
        try:
            port = parsed.port
        except ValueError:
            port = None
        if parsed.scheme != "thrift" or not parsed.hostname or port is None:
            raise CatalogConfigError(
                f"uri {part!r} is not a metastore address",
                hint="a Hive catalog's uri is thrift://HOST:PORT (several: comma-separated)",
            )
        out.append((parsed.hostname, port))
    if not out:
        raise CatalogConfigError("a hive catalog needs 'uri: thrift://HOST:PORT'")
    return out


class MetastoreClient:
    """One connection to the first metastore of ``uri`` that answers; close it after use."""

    def __init__(self, uri: str, *, timeout_ms: int = DEFAULT_TIMEOUT_MS) -> None:
        self.uri = uri
        self._client: Any = None
        hms = thrift()
        self._errors = _errors(hms)
        problems = []
        for host, port in parse_uris(uri):
            try:
                self._client = _connect(hms, host, port, timeout_ms)
                self.where = f"thrift://{host}:{port}"
                return
            except self._errors.transport as exc:
                problems.append(f"thrift://{host}:{port}: {_reason(exc)}")
        raise CatalogUnreachableError(
            f"the Hive Metastore cannot be reached ({'; '.join(problems)})",
            hint="check the catalog's uri and that the metastore is running",
        )

    def close(self) -> None:
        if self._client is not None:
            with contextlib.suppress(Exception):  # closing a dead socket tells nothing
                self._client.close()
            self._client = None

    def __enter__(self) -> MetastoreClient:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    # -- calls ----------------------------------------------------------------------------
    def databases(self) -> list[str]:
        return sorted(self._call("list databases", lambda c: c.get_all_databases()))

    def tables(self, database: str) -> list[str]:
        what = f"list the tables of {database}"
        return sorted(self._call(what, lambda c: c.get_all_tables(database)))

    def database_location(self, database: str) -> str | None:
        found = self._optional(f"read database {database}", lambda c: c.get_database(database))
        return None if found is None else found.locationUri

    def table(self, database: str, name: str) -> HiveTable | None:
        raw = self._optional(f"read table {database}.{name}", lambda c: c.get_table(database, name))
        if raw is None:
            return None
        sd = raw.sd
        return HiveTable(
            database=raw.dbName or database,
            name=raw.tableName or name,
            location=sd.location if sd is not None else None,
            parameters=dict(raw.parameters or {}),
            input_format=sd.inputFormat if sd is not None else None,
            table_type=raw.tableType,
            partition_keys=tuple(k.name for k in raw.partitionKeys or ()),
            raw=raw,
        )

    def partitions(self, database: str, table: str) -> list[list[str]]:
        """Every partition's values, in the order of the table's partition keys."""
        found = self._call(
            f"list the partitions of {database}.{table}",
            lambda c: c.get_partitions(database, table, -1),
        )
        return [list(p.values) for p in found]

    def drop_partition(self, database: str, table: str, values: list[str]) -> bool:
        """Drop one partition's entry (never its data); False when it was not there."""
        hms = thrift()
        try:
            return bool(self._call_raw(lambda c: c.drop_partition(database, table, values, False)))
        except hms.NoSuchObjectException:
            return False
        except self._errors.answered as exc:
            raise self._refused(
                f"drop partition {'/'.join(map(str, values))} of {database}.{table}", exc
            ) from None

    def add_partition(self, partition: Any) -> None:
        self._call("add a partition", lambda c: c.add_partition(partition))

    def create_database(self, database: Any) -> None:
        self._call(f"create database {database.name}", lambda c: c.create_database(database))

    def create_table(self, table: Any) -> None:
        what = f"create table {table.dbName}.{table.tableName}"
        self._call(what, lambda c: c.create_table(table))

    def alter_table(self, database: str, name: str, table: Any) -> None:
        self._call(f"alter table {database}.{name}", lambda c: c.alter_table(database, name, table))

    def lock(self, request: Any) -> Any:
        return self._call("request the table lock", lambda c: c.lock(request))

    def check_lock(self, lock_id: int) -> Any:
        hms = thrift()
        req = hms.CheckLockRequest(lockid=lock_id)
        return self._call(f"check lock {lock_id}", lambda c: c.check_lock(req))

    def unlock(self, lock_id: int) -> None:
        hms = thrift()
        req = hms.UnlockRequest(lockid=lock_id)
        self._call(f"release lock {lock_id}", lambda c: c.unlock(req))

    def show_locks(self, database: str, table: str) -> list[Any]:
        hms = thrift()
        req = hms.ShowLocksRequest(dbname=database, tablename=table)
        found = self._call("list locks", lambda c: c.show_locks(req))
        return list(found.locks or [])

    # -- errors ---------------------------------------------------------------------------
    def _optional(self, what: str, call: Callable[[Any], T]) -> T | None:
        hms = thrift()
        try:
            return self._call_raw(call)
        except hms.NoSuchObjectException:
            return None
        except self._errors.answered as exc:
            raise self._refused(what, exc) from None

    def _call(self, what: str, call: Callable[[Any], T]) -> T:
        try:
            return self._call_raw(call)
        except self._errors.answered as exc:
            raise self._refused(what, exc) from None

    def _call_raw(self, call: Callable[[Any], T]) -> T:
        if self._client is None:
            raise CatalogUnreachableError(f"the connection to {self.uri} is closed")
        try:
            return call(self._client)
        except self._errors.transport as exc:
            self.close()
            raise CatalogUnreachableError(
                f"the Hive Metastore at {self.where} stopped answering: {_reason(exc)}",
                hint="check that the metastore is running, then run again",
            ) from None

    def _refused(self, what: str, exc: BaseException) -> MetastoreRefusedError:
        message = getattr(exc, "message", None) or type(exc).__name__
        first = str(message).strip().splitlines()[0] if str(message).strip() else str(message)
        return MetastoreRefusedError(
            f"the Hive Metastore at {self.where} refused to {what}: {first}"
        )


@dataclass(frozen=True)
class _Errors:
    transport: tuple[type[BaseException], ...]
    answered: tuple[type[BaseException], ...]


def _errors(hms: Any) -> _Errors:
    from thriftpy2.protocol.exc import TProtocolException
    from thriftpy2.thrift import TApplicationException, TException
    from thriftpy2.transport import TTransportException

    answered = (
        hms.MetaException,
        hms.NoSuchObjectException,
        hms.AlreadyExistsException,
        hms.InvalidObjectException,
        hms.NoSuchTxnException,
        hms.TxnAbortedException,
        hms.NoSuchLockException,
        hms.TxnOpenException,
        TApplicationException,
    )
    transport = (OSError, EOFError, TTransportException, TProtocolException)
    return _Errors(transport, (*answered, TException))


def _connect(hms: Any, host: str, port: int, timeout_ms: int) -> Any:
    from thriftpy2.rpc import make_client

    # thriftpy2's defaults are the metastore's: the binary protocol, a buffered transport.
    return make_client(hms.ThriftHiveMetastore, host, port, timeout=timeout_ms)


def _reason(exc: BaseException) -> str:
    if isinstance(exc, socket.timeout):
        return "timed out"
    text = str(getattr(exc, "message", None) or exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


@contextmanager
def connected(uri: str, *, timeout_ms: int = DEFAULT_TIMEOUT_MS) -> Iterator[MetastoreClient]:
    client = MetastoreClient(uri, timeout_ms=timeout_ms)
    try:
        yield client
    finally:
        client.close()
