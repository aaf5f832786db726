"""Typed views of Paimon metadata: snapshots, tags, consumers, schemas, manifest rows.

JSON models keep their source mapping (``raw``) so anything written back preserves
fields a newer writer added.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from enum import IntEnum
from typing import Any, NamedTuple

from core.errors import CorruptMetadataError
from core.format.types import DataType, parse_type


class FileKind(IntEnum):
    ADD = 0
    DELETE = 1


class FileSource(IntEnum):
    APPEND = 0
    COMPACT = 1


COMMIT_KINDS = ("APPEND", "COMPACT", "OVERWRITE", "ANALYZE")


def load_json(text: str, path: str) -> dict[str, Any]:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise CorruptMetadataError(path, f"invalid JSON ({exc.msg} at line {exc.lineno})") from exc
    if not isinstance(data, dict):
        raise CorruptMetadataError(path, "expected a JSON object")
    return data


def _req_int(data: Mapping[str, Any], key: str, path: str) -> int:
    value = data.get(key)
    if isinstance(value, bool) or not isinstance(value, int):
        raise CorruptMetadataError(path, f"missing or non-integer field {key!r}")
    return value


def _req_str(data: Mapping[str, Any], key: str, path: str) -> str:
    value = data.get(key)
    if not isinstance(value, str) or not value:
        raise CorruptMetadataError(path, f"missing or non-string field {key!r}")
    return value


def _opt_str(data: Mapping[str, Any], key: str, path: str) -> str | None:
    value = data.get(key)
    if value is None:
        return None
    if not isinstance(value, str):
        raise CorruptMetadataError(path, f"field {key!r} is not a string")
    return value or None


def _opt_int(data: Mapping[str, Any], key: str, path: str) -> int | None:
    value = data.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise CorruptMetadataError(path, f"field {key!r} is not an integer")
    return value


def _check_name(name: str | None, key: str, path: str) -> str | None:
    # A metadata file name is a bare name: a separator or '..' is corrupt (DECISIONS D3).
    if name is not None and ("/" in name or "\\" in name or name in (".", "..")):
        raise CorruptMetadataError(path, f"{key} {name!r} is not a plain file name")
    return name


@dataclass(frozen=True, slots=True)
class Expected:
    """What the file naming a metadata file records about it: its size and, for a manifest,
    its entries (the list's added + deleted files). Every decode compares them, so a file
    cut at an Avro block boundary (which decodes without error) is corrupt, never empty."""

    size: int | None = None  # bytes; None where nothing records it (index manifests)
    entries: int | None = None  # rows; None where nothing records them (manifest lists)
    by: str = ""  # who records them, for messages

    def mismatch(self, size: int, entries: int | None = None) -> str | None:
        """Why ``size`` bytes (and ``entries`` rows, when counted) do not match, or None."""
        by = f" ({self.by})" if self.by else ""
        if self.size is not None and size != self.size:
            return f"{size} bytes, but {self.size} recorded{by}: truncated or altered"
        if self.entries is not None and entries is not None and entries != self.entries:
            return f"{entries} entries, but {self.entries} recorded{by}: truncated or altered"
        return None


UNRECORDED = Expected()


class ManifestRef(NamedTuple):
    """A manifest as its list names it, without building a ManifestFileMeta."""

    file_name: str
    file_size: int
    entries: int  # added + deleted files

    def expected(self) -> Expected:
        return Expected(self.file_size, self.entries, "its manifest list")


@dataclass(frozen=True, slots=True)
class Snapshot:
    id: int
    schema_id: int
    base_manifest_list: str
    delta_manifest_list: str
    changelog_manifest_list: str | None
    index_manifest: str | None
    commit_user: str
    commit_identifier: int
    commit_kind: str
    time_millis: int
    total_record_count: int | None
    delta_record_count: int | None
    changelog_record_count: int | None
    watermark: int | None
    statistics: str | None
    version: int
    raw: Mapping[str, Any] = field(compare=False, repr=False)
    path: str = field(default="", compare=False, repr=False)  # the file it was read from

    @classmethod
    def from_json(cls, data: Mapping[str, Any], path: str) -> Snapshot:
        version = data.get("version", 1)
        if not isinstance(version, int) or version > 3:
            raise CorruptMetadataError(path, f"unsupported snapshot version {version!r}")
        kind = _req_str(data, "commitKind", path)
        if kind not in COMMIT_KINDS:
            raise CorruptMetadataError(path, f"unknown commitKind {kind!r}")
        return cls(
            id=_req_int(data, "id", path),
            schema_id=_req_int(data, "schemaId", path),
            base_manifest_list=_check_name(
                _req_str(data, "baseManifestList", path), "baseManifestList", path
            )
            or "",
            delta_manifest_list=_check_name(
                _req_str(data, "deltaManifestList", path), "deltaManifestList", path
            )
            or "",
            changelog_manifest_list=_check_name(
                _opt_str(data, "changelogManifestList", path), "changelogManifestList", path
            ),
            index_manifest=_check_name(
                _opt_str(data, "indexManifest", path), "indexManifest", path
            ),
            commit_user=str(data.get("commitUser", "")),
            commit_identifier=_opt_int(data, "commitIdentifier", path) or 0,
            commit_kind=kind,
            time_millis=_req_int(data, "timeMillis", path),
            total_record_count=_opt_int(data, "totalRecordCount", path),
            delta_record_count=_opt_int(data, "deltaRecordCount", path),
            changelog_record_count=_opt_int(data, "changelogRecordCount", path),
            watermark=_opt_int(data, "watermark", path),
            statistics=_check_name(_opt_str(data, "statistics", path), "statistics", path),
            version=version,
            raw=dict(data),
            path=path,
        )

    def list_expected(self, name: str) -> Expected:
        """What this snapshot (tag, changelog) records about one of its manifest lists: the
        size of version 3 files (older ones record none)."""
        for key in ("baseManifestList", "deltaManifestList", "changelogManifestList"):
            if self.raw.get(key) == name:
                size = self.raw.get(f"{key}Size")
                recorded = size if isinstance(size, int) and not isinstance(size, bool) else None
                return Expected(recorded, None, self.path.rpartition("/")[2] or "its snapshot")
        raise ValueError(f"{name} is not a manifest list of snapshot {self.id}")

    @property
    def manifest_lists(self) -> tuple[str, ...]:
        """Every manifest list this snapshot names (base, delta, changelog)."""
        lists = [self.base_manifest_list, self.delta_manifest_list]
        if self.changelog_manifest_list:
            lists.append(self.changelog_manifest_list)
        return tuple(lists)


@dataclass(frozen=True, slots=True)
class Tag:
    name: str
    snapshot: Snapshot
    create_time: dt.datetime | None
    time_retained_ms: int | None

    @classmethod
    def from_json(cls, name: str, data: Mapping[str, Any], path: str) -> Tag:
        return cls(
            name=name,
            snapshot=Snapshot.from_json(data, path),
            create_time=_parse_tag_time(data.get("tagCreateTime"), path),
            time_retained_ms=_parse_retained(data.get("tagTimeRetained"), path),
        )

    @property
    def expire_at(self) -> dt.datetime | None:
        """Local wall-clock time after which the tag expires (Paimon TagTimeExpire)."""
        if self.create_time is None or self.time_retained_ms is None:
            return None
        return self.create_time + dt.timedelta(milliseconds=self.time_retained_ms)


def _parse_tag_time(raw: Any, path: str) -> dt.datetime | None:
    # Java LocalDateTime as [y, M, d, h, m, (s), (nanos)]; some writers use ISO text.
    if raw is None:
        return None
    try:
        if isinstance(raw, list) and 3 <= len(raw) <= 7:
            parts = [int(x) for x in raw] + [0] * (7 - len(raw))
            y, mo, d, h, mi, s, nanos = parts
            return dt.datetime(y, mo, d, h, mi, s, nanos // 1000)
        if isinstance(raw, str):
            return dt.datetime.fromisoformat(raw)
    except (TypeError, ValueError) as exc:
        raise CorruptMetadataError(path, f"bad tagCreateTime {raw!r}") from exc
    raise CorruptMetadataError(path, f"bad tagCreateTime {raw!r}")


def _parse_retained(raw: Any, path: str) -> int | None:
    # Java Duration as decimal seconds (86400.000000000) or pypaimon float (86400.0).
    if raw is None:
        return None
    try:
        return int(Decimal(str(raw)) * 1000)
    except ArithmeticError as exc:
        raise CorruptMetadataError(path, f"bad tagTimeRetained {raw!r}") from exc


@dataclass(frozen=True, slots=True)
class Consumer:
    id: str
    next_snapshot: int
    mtime_ms: int | None
    size: int | None = None  # of its file, as listed

    @classmethod
    def from_json(
        cls,
        cid: str,
        data: Mapping[str, Any],
        path: str,
        mtime_ms: int | None,
        size: int | None = None,
    ) -> Consumer:
        return cls(cid, _req_int(data, "nextSnapshot", path), mtime_ms, size)


@dataclass(frozen=True, slots=True)
class DataField:
    id: int
    name: str
    type: DataType


@dataclass(frozen=True, slots=True)
class TableSchema:
    id: int
    fields: tuple[DataField, ...]
    partition_keys: tuple[str, ...]
    primary_keys: tuple[str, ...]
    options: Mapping[str, str]
    comment: str | None
    time_millis: int
    raw: Mapping[str, Any] = field(compare=False, repr=False)

    @classmethod
    def from_json(cls, data: Mapping[str, Any], path: str) -> TableSchema:
        raw_fields = data.get("fields")
        if not isinstance(raw_fields, list):
            raise CorruptMetadataError(path, "missing 'fields'")
        fields: list[DataField] = []
        for f in raw_fields:
            if not isinstance(f, dict) or "name" not in f or "type" not in f:
                raise CorruptMetadataError(path, "field without name or type")
            fields.append(
                DataField(
                    int(f.get("id", len(fields))), str(f["name"]), parse_type(f["type"], where=path)
                )
            )
        options = data.get("options") or {}
        if not isinstance(options, dict):
            raise CorruptMetadataError(path, "'options' is not an object")
        version = data.get("version", 1)
        opts = {str(k): str(v) for k, v in options.items()}
        # Reader defaults of old schema versions.
        if isinstance(version, int) and version <= 1:
            opts.setdefault("bucket", "1")
        if isinstance(version, int) and version <= 2:
            opts.setdefault("file.format", "orc")
        schema = cls(
            id=_req_int(data, "id", path),
            fields=tuple(fields),
            partition_keys=tuple(str(k) for k in data.get("partitionKeys") or ()),
            primary_keys=tuple(str(k) for k in data.get("primaryKeys") or ()),
            options=opts,
            comment=data.get("comment"),
            time_millis=int(data.get("timeMillis") or 0),
            raw=dict(data),
        )
        names = {f.name for f in schema.fields}
        for key in schema.partition_keys + schema.primary_keys:
            if key not in names:
                raise CorruptMetadataError(path, f"key column {key!r} is not a field")
        return schema

    def field(self, name: str) -> DataField:
        for f in self.fields:
            if f.name == name:
                return f
        raise KeyError(name)

    @property
    def partition_types(self) -> tuple[DataType, ...]:
        return tuple(self.field(k).type for k in self.partition_keys)

    @property
    def trimmed_primary_keys(self) -> tuple[str, ...]:
        return tuple(k for k in self.primary_keys if k not in self.partition_keys)


@dataclass(frozen=True, slots=True)
class ManifestFileMeta:
    """One row of a manifest list."""

    file_name: str
    file_size: int
    num_added_files: int
    num_deleted_files: int
    schema_id: int
    min_bucket: int | None = None
    max_bucket: int | None = None
    min_level: int | None = None
    max_level: int | None = None
    extra_files: tuple[str, ...] = ()

    def expected(self) -> Expected:
        """Size and entries this row records for its manifest."""
        return Expected(
            self.file_size, self.num_added_files + self.num_deleted_files, "its manifest list"
        )


@dataclass(frozen=True, slots=True)
class DataFileMeta:
    file_name: str
    file_size: int
    row_count: int
    level: int
    extra_files: tuple[str, ...]
    schema_id: int
    min_sequence_number: int
    max_sequence_number: int
    # Writer's local wall-clock time stored as if UTC (format pitfall 18); tz ignored.
    creation_time: dt.datetime | None
    delete_row_count: int | None
    file_source: int | None
    external_path: str | None
    embedded_index: bytes | None
    first_row_id: int | None


FileIdentifier = tuple[bytes, int, int, str, tuple[str, ...], bytes | None, str | None]


@dataclass(frozen=True, slots=True)
class ManifestEntry:
    kind: FileKind
    partition: bytes
    bucket: int
    total_buckets: int
    file: DataFileMeta

    @property
    def identifier(self) -> FileIdentifier:
        """Paimon's FileEntry identifier: level and external path are part of it."""
        f = self.file
        return (
            self.partition,
            self.bucket,
            f.level,
            f.file_name,
            f.extra_files,
            f.embedded_index,
            f.external_path,
        )


class ExpireFileEntry(NamedTuple):
    """What expiry reads of a manifest entry (Paimon's ExpireFileEntry): its kind and where
    the file lives, not a whole ManifestEntry. An expiry reads every entry of every delta
    it walks, and building 40,000 ManifestEntry objects cost more than decoding them
    (issue 27)."""

    kind: FileKind
    partition: bytes
    bucket: int
    file_name: str
    file_size: int
    extra_files: tuple[str, ...]
    external_path: str | None
    file_source: int | None


@dataclass(frozen=True, slots=True)
class DeletionVectorRange:
    data_file: str
    offset: int
    length: int
    cardinality: int | None


@dataclass(frozen=True, slots=True)
class IndexManifestEntry:
    kind: FileKind
    partition: bytes
    bucket: int
    index_type: str
    file_name: str
    file_size: int
    row_count: int
    external_path: str | None
    dv_ranges: tuple[DeletionVectorRange, ...] = ()
