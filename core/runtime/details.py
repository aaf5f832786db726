"""Typed plan details: what each operation decided and why, as a frozen dataclass.

Every operation's plan carries details of its own type (``Plan[ExpireSnapshotsDetails]``),
read by attribute. Their JSON form (the plan's ``details`` object in ``--json`` documents,
journals and ``--plan`` files) is their fields by name: nested records become objects,
tuples arrays; ``from_json`` reads back exactly what ``to_json`` writes, checking each
value against the field's type, and raises ``ValueError``, ``TypeError`` or ``KeyError``
on anything else (a journal of an older paimon-cli is then discarded, saying why).

Field metadata shapes the JSON where a name or a layout is not a plain field:
``json_key("from")`` for a key that is no Python name, ``OMIT_NONE`` for a key present only
when it has a value, ``FLATTEN`` for a record whose keys sit in its parent's object.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, Protocol, TypeVar

R = TypeVar("R", bound="Record")

OMIT_NONE: Mapping[str, Any] = {"omit_none": True}
FLATTEN: Mapping[str, Any] = {"flatten": True}
# the record encodes and decodes this field itself (``_field_json``, ``_field_from_json``)
CUSTOM: Mapping[str, Any] = {"custom": True}


def json_key(name: str) -> Mapping[str, Any]:
    return {"json": name}


class Details(Protocol):
    """What a plan's details are: anything with a JSON form."""

    def to_json(self, *, lazy: bool = False) -> dict[str, Any]: ...


class Record:
    """Base of frozen dataclasses whose JSON form is their fields (see the module doc)."""

    __slots__ = ()

    def to_json(self, *, lazy: bool = False) -> dict[str, Any]:
        """The JSON object. ``lazy``: big sequences stay made on access (``LazyRows``), for
        a streaming encoder; otherwise everything is plain lists and dicts."""
        out: dict[str, Any] = {}
        for f in dataclasses.fields(self):  # type: ignore[arg-type]
            value = getattr(self, f.name)
            if value is None and f.metadata.get("omit_none"):
                continue
            if f.metadata.get("flatten"):
                if value is not None:
                    out.update(value.to_json(lazy=lazy))
                continue
            key = f.metadata.get("json", f.name)
            if f.metadata.get("custom"):
                out[key] = self._field_json(f.name, lazy=lazy)
            else:
                out[key] = encode(value, lazy=lazy)
        return out

    def _field_json(self, name: str, *, lazy: bool) -> Any:
        raise NotImplementedError(f"{type(self).__name__}.{name}")

    @classmethod
    def _field_from_json(cls, name: str, value: Any, data: Mapping[str, Any]) -> Any:
        raise NotImplementedError(f"{cls.__name__}.{name}")

    @classmethod
    def from_json(cls: type[R], data: Any) -> R:
        """The record ``to_json`` wrote; ValueError, TypeError or KeyError otherwise."""
        if not isinstance(data, Mapping):
            raise TypeError(f"{cls.__name__}: expected an object, got {type(data).__name__}")
        hints = _hints(cls)
        values: dict[str, Any] = {}
        for f in dataclasses.fields(cls):  # type: ignore[arg-type]
            if f.metadata.get("flatten"):
                values[f.name] = _decode_flattened(hints[f.name], data, f)
                continue
            key = f.metadata.get("json", f.name)
            if key in data and f.metadata.get("custom"):
                values[f.name] = cls._field_from_json(f.name, data[key], data)
            elif key in data:
                values[f.name] = decode(hints[f.name], data[key])
            elif not _has_default(f):
                raise KeyError(f"{cls.__name__}.{key}")
        return cls(**values)


def _decode_flattened(tp: Any, data: Mapping[str, Any], f: dataclasses.Field[Any]) -> Any:
    """A record whose keys sit in its parent's object; an optional one (default None) is
    absent when none of its keys is there."""
    if f.default is None:
        record = next(
            a for a in typing.get_args(tp) if isinstance(a, type) and issubclass(a, Record)
        )
        keys = [g.metadata.get("json", g.name) for g in dataclasses.fields(record)]  # type: ignore[arg-type]
        if not any(k in data for k in keys):
            return None
        return record.from_json(data)
    return decode(tp, data)


