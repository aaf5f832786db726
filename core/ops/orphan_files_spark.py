"""Orphan cleaning on Spark: the same decisions as ``plan_orphan_clean``, at any scale.

Roots and manifests are decoded on executors into a distributed used-name set;
directories are listed on executors; candidates are anti-joined with the used names in
Spark (by file name, as Paimon); deletions run on executors with per-file results. The
driver only holds the directory tree above bucket level, counts, and a bounded sample;
a full list can be streamed to a file (``report_file``).
"""

from __future__ import annotations

import json
import logging
import pickle
import time
from collections.abc import Iterator
from dataclasses import dataclass
from functools import partial
from typing import Any, ClassVar

from core.format.model import ManifestRef
from core.io.fileio import FileIO, parent
from core.ops.details.orphans import OrphanDetails
from core.ops.orphan_files import (
    COMMAND,
    OrphanPlan,
    OrphanRequest,
    build_plan,
    check_not_in_future,
    empty_dir_actions,
    orphan_clock,
    validate_cutoff,
)
from core.ops.orphan_inventory import (
    Inventory,
    Positions,
    candidate_batches,
    check_inventory_age,
    read_inventory,
    read_part,
    still_orphan,
)
from core.ops.orphan_listing import (
    CLOCK_TOLERANCE_MS,
    ListedDir,
    NameShapes,
    candidate_dirs,
    check_manifest_listing,
    is_candidate_in,
    latest_manifest_lists,
    name_shapes,
)
from core.ops.orphan_roots import (
    RootsSeen,
    check_missing_manifests,
    check_used_set,
    collect_roots,
    names_in_manifest_files,
    root_chunk,
    used_names,
    views_of,
)
from core.ops.orphan_sets import Orphan
from core.runtime.details import Record
from core.runtime.executors.spark import SparkExecutor, spark_failures
from core.runtime.operation import Env, Operation
from core.runtime.progress import NullProgress, Progress
from core.runtime.quarantine import Quarantine
from core.runtime.quarantine import write_record as write_quarantine_record
from core.runtime.report import ExecutionReport, PhaseReport
from core.runtime.timeparse import iso_utc
from core.runtime.wording import plural
from core.table.table import PaimonTable

logger = logging.getLogger(__name__)

SAMPLE = 10_000  # orphans listed in the plan; the rest are counted (and streamed on request)
_CANDIDATE_SCHEMA = "row_type string, name string, path string, size long, mtime long, kind string"
_RESULT_SCHEMA = "path string, kind string, outcome string, bytes long, error string"


def _expand(
    fileio: FileIO, roots: frozenset[str], d: ListedDir
) -> tuple[list[ListedDir], list[ListedDir]]:
    """One partition-level directory: (directories to descend into, directories whose
    files are candidates), following Paimon's dataDirs rules as the local engine does."""
    entries = fileio.list_dir(d.path)
    if d.depth > 0:
        subdirs = [e for e in entries if e.is_dir and not e.is_symlink and "=" in e.name]
        if subdirs or d.path in roots:
            return [ListedDir(e.path, d.kind, d.depth - 1) for e in subdirs], []
        return [], [ListedDir(d.path, d.kind + LEVEL, -1)]  # nothing below: listed itself
    buckets = [e for e in entries if e.is_dir and not e.is_symlink and e.name.startswith("bucket-")]
    if buckets:
        return [], [ListedDir(e.path, d.kind, -1) for e in buckets]
    if d.path in roots and not entries:
        return [], []
    return [], [ListedDir(d.path, d.kind + LEVEL, -1)]


# Marks a partition level (or the data root) listed only to find it empty: Paimon writes
# no file there, so none of its files is a candidate (local engine: ``_scan_one``).
LEVEL = ":level"


