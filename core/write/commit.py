"""Publish new snapshots and tags atomically, as Paimon's committers do.

A commit writes its delta manifest, the base and delta manifest lists (and a new index
manifest when index entries go), then creates ``snapshot-<latest+1>`` only if it is
absent. Losing that race to another writer means: delete what this attempt wrote, wait
(exponential backoff with jitter), re-read the new latest snapshot, rebuild the changes
from it, re-check that every file marked DELETE is still live, and try again, up to
``commit.max-retries``. The ``LATEST`` hint follows a successful commit.

Atomic create is a hard link on local file systems (never replaces a target) and a
conditional put (``If-None-Match: *``) on S3. Other object stores cannot refuse an
overwrite, so committing there is refused unless the caller opts in (``allow_unsafe``).

Publishing is the point of no return, and its answer can be wrong: S3 may store a PUT and
answer 500 (or the connection drops, or the client times out), and the retry then hears
"already exists" about our own snapshot. So "exists" is read back and accepted when the
file is ours, and a :class:`Publication` tracks, for the commit and for every file written
for it, whether anything may still be removed: only while no snapshot can reference it.
From the first attempt to create the snapshot on, whatever exception arrives (a storage
error, Ctrl-C, SystemExit), nothing is discarded; leftovers of an outcome that stayed
unknown are at worst orphans.
"""

from __future__ import annotations

import json
import logging
import random
import time
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from enum import Enum
from typing import Any

from core import __version__
from core.errors import PaimonError, SafetyRefusalError, StorageError, WriteOutcomeUnknownError
from core.format.metadata_io import read_json
from core.format.model import UNRECORDED, Snapshot
from core.format.options import parse_duration_ms
from core.io.fileio import FileIO, join
from core.runtime.interrupts import critical
from core.runtime.runs import Run
from core.table.table import PaimonTable
from core.write.manifest_writer import (
    INDEX_MANIFEST_ENTRY_SCHEMA,
    INDEX_MANIFEST_VERSION,
    MANIFEST_ENTRY_SCHEMA,
    MANIFEST_FILE_META_SCHEMA,
    WrittenFile,
    avro_codec,
    conform_entry,
    conform_index_entry,
    conform_manifest_meta,
    encode_avro,
    manifest_meta,
    read_raw_rows,
)

logger = logging.getLogger(__name__)

BATCH_COMMIT_IDENTIFIER = 2**63 - 1  # Long.MAX_VALUE: batch jobs and procedures
WRITER_VERSION = f"paimon-cli-{__version__}"

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


class CommitConflictError(PaimonError):
    """Another writer kept winning, or a file to delete is no longer live."""

    kind = "commit_conflict"


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


# -- changes ------------------------------------------------------------------------------------
@dataclass(frozen=True)
class KeptManifest:
    """A data manifest a rewrite keeps as it is: its manifest-list row."""

    row: Mapping[str, Any]


@dataclass(frozen=True)
class NewManifests:
    """Manifest entries a rewrite writes into new manifests, rolled at ``target_size``."""

    entries: tuple[Mapping[str, Any], ...]
    target_size: int


@dataclass(frozen=True)
class ManifestRewrite:
    """A commit that replaces the data manifests instead of adding a delta (Paimon's manifest
    compaction): the new base list is ``parts`` in order, the delta list is empty, and the
    snapshot keeps the table's rows, index manifest, statistics and properties."""

    parts: tuple[KeptManifest | NewManifests, ...]


@dataclass(frozen=True)
class Changes:
    """What one commit attempt changes, built from the latest snapshot it is based on."""

    entries: tuple[dict[str, Any], ...]  # delta manifest rows (Java layout), ADD and DELETE
    # Index entries to drop, by (partition, bucket, index type, file name).
    index_deletes: frozenset[tuple[bytes, int, str, str]] = frozenset()
    details: Mapping[str, Any] = field(default_factory=dict)
    # The builder already verified that every DELETE is live in the snapshot it was given
    # (compaction checks against its own plan), so the commit need not re-read the manifests.
    deletes_verified: bool = False
    # Changelog files (ADD manifest rows) the commit lists in its changelog manifest list,
    # as Paimon commits a compaction's changelog (changelog-producer = full-compaction).
    changelog: tuple[dict[str, Any], ...] = ()
    # Index manifest rows (Java layout) of index files to add.
    index_adds: tuple[dict[str, Any], ...] = ()
    # The data manifests rewritten (manifest compaction); then ``entries`` is empty.
    rewrite: ManifestRewrite | None = None

    @property
    def empty(self) -> bool:
        return (
            not self.entries
            and not self.index_deletes
            and not self.index_adds
            and self.rewrite is None
        )


