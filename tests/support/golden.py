"""Golden JSON documents: what varies between runs is normalised, everything else is pinned.

A command's ``--json`` document is compared with ``tests/golden/<case>.json`` after
normalising: the test's temporary warehouse becomes ``<wh>``, uuids ``<uuid>``, run ids
``<run-id>``, instants of this run (epoch milliseconds and date-times from 2025 on)
``<epoch-ms>`` and ``<time>``, sizes (they depend on compression) ``<bytes>``, durations
``<seconds>``, the user and host of a run record ``<user>`` and ``<host>``. Keys, value
types, ids, counts, kinds, reasons and statuses stay as they are, so a changed schema
fails the comparison. Lists of objects whose order follows file names (uuids) are sorted
after normalising; phases, steps and tables keep their order.

``PAIMON_CLI_UPDATE_GOLDEN=1`` rewrites the files instead of comparing (CONTRIBUTING.md).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

GOLDEN_DIR = Path(__file__).resolve().parents[1] / "golden"
UPDATE_VAR = "PAIMON_CLI_UPDATE_GOLDEN"

_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
# Date-times of this run (the tables' own partition values are from 2024).
_NOW_TIME = re.compile(
    r"20(2[5-9]|[3-9]\d)-\d\d-\d\d([ T]\d\d:\d\d(:\d\d(\.\d+)?)?)?(Z|[+-]\d\d:\d\d)?"
)
_NOW_MS = 1_700_000_000_000  # epoch milliseconds after 2023-11: an instant of this run
_SIZE_KEYS = frozenset({"size", "bytes", "file_size"})
_VOLATILE_KEYS = {
    "age_ms": "<ms>",
    "user": "<user>",
    "host": "<host>",
    "run_id": "<run-id>",
    "tag_create_time": "<time>",
    "version": "<version>",
    "plan_digest": "<digest>",
    # Paimon's JSON inside a plan (a snapshot or tag file written as is): its own names
    "tagCreateTime": "<time>",
}
# Lists whose order is part of the schema (pointers first, Paimon's step order, input order).
_ORDERED_KEYS = frozenset({"phases", "steps", "tables"})


def _is_size(key: str | None) -> bool:
    return key is not None and (
        key in _SIZE_KEYS or key.endswith(("_bytes", "ListSize")) or key.startswith("bytes_")
    )


class Normaliser:
    """Replaces what differs between two runs on equal tables (see the module docstring)."""

    def __init__(self, roots: Iterable[Path], run_ids: Iterable[str] = ()) -> None:
        # Longest first: a table root inside the warehouse becomes <wh>/db.db/t.
        self.roots = sorted({str(r) for r in roots}, key=len, reverse=True)
        self.run_ids = {r for r in run_ids if r}

    def text(self, value: str) -> str:
        for root in self.roots:
            value = value.replace("file://" + root, "<wh>").replace(root, "<wh>")
        for run_id in self.run_ids:
            value = value.replace(run_id, "<run-id>")
        value = _UUID.sub("<uuid>", value)
        return _NOW_TIME.sub("<time>", value)

    def __call__(self, value: Any, key: str | None = None) -> Any:
        if key in _VOLATILE_KEYS and isinstance(value, list):
            # one item for the list: Paimon writes a tag's time as [y, M, d, h, m, s, nanos]
            # without the trailing zeros (Java's LocalDateTime), so its length is of this run
            return [_VOLATILE_KEYS[key]]
        if isinstance(value, dict):
            return {k: self(v, k) for k, v in value.items()}
        if isinstance(value, list):
            items = [self(v, key) for v in value]
            if key not in _ORDERED_KEYS and items and all(isinstance(i, dict) for i in items):
                items.sort(key=lambda i: json.dumps(i, sort_keys=True))
            return items
        if value is None or isinstance(value, bool):
            return value
        if key in _VOLATILE_KEYS:
            return _VOLATILE_KEYS[key]
        if isinstance(value, float):
            return "<seconds>"
        if isinstance(value, int):
            if _is_size(key):
                return "<bytes>"
            return "<epoch-ms>" if value >= _NOW_MS else value
        if isinstance(value, str):
            if key == "content" and value.startswith("{"):
                # a file a plan writes (a snapshot, a tag), as JSON text
                return {"<json text>": self(json.loads(value))}
            return self.text(value)
        return value


def collect_run_ids(doc: Any) -> set[str]:
    """Every ``run_id`` value anywhere in a document."""
    found: set[str] = set()
    if isinstance(doc, dict):
        for k, v in doc.items():
            if k == "run_id" and isinstance(v, str):
                found.add(v)
            else:
                found |= collect_run_ids(v)
    elif isinstance(doc, list):
        for v in doc:
            found |= collect_run_ids(v)
    return found


def check(name: str, document: Any) -> None:
    """Compare a normalised document with ``tests/golden/<name>.json`` (or rewrite it)."""
    path = GOLDEN_DIR / f"{name}.json"
    text = json.dumps(document, indent=2, ensure_ascii=False) + "\n"
    if os.environ.get(UPDATE_VAR) == "1":
        GOLDEN_DIR.mkdir(exist_ok=True)
        path.write_text(text, encoding="utf-8")
        return
    assert path.is_file(), f"no golden file {path.name}: run with {UPDATE_VAR}=1 to write it"
    expected = json.loads(path.read_text(encoding="utf-8"))
    assert document == expected, (
        f"{name}: the --json document differs from tests/golden/{path.name}; if the change "
        f"is intended (additive only within a schema_version), rerun with {UPDATE_VAR}=1\n"
        + _first_difference(expected, document)
    )


def _first_difference(expected: Any, actual: Any, where: str = "$") -> str:
    if type(expected) is not type(actual):
        return f"{where}: expected {expected!r}, got {actual!r}"
    if isinstance(expected, dict):
        for key in sorted(set(expected) | set(actual)):
            if key not in actual:
                return f"{where}.{key}: missing"
            if key not in expected:
                return f"{where}.{key}: unexpected (value {actual[key]!r})"
            if expected[key] != actual[key]:
                return _first_difference(expected[key], actual[key], f"{where}.{key}")
    if isinstance(expected, list):
        if len(expected) != len(actual):
            return f"{where}: {len(actual)} items, expected {len(expected)}"
        for i, (e, a) in enumerate(zip(expected, actual, strict=True)):
            if e != a:
                return _first_difference(e, a, f"{where}[{i}]")
    return f"{where}: expected {expected!r}, got {actual!r}"


# What names a plan's table (its identifier), its run or its clock: two plans of one table
# reached two ways (a path, a catalog name) are equal without these.
_RUN_FIELDS = frozenset(
    {"identifier", "run_id", "created_ms", "now_ms", "older_than_ms", "older_than"}
)


def without_run_fields(doc: Any) -> Any:
    """``doc`` without the keys of ``_RUN_FIELDS``, at every depth."""
    if isinstance(doc, dict):
        return {k: without_run_fields(v) for k, v in doc.items() if k not in _RUN_FIELDS}
    if isinstance(doc, list):
        return [without_run_fields(v) for v in doc]
    return doc