def _list_files(
    fileio_bytes: bytes,
    shapes: NameShapes,
    older_than_ms: int,
    future_ms: int,
    roots: frozenset[str],
    batches: Iterator[Any],
) -> Iterator[Any]:
    """Executor side: list each directory, emit old candidate files and old empty dirs,
    and candidates modified after ``future_ms`` (the driver refuses on any)."""
    import pyarrow as pa

    fileio: FileIO = pickle.loads(fileio_bytes)
    schema = pa.schema(
        [
            ("row_type", pa.string()),
            ("name", pa.string()),
            ("path", pa.string()),
            ("size", pa.int64()),
            ("mtime", pa.int64()),
            ("kind", pa.string()),
        ]
    )
    for batch in batches:
        for path, dir_kind in zip(
            batch.column("path").to_pylist(), batch.column("kind").to_pylist(), strict=True
        ):
            kind, level = dir_kind.removesuffix(LEVEL), dir_kind.endswith(LEVEL)
            # One Arrow batch per directory: a task never holds more than one listing.
            rows: list[tuple[str, str, str, int, int, str]] = []
            entries = fileio.list_dir(path)
            if not entries and kind in ("data", "external") and path not in roots:
                info = fileio.info(path)
                if info is not None and info.mtime_ms is not None and info.mtime_ms < older_than_ms:
                    rows.append(("empty", "", path, 0, info.mtime_ms, kind))
            for e in entries:
                if e.is_dir or e.is_symlink or e.mtime_ms is None or level:
                    continue
                if e.mtime_ms < older_than_ms and is_candidate_in(kind, e, shapes):
                    rows.append(("file", e.name, e.path, e.size, e.mtime_ms, kind))
                elif e.mtime_ms > future_ms and is_candidate_in(kind, e, shapes):
                    rows.append(("future", e.name, e.path, e.size, e.mtime_ms, kind))
            del entries
            columns = list(zip(*rows, strict=True)) if rows else [()] * len(schema.names)
            yield pa.RecordBatch.from_arrays(
                [pa.array(list(c), type=f.type) for c, f in zip(columns, schema, strict=True)],
                schema=schema,
            )


def _emit_root_names(views_bytes: bytes, batches: Iterator[Any]) -> Iterator[Any]:
    import pyarrow as pa

    views: dict[str, PaimonTable] = pickle.loads(views_bytes)
    for batch in batches:
        names: list[str] = []
        flags: list[bool] = []
        sizes: list[int | None] = []
        entries: list[int | None] = []
        for branch, kind, key in zip(
            batch.column("branch").to_pylist(),
            batch.column("kind").to_pylist(),
            batch.column("key").to_pylist(),
            strict=True,
        ):
            _, part = root_chunk(views, [(branch, kind, int(key) if kind != "tag" else key)])
            for name in part.names:
                ref = part.manifests.get(name)
                names.append(name)
                flags.append(ref is not None)
                # What the list records, so the executor reading it can check it (issue 28).
                sizes.append(ref.file_size if ref is not None else None)
                entries.append(ref.entries if ref is not None else None)
        yield pa.RecordBatch.from_pydict(
            {"name": names, "manifest": flags, "size": sizes, "entries": entries},
            schema=pa.schema(
                [
                    ("name", pa.string()),
                    ("manifest", pa.bool_()),
                    ("size", pa.int64()),
                    ("entries", pa.int64()),
                ]
            ),
        )


def _emit_manifest_names(reader_bytes: bytes, batches: Iterator[Any]) -> Iterator[Any]:
    import pyarrow as pa

    reader: PaimonTable = pickle.loads(reader_bytes)
    for batch in batches:
        manifests = [
            (reader.paths.manifest_path(name), ManifestRef(name, size, entries).expected())
            for name, size, entries in zip(
                batch.column("name").to_pylist(),
                batch.column("size").to_pylist(),
                batch.column("entries").to_pylist(),
                strict=True,
            )
        ]
        _count, found, missing = names_in_manifest_files(reader.fileio, manifests)
        names = list(set(found))
        yield pa.RecordBatch.from_pydict(
            {"name": names + missing, "missing": [False] * len(names) + [True] * len(missing)},
            schema=pa.schema([("name", pa.string()), ("missing", pa.bool_())]),
        )