Builder = Callable[[Snapshot], Changes]


@dataclass(frozen=True)
class CommitResult:
    snapshot: Snapshot | None  # None: nothing to commit
    attempts: int
    changes: Changes | None
    notes: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """commit.max-retries (10), commit.min-retry-wait (10 ms), commit.max-retry-wait (10 s)."""

    max_retries: int = 10
    min_wait_ms: int = 10
    max_wait_ms: int = 10_000

    @classmethod
    def of(cls, table: PaimonTable) -> RetryPolicy:
        opts = table.options
        retries = opts.get_int("commit.max-retries")
        low = opts.get("commit.min-retry-wait")
        high = opts.get("commit.max-retry-wait")
        return cls(
            10 if retries is None else max(retries, 0),
            10 if low is None else parse_duration_ms(low),
            10_000 if high is None else parse_duration_ms(high),
        )

    def wait_ms(self, attempt: int) -> float:
        ceiling = min(self.max_wait_ms, self.min_wait_ms * 2 ** min(attempt, 20))
        return random.uniform(self.min_wait_ms, max(ceiling, self.min_wait_ms))


def entry_identifier(entry: Mapping[str, Any]) -> tuple[Any, ...]:
    """Paimon's FileEntry identifier of a raw manifest row (matches ManifestEntry.identifier)."""
    f = entry["_FILE"]
    return (
        bytes(entry["_PARTITION"]),
        entry["_BUCKET"],
        f["_LEVEL"],
        f["_FILE_NAME"],
        tuple(f.get("_EXTRA_FILES") or ()),
        f.get("_EMBEDDED_FILE_INDEX"),
        f.get("_EXTERNAL_PATH"),
    )


def check_publishable(table: PaimonTable, *, allow_unsafe: bool) -> None:
    """Refuse before writing anything when the store cannot create files atomically."""
    if table.fileio.conditional_create_supported(table.snapshots.directory) or allow_unsafe:
        return
    raise SafetyRefusalError(
        f"{table.location} is on a store without an atomic create-if-absent, so a concurrent "
        "writer could overwrite (lose) this commit",
        hint="stop other writers and pass --allow-unsafe-commit, or use a local/HDFS/S3 table",
    )


def refuse_non_avro_manifests(table: PaimonTable) -> None:
    """Java <= 2.0 reads manifests in the table's ``manifest.format``; we only write Avro."""
    fmt = (table.options.get("manifest.format") or "avro").strip().lower()
    if fmt != "avro":
        raise SafetyRefusalError(
            f"the table uses manifest.format={fmt}; paimon-cli writes Avro manifests only, "
            "which Paimon up to 2.0 would fail to read in this table",
            hint="run this operation with Paimon itself (e.g. the Spark or Flink procedure)",
        )


def publish_if_absent(
    fileio: FileIO, path: str, data: bytes, *, allow_unsafe: bool = False
) -> bool:
    """Create ``path`` only if absent; False when another writer's file is there."""
    if not fileio.conditional_create_supported(path):
        if not allow_unsafe:
            raise SafetyRefusalError(f"no atomic create-if-absent for {path}")
        logger.warning("non-atomic create of %s (opted in): a concurrent writer may win", path)
    return create_if_absent(fileio, path, data)


def create_if_absent(fileio: FileIO, path: str, data: bytes) -> bool:
    """Create ``path`` only if absent, atomically where the store can; otherwise check, then
    write (as Java does for tags). True when it holds ``data`` now (also when an earlier try
    of ours landed but its answer was lost); False when it holds something else."""
    if fileio.conditional_create_supported(path):
        return fileio.write_if_absent(path, data)
    if fileio.exists(path):
        return False
    fileio.write_bytes(path, data)
    return True


class PublishState(Enum):
    OPEN = "open"  # nothing published yet: what was written may be removed
    PUBLISHING = "publishing"  # creating the snapshot: its outcome may be unknown
    PUBLISHED = "published"  # the snapshot is ours: the commit has happened