def _has_default(f: dataclasses.Field[Any]) -> bool:
    return f.default is not dataclasses.MISSING or f.default_factory is not dataclasses.MISSING


_HINTS: dict[type, dict[str, Any]] = {}


def _hints(cls: type) -> dict[str, Any]:
    found = _HINTS.get(cls)
    if found is None:
        found = _HINTS[cls] = typing.get_type_hints(cls)
    return found


def encode(value: Any, *, lazy: bool = False) -> Any:
    """A field's value as JSON data (records and sequences made of plain values)."""
    if isinstance(value, Record):
        return value.to_json(lazy=lazy)
    if hasattr(value, "to_json"):  # a value type with a JSON form of its own
        return value.to_json()
    if isinstance(value, (str, bytes, int, float, bool)) or value is None:
        return value
    if isinstance(value, Mapping):
        return {k: encode(v, lazy=lazy) for k, v in value.items()}
    if isinstance(value, (tuple, list)):
        return [encode(v, lazy=lazy) for v in value]
    if isinstance(value, Sequence):  # rows made on access (LazyRows)
        return value if lazy else [encode(v) for v in value]
    raise TypeError(f"cannot encode {type(value).__name__} as plan details")


def decode(tp: Any, value: Any) -> Any:
    """``value`` (JSON data) as the type ``tp``: checked, tuples for sequences."""
    if tp is Any:
        return value
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if origin is typing.Union or isinstance(tp, types.UnionType):
        return _decode_union(args, value)
    if origin is typing.Literal:
        if value not in args:
            raise ValueError(f"{value!r} is not one of {args}")
        return value
    if origin is tuple:
        items = _array(value)
        if len(args) == 2 and args[1] is Ellipsis:
            return tuple(decode(args[0], v) for v in items)
        if len(items) != len(args):
            raise ValueError(f"expected {len(args)} items, got {len(items)}")
        return tuple(decode(t, v) for t, v in zip(args, items, strict=True))
    if origin is list:
        return [decode(args[0] if args else Any, v) for v in _array(value)]
    if origin is Sequence:
        return tuple(decode(args[0] if args else Any, v) for v in _array(value))
    if origin in (dict, Mapping):
        if not isinstance(value, Mapping):
            raise TypeError(f"expected an object, got {type(value).__name__}")
        return {str(k): decode(args[1] if args else Any, v) for k, v in value.items()}
    if isinstance(tp, type) and hasattr(tp, "from_json"):  # a record or a value type
        return tp.from_json(value)
    return _decode_scalar(tp, value)


def _decode_union(args: tuple[Any, ...], value: Any) -> Any:
    if value is None and type(None) in args:
        return None
    errors = []
    for arg in args:
        if arg is type(None):
            continue
        try:
            return decode(arg, value)
        except (TypeError, ValueError, KeyError) as exc:
            errors.append(str(exc))
    raise TypeError("; ".join(errors) or f"{value!r} does not fit")


def _array(value: Any) -> Sequence[Any]:
    if not isinstance(value, (list, tuple)):
        raise TypeError(f"expected an array, got {type(value).__name__}")
    return value


def _decode_scalar(tp: Any, value: Any) -> Any:
    if tp is float and isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    if tp is int and isinstance(value, bool):
        raise TypeError(f"expected a number, got {value!r}")
    if isinstance(tp, type) and isinstance(value, tp):
        return value
    raise TypeError(f"expected {getattr(tp, '__name__', tp)}, got {value!r}")


class RawDetails(Mapping[str, Any]):
    """Details not read as an operation's type: a journal's as written, until the operation
    that resumes it reads them (``core.runtime.plans.typed``)."""

    __slots__ = ("data",)

    def __init__(self, data: Mapping[str, Any] | None = None) -> None:
        self.data: Mapping[str, Any] = {} if data is None else data

    def __getitem__(self, key: str) -> Any:
        return self.data[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self.data)

    def __len__(self) -> int:
        return len(self.data)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, RawDetails) and dict(self.data) == dict(other.data)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"RawDetails({dict(self.data)!r})"

    def to_json(self, *, lazy: bool = False) -> dict[str, Any]:
        return {k: encode(v, lazy=lazy) for k, v in self.data.items()}