def _delete_batches(
    table_bytes: bytes,
    quarantine_bytes: bytes,
    head_older_than_ms: int | None,
    batches: Iterator[Any],
) -> Iterator[Any]:
    """Executor side: delete each orphan (path lock first), or move it into the quarantine
    when there is one, then try to remove the bucket and partition directories it emptied
    (never a root, never a non-empty directory). ``head_older_than_ms`` (inventory plans):
    each file is HEADed first and kept ("skipped") unless it is still the old file the
    inventory listed."""
    import pyarrow as pa

    from core.errors import StorageError

    table: PaimonTable = pickle.loads(table_bytes)
    quarantine: Quarantine | None = pickle.loads(quarantine_bytes)
    depth = len(table.schema.partition_keys)
    roots = {table.location, table.paths.data_root, *table.paths.external_roots}
    schema = pa.schema(
        [
            ("path", pa.string()),
            ("kind", pa.string()),
            ("outcome", pa.string()),
            ("bytes", pa.int64()),
            ("error", pa.string()),
        ]
    )
    touched: dict[str, None] = {}
    for batch in batches:
        out: dict[str, list[Any]] = {k: [] for k in schema.names}
        for path, kind, size in zip(
            batch.column("path").to_pylist(),
            batch.column("kind").to_pylist(),
            batch.column("size").to_pylist(),
            strict=True,
        ):
            error: str | None = None
            try:
                if not table.paths.is_inside_table(path):
                    raise StorageError("outside the table root and declared external paths")
                if head_older_than_ms is not None and not still_orphan(
                    table.fileio.info(path), size, head_older_than_ms
                ):
                    for key, value in zip(
                        schema.names, (path, kind, "skipped", 0, None), strict=True
                    ):
                        out[key].append(value)
                    continue
                if quarantine is not None:
                    done = quarantine.move_in(table.fileio, path)
                else:
                    done = table.fileio.delete(path)
                outcome, nbytes, error = ("done", size, None) if done else ("absent", 0, None)
                touched[parent(path)] = None
            except StorageError as exc:
                outcome, nbytes, error = "failed", 0, exc.message
            for key, value in zip(schema.names, (path, kind, outcome, nbytes, error), strict=True):
                out[key].append(value)
        yield pa.RecordBatch.from_pydict(out, schema=schema)
    dirs = [d for d in touched if "bucket-" in d.rpartition("/")[2]]
    rows: dict[str, list[Any]] = {k: [] for k in schema.names}
    for start in dirs:
        current = start
        for _ in range(depth + 1):
            if current in roots or not table.paths.is_inside_table(current):
                break
            removed = table.fileio.delete_empty_dir(current)
            for key, value in zip(
                schema.names,
                (current, "directory", "done" if removed else "skipped", 0, None),
                strict=True,
            ):
                rows[key].append(value)
            if not removed:
                break
            current = parent(current)
    yield pa.RecordBatch.from_pydict(rows, schema=schema)


