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

The rooms of a commit: ``changes`` (what it changes), ``snapshot_builder`` (one attempt's
manifests, lists and snapshot fields), ``publication`` (creating the snapshot, and the gate
on removing what was written for it), ``java_json`` (files as Java writes them). This
module is the retry loop, and hands their names on.
"""

from __future__ import annotations

import logging
import random
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass

from core.errors import PaimonError
from core.format.model import Snapshot
from core.format.options import parse_duration_ms
from core.runtime.clock import now_ms as clock_now_ms
from core.runtime.interrupts import critical
from core.runtime.runs import Run
from core.runtime.wording import plural
from core.table.table import PaimonTable
from core.write.catalog_commit import publish_through_catalog
from core.write.changes import (
    Builder,
    Changes,
    KeptManifest,
    ManifestRewrite,
    NewManifests,
    entry_identifier,
)
from core.write.java_json import JavaDecimal, java_json, ordered_snapshot_fields, snapshot_json
from core.write.manifest_writer import avro_codec
from core.write.partition_statistics import partition_statistics
from core.write.publication import (
    CommitOutcomeUnknownError,
    Publication,
    PublishState,
    check_publishable,
    create_if_absent,
    delete_quietly,
    publish_if_absent,
    publish_snapshot,
    refuse_non_avro_manifests,
    write_latest_hint,
)
from core.write.snapshot_builder import Attempt, build_snapshot

logger = logging.getLogger(__name__)

BATCH_COMMIT_IDENTIFIER = 2**63 - 1  # Long.MAX_VALUE: batch jobs and procedures


class CommitConflictError(PaimonError):
    """Another writer kept winning, or a file to delete is no longer live."""

    kind = "commit_conflict"


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
    clock: Callable[[], int] = clock_now_ms,
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
    if not table.catalog.version_managed:  # a catalog that commits needs no atomic create
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
        if stale:
            notes.append(
                f"{len(stale)} file(s) to delete are no longer live in snapshot {latest.id} "
                f"(e.g. {stale[0]}); rebuilt"
            )
        else:
            attempt = Attempt(table, codec, publication)
            published = _try(
                table,
                latest,
                changes,
                attempt,
                commit_kind=commit_kind,
                commit_user=user,
                identifier=identifier,
                now_ms=clock(),
                allow_unsafe=allow_unsafe,
                run=run,
            )
            if published is not None:
                hint = attempt.hint
                notes += [hint] if hint else []
                logger.info(
                    "committed snapshot %d (%s) after %s",
                    published.id,
                    commit_kind,
                    plural(attempt_no, "attempt"),
                )
                return CommitResult(published, attempt_no, changes, tuple(notes))
            notes.append(f"snapshot {latest.id + 1} was taken by another writer; retried")
        if attempt_no <= policy.max_retries:
            sleep(policy.wait_ms(attempt_no) / 1000)
    raise CommitConflictError(
        f"gave up after {policy.max_retries + 1} attempts: other writers kept committing "
        "first or kept removing the files this commit deletes",
        hint="retry later; raise commit.max-retries with --options if the table is busy",
    )


def _try(
    table: PaimonTable,
    latest: Snapshot,
    changes: Changes,
    attempt: Attempt,
    *,
    commit_kind: str,
    commit_user: str,
    identifier: int,
    now_ms: int,
    allow_unsafe: bool,
    run: Run | None,
) -> Snapshot | None:
    """One attempt: write its manifests, publish its snapshot; None when another writer's
    snapshot took the id (the attempt's files are removed then, and on any error raised
    before publishing)."""
    try:
        raw = build_snapshot(
            table,
            latest,
            changes,
            attempt,
            commit_kind=commit_kind,
            commit_user=commit_user,
            identifier=identifier,
            now_ms=now_ms,
        )
        if run is not None:
            run.check_lease()  # a run that lost its table's lease never publishes
        # The catalog's lock (Paimon's JDBC lock) is held as Java's RenamingSnapshotCommit
        # holds it: around creating the snapshot and its LATEST hint. It is taken before the
        # critical section: waiting for it can be interrupted, and a refusal discards.
        with table.catalog.lock.hold(), critical():
            if table.catalog.version_managed:
                # The catalog decides and writes the snapshot and its hint (REST).
                published = publish_through_catalog(
                    table,
                    raw,
                    attempt.publication,
                    base=latest,
                    statistics=partition_statistics(table, changes.entries),
                )
            else:
                published = publish_snapshot(
                    table, raw, attempt.publication, allow_unsafe=allow_unsafe
                )
                if published is not None:
                    attempt.hint = write_latest_hint(table, published.id)
            if published is not None and run is not None:
                run.commits.append(published.id)
    except BaseException:
        attempt.discard()  # a no-op once publishing was attempted
        raise
    if published is None:
        attempt.discard()
    return published


__all__ = [
    "BATCH_COMMIT_IDENTIFIER",
    "Builder",
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
    "create_if_absent",
    "delete_quietly",
    "entry_identifier",
    "java_json",
    "ordered_snapshot_fields",
    "publish_if_absent",
    "refuse_non_avro_manifests",
    "snapshot_json",
    "write_latest_hint",
]
