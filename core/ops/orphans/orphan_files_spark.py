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
from dataclasses import dataclass
from functools import partial
from typing import Any, ClassVar

from core.ops.details.orphans import OrphanDetails
from core.ops.orphans.orphan_files import (
    COMMAND,
    OrphanPlan,
    OrphanRequest,
    build_plan,
    check_not_in_future,
    empty_dir_actions,
    orphan_clock,
    validate_cutoff,
)
from core.ops.orphans.orphan_inventory import (
    Inventory,
    Positions,
    candidate_batches,
    check_inventory_age,
    part_candidates,
    read_inventory,
    unknown_batches,
)
from core.ops.orphans.orphan_listing import (
    CANDIDATE_SCHEMA,
    CLOCK_TOLERANCE_MS,
    ListedDir,
    candidate_dirs,
    check_manifest_listing,
    latest_manifest_lists,
    name_shapes,
)
from core.ops.orphans.orphan_roots import (
    RootsSeen,
    check_missing_manifests,
    check_used_set,
    collect_roots,
    used_names,
    views_of,
)
from core.ops.orphans.orphan_sets import Orphan
from core.ops.orphans.orphan_spark_tasks import (
    DELETE_SCHEMA,
    MANIFEST_NAMES_SCHEMA,
    ROOT_NAMES_SCHEMA,
    delete_batches,
    emit_manifest_names,
    emit_root_names,
    expand,
    list_files,
)
from core.runtime.details import Record
from core.runtime.executors.spark import SparkExecutor, spark_failures
from core.runtime.lease import LOST_HINT, LeaseFence, LeaseLostError
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