@dataclass
class SparkOrphanClean:
    """Plan on Spark, keep the distributed orphan set, apply it after a last re-check."""

    table: PaimonTable
    executor: SparkExecutor
    older_than_ms: int
    now_ms: int
    allow_recent: bool = False
    external_exclusive: bool = False
    sample: int = SAMPLE
    inventory: str | None = None  # the listing from this inventory (orphan_inventory)
    _orphans: Any = None
    _inventory: Inventory | None = None
    _views: list[PaimonTable] | None = None
    _roots: RootsSeen | None = None

    @spark_failures()
    def plan(self, progress: Progress | None = None, report_file: str | None = None) -> OrphanPlan:
        from pyspark.sql import functions as F  # noqa: N812 - Spark's own convention

        progress = progress or NullProgress()
        self.now_ms = orphan_clock(self.table, self.now_ms)
        validate_cutoff(self.older_than_ms, self.now_ms, allow_recent=self.allow_recent)
        table, ex = self.table, self.executor
        views = views_of(table)
        roots = collect_roots(views)
        self._views, self._roots = views, roots
        progress.start("reading roots and manifests on Spark", None)
        root_rows = [(b, "snapshot", str(i)) for b, ids in roots.snapshots.items() for i in ids]
        root_rows += [(b, "tag", n) for b, tags in roots.tags.items() for n in tags]
        root_rows += [(b, "changelog", str(i)) for b, ids in roots.changelogs.items() for i in ids]
        views_bytes = pickle.dumps({v.branch: v for v in views})
        root_names = (
            ex.dataframe(root_rows, "branch string, kind string, key string")
            .mapInArrow(
                partial(_emit_root_names, views_bytes),
                "name string, manifest boolean, size long, entries long",
            )
            .persist()
        )
        manifests = root_names.filter("manifest").select("name", "size", "entries").distinct()
        manifests = manifests.repartition(ex.parallelism)
        entry_names = manifests.mapInArrow(
            partial(_emit_manifest_names, pickle.dumps(views[0])), "name string, missing boolean"
        ).persist()
        check_missing_manifests(
            views, [r["name"] for r in entry_names.filter("missing").select("name").collect()]
        )
        entry_names = entry_names.filter(~F.col("missing")).select("name")
        used = root_names.select("name").union(entry_names).distinct().persist()
        used_count = used.count()
        progress.finish()
        check_used_set(used_count, roots)

        progress.start("listing on Spark", None)
        if self.inventory is not None:
            listing = self._inventory_listing(views)
        else:
            listing = self._listing(views)
        progress.finish()
        future = listing.filter(F.col("row_type") == "future").collect()
        check_not_in_future(
            [Orphan(r["path"], r["name"], r["size"], r["mtime"], r["kind"]) for r in future],
            self.now_ms,
        )
        candidates = listing.filter(F.col("row_type") == "file")
        wanted = list(latest_manifest_lists(table))
        seen = (
            {
                r["name"]
                for r in candidates.filter(
                    (F.col("kind") == "manifest") & F.col("name").isin(wanted)
                )
                .select("name")
                .collect()
            }
            if wanted
            else set()
        )
        check_manifest_listing(table, seen, self.older_than_ms)
        empty_dirs = [r["path"] for r in listing.filter(F.col("row_type") == "empty").collect()]
        orphans = candidates.join(used, on="name", how="left_anti").persist()
        totals = orphans.agg(F.count(F.lit(1)).alias("n"), F.sum("size").alias("b")).collect()[0]
        count, size = int(totals["n"]), int(totals["b"] or 0)
        sample = [
            Orphan(r["path"], r["name"], r["size"], r["mtime"], r["kind"])
            for r in orphans.orderBy("path").limit(self.sample).collect()
        ]
        progress.finish()
        if report_file is not None:
            self._stream(orphans, report_file)
        self._orphans = orphans
        return build_plan(
            table,
            views,
            roots,
            used_count=used_count,
            orphans=sample,
            empty_dirs=empty_dirs,
            older_than_ms=self.older_than_ms,
            now_ms=self.now_ms,
            allow_recent=self.allow_recent,
            external_exclusive=self.external_exclusive,
            total=(count, size),
            inventory=self._inventory,
        )

    def _listing(self, views: list[PaimonTable]) -> Any:
        """Candidate rows from listing the table's directories on executors."""
        table, ex = self.table, self.executor
        fs_roots = frozenset({table.paths.data_root, *table.paths.external_roots})
        listed: list[ListedDir] = []
        level: list[ListedDir] = []
        for d in candidate_dirs(table, views, self.external_exclusive):
            (level if d.depth >= 0 else listed).append(d)
        while level:
            expanded = ex.map(partial(_expand, table.fileio, fs_roots), level)
            level = [sub for descend, _ in expanded for sub in descend]
            listed += [d for _, lst in expanded for d in lst]
        rows = [(d.path, d.kind) for d in listed]
        listing = (
            ex.dataframe(rows, "path string, kind string")
            .mapInArrow(
                partial(
                    _list_files,
                    pickle.dumps(table.fileio),
                    name_shapes(table),
                    self.older_than_ms,
                    self.now_ms + CLOCK_TOLERANCE_MS,
                    fs_roots,
                ),
                _CANDIDATE_SCHEMA,
            )
            .persist()
        )
        return listing

    def _inventory_listing(self, views: list[PaimonTable]) -> Any:
        """Candidate rows from the inventory's files, each read by one task: the same rows
        a listing gives (no empty directories: an inventory lists objects only)."""
        assert self.inventory is not None
        table, ex = self.table, self.executor
        inventory = read_inventory(table.fileio, self.inventory, table)
        check_inventory_age(inventory, self.older_than_ms, self.now_ms)
        self._inventory = inventory
        positions = Positions.of(table, views, self.external_exclusive)
        read = partial(
            read_part,
            table.fileio,
            positions,
            frozenset(),
            self.older_than_ms,
            self.now_ms + CLOCK_TOLERANCE_MS,
        )
        return (
            ex.dataframe([(i,) for i in range(len(inventory.parts))], "part long")
            .repartition(max(1, min(ex.parallelism, len(inventory.parts))))
            .mapInArrow(
                partial(
                    candidate_batches,
                    pickle.dumps((read, inventory.parts, table.fileio)),
                    self.older_than_ms,
                    self.now_ms + CLOCK_TOLERANCE_MS,
                ),
                _CANDIDATE_SCHEMA,
            )
            .persist()
        )

    def _record(self, orphans: Any, plan: OrphanPlan, quarantine: Quarantine) -> None:
        """``--quarantine``: the quarantine record, written before the first move, holds
        every file the executors will move (``paimon restore`` reads it), so the driver
        streams the whole orphan list once, in path order: its memory grows with the
        orphans here, unlike a plain run."""
        assert self._views is not None and self._roots is not None
        every = [
            Orphan(r["path"], r["name"], r["size"], r["mtime"], r["kind"])
            for r in orphans.orderBy("path").toLocalIterator()
        ]
        whole = build_plan(
            self.table,
            self._views,
            self._roots,
            used_count=plan.details.used_names,
            orphans=every,
            empty_dirs=list(plan.details.empty_directories),
            older_than_ms=self.older_than_ms,
            now_ms=self.now_ms,
            allow_recent=self.allow_recent,
            external_exclusive=self.external_exclusive,
        )
        write_quarantine_record(self.table.fileio, self.table, quarantine, whole)

    def _stream(self, orphans: Any, report_file: str) -> None:
        """Every orphan as a JSON line, partition by partition (bounded driver memory)."""
        with open(report_file, "w", encoding="utf-8") as fh:
            for r in orphans.orderBy("path").toLocalIterator():
                entry = {
                    "path": r["path"],
                    "size": r["size"],
                    "dir_kind": r["kind"],
                    "modified": {"epoch_ms": r["mtime"], "utc": iso_utc(r["mtime"])},
                    "age_ms": self.now_ms - r["mtime"],
                }
                fh.write(json.dumps(entry) + "\n")

    @spark_failures()
    def apply(
        self, plan: OrphanPlan, report: ExecutionReport, *, quarantine: Quarantine | None = None
    ) -> ExecutionReport:
        """Re-read the roots, protect anything new, delete on executors, sweep directories."""
        from pyspark.sql import functions as F  # noqa: N812

        assert self._orphans is not None and self._views is not None and self._roots is not None
        start = time.monotonic()
        views = views_of(self.table)
        now = collect_roots(views)
        new = used_names(views, now, self.executor, NullProgress(), only_new_since=self._roots)
        orphans = self._orphans
        if new:
            protected = self.executor.spark.createDataFrame(
                [(n,) for n in sorted(new)], "name string"
            )
            orphans = orphans.join(protected, on="name", how="left_anti")
            report.notes.append(f"{len(new)} names became referenced after planning: kept")
        if quarantine is not None:
            self._record(orphans, plan, quarantine)
        parent_dir = F.expr("substring(path, 1, length(path) - length(name) - 1)")
        results = (
            orphans.withColumn("parent", parent_dir)
            .repartition(self.executor.parallelism, "parent")
            .select("path", "kind", "size")
            .mapInArrow(
                partial(
                    _delete_batches,
                    pickle.dumps(self.table),
                    pickle.dumps(quarantine),
                    self.older_than_ms if plan.details.inventory is not None else None,
                ),
                _RESULT_SCHEMA,
            )
            .persist()
        )
        files = PhaseReport("orphan-files")
        dirs = PhaseReport("empty-directories")
        for row in (
            results.groupBy("kind", "outcome")
            .agg(F.count(F.lit(1)).alias("n"), F.sum("bytes").alias("b"))
            .collect()
        ):
            target = dirs if row["kind"] == "directory" else files
            n = int(row["n"])
            if row["outcome"] == "done":
                target.done += n
                target.bytes += int(row["b"] or 0)
            elif row["outcome"] == "absent":
                target.already_absent += n
            elif row["outcome"] == "skipped":
                target.skipped += n
        if files.skipped:
            report.notes.append(
                f"{plural(files.skipped, 'file')} kept: gone, changed or newer than the cut-off "
                "since the inventory (a HEAD before each deletion)"
            )
        for row in results.filter(F.col("outcome") == "failed").limit(1000).collect():
            files.failures.append((row["path"], row["error"]))
        results.unpersist()
        for action in empty_dir_actions(self.table, (), plan.details.empty_directories):
            if self.table.fileio.delete_empty_dir(action.path):
                dirs.done += 1
        files.seconds = time.monotonic() - start
        report.phases += [files, dirs]
        report.seconds += time.monotonic() - start
        self._orphans.unpersist()
        return report


