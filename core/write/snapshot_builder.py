"""One commit attempt on top of the latest snapshot: the delta manifest, the base and delta
manifest lists (a manifest compaction's rewritten base instead), the index manifest when
index entries change, the changelog list; and the new snapshot's fields."""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from core import __version__
from core.errors import StorageError
from core.format.metadata_io import read_json
from core.format.model import UNRECORDED, Snapshot
from core.table.table import PaimonTable
from core.write.changes import Changes, KeptManifest, ManifestRewrite
from core.write.manifest_writer import (
    INDEX_MANIFEST_ENTRY_SCHEMA,
    INDEX_MANIFEST_VERSION,
    MANIFEST_ENTRY_SCHEMA,
    MANIFEST_FILE_META_SCHEMA,
    WrittenFile,
    conform_entry,
    conform_index_entry,
    conform_manifest_meta,
    encode_avro,
    manifest_meta,
    read_raw_rows,
)
from core.write.publication import Publication

WRITER_VERSION = f"paimon-cli-{__version__}"


@dataclass
class Attempt:
    """One commit attempt: the manifests and lists it writes (removed again while its
    publication allows)."""

    table: PaimonTable
    codec: str
    publication: Publication
    prefix: str = field(default_factory=lambda: str(uuid.uuid4()))
    counter: int = 0
    written: list[WrittenFile] = field(default_factory=list)
    #: why the LATEST hint could not follow the published snapshot (a note), if it could not
    hint: str | None = None

    def write(
        self, kind: str, schema: Mapping[str, Any], rows: Sequence[Mapping[str, Any]]
    ) -> WrittenFile:
        name = f"{kind}-{self.prefix}-{self.counter}"
        self.counter += 1
        path = self.table.paths.manifest_path(name)
        data = encode_avro(schema, rows, self.codec)
        if not self.table.fileio.write_if_absent(path, data):
            raise StorageError(f"{path} already exists (UUID collision?)")
        written = WrittenFile(name, path, len(data))
        self.written.append(written)
        return written

    def discard(self) -> None:
        """Remove this attempt's manifests, unless its snapshot is (possibly) published."""
        self.publication.discard([f.path for f in self.written], "unreferenced ")
        if self.publication.may_discard:
            self.written.clear()


def _stats_to_inherit(table: PaimonTable, latest: Snapshot) -> str | None:
    if not latest.statistics:
        return None
    try:
        stats = read_json(table.fileio, table.paths.statistics_path(latest.statistics))
    except FileNotFoundError:
        return None
    return latest.statistics if stats.get("schemaId") == table.schema.id else None


def _total_before(table: PaimonTable, latest: Snapshot) -> int:
    if latest.total_record_count is not None:
        return latest.total_record_count
    return sum(e.file.row_count for e in table.live_files(latest))


def build_snapshot(
    table: PaimonTable,
    latest: Snapshot,
    changes: Changes,
    attempt: Attempt,
    *,
    commit_kind: str,
    commit_user: str,
    identifier: int,
    now_ms: int,
) -> dict[str, Any]:
    """Write manifests and lists for ``changes`` on top of ``latest``; the snapshot fields."""
    delta_rows = [conform_entry(e) for e in changes.entries]
    delta_lists = [_manifest(table, attempt, delta_rows)] if delta_rows else []
    base = attempt.write(
        "manifest-list", MANIFEST_FILE_META_SCHEMA, _base(table, latest, changes, attempt)
    )
    delta = attempt.write("manifest-list", MANIFEST_FILE_META_SCHEMA, delta_lists)
    index_manifest = _index_manifest(table, latest, changes, attempt)
    changelog_rows = [conform_entry(e) for e in changes.changelog]
    changelog = (
        attempt.write(
            "manifest-list", MANIFEST_FILE_META_SCHEMA, [_manifest(table, attempt, changelog_rows)]
        )
        if changelog_rows
        else None
    )
    delta_count = sum((1 if e["_KIND"] == 0 else -1) * e["_FILE"]["_ROW_COUNT"] for e in delta_rows)
    raw: dict[str, Any] = {
        "version": 3,
        "uuid": str(uuid.uuid4()),
        "id": latest.id + 1,
        "schemaId": table.schema.id,
        "baseManifestList": base.name,
        "baseManifestListSize": base.size,
        "deltaManifestList": delta.name,
        "deltaManifestListSize": delta.size,
        "changelogManifestList": changelog.name if changelog else None,
        "changelogManifestListSize": changelog.size if changelog else None,
        "indexManifest": index_manifest,
        "commitUser": commit_user,
        "writerVersion": WRITER_VERSION,
        "commitIdentifier": identifier,
        "commitKind": commit_kind,
        "timeMillis": now_ms,
        "totalRecordCount": _total_before(table, latest) + delta_count,
        "deltaRecordCount": delta_count,
        # ManifestEntry.nullableRecordCount: null without changelog files
        "changelogRecordCount": (
            sum(int(e["_FILE"]["_ROW_COUNT"]) for e in changelog_rows) if changelog_rows else None
        ),
        "watermark": latest.watermark,
        "statistics": _stats_to_inherit(table, latest),
        # A manifest compaction carries the latest snapshot's properties (compactManifest).
        "properties": latest.raw.get("properties") if changes.rewrite is not None else None,
        "nextRowId": latest.raw.get("nextRowId"),
    }
    return {k: v for k, v in raw.items() if v is not None}


