"""Choosing a run's catalog, once: ``--catalog``/``PAIMON_CATALOG``, else ``--warehouse``
(the filesystem catalog of today), else the user's default catalog for ``db.table``, else
bare locations."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping

from core.catalog.catalog import Catalog
from core.catalog.config import (
    CatalogConfig,
    default_catalog_config,
    load_catalog_config,
    require,
)
from core.catalog.filesystem import FileSystemCatalog
from core.catalog.options import METASTORES, flag, storage_options
from core.errors import CatalogConfigError
from core.io.fileio import FileIO
from core.table.warehouse import looks_like_location

#: how a metastore's catalog is opened from its configuration and storage
Opener = Callable[[CatalogConfig, FileIO], Catalog]


def _filesystem(config: CatalogConfig, fileio: FileIO) -> Catalog:
    if flag(config.options, "lock.enabled", config.source):
        # Java's filesystem catalog then locks through Hive or ZooKeeper: a commit of ours
        # that took no such lock would race its writers.
        raise CatalogConfigError(
            f"{config.source}: a filesystem catalog with lock.enabled locks commits through "
            f"{config.options.get('lock.type') or 'a lock service'}, which paimon-cli cannot take",
            hint="stop the catalog's writers while maintaining, or use a JDBC catalog",
        )
    return FileSystemCatalog(config.name, fileio, require(config, "warehouse"))


def _jdbc(config: CatalogConfig, fileio: FileIO) -> Catalog:
    from core.catalog.jdbc import JdbcCatalog  # sqlite3 and drivers only when used

    return JdbcCatalog(config, fileio)


def _hive(config: CatalogConfig, fileio: FileIO) -> Catalog:
    from core.catalog.hive import HiveCatalog  # thriftpy2 (paimon-cli[hive]) only when used

    return HiveCatalog(config, fileio)


def _rest(config: CatalogConfig, fileio: FileIO) -> Catalog:
    from core.catalog.rest import RestCatalog  # its HTTP client only when used

    return RestCatalog(
        config, fileio, uri=require(config, "uri"), warehouse=require(config, "warehouse")
    )


_OPENERS: dict[str, Opener] = {
    "filesystem": _filesystem,
    "jdbc": _jdbc,
    "hive": _hive,
    "rest": _rest,
}


def register(metastore: str, opener: Opener) -> None:
    """Add a metastore (the REST catalog registers itself here)."""
    _OPENERS[metastore] = opener


def open_catalog(
    catalog: str | None,
    *,
    spec: str,
    warehouse: str | None,
    fs_options: Mapping[str, str],
    max_requests_per_second: float | None = None,
    environ: Mapping[str, str] | None = None,
) -> Catalog:
    """The catalog that resolves ``spec`` for this run."""
    # Looked up at each call: tests swap core.io.fileio.FileIO for a faulty one.
    from core.io.fileio import FileIO

    environ = os.environ if environ is None else environ
    if catalog and warehouse:
        raise CatalogConfigError(
            "--catalog and --warehouse both name where tables are",
            hint="give one: --warehouse is the filesystem catalog of that directory",
        )
    config = None
    if catalog:
        config = load_catalog_config(catalog, environ)
    elif not warehouse and not looks_like_location(spec) and not os.path.isdir(spec):
        config = default_catalog_config(environ)
    if config is None:
        fileio = FileIO(fs_options, max_requests_per_second=max_requests_per_second)
        name = f"--warehouse {warehouse}" if warehouse else "path"
        plain = FileSystemCatalog(name, fileio, warehouse)
        plain.configured = False
        return plain
    metastore = config.options.get("metastore", "filesystem").strip().lower()
    opener = _OPENERS.get(metastore)
    if opener is None:
        known = ", ".join(m for m in METASTORES if m in _OPENERS)
        problem = (
            f"the {metastore} metastore is not supported yet"
            if metastore in METASTORES
            else f"unknown metastore {metastore!r}"
        )
        raise CatalogConfigError(
            f"{config.source}: {problem}", hint=f"metastore is one of: {known}"
        )
    # Credentials the catalog configuration carries; --fs-option wins over them.
    options = {**storage_options(config.options), **fs_options}
    return opener(config, FileIO(options, max_requests_per_second=max_requests_per_second))