@dataclass
class SparkOrphanFiles(Operation[OrphanPlan, None]):
    """Paimon's OrphanFilesClean in DISTRIBUTED mode: the same decisions as
    ``LocalOrphanFiles``; the orphan set stays on the cluster between plan and apply."""

    command: ClassVar[str] = COMMAND
    details_type: ClassVar[type[Record]] = OrphanDetails
    quarantinable: ClassVar[bool] = True  # moves on executors; the record lists every file

    request: OrphanRequest
    _clean: SparkOrphanClean | None = None

    def plan(self, table: PaimonTable, env: Env) -> OrphanPlan:
        assert isinstance(env.executor, SparkExecutor)
        self._clean = SparkOrphanClean(
            table,
            env.executor,
            self.request.older_than_ms,
            env.now_ms,
            allow_recent=self.request.allow_recent,
            external_exclusive=self.request.external_exclusive,
            inventory=self.request.inventory,
        )
        return self._clean.plan(env.progress, self.request.report_file)

    def apply(self, table: PaimonTable, plan: OrphanPlan, env: Env) -> None:
        assert self._clean is not None, "plan() first"
        self._clean.apply(plan, env.report, quarantine=env.quarantine)


__all__ = ["SAMPLE", "SparkOrphanClean", "SparkOrphanFiles"]