class CommitOutcomeUnknownError(StorageError):
    """Creating the snapshot failed in a way that may still have stored it, and reading it
    back did not settle it; the files it would reference are kept (orphans if it did not
    land)."""

    kind = "commit_outcome_unknown"


@dataclass
class Publication:
    """The one gate between a commit and the removal of the files written for it.

    Files written before the snapshot (compaction's data and index files: ``outputs``; each
    attempt's manifests and lists) may be removed only while the publication is ``OPEN``:
    once creating the snapshot was attempted its outcome may be unknown, and once it is
    ours the commit has happened, whatever exception arrives afterwards."""

    fileio: FileIO
    state: PublishState = PublishState.OPEN
    outputs: list[str] = field(default_factory=list)

    @property
    def may_discard(self) -> bool:
        return self.state is PublishState.OPEN

    def discard(self, paths: Iterable[str], what: str = "") -> list[str]:
        """Remove ``paths`` when still allowed; returns those left behind (the reason is
        logged when the gate keeps them)."""
        paths = list(paths)
        if not paths:
            return []
        if not self.may_discard:
            logger.warning(
                "keeping %d file(s) written for the commit: the snapshot is %s",
                len(paths),
                "committed" if self.state is PublishState.PUBLISHED else "possibly committed",
            )
            return paths
        return delete_quietly(self.fileio, paths, what)

    def discard_outputs(self) -> list[str]:
        left = self.discard(self.outputs)
        if self.may_discard:
            self.outputs.clear()
        return left


def delete_quietly(fileio: FileIO, paths: Iterable[str], what: str = "") -> list[str]:
    """Delete files this run wrote, logging each failure (``could not remove <what><path>``)
    instead of raising; returns the paths that could not be removed."""
    failed = []
    for path in paths:
        try:
            fileio.delete(path)
        except StorageError as exc:
            logger.warning("could not remove %s%s: %s", what, path, exc.message)
            failed.append(path)
    return failed


def write_latest_hint(table: PaimonTable, snapshot_id: int) -> str | None:
    """Overwrite ``LATEST``; a failure does not fail the commit (Paimon tolerates it too)."""
    try:
        table.fileio.write_bytes(
            join(table.snapshots.directory, "LATEST"), str(snapshot_id).encode()
        )
        return None
    except StorageError as exc:
        return f"could not update the LATEST hint: {exc.message}"


# -- one attempt ---------------------------------------------------------------------------------
@dataclass
class _Attempt:
    table: PaimonTable
    codec: str
    publication: Publication
    prefix: str = field(default_factory=lambda: str(uuid.uuid4()))
    counter: int = 0
    written: list[WrittenFile] = field(default_factory=list)

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
    attempt: _Attempt,
    *,
    commit_kind: str,
    commit_user: str,
    identifier: int,
    now_ms: int,
) -> dict[str, Any]:
    """Write manifests and lists for ``changes`` on top of ``latest``; the snapshot fields."""
    ptypes = table.schema.partition_types
    delta_rows = [conform_entry(e) for e in changes.entries]
    delta_lists: list[dict[str, Any]] = []
    if delta_rows:
        manifest = attempt.write("manifest", MANIFEST_ENTRY_SCHEMA, delta_rows)
        delta_lists.append(
            manifest_meta(
                manifest.name, manifest.size, delta_rows, ptypes, latest_schema_id=table.schema.id
            )
        )
    if changes.rewrite is not None:
        base_rows = _rewritten_base(table, changes.rewrite, attempt)
    else:
        # Base = the previous base and delta manifests, re-listed unchanged (no merging).
        base_rows = [
            conform_manifest_meta(r)
            for name in (latest.base_manifest_list, latest.delta_manifest_list)
            for r in read_raw_rows(
                table.fileio, table.paths.manifest_path(name), expect=latest.list_expected(name)
            )
        ]
    base = attempt.write("manifest-list", MANIFEST_FILE_META_SCHEMA, base_rows)
    delta = attempt.write("manifest-list", MANIFEST_FILE_META_SCHEMA, delta_lists)
    index_manifest = latest.index_manifest
    if (changes.index_deletes and latest.index_manifest) or changes.index_adds:
        keep = [
            {**conform_index_entry(r), "_VERSION": INDEX_MANIFEST_VERSION}
            for r in (
                read_raw_rows(
                    table.fileio,
                    table.paths.manifest_path(latest.index_manifest),
                    expect=UNRECORDED,  # nothing records an index manifest's size
                )
                if latest.index_manifest
                else ()
            )
            if (bytes(r["_PARTITION"]), r["_BUCKET"], r["_INDEX_TYPE"], r["_FILE_NAME"])
            not in changes.index_deletes
        ] + [conform_index_entry(r) for r in changes.index_adds]
        index_manifest = (
            attempt.write("index-manifest", INDEX_MANIFEST_ENTRY_SCHEMA, keep).name
            if keep
            else None
        )
    changelog_list: WrittenFile | None = None
    changelog_rows = [conform_entry(e) for e in changes.changelog]
    if changelog_rows:
        manifest = attempt.write("manifest", MANIFEST_ENTRY_SCHEMA, changelog_rows)
        meta = manifest_meta(
            manifest.name, manifest.size, changelog_rows, ptypes, latest_schema_id=table.schema.id
        )
        changelog_list = attempt.write("manifest-list", MANIFEST_FILE_META_SCHEMA, [meta])
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
        "changelogManifestList": changelog_list.name if changelog_list else None,
        "changelogManifestListSize": changelog_list.size if changelog_list else None,
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


