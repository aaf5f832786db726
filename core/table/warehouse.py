"""Table selection shared by every command: a location, DB.TABLE or a glob with a warehouse."""

from __future__ import annotations

import fnmatch
import os
import re

from core.errors import InvalidOptionError, TableNotFoundError
from core.io.fileio import FileIO, join, normalize_path

_IDENT = re.compile(r"^[^/\\]+\.[^/\\]+$")
_GLOB_CHARS = frozenset("*?[")


def looks_like_location(spec: str) -> bool:
    return (
        "://" in spec or spec.startswith(("/", ".", "~")) or "/" in spec or spec.startswith("file:")
    )


def resolve_tables(spec: str, warehouse: str | None, fileio: FileIO) -> list[str]:
    """Table locations named by ``spec``; a glob may match many (or, for a glob, none)."""
    if looks_like_location(spec):
        return [normalize_path(spec.replace("~", _home(), 1) if spec.startswith("~") else spec)]
    if os.path.isdir(spec) and not (warehouse and _IDENT.match(spec)):
        # `cd wh/db.db && paimon inspect orders`: a bare name that is a directory here.
        return [normalize_path(spec)]
    if not _IDENT.match(spec):
        raise InvalidOptionError(
            f"{spec!r} is neither a table location nor DB.TABLE",
            hint="examples: /wh/db.db/orders, s3://lake/wh/db.db/orders, db.orders --warehouse W",
        )
    if not warehouse:
        raise InvalidOptionError(
            f"{spec!r} names a table by DB.TABLE: give --warehouse (or PAIMON_WAREHOUSE)"
        )
    db, table = spec.split(".", 1)
    root = normalize_path(warehouse)
    if not (_GLOB_CHARS & set(spec)):
        return [join(root, f"{db}.db", table)]
    matches = []
    entries = fileio.list_dir(root)
    if not entries and not fileio.exists(root):
        # A mistyped --warehouse: say so, not "no table matches" (nothing could match).
        raise TableNotFoundError(
            f"warehouse {root} does not exist", hint="check --warehouse (or PAIMON_WAREHOUSE)"
        )
    for db_info in sorted(entries, key=lambda i: i.name):
        if not (db_info.is_dir and db_info.name.endswith(".db")):
            continue
        if not fnmatch.fnmatchcase(db_info.name[:-3], db):
            continue
        for t_info in sorted(fileio.list_dir(db_info.path), key=lambda i: i.name):
            if (
                t_info.is_dir
                and fnmatch.fnmatchcase(t_info.name, table)
                and fileio.exists(join(t_info.path, "schema"))
            ):
                matches.append(t_info.path)
    if not matches:
        raise TableNotFoundError(f"no table in {root} matches {spec!r}")
    return matches


def is_glob(spec: str) -> bool:
    return not looks_like_location(spec) and bool(_GLOB_CHARS & set(spec))


def _home() -> str:
    return os.path.expanduser("~")
