"""Typed errors raised by the engine; the CLI maps each `kind` to a message and exit code."""

from __future__ import annotations

from typing import Any


def _rebuild(cls: type[PaimonError], message: str, state: dict[str, Any]) -> PaimonError:
    exc = cls.__new__(cls)
    Exception.__init__(exc, message)
    exc.__dict__.update(state)
    return exc


class PaimonError(Exception):
    """Base of every error the engine raises on purpose."""

    kind = "error"
    # maintain: whether a step failing with this error stops the steps after it
    blocks_later_steps = True

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __reduce__(self) -> tuple[Any, ...]:
        # Errors raised on Spark executors travel back pickled, whatever their __init__.
        return (_rebuild, (type(self), self.message, dict(self.__dict__)))


class TableNotFoundError(PaimonError):
    kind = "table_not_found"


class CorruptMetadataError(PaimonError):
    """A metadata file exists but cannot be decoded or misses a required field."""

    kind = "corrupt_metadata"

    def __init__(self, path: str, reason: str, *, hint: str | None = None) -> None:
        super().__init__(f"corrupt metadata {path}: {reason}", hint=hint)
        self.path = path
        self.reason = reason


class MissingFileError(PaimonError):
    """A file the metadata references is absent."""

    kind = "missing_file"

    def __init__(self, path: str, what: str, *, hint: str | None = None) -> None:
        super().__init__(f"{what} not found: {path}", hint=hint)
        self.path = path


class InvalidOptionError(PaimonError):
    """An impossible value. ``param`` names the request field (the command-line option of
    the same name) when the value came from one: the shell shows it as a usage error on
    that option."""

    kind = "invalid_option"

    def __init__(self, message: str, *, hint: str | None = None, param: str | None = None):
        super().__init__(message, hint=hint)
        self.param = param


class SafetyRefusalError(PaimonError):
    """Refused because acting could delete or hide live data."""

    kind = "safety_refusal"


class StalePlanError(PaimonError):
    kind = "stale_plan"


class StorageError(PaimonError):
    kind = "storage_error"


class StorageAccessError(StorageError):
    """Storage refused or could not be reached: no usable credentials, a missing permission,
    an unreachable endpoint (network, DNS, TLS), a client library that does not load."""

    kind = "storage_access"


class WriteOutcomeUnknownError(StorageError):
    """A write failed in a way that may still have stored it (a 5xx after the upload, a
    dropped connection, a timeout), and reading it back did not show it as ours."""

    kind = "storage_outcome_unknown"


class EngineUnavailableError(PaimonError):
    """The requested execution engine cannot start (pyspark or Java missing, ...)."""

    kind = "engine_unavailable"


class MissingDependencyError(PaimonError):
    """This installation lacks a library the table needs (an Avro codec): not table damage."""

    kind = "missing_dependency"


class EngineError(PaimonError):
    """The execution engine itself failed mid-run (a Spark job, or its JVM that died)."""

    kind = "engine_error"


class PartialFailureError(PaimonError):
    """Some actions of an execution failed; `report` says which."""

    kind = "partial_failure"

    def __init__(self, message: str, report: Any) -> None:
        super().__init__(message)
        self.report = report


class MergeFunctionError(PaimonError):
    """Paimon's merge function would throw on this data (a delete record the merge engine
    cannot take, a retraction an aggregator cannot undo, an overflow): nothing is committed."""

    kind = "merge_failed"


class CatalogConfigError(InvalidOptionError):
    """A catalog configuration that cannot be used: a paimon.yaml key Paimon does not
    define (a typo), a missing required key, an unknown metastore, an undefined name.
    A usage error on --catalog (exit 2)."""

    kind = "catalog_config"

    def __init__(self, message: str, *, hint: str | None = None):
        super().__init__(message, hint=hint, param="catalog")


class CatalogUnreachableError(PaimonError):
    """The catalog's server or database cannot be reached, or refused us."""

    kind = "catalog_unreachable"


class CatalogLockError(PaimonError):
    """The catalog's lock (Paimon's JDBC distributed lock) was not had within its timeout:
    nothing was committed."""

    kind = "catalog_lock"


class RunInterruptedError(PaimonError):
    """SIGINT or SIGTERM stopped a run at a safe point; ``signum`` says which (the shell
    exits 128 + it, as a process the signal killed would)."""

    kind = "interrupted"

    def __init__(self, message: str, signum: int) -> None:
        super().__init__(message)
        self.signum = signum


class CatalogAuthError(PaimonError):
    """The catalog refused our credentials (HTTP 401) or the operation (403)."""

    kind = "catalog_auth"


class CatalogRefusedError(PaimonError):
    """The catalog answered a change with a refusal: nothing was changed."""

    kind = "catalog_refused"


class CatalogOutcomeUnknownError(PaimonError):
    """A change sent to the catalog got no definite answer (5xx, a dropped connection): it
    may or may not have been applied. Raised to the code that settles it by reading back."""

    kind = "catalog_outcome_unknown"


class CatalogDriftError(PaimonError):
    """The catalog and the table's files disagree (the REST server's latest snapshot is not
    the one on storage): something committed past the catalog, or the catalog lost one."""

    kind = "catalog_drift"
