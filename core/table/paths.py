"""Where every Paimon file lives: FileStorePathFactory's job."""

from __future__ import annotations

import datetime as dt
import math
import os
from collections.abc import Sequence
from decimal import Decimal
from typing import Any, Protocol

from core.format import binary_row
from core.format.model import IndexManifestEntry, ManifestEntry, TableSchema
from core.format.options import TableOptions
from core.format.types import DataType
from core.io.fileio import is_under, join, normalize_path, parent, protocol_of


class DataFileLocation(Protocol):
    """Where a data file lives, as its manifest entry says: a DataFileMeta, or the
    ExpireFileEntry expiry reads instead of a whole entry."""

    @property
    def file_name(self) -> str: ...

    @property
    def external_path(self) -> str | None: ...

    @property
    def extra_files(self) -> tuple[str, ...]: ...


_ESCAPE = frozenset("\"#%'*/:=?\\{}[]^")


def escape_path_name(text: str) -> str:
    """Paimon PartitionPathUtils.escapePathName: control chars and ``"#%'*/:=?\\{}[]^``."""
    out = []
    for ch in text:
        if ord(ch) < 0x20 or ord(ch) == 0x7F or ch in _ESCAPE:
            out.append(f"%{ord(ch):02X}")
        else:
            out.append(ch)
    return "".join(out)


