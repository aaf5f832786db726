"""Where a catalog's configuration comes from.

``--catalog VALUE`` (or ``PAIMON_CATALOG``) names either

- a file in pypaimon's ``paimon.yaml`` format, read unchanged: a flat mapping of catalog
  options (``metastore: filesystem | jdbc | rest``, ``warehouse``, ``uri``, ...), or
- a catalog defined by name in the user's config file, as PyIceberg's ``.pyiceberg.yaml``
  does: ``~/.paimon-cli.yaml`` (``$PAIMON_CLI_HOME/.paimon-cli.yaml`` when set) holds
  ``catalog: {NAME: {options}}`` and optionally ``default-catalog: NAME``; environment
  variables ``PAIMON_CLI_CATALOG__<NAME>__<KEY>`` override (or define) single options,
  ``__`` inside KEY standing for ``.`` and ``_`` for ``-`` (``..._LOCK__ENABLED`` is
  ``lock.enabled``). The default catalog (``default-catalog``, else ``PAIMON_CLI_DEFAULT_
  CATALOG``, else one named ``default``) serves ``db.table`` when neither ``--catalog`` nor
  ``--warehouse`` is given.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from core.catalog.identifier import close_names
from core.catalog.options import KNOWN_KEYS, check_keys
from core.errors import CatalogConfigError, MissingDependencyError

USER_CONFIG = ".paimon-cli.yaml"
_ENV_PREFIX = "PAIMON_CLI_CATALOG__"
# Keys spelled in camelCase (pypaimon's storage keys): environment variables lose the case.
_CAMEL_KEYS = ("fs.s3.accessKeyId", "fs.s3.accessKeySecret", "fs.s3.securityToken")
_CANONICAL = {k.lower(): k for k in (*KNOWN_KEYS, *_CAMEL_KEYS)}
_SEP = "__"


@dataclass(frozen=True)
class CatalogConfig:
    name: str  # as the user named it: the paimon.yaml path, or the configured name
    options: dict[str, str]
    source: str  # where it was read, for messages


def load_catalog_config(value: str, environ: Mapping[str, str]) -> CatalogConfig:
    """The configuration ``--catalog VALUE`` names: a paimon.yaml file, or a name."""
    if _is_file_spec(value):
        return _paimon_yaml(value)
    return _named(value, environ)


def default_catalog_config(environ: Mapping[str, str]) -> CatalogConfig | None:
    """The user's default catalog, when the config file (or environment) defines one."""
    path, catalogs, default = _user_catalogs(environ)
    name = default or environ.get("PAIMON_CLI_DEFAULT_CATALOG") or "default"
    if name not in catalogs:
        return None
    return _checked(name, catalogs[name], f"{path} (catalog {name})")


def require(config: CatalogConfig, key: str) -> str:
    value = config.options.get(key, "").strip()
    if not value:
        metastore = config.options.get("metastore", "filesystem")
        raise CatalogConfigError(
            f"{config.source}: a {metastore} catalog needs {key!r}",
            hint=f"add '{key}: ...' to the catalog's options",
        )
    return value


def _is_file_spec(value: str) -> bool:
    return os.path.isfile(value) or value.endswith((".yaml", ".yml")) or os.sep in value


def _paimon_yaml(path: str) -> CatalogConfig:
    data = _read_yaml(path)
    if not isinstance(data, dict) or not data:
        raise CatalogConfigError(
            f"{path} holds no catalog options",
            hint="a paimon.yaml is a mapping such as: metastore: filesystem / warehouse: /wh",
        )
    return _checked(path, data, path)


def _named(name: str, environ: Mapping[str, str]) -> CatalogConfig:
    path, catalogs, _default = _user_catalogs(environ)
    if name not in catalogs:
        near = close_names(name, sorted(catalogs))
        hint = (
            f"did you mean {', '.join(near)}?"
            if near
            else f"define it under 'catalog:' in {path}, or give a paimon.yaml file"
        )
        defined = ", ".join(sorted(catalogs)) or "none"
        raise CatalogConfigError(
            f"no catalog named {name!r} in {path} (defined: {defined})", hint=hint
        )
    return _checked(name, catalogs[name], f"{path} (catalog {name})")


def _user_config_path(environ: Mapping[str, str]) -> str:
    home = environ.get("PAIMON_CLI_HOME") or os.path.expanduser("~")
    return os.path.join(home, USER_CONFIG)


def _user_catalogs(
    environ: Mapping[str, str],
) -> tuple[str, dict[str, dict[str, Any]], str | None]:
    """The user config file's catalogs (with environment overrides) and its default."""
    path = _user_config_path(environ)
    data: Any = _read_yaml(path) if os.path.isfile(path) else {}
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise CatalogConfigError(f"{path} is not a mapping (expected 'catalog: {{NAME: ...}}')")
    unknown = set(data) - {"catalog", "default-catalog"}
    if unknown:
        raise CatalogConfigError(
            f"{path}: unknown top-level key {sorted(unknown)[0]!r}",
            hint="the file holds 'catalog:' (named catalogs) and 'default-catalog:'",
        )
    raw = data.get("catalog") or {}
    if not isinstance(raw, dict) or not all(isinstance(v, dict) for v in raw.values()):
        raise CatalogConfigError(f"{path}: 'catalog' must map names to option mappings")
    catalogs: dict[str, dict[str, Any]] = {str(k): dict(v) for k, v in raw.items()}
    for var, value in environ.items():
        if not var.startswith(_ENV_PREFIX):
            continue
        name, sep, key = var[len(_ENV_PREFIX) :].partition(_SEP)
        if not sep or not name or not key:
            continue
        # Names are matched case-insensitively: environment variables are upper case.
        target = next((n for n in catalogs if n.lower() == name.lower()), name.lower())
        catalogs.setdefault(target, {})[_env_key(key)] = value
    default = data.get("default-catalog")
    return path, catalogs, str(default) if default is not None else None


def _env_key(text: str) -> str:
    key = text.lower().replace(_SEP, ".").replace("_", "-")
    return _CANONICAL.get(key, key)


def _checked(name: str, raw: Mapping[Any, Any], source: str) -> CatalogConfig:
    options = {}
    for key, value in raw.items():
        if isinstance(value, (dict, list)):
            raise CatalogConfigError(f"{source}: {key!r} must be a single value")
        if isinstance(value, bool):
            value = "true" if value else "false"
        options[str(key)] = "" if value is None else str(value)
    check_keys(options, source)
    return CatalogConfig(name, options, source)


def _read_yaml(path: str) -> Any:
    try:
        import yaml
    except ImportError as exc:  # pragma: no cover - a core dependency
        raise MissingDependencyError(
            f"reading {path} needs PyYAML", hint="pip install pyyaml"
        ) from exc
    try:
        with open(path, encoding="utf-8") as fh:
            return yaml.safe_load(fh)
    except FileNotFoundError:
        raise CatalogConfigError(
            f"catalog file {path} does not exist",
            hint="--catalog takes a paimon.yaml file or a name defined in ~/" + USER_CONFIG,
        ) from None
    except OSError as exc:
        raise CatalogConfigError(f"cannot read {path}: {exc.strerror or exc}") from None
    except yaml.YAMLError as exc:
        where = getattr(exc, "problem_mark", None)
        line = f" (line {where.line + 1})" if where is not None else ""
        raise CatalogConfigError(f"{path} is not valid YAML{line}") from None
