"""Snapshot and tag files as Java Paimon writes them: Jackson's default pretty printer,
and a snapshot's properties in the order of ``Snapshot.java`` (unknown keys a newer writer
added are kept after them), so a file paimon-cli writes reads like one Paimon wrote."""

from __future__ import annotations

import json
from collections.abc import Mapping
from decimal import Decimal
from typing import Any

# Jackson writes Snapshot properties in constructor order (Snapshot.java); unknown keys a
# newer writer added are kept after them.
SNAPSHOT_FIELD_ORDER = (
    "version",
    "uuid",
    "id",
    "schemaId",
    "baseManifestList",
    "baseManifestListSize",
    "deltaManifestList",
    "deltaManifestListSize",
    "changelogManifestList",
    "changelogManifestListSize",
    "indexManifest",
    "commitUser",
    "writerVersion",
    "commitIdentifier",
    "commitKind",
    "timeMillis",
    "logOffsets",
    "totalRecordCount",
    "deltaRecordCount",
    "changelogRecordCount",
    "watermark",
    "statistics",
    "properties",
    "nextRowId",
    "operation",
)
TAG_FIELDS = ("tagCreateTime", "tagTimeRetained")


class JavaDecimal(str):
    """A JSON number written verbatim (Java's Duration as ``86400.000000000``)."""


def _scalar(value: Any) -> str:
    if isinstance(value, JavaDecimal):
        return str(value)
    if isinstance(value, Decimal):
        return format(value, "f")
    return json.dumps(value, ensure_ascii=False)


def java_json(value: Any, indent: str = "") -> str:
    """Jackson's default pretty printer: ``"key" : value``, two-space indent, ``[ a, b ]``."""
    if isinstance(value, Mapping):
        if not value:
            return "{ }"
        inner = indent + "  "
        items = [
            f"{inner}{json.dumps(str(k), ensure_ascii=False)} : {java_json(v, inner)}"
            for k, v in value.items()
        ]
        return "{\n" + ",\n".join(items) + "\n" + indent + "}"
    if isinstance(value, (list, tuple)):
        if not value:
            return "[ ]"
        return "[ " + ", ".join(java_json(v, indent) for v in value) + " ]"
    return _scalar(value)


def ordered_snapshot_fields(raw: Mapping[str, Any]) -> dict[str, Any]:
    """Snapshot fields in Java's order, then unknown keys (kept), tag-only fields dropped."""
    out = {k: raw[k] for k in SNAPSHOT_FIELD_ORDER if k in raw}
    out.update({k: v for k, v in raw.items() if k not in out and k not in TAG_FIELDS})
    return out


def snapshot_json(raw: Mapping[str, Any]) -> str:
    return java_json(ordered_snapshot_fields(raw))