def _orphan(row: Any) -> Orphan:
    return Orphan(row["path"], row["name"], row["size"], row["mtime"], row["kind"])


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
        table = self.table
        views = views_of(table)
        roots = collect_roots(views)
        self._views, self._roots = views, roots
        used, used_count = self._used_names(views, roots, progress)

        progress.start("listing on Spark", None)
        if self.inventory is not None:
            listed = self._inventory_listing(views)
            # a plain list's rows carry no time: only the unused ones are HEADed
            listing = (
                listed.filter(F.col("row_type") != "unknown")
                .unionByName(self._stat_unknown(listed, used))
                .persist()
            )
        else:
            listed = listing = self._listing(views)
        progress.finish()
        future = listing.filter(F.col("row_type") == "future").collect()
        check_not_in_future([_orphan(r) for r in future], self.now_ms)
        candidates = listing.filter(F.col("row_type") == "file")
        wanted = list(latest_manifest_lists(table))
        # The latest manifest lists are used names: a listing shows them among its old
        # files, a plain list among the rows it has no time for (before the HEADs).
        seen = (
            {
                r["name"]
                for r in listed.filter(
                    F.col("row_type").isin("file", "unknown")
                    & (F.col("kind") == "manifest")
                    & F.col("name").isin(wanted)
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
        sample = [_orphan(r) for r in orphans.orderBy("path").limit(self.sample).collect()]
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

    def _used_names(
        self, views: list[PaimonTable], roots: RootsSeen, progress: Progress
    ) -> tuple[Any, int]:
        """Every name the roots and their manifests use, distributed, and how many."""
        from pyspark.sql import functions as F  # noqa: N812 - Spark's own convention

        ex = self.executor
        progress.start("reading roots and manifests on Spark", None)
        root_rows = [(b, "snapshot", str(i)) for b, ids in roots.snapshots.items() for i in ids]
        root_rows += [(b, "tag", n) for b, tags in roots.tags.items() for n in tags]
        root_rows += [(b, "changelog", str(i)) for b, ids in roots.changelogs.items() for i in ids]
        views_bytes = pickle.dumps({v.branch: v for v in views})
        root_names = (
            ex.dataframe(root_rows, "branch string, kind string, key string")
            .mapInArrow(
                partial(emit_root_names, views_bytes),
                ROOT_NAMES_SCHEMA,
            )
            .persist()
        )
        manifests = root_names.filter("manifest").select("name", "size", "entries").distinct()
        manifests = manifests.repartition(ex.parallelism)
        entry_names = manifests.mapInArrow(
            partial(emit_manifest_names, pickle.dumps(views[0])), MANIFEST_NAMES_SCHEMA
        ).persist()
        check_missing_manifests(
            views, [r["name"] for r in entry_names.filter("missing").select("name").collect()]
        )
        entry_names = entry_names.filter(~F.col("missing")).select("name")
        used = root_names.select("name").union(entry_names).distinct().persist()
        used_count = used.count()
        progress.finish()
        check_used_set(used_count, roots)
        return used, used_count

    def _listing(self, views: list[PaimonTable]) -> Any:
        """Candidate rows from listing the table's directories on executors."""
        table, ex = self.table, self.executor
        fs_roots = frozenset({table.paths.data_root, *table.paths.external_roots})
        listed: list[ListedDir] = []
        level: list[ListedDir] = []
        for d in candidate_dirs(table, views, self.external_exclusive):
            (level if d.depth >= 0 else listed).append(d)
        while level:
            expanded = ex.map(partial(expand, table.fileio, fs_roots), level)
            level = [sub for descend, _ in expanded for sub in descend]
            listed += [d for _, lst in expanded for d in lst]
        rows = [(d.path, d.kind) for d in listed]
        listing = (
            ex.dataframe(rows, "path string, kind string")
            .mapInArrow(
                partial(
                    list_files,
                    pickle.dumps(table.fileio),
                    name_shapes(table),
                    self.older_than_ms,
                    self.now_ms + CLOCK_TOLERANCE_MS,
                    fs_roots,
                ),
                CANDIDATE_SCHEMA,
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
            part_candidates,
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
                    pickle.dumps((read, inventory.parts)),
                    self.older_than_ms,
                    self.now_ms + CLOCK_TOLERANCE_MS,
                ),
                CANDIDATE_SCHEMA,
            )
            .persist()
        )

    def _stat_unknown(self, listed: Any, used: Any) -> Any:
        """The rows a plain list gave no time, less the used names, HEADed on executors."""
        unknown = listed.filter(listed["row_type"] == "unknown").join(
            used, on="name", how="left_anti"
        )
        return unknown.repartition(self.executor.parallelism).mapInArrow(
            partial(
                unknown_batches,
                pickle.dumps(self.table.fileio),
                self.older_than_ms,
                self.now_ms + CLOCK_TOLERANCE_MS,
            ),
            CANDIDATE_SCHEMA,
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
        self,
        plan: OrphanPlan,
        report: ExecutionReport,
        *,
        quarantine: Quarantine | None = None,
        fence: LeaseFence | None = None,
    ) -> ExecutionReport:
        """Re-read the roots, protect anything new, delete on executors, sweep directories.
        ``fence``: the run's lease, confirmed here and by every task before it deletes (and
        each ``FENCE_CHUNK`` deletions on): a run that lost it stops, deleting nothing more."""
        from pyspark.sql import functions as F  # noqa: N812

        assert self._orphans is not None and self._views is not None and self._roots is not None
        start = time.monotonic()
        if fence is not None:
            fence.confirm()
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
                    delete_batches,
                    pickle.dumps(self.table),
                    pickle.dumps(quarantine),
                    self.older_than_ms if plan.details.inventory is not None else None,
                    pickle.dumps(fence),
                ),
                DELETE_SCHEMA,
            )
            .persist()
        )
        files = PhaseReport("orphan-files")
        dirs = PhaseReport("empty-directories")
        fenced = 0
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
            elif row["outcome"] == "fenced":
                target.skipped += n
                fenced += n
        if files.skipped:
            report.notes.append(
                f"{plural(files.skipped, 'file')} kept: gone, changed or newer than the cut-off "
                "since the inventory (a HEAD before each deletion)"
            )
        for row in results.filter(F.col("outcome") == "failed").limit(1000).collect():
            files.failures.append((row["path"], row["error"]))
        lost = None
        if fenced:
            lost = results.filter(F.col("outcome") == "fenced").limit(1).collect()[0]["error"]
        results.unpersist()
        if lost is not None:
            files.seconds = time.monotonic() - start
            report.phases.append(files)
            report.notes.append(f"{plural(fenced, 'file')} left untouched: the run lost its lease")
            self._orphans.unpersist()
            raise LeaseLostError(lost, hint=LOST_HINT)
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
        fence = env.run.fence() if env.run is not None else None
        self._clean.apply(plan, env.report, quarantine=env.quarantine, fence=fence)


__all__ = ["SAMPLE", "SparkOrphanClean", "SparkOrphanFiles"]