def _manifest(
    table: PaimonTable, attempt: Attempt, rows: Sequence[Mapping[str, Any]]
) -> dict[str, Any]:
    """Write ``rows`` as one manifest; its manifest-list row."""
    manifest = attempt.write("manifest", MANIFEST_ENTRY_SCHEMA, rows)
    return manifest_meta(
        manifest.name,
        manifest.size,
        rows,
        table.schema.partition_types,
        latest_schema_id=table.schema.id,
    )


def _base(
    table: PaimonTable, latest: Snapshot, changes: Changes, attempt: Attempt
) -> list[dict[str, Any]]:
    """The base list's rows: a manifest compaction's rewrite, or else the previous base and
    delta manifests, re-listed unchanged (no merging)."""
    if changes.rewrite is not None:
        return _rewritten_base(table, changes.rewrite, attempt)
    return [
        conform_manifest_meta(r)
        for name in (latest.base_manifest_list, latest.delta_manifest_list)
        for r in read_raw_rows(
            table.fileio, table.paths.manifest_path(name), expect=latest.list_expected(name)
        )
    ]


def _index_manifest(
    table: PaimonTable, latest: Snapshot, changes: Changes, attempt: Attempt
) -> str | None:
    """The new snapshot's index manifest: the latest one's when no index entry changes;
    else one written without the dropped entries and with the added ones (None if empty)."""
    if not ((changes.index_deletes and latest.index_manifest) or changes.index_adds):
        return latest.index_manifest
    previous = (
        read_raw_rows(
            table.fileio,
            table.paths.manifest_path(latest.index_manifest),
            expect=UNRECORDED,  # nothing records an index manifest's size
        )
        if latest.index_manifest
        else ()
    )
    keep = [
        {**conform_index_entry(r), "_VERSION": INDEX_MANIFEST_VERSION}
        for r in previous
        if (bytes(r["_PARTITION"]), r["_BUCKET"], r["_INDEX_TYPE"], r["_FILE_NAME"])
        not in changes.index_deletes
    ] + [conform_index_entry(r) for r in changes.index_adds]
    if not keep:
        return None
    return attempt.write("index-manifest", INDEX_MANIFEST_ENTRY_SCHEMA, keep).name


ROLL_CHECK_ROWS = 1000  # Paimon's RollingFileWriter checks the file size every 1000 records


def _rewritten_base(
    table: PaimonTable, rewrite: ManifestRewrite, attempt: Attempt
) -> list[dict[str, Any]]:
    """The rewrite's base list: kept manifests as they are, new ones written rolling."""
    rows: list[dict[str, Any]] = []
    for part in rewrite.parts:
        if isinstance(part, KeptManifest):
            rows.append(conform_manifest_meta(part.row))
            continue
        entries = [conform_entry(e) for e in part.entries]
        for chunk in _rolled(entries, attempt.codec, part.target_size):
            rows.append(_manifest(table, attempt, chunk))
    return rows


def _rolled(
    entries: Sequence[dict[str, Any]], codec: str, target_size: int
) -> list[Sequence[dict[str, Any]]]:
    """Entries cut into manifests as Paimon rolls them: a file closes at the first check
    (every 1000 entries) where it holds ``target_size`` bytes. Sizes are estimated from the
    encoded size of each block of 1000 entries."""
    chunks: list[Sequence[dict[str, Any]]] = []
    start, size = 0, 0
    for block in range(0, len(entries), ROLL_CHECK_ROWS):
        rows = entries[block : block + ROLL_CHECK_ROWS]
        size += len(encode_avro(MANIFEST_ENTRY_SCHEMA, rows, codec))
        end = block + len(rows)
        if size >= target_size and end < len(entries):
            chunks.append(entries[start:end])
            start, size = end, 0
    if start < len(entries):
        chunks.append(entries[start:])
    return chunks