ROLL_CHECK_ROWS = 1000  # Paimon's RollingFileWriter checks the file size every 1000 records


def _rewritten_base(
    table: PaimonTable, rewrite: ManifestRewrite, attempt: _Attempt
) -> list[dict[str, Any]]:
    """The rewrite's base list: kept manifests as they are, new ones written rolling."""
    ptypes = table.schema.partition_types
    rows: list[dict[str, Any]] = []
    for part in rewrite.parts:
        if isinstance(part, KeptManifest):
            rows.append(conform_manifest_meta(part.row))
            continue
        entries = [conform_entry(e) for e in part.entries]
        for chunk in _rolled(entries, attempt.codec, part.target_size):
            manifest = attempt.write("manifest", MANIFEST_ENTRY_SCHEMA, chunk)
            rows.append(
                manifest_meta(
                    manifest.name, manifest.size, chunk, ptypes, latest_schema_id=table.schema.id
                )
            )
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


def _unmatched_deletes(table: PaimonTable, latest: Snapshot, changes: Changes) -> list[str]:
    deletes = [e for e in changes.entries if e["_KIND"] == 1]
    if not deletes:
        return []
    live = {e.identifier for e in table.live_files(latest)}
    return [e["_FILE"]["_FILE_NAME"] for e in deletes if entry_identifier(e) not in live]


def commit(
    table: PaimonTable,
    build: Builder,
    *,
    commit_kind: str = "OVERWRITE",
    commit_user: str | None = None,
    identifier: int = BATCH_COMMIT_IDENTIFIER,
    clock: Callable[[], int] = lambda: int(time.time() * 1000),
    policy: RetryPolicy | None = None,
    allow_unsafe: bool = False,
    sleep: Callable[[float], None] = time.sleep,
    publication: Publication | None = None,
    run: Run | None = None,
) -> CommitResult:
    """Commit ``build(latest)`` as a new snapshot; rebuild and retry when another writer wins.

    ``publication`` is the caller's gate when it wrote files for this commit (compaction):
    its state says afterwards, whatever was raised, whether they may be removed. ``run``
    records the commit. SIGINT/SIGTERM are held while the snapshot is published and
    recorded (``core.runtime.interrupts``)."""
    refuse_non_avro_manifests(table)
    check_publishable(table, allow_unsafe=allow_unsafe)
    publication = publication or Publication(table.fileio)
    policy = policy or RetryPolicy.of(table)
    codec = avro_codec(table.options.get("manifest.compression"))
    user = commit_user or str(uuid.uuid4())
    notes: list[str] = []
    for attempt_no in range(1, policy.max_retries + 2):
        latest = table.snapshots.latest()
        if latest is None:
            raise CommitConflictError(f"{table.location} has no snapshot to commit on top of")
        changes = build(latest)
        if changes.empty:
            return CommitResult(None, attempt_no, changes, tuple(notes))
        stale = [] if changes.deletes_verified else _unmatched_deletes(table, latest, changes)
        attempt = _Attempt(table, codec, publication)
        if not stale:
            try:
                raw = build_snapshot(
                    table,
                    latest,
                    changes,
                    attempt,
                    commit_kind=commit_kind,
                    commit_user=user,
                    identifier=identifier,
                    now_ms=clock(),
                )
                if run is not None:
                    run.check_lease()  # a run that lost its table's lease never publishes
                with critical():
                    published = _publish(table, raw, publication, allow_unsafe=allow_unsafe)
                    if published is not None and run is not None:
                        run.commits.append(published.id)
            except BaseException:
                attempt.discard()  # a no-op once publishing was attempted
                raise
            if published is not None:
                hint = write_latest_hint(table, published.id)
                if hint:
                    notes.append(hint)
                logger.info(
                    "committed snapshot %d (%s) after %d attempt(s)",
                    published.id,
                    commit_kind,
                    attempt_no,
                )
                return CommitResult(published, attempt_no, changes, tuple(notes))
            attempt.discard()
            notes.append(f"snapshot {latest.id + 1} was taken by another writer; retried")
        else:
            notes.append(
                f"{len(stale)} file(s) to delete are no longer live in snapshot {latest.id} "
                f"(e.g. {stale[0]}); rebuilt"
            )
        if attempt_no <= policy.max_retries:
            sleep(policy.wait_ms(attempt_no) / 1000)
    raise CommitConflictError(
        f"gave up after {policy.max_retries + 1} attempts: other writers kept committing "
        "first or kept removing the files this commit deletes",
        hint="retry later; raise commit.max-retries with --options if the table is busy",
    )


