"""Paths as paimon-cli writes them: strings, local ones absolute POSIX paths (``/wh/db.db/t``),
everything else a URI (``s3://bucket/wh/db.db/t``); ``file:/x`` and ``file:///x`` normalise
to ``/x``. Pure string work: nothing here touches storage (``core.io.fileio`` does)."""

from __future__ import annotations

import os


def normalize_path(path: str) -> str:
    """Canonical form of a path or URI (see module docstring)."""
    if path[:5].lower() == "file:":  # Java may write FILE:/x; schemes are case-insensitive
        rest = path[len("file:") :]
        while rest.startswith("//"):
            rest = rest[1:]
        path = rest
    if "://" not in path:
        path = os.path.abspath(path) if path else path
        return path.rstrip("/") or "/"
    scheme, rest = path.split("://", 1)
    rest = rest.rstrip("/")
    return f"{scheme.lower()}://{rest}"


def protocol_of(path: str) -> str:
    return path.split("://", 1)[0] if "://" in path else ""


def join(base: str, *parts: str) -> str:
    out = base.rstrip("/")
    for part in parts:
        if part:
            out = f"{out}/{part.strip('/')}" if out != "/" else f"/{part.strip('/')}"
    return out


def parent(path: str) -> str:
    head, _, _ = path.rstrip("/").rpartition("/")
    if "://" in path and head.endswith(":/"):
        return path
    return head or "/"


def basename(path: str) -> str:
    return path.rstrip("/").rpartition("/")[2]


def is_under(path: str, root: str) -> bool:
    """True when normalised ``path`` lies strictly inside ``root`` (no ``..`` tricks)."""
    path, root = normalize_path(path), normalize_path(root)
    if any(seg in ("..", ".") for seg in path.split("/")):
        return False
    return path.startswith(root.rstrip("/") + "/")
