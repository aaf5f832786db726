"""JSON Schemas (draft 2020-12) of the `--json` documents, derived from tests/golden/.

``docs/schema/<command>.schema.json`` holds one schema per command (``error.schema.json``:
the error document on stderr). They are inferred from the golden documents: a key every
golden document of that place has is required, a value has the types seen there (a value
only ever null, or one the golden files normalise whatever its type, is left open), objects
stay open to new keys (changes within a ``schema_version`` are additive). Documents of
different shapes (``inspect``'s views, a glob run's ``tables``) are alternatives (``anyOf``).
``PAIMON_CLI_UPDATE_SCHEMAS=1 .venv/bin/python -m pytest tests/docs/test_json_schemas.py``
rewrites them from the golden files; review the diff.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from support.golden import _VOLATILE_KEYS, GOLDEN_DIR

SCHEMA_DIR = Path(__file__).resolve().parents[2] / "docs" / "schema"
UPDATE_VAR = "PAIMON_CLI_UPDATE_SCHEMAS"
DRAFT = "https://json-schema.org/draft/2020-12/schema"
ERROR = "error"

# What the golden files put in place of a value that varies, and the value's type.
PLACEHOLDER_TYPES = {
    "<bytes>": "integer",
    "<epoch-ms>": "integer",
    "<ms>": "integer",
    "<seconds>": "number",
}
# Representative values that stand for a placeholder when a golden document is validated.
PLACEHOLDER_VALUES: dict[str, Any] = {
    "<bytes>": 1024,
    "<epoch-ms>": 1_700_000_000_123,
    "<ms>": 1000,
    "<seconds>": 0.25,
}
# Objects whose keys are data (kinds, partition keys, function names), not fields.
MAP_KEYS = frozenset({"by_kind", "partition", "aggregate_functions"})
# ... and those known by their parent's key: a plan's requirements name tags by name.
MAP_PLACES = frozenset({("requirements", "tags")})
# What the golden files show only one way but docs/json.md says varies: a value that is
# null when there is nothing to say, and a failed run's `error` (absent on success).
NULLABLE_KEYS = frozenset({"skipped_hint"})
NEVER_REQUIRED = frozenset({"error"})
JSON_TEXT = "<json text>"  # a file's JSON text, pinned by golden.py as the parsed object


def golden_documents() -> dict[str, Any]:
    return {
        p.stem: json.loads(p.read_text(encoding="utf-8")) for p in sorted(GOLDEN_DIR.glob("*.json"))
    }


def schema_name(document: dict[str, Any]) -> str:
    """The schema file (without suffix) a document belongs to."""
    return ERROR if "error" in document and "command" not in document else document["command"]


def variant(document: dict[str, Any]) -> str:
    """Which alternative of its command's schema a document is."""
    if document.get("command") == "inspect":
        return str(document.get("view") or ("check" if "check" in document else "other"))
    if "tables" in document and document.get("command") != "maintain":
        return "glob"
    return "run"


def denormalise(value: Any, key: str | None = None) -> Any:
    """A golden document with each placeholder replaced by a value of the type it stands for."""
    if isinstance(value, dict):
        if set(value) == {JSON_TEXT}:
            return json.dumps(value[JSON_TEXT])
        return {k: denormalise(v, k) for k, v in value.items()}
    if isinstance(value, list):
        return [denormalise(v, key) for v in value]
    if isinstance(value, str) and key not in _VOLATILE_KEYS:
        return PLACEHOLDER_VALUES.get(value, value)
    return value


def _type_of(value: Any, key: str | None) -> str | None:
    """The JSON type of a golden value; None when the golden file hides it."""
    if key in _VOLATILE_KEYS:
        return None
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return PLACEHOLDER_TYPES.get(value, "string")
    if isinstance(value, dict):
        return "string" if set(value) == {JSON_TEXT} else "object"
    return "array"


def _is_map(objects: list[dict[str, Any]], key: str | None, parent: str | None) -> bool:
    """Keyed by data: a known map, or keys that are branch or tag names or paths."""
    names = {k for o in objects for k in o}
    return (
        key in MAP_KEYS
        or (parent, key) in MAP_PLACES
        or any("/" in k or "=" in k or k == "main" for k in names)
    )


def infer(
    values: Iterable[Any], key: str | None = None, parent: str | None = None
) -> dict[str, Any]:
    """The schema of every value seen at one place of the documents."""
    values = list(values)
    types = {_type_of(v, key) for v in values}
    if None in types or types <= {"null"}:
        return {}
    if {"integer", "number"} <= types:
        types.discard("integer")
    if key in NULLABLE_KEYS:
        types.add("null")
    schema: dict[str, Any] = {"type": sorted(types)[0] if len(types) == 1 else sorted(types)}
    objects = [v for v in values if _type_of(v, key) == "object"]
    if objects and _is_map(objects, key, parent):
        schema["additionalProperties"] = infer([v for o in objects for v in o.values()])
    elif objects:
        keys: dict[str, list[Any]] = defaultdict(list)
        for obj in objects:
            for k, v in obj.items():
                keys[k].append(v)
        schema["properties"] = {k: infer(vs, k, key) for k, vs in sorted(keys.items())}
        required = [
            k for k in sorted(keys) if k not in NEVER_REQUIRED and all(k in obj for obj in objects)
        ]
        if required:
            schema["required"] = required
    arrays = [v for v in values if isinstance(v, list)]
    if arrays:
        items = [i for a in arrays for i in a]
        schema["items"] = infer(items, key, parent) if items else {}
    return schema


def schemas(documents: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """One schema per command (and one for errors), from the golden documents."""
    grouped: dict[str, dict[str, list[Any]]] = defaultdict(lambda: defaultdict(list))
    for doc in documents.values():
        grouped[schema_name(doc)][variant(doc)].append(doc)
    out: dict[str, dict[str, Any]] = {}
    for name, variants in sorted(grouped.items()):
        head: dict[str, Any] = {
            "$schema": DRAFT,
            "$id": f"urn:paimon-cli:schema:{name}",
            "title": f"paimon-cli {name} --json document"
            if name != ERROR
            else "paimon-cli error document (stderr)",
            "description": "Derived from tests/golden/ by tests/support/json_schemas.py; "
            "prose in docs/json.md. Objects are open: new keys are additive within a "
            "schema_version.",
        }
        alternatives = [infer(docs) for _, docs in sorted(variants.items())]
        if name == ERROR:
            alternatives[0]["required"] = ["error"]
        else:
            for alternative in alternatives:
                alternative["properties"]["command"] = {"const": name}
                alternative["properties"]["schema_version"] = {"const": 1}
        if len(alternatives) == 1:
            out[name] = {**head, **alternatives[0]}
        else:
            out[name] = {**head, "anyOf": alternatives}
    return out


def render(schema: dict[str, Any]) -> str:
    return json.dumps(schema, indent=2, ensure_ascii=False) + "\n"


def load(name: str) -> dict[str, Any]:
    result: dict[str, Any] = json.loads((SCHEMA_DIR / f"{name}.schema.json").read_text("utf-8"))
    return result