def _publish(
    table: PaimonTable, raw: dict[str, Any], publication: Publication, *, allow_unsafe: bool
) -> Snapshot | None:
    """Create the snapshot file; None if another writer's snapshot has the id.

    "Already exists" and errors are ambiguous after a retry (our own PUT may have landed):
    the file is read back and is ours when it carries our uuid, as Paimon master does.
    The publication stays ``PUBLISHING`` (nothing discarded) while that is unknown."""
    path = table.snapshots.path(raw["id"])
    data = snapshot_json(raw).encode("utf-8")
    publication.state = PublishState.PUBLISHING
    try:
        created = publish_if_absent(table.fileio, path, data, allow_unsafe=allow_unsafe)
    except StorageError as exc:
        return _settle_after_error(table, raw, publication, exc)
    if not created:
        publication.state = PublishState.OPEN  # another writer's snapshot: a lost race
        return None
    publication.state = PublishState.PUBLISHED
    return Snapshot.from_json(raw, path)


def _settle_after_error(
    table: PaimonTable, raw: dict[str, Any], publication: Publication, exc: StorageError
) -> Snapshot | None:
    """Read the snapshot back after a failed create: ours, another writer's, or unknown."""
    try:
        theirs = table.snapshots.try_snapshot(raw["id"])
    except PaimonError as read_error:
        raise CommitOutcomeUnknownError(
            f"creating snapshot {raw['id']} failed ({exc.message}) and it could not be read "
            f"back ({read_error.message}): it may or may not be committed; the files it "
            "references were kept",
            hint="run `paimon inspect TABLE snapshots`: if it is not there, the kept files are "
            "orphans for delete-orphan-files",
        ) from exc
    if theirs is not None and theirs.raw.get("uuid") == raw["uuid"]:
        publication.state = PublishState.PUBLISHED
        return theirs
    if theirs is not None:
        publication.state = PublishState.OPEN  # someone else's: ours never landed there
        return None
    if isinstance(exc, WriteOutcomeUnknownError):
        # Absent now, yet a PUT still in flight could land: keep what it would reference.
        raise CommitOutcomeUnknownError(
            f"creating snapshot {raw['id']} failed ({exc.message}) and it is not there now, "
            "but the write may still land: the files it references were kept",
            hint="rerun the command; files of a commit that did not land are orphans for "
            "delete-orphan-files",
        ) from exc
    publication.state = PublishState.OPEN  # refused before anything was stored
    raise exc


__all__ = [
    "BATCH_COMMIT_IDENTIFIER",
    "Changes",
    "CommitConflictError",
    "CommitOutcomeUnknownError",
    "CommitResult",
    "JavaDecimal",
    "KeptManifest",
    "ManifestRewrite",
    "NewManifests",
    "Publication",
    "PublishState",
    "RetryPolicy",
    "check_publishable",
    "commit",
    "delete_quietly",
    "entry_identifier",
    "java_json",
    "ordered_snapshot_fields",
    "publish_if_absent",
    "refuse_non_avro_manifests",
    "snapshot_json",
    "write_latest_hint",
]
