"""Catalog options as Paimon (Java and pypaimon) names them: which keys exist (a key
nobody defines is a typo, refused with the closest key), the few this tool reads, and the
storage credentials a catalog configuration carries, as our FileIO's settings."""

from __future__ import annotations

import difflib
from collections.abc import Mapping

from core.errors import CatalogConfigError, InvalidOptionError
from core.format.options import parse_duration_ms

# Keys of Paimon's CatalogOptions, JdbcCatalogOptions and RESTCatalogOptions (Java master)
# and of pypaimon 2.1's catalog options. Prefixed families are below.
KNOWN_KEYS = frozenset(
    {
        "metastore",
        "warehouse",
        "uri",
        "table.type",
        "lock.enabled",
        "lock.type",
        "lock-check-max-sleep",
        "lock-acquire-timeout",
        "lock-key-max-length",
        "catalog-key",
        "client-pool-size",
        "cache-enabled",
        "cache.expire-after-access",
        "cache.expire-after-write",
        "cache.partition.max-num",
        "cache.manifest.small-file-memory",
        "cache.manifest.small-file-threshold",
        "cache.manifest.max-memory",
        "cache.manifest.soft-values",
        "cache.snapshot.max-num-per-table",
        "cache.deletion-vectors.max-num",
        "cache.blob-index.max-size",
        "case-sensitive",
        "sync-all-properties",
        "format-table.enabled",
        "catalog-options-table.enabled",
        "resolving-file-io.enabled",
        "file-io.allow-cache",
        "file-io.read-coalesce.max-gap",
        "file-io.read-coalesce.max-block",
        "file-format.metadata-cache.max-size",
        "token",
        "token.provider",
        "data-token.enabled",
        "prefix",
        "io-cache.enabled",
        "io-cache.whitelist-path",
        "io-cache.policy",
        "hdfs.client.impl",
        "hdfs.client.fallback-to-pyarrow",
        "hdfs.conf-dir",
        "security.kerberos.login.principal",
        "security.kerberos.login.keytab",
        "security.kerberos.login.use-ticket-cache",
    }
)
# Families of keys defined by prefix: driver properties, storage, REST headers and DLF,
# table defaults, pypaimon's local cache and FUSE settings.
KNOWN_PREFIXES = (
    "jdbc.",
    "fs.",
    "s3.",
    "oss.",
    "gcs.",
    "dlf.",
    "header.",
    "table-default.",
    "local-cache.",
    "fuse.",
    "hadoop.",
)
METASTORES = ("filesystem", "jdbc", "rest")


def check_keys(options: Mapping[str, str], source: str) -> None:
    """Refuse a key no Paimon catalog defines: a typo would otherwise be ignored silently
    (``lock.enable: true`` would leave commits unlocked)."""
    for key in options:
        if key in KNOWN_KEYS or key.startswith(KNOWN_PREFIXES):
            continue
        near = difflib.get_close_matches(key, sorted(KNOWN_KEYS), n=1, cutoff=0.6)
        guess = f"; did you mean {near[0]!r}?" if near else ""
        raise CatalogConfigError(
            f"{source}: {key!r} is not a catalog option Paimon defines{guess}",
            hint="fix the key (catalog options: https://paimon.apache.org/docs/master/"
            "maintenance/configurations/#catalogoptions)",
        )


def flag(options: Mapping[str, str], key: str, source: str) -> bool | None:
    value = options.get(key)
    if value is None:
        return None
    if value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true"
    raise CatalogConfigError(f"{source}: {key} must be true or false, not {value!r}")


def duration_ms(options: Mapping[str, str], key: str, default_ms: int, source: str) -> int:
    value = options.get(key)
    if value is None:
        return default_ms
    try:
        return parse_duration_ms(value)
    except InvalidOptionError as exc:
        raise CatalogConfigError(f"{source}: {key}: {exc.message}") from None


# pypaimon's and Paimon Java's storage keys -> s3fs's settings (our FileIO takes those).
_S3_KEYS = {
    "fs.s3.accessKeyId": "key",
    "fs.s3.accessKeySecret": "secret",
    "fs.s3.securityToken": "token",
    "fs.s3.endpoint": "endpoint_url",
    "s3.access-key": "key",
    "s3.secret-key": "secret",
    "s3.session-token": "token",
    "s3.endpoint": "endpoint_url",
}


def storage_options(options: Mapping[str, str]) -> dict[str, str]:
    """The storage credentials a catalog configuration carries, as FileIO settings
    (``--fs-option`` given on the command line wins over them)."""
    out = {}
    for key, target in _S3_KEYS.items():
        if key in options:
            out[target] = options[key]
    endpoint = out.get("endpoint_url")
    if endpoint and "://" not in endpoint:
        out["endpoint_url"] = f"https://{endpoint}"
    return out
