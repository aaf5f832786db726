"""The ``--json`` document, written as it is produced, byte for byte what
``json.JSONEncoder(indent=2, default=...)`` writes, at a fraction of its cost per row.

The standard encoder turns its C accelerator off when indenting, and a plan's file rows (one
small flat object per path) then cost ~35 us each: 3.4 s for 100,000 orphans (issue 36). A
flat object of plain values is formatted here in one step with the C string escaper; every
other value takes the general path, which follows the standard encoder's rules.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

_escape: Callable[[str], str] = json.encoder.encode_basestring_ascii
_INDENT = "  "
_BATCH = 512  # rows of an array written as one chunk


def _float(value: float) -> str:
    if value != value:
        return "NaN"
    if value == float("inf"):
        return "Infinity"
    if value == -float("inf"):
        return "-Infinity"
    return float.__repr__(value)


def _null(_value: Any) -> str:
    return "null"


def _bool(value: Any) -> str:
    return "true" if value else "false"


# Exact types first (one lookup per value); subclasses go through ``_scalar``'s checks.
_BY_TYPE: dict[type, Callable[[Any], str]] = {
    str: _escape,
    int: int.__repr__,
    float: _float,
    bool: _bool,
    type(None): _null,
}
_KEYS: dict[Any, str] = {}  # '"key": ' of the keys met (a plan repeats a few keys)


def _scalar(value: Any) -> str | None:
    """A plain value's text (None when it is not one)."""
    enc = _BY_TYPE.get(type(value))
    if enc is not None:
        return enc(value)
    if isinstance(value, str):
        return _escape(value)
    if isinstance(value, bool):
        return _bool(value)
    if isinstance(value, int):
        return int.__repr__(value)
    if isinstance(value, float):
        return _float(value)
    return None


def _key(key: Any) -> str:
    """``"key": `` (JSON keys are strings: 1 -> "1", True -> "true")."""
    text = _KEYS.get(key) if type(key) is str else None
    if text is not None:
        return text
    plain = _escape(key) if isinstance(key, str) else _scalar(key)
    if plain is None:
        raise TypeError(f"keys must be str, int, float, bool or None, not {type(key).__name__}")
    text = (plain if isinstance(key, str) else _escape(plain)) + ": "
    if type(key) is str and len(_KEYS) < 4096:
        _KEYS[key] = text
    return text


def _flat(obj: dict[Any, Any], level: int) -> str | None:
    """A non-empty object of plain values in one string, or None."""
    by_type = _BY_TYPE.get
    texts = [by_type(type(v), _scalar)(v) for v in obj.values()]
    if None in texts:
        return None
    known = _KEYS.get
    inner = "\n" + _INDENT * (level + 1)
    items = [(known(k) or _key(k)) + t for k, t in zip(obj, texts, strict=True)]  # type: ignore[operator]
    return "{" + inner + ("," + inner).join(items) + "\n" + _INDENT * level + "}"


def iterencode(o: Any, default: Callable[[Any], Any], level: int = 0) -> Iterator[str]:
    """Chunks of ``o`` as the indenting standard encoder writes it (``default`` for values
    JSON has no form for)."""
    text = _scalar(o)
    if text is not None:
        yield text
    elif isinstance(o, dict):
        yield from _object(o, default, level)
    elif isinstance(o, (list, tuple)):
        yield from _array(o, default, level)
    else:
        yield from iterencode(default(o), default, level)


def _object(obj: dict[Any, Any], default: Callable[[Any], Any], level: int) -> Iterator[str]:
    if not obj:
        yield "{}"
        return
    flat = _flat(obj, level)
    if flat is not None:
        yield flat
        return
    inner = "\n" + _INDENT * (level + 1)
    first = True
    for key, value in obj.items():
        yield ("{" if first else ",") + inner + _key(key)
        first = False
        yield from iterencode(value, default, level + 1)
    yield "\n" + _INDENT * level + "}"


def _array(items: Any, default: Callable[[Any], Any], level: int) -> Iterator[str]:
    if not items:
        yield "[]"
        return
    inner = "\n" + _INDENT * (level + 1)
    sep = "[" + inner
    done: list[str] = []  # flat rows joined into one chunk per ``_BATCH``
    for value in items:
        flat = _flat(value, level + 1) if type(value) is dict and value else None
        if flat is not None:
            done.append(sep + flat)
            if len(done) >= _BATCH:
                yield "".join(done)
                done.clear()
        else:
            if done:
                yield "".join(done)
                done.clear()
            yield sep
            yield from iterencode(value, default, level + 1)
        sep = "," + inner
    done.append("\n" + _INDENT * level + "]")
    yield "".join(done)