def java_double_str(value: float) -> str:
    """Java Double.toString for the values partition names can hold."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    if value == 0:
        return "-0.0" if math.copysign(1, value) < 0 else "0.0"
    if 1e-3 <= abs(value) < 1e7:
        text = repr(value)
        return text if "." in text or "e" in text else text + ".0"
    sign, digits, exponent = Decimal(repr(value)).as_tuple()
    assert isinstance(exponent, int)
    ds = "".join(map(str, digits)).rstrip("0") or "0"
    exp10 = len(digits) - 1 + exponent
    mantissa = f"{ds[0]}.{ds[1:] or '0'}"
    return f"{'-' if sign else ''}{mantissa}E{exp10}"


def java_local_datetime(value: dt.datetime) -> str:
    # LocalDateTime.toString(): seconds and fraction only when non-zero, fraction 3/6/9 digits.
    text = value.strftime("%Y-%m-%dT%H:%M")
    if value.second or value.microsecond:
        text += f":{value.second:02d}"
        if value.microsecond:
            text += (
                f".{value.microsecond // 1000:03d}"
                if value.microsecond % 1000 == 0
                else f".{value.microsecond:06d}"
            )
    return text


def partition_value_text(value: Any, t: DataType, *, legacy: bool) -> str | None:
    """Text of one partition value as Paimon writes it in a directory name (None = null)."""
    if value is None:
        return None
    root = t.root
    if root == "BOOLEAN":
        return "true" if value else "false"
    if root in ("FLOAT", "DOUBLE"):
        return java_double_str(float(value))
    if root == "DECIMAL":
        return format(Decimal(value), "f")
    if root == "DATE":
        return str((value - dt.date(1970, 1, 1)).days) if legacy else value.isoformat()
    if root == "TIME":
        ms = (
            (value.hour * 60 + value.minute) * 60 + value.second
        ) * 1000 + value.microsecond // 1000
        if legacy:
            return str(ms)
        base: str = value.strftime("%H:%M:%S")
        return base + (f".{value.microsecond // 1000:03d}" if value.microsecond else "")
    if root in ("TIMESTAMP", "TIMESTAMP_LTZ"):
        if legacy:
            return java_local_datetime(value)
        stamp: dt.datetime = value
        precision = t.precision if t.precision is not None else 6
        frac = f"{stamp.microsecond:06d}000"[: max(precision, 0)]
        text = stamp.strftime("%Y-%m-%d %H:%M:%S")
        return f"{text}.{frac}" if frac else text
    if root in ("BINARY", "VARBINARY", "BYTES"):
        return bytes(value).decode("utf-8", errors="replace")
    return str(value)


def _is_canonical(path: str) -> bool:
    """Already in normalize_path form: no file: prefix, no '.'/'..' segments, no '//'."""
    rest = path.split("://", 1)[1] if "://" in path else path
    return (
        not path.startswith(("file:", "FILE:"))
        and (path.startswith("/") or "://" in path)
        and "//" not in rest
        and "/./" not in rest
        and "/../" not in rest
        and not rest.endswith(("/.", "/..", "/"))
    )


def branch_root_of(root: str, branch: str) -> str:
    """Main lives at the table root; branch ``b`` at ``branch/branch-b``."""
    return root if branch == "main" else join(root, "branch", f"branch-{branch}")


class PathFactory:
    """Resolves paths of one table (and its branches) from options and schema."""

    def __init__(self, root: str, schema: TableSchema, options: TableOptions) -> None:
        self.root = normalize_path(root)
        self.schema = schema
        self.options = options
        self.partition_keys: tuple[str, ...] = schema.partition_keys
        self.partition_types: tuple[DataType, ...] = schema.partition_types
        self._partition_cache: dict[bytes, str] = {}
        self._bucket_dirs: dict[tuple[bytes, int], str] = {}  # under data_root
        self.data_root = (
            join(self.root, options.path_directory) if options.path_directory else self.root
        )
        self.external_roots = tuple(normalize_path(p) for p in options.external_paths)
        self._real_dirs: dict[str, str] = {}
        self._real_roots: tuple[str, ...] | None = None
        # Directories whose plain-named children are known inside: plans check every
        # path (twice when applied), and a million realpath-style checks add up.
        self._inside_dirs: set[str] = set()

    # -- metadata directories -------------------------------------------------------------
    def branch_root(self, branch: str = "main") -> str:
        return branch_root_of(self.root, branch)

    def manifest_path(self, name: str) -> str:
        return join(self.root, "manifest", name)

    def statistics_path(self, name: str) -> str:
        return join(self.root, "statistics", name)

    # -- data -----------------------------------------------------------------------------
    def decode_partition(self, partition: bytes) -> tuple[Any, ...]:
        return binary_row.decode(partition, self.partition_types)

    def partition_path(self, partition: bytes) -> str:
        """``k1=v1/k2=v2`` (escaped), '' for unpartitioned tables."""
        cached = self._partition_cache.get(partition)
        if cached is not None:
            return cached
        values = self.decode_partition(partition) if self.partition_keys else ()
        text = self.partition_path_of(values)
        self._partition_cache[partition] = text
        return text

    def partition_path_of(self, values: Sequence[Any]) -> str:
        parts = []
        legacy = self.options.legacy_partition_name
        default = self.options.default_partition_name
        for key, t, value in zip(self.partition_keys, self.partition_types, values, strict=True):
            text = partition_value_text(value, t, legacy=legacy)
            if text is None or not text.strip():
                text = default
            parts.append(f"{escape_path_name(key)}={escape_path_name(text)}")
        return "/".join(parts)

    def partition_spec(self, partition: bytes) -> dict[str, str | None]:
        """Partition as ``{key: text}`` for people and JSON (null stays None)."""
        values = self.decode_partition(partition) if self.partition_keys else ()
        legacy = self.options.legacy_partition_name
        return {
            k: partition_value_text(v, t, legacy=legacy)
            for k, t, v in zip(self.partition_keys, self.partition_types, values, strict=True)
        }

    def bucket_dir(self, partition: bytes, bucket: int, *, base: str | None = None) -> str:
        if base is None:
            # Every data file path passes here: an expiry builds tens of thousands.
            cached = self._bucket_dirs.get((partition, bucket))
            if cached is None:
                cached = self._bucket_dirs[(partition, bucket)] = self._bucket_dir(
                    self.data_root, partition, bucket
                )
            return cached
        return self._bucket_dir(base, partition, bucket)

    def _bucket_dir(self, base: str, partition: bytes, bucket: int) -> str:
        name = "bucket-postpone" if bucket == -2 else f"bucket-{bucket}"
        return join(base or self.data_root, self.partition_path(partition), name)

    def data_file_path(self, entry: ManifestEntry) -> str:
        return self.file_path(entry.partition, entry.bucket, entry.file)

    def file_path(self, partition: bytes, bucket: int, f: DataFileLocation) -> str:
        if f.external_path:
            return normalize_path(f.external_path)
        return join(self.bucket_dir(partition, bucket), f.file_name)

    def extra_file_paths(self, partition: bytes, bucket: int, f: DataFileLocation) -> list[str]:
        directory = parent(self.file_path(partition, bucket, f))
        return [join(directory, name) for name in f.extra_files]

    def index_file_path(self, entry: IndexManifestEntry) -> str:
        if entry.external_path:
            return normalize_path(entry.external_path)
        if self.options.index_file_in_data_dir and "global-index-" not in entry.file_name:
            return join(self.bucket_dir(entry.partition, entry.bucket), entry.file_name)
        return join(self.root, "index", entry.file_name)

    # -- safety ---------------------------------------------------------------------------
    def is_inside_table(self, path: str) -> bool:
        """The path lock: only the table root and declared external roots may be touched.

        On local disk the directory is also resolved, so a symlinked directory inside the
        table can never lead a deletion outside it."""
        head, _, name = path.rpartition("/")
        if head in self._inside_dirs and name not in ("", ".", ".."):
            return True
        roots = (self.root, *self.external_roots)
        canonical = _is_canonical(path)
        if canonical:
            # Fast path for the (usual) canonical paths built from listings and metadata.
            if not any(path.startswith(r.rstrip("/") + "/") for r in roots):
                return False
        elif not any(is_under(path, r) for r in roots):
            return False
        if protocol_of(path) in ("", "file", "local"):
            directory = parent(path)
            real = self._real_dirs.get(directory)
            if real is None:
                real = os.path.realpath(directory)
                self._real_dirs[directory] = real
            if self._real_roots is None:
                self._real_roots = tuple(os.path.realpath(r) for r in roots)
            if not any(real == r or real.startswith(r.rstrip("/") + "/") for r in self._real_roots):
                return False
        if canonical:
            self._inside_dirs.add(head)
        return True
