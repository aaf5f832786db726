#!/usr/bin/env python3
"""Compaction throughput: `paimon compact` vs pyarrow reading and writing the same files.

Table: an unaware-bucket append table ``(id BIGINT, p INT, v STRING)`` partitioned by
``p``, 20 partitions x 500 small parquet files (~2 KB each, ~1 MB per partition), 10,000
files in one APPEND snapshot. pypaimon creates the table; the small files are written with
pyarrow and committed through ``core.write.commit`` (the same commit path ``compact`` uses).

Measured: ``plan_compact`` + ``apply_compact`` (planning from the manifests, reading every
input, writing the outputs with stats, the COMPACT commit), local engine.
Baseline: the same input files read with ``pyarrow.parquet`` and concatenated in the same
groups (Paimon's bins), each group written as one zstd parquet file; no Paimon logic.
Both use a thread pool of ``--parallelism`` workers and keep their best of ``--rounds``
(each round on a fresh copy of the table). Throughput = input bytes / wall time.
Goal: ours / baseline >= 70%.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.append(str(REPO / "tests"))

from core.compaction.compact import CompactFlags, apply_compact, plan_compact  # noqa: E402
from core.format import binary_row  # noqa: E402
from core.format.data_files import Stats  # noqa: E402
from core.runtime.executors.local import LocalExecutor  # noqa: E402
from core.table.table import open_table  # noqa: E402
from core.write.commit import Changes, commit  # noqa: E402

GOAL = 0.70
SCHEMA = pa.schema([("id", pa.int64()), ("p", pa.int32()), ("v", pa.string())])


def make_table(warehouse: Path, partitions: int, files: int, rows: int) -> Path:
    from support import pypaimon_writer as pw

    table = pw.create_table(warehouse, "bench.small", SCHEMA, partition_keys=["p"])
    pw.append(table, [{"id": -1, "p": 0, "v": "first"}])  # core commits on top of a snapshot
    root = pw.table_root(warehouse, "bench.small")
    t = open_table(str(root))
    ptypes = t.schema.partition_types
    entries: list[dict[str, Any]] = []
    seq = 1
    for p in range(partitions):
        partition = binary_row.encode([p], ptypes)
        bucket_dir = Path(t.paths.bucket_dir(partition, 0))
        bucket_dir.mkdir(parents=True, exist_ok=True)
        for f in range(files):
            base = (p * files + f) * rows
            data = pa.table(
                {
                    "id": pa.array(range(base, base + rows), pa.int64()),
                    "p": pa.array([p] * rows, pa.int32()),
                    "v": [f"value-{base + i:012d}-{uuid.uuid4().hex[:8]}" for i in range(rows)],
                },
                schema=SCHEMA,
            )
            name = f"data-{uuid.uuid4()}-0.parquet"
            path = bucket_dir / name
            pq.write_table(data, path, compression="zstd")
            entries.append(_add(partition, name, path.stat().st_size, rows, seq, t.schema.id))
            seq += rows
    del table
    commit(t, lambda _latest: Changes(tuple(entries)), commit_kind="APPEND")
    return root


def _add(partition: bytes, name: str, size: int, rows: int, seq: int, schema_id: int) -> Any:
    empty = Stats.empty()
    return {
        "_VERSION": 2,
        "_KIND": 0,
        "_PARTITION": partition,
        "_BUCKET": 0,
        "_TOTAL_BUCKETS": -1,
        "_FILE": {
            "_FILE_NAME": name,
            "_FILE_SIZE": size,
            "_ROW_COUNT": rows,
            "_MIN_KEY": binary_row.encode([], []),
            "_MAX_KEY": binary_row.encode([], []),
            "_KEY_STATS": empty,
            "_VALUE_STATS": empty,
            "_MIN_SEQUENCE_NUMBER": seq,
            "_MAX_SEQUENCE_NUMBER": seq + rows - 1,
            "_SCHEMA_ID": schema_id,
            "_LEVEL": 0,
            "_EXTRA_FILES": [],
            "_CREATION_TIME": int(time.time() * 1000),
            "_DELETE_ROW_COUNT": 0,
            "_FILE_SOURCE": 0,
            "_VALUE_STATS_COLS": [],
        },
    }


def run_ours(root: Path, parallelism: int) -> tuple[float, int, int]:
    start = time.perf_counter()
    t = open_table(str(root))
    cplan = plan_compact(t, CompactFlags(), now_ms=int(time.time() * 1000))
    with LocalExecutor(parallelism) as ex:
        result = apply_compact(t, cplan, executor=ex)
    return time.perf_counter() - start, result.files_before, result.files_after


def groups_of(root: Path) -> list[list[str]]:
    t = open_table(str(root))
    cplan = plan_compact(t, CompactFlags(), now_ms=int(time.time() * 1000))
    out = []
    for task in cplan.tasks:
        bucket_dir = t.paths.bucket_dir(task.partition, task.bucket)
        out.append([os.path.join(bucket_dir, r["_FILE"]["_FILE_NAME"]) for r in task.inputs])
    return out


def _baseline_group(args: tuple[list[str], Path]) -> None:
    paths, out = args
    parts = []
    for path in paths:
        with open(path, "rb") as fh:
            parts.append(pq.ParquetFile(pa.BufferReader(fh.read())).read())
    pq.write_table(pa.concat_tables(parts), out, compression="zstd", compression_level=1)


def run_baseline(
    groups: list[list[str]],
    scratch: Path,
    parallelism: int,
    worker: Callable[[tuple[list[str], Path]], None] = _baseline_group,
) -> float:
    """Seconds for ``worker`` to turn each group of files into one output, in parallel."""
    scratch.mkdir(parents=True, exist_ok=True)
    work = [(g, scratch / f"out-{i}.parquet") for i, g in enumerate(groups)]
    start = time.perf_counter()
    with ThreadPoolExecutor(parallelism) as pool:
        list(pool.map(worker, work))
    return time.perf_counter() - start


def bench_args(description: str, *, rounds: int, scale_example: str) -> argparse.Namespace:
    """The options both compaction benchmarks take."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--scale", type=float, default=1.0, help=f"shrink (e.g. {scale_example})")
    parser.add_argument("--rounds", type=int, default=rounds)
    parser.add_argument("--parallelism", type=int, default=max(4, (os.cpu_count() or 1) * 2))
    parser.add_argument("--workdir", type=Path, help="where to generate (default: tmpfs if any)")
    parser.add_argument("--keep", action="store_true")
    return parser.parse_args()


@contextmanager
def bench_workdir(args: argparse.Namespace, prefix: str) -> Iterator[Path]:
    """A fresh directory under --workdir (default: tmpfs if any), removed unless --keep."""
    base = args.workdir or (Path("/dev/shm") if Path("/dev/shm").is_dir() else None)
    work = Path(tempfile.mkdtemp(prefix=prefix, dir=base))
    try:
        yield work
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
        else:
            print(f"kept {work}", file=sys.stderr)


def main() -> int:
    args = bench_args(__doc__.split("\n\n")[0], rounds=2, scale_example="0.05")
    scale = min(args.scale, 1.0)
    partitions = max(1, round(20 * scale))
    files = max(5, round(500 * scale))
    with bench_workdir(args, "bench-compact-") as work:
        t0 = time.perf_counter()
        source = make_table(work / "src", partitions, files, rows=40)
        made = time.perf_counter() - t0
        t = open_table(str(source))
        latest = t.snapshots.latest()
        assert latest is not None
        live = t.live_files(latest)
        total = sum(e.file.file_size for e in live)
        print(
            f"table: {partitions} partitions x {files} files = {len(live)} files, "
            f"{total / 2**20:.1f} MiB (generated in {made:.1f} s)"
        )
        groups = groups_of(source)
        best_ours = best_base = float("inf")
        outputs = (0, 0)
        for r in range(args.rounds):
            copy = work / f"run-{r}"
            shutil.copytree(source.parents[1], copy)
            root = copy / source.parent.name / source.name
            seconds, before, after = run_ours(root, args.parallelism)
            best_ours = min(best_ours, seconds)
            outputs = (before, after)
            best_base = min(best_base, run_baseline(groups, work / f"base-{r}", args.parallelism))
        mb = total / 2**20
        ours, baseline = mb / best_ours, mb / best_base
        ratio = ours / baseline
        print(f"compact: {outputs[0]} files -> {outputs[1]} files")
        print(f"paimon compact : {ours:8.2f} MiB/s ({best_ours:.2f} s, best of {args.rounds})")
        print(f"pyarrow r+w    : {baseline:8.2f} MiB/s ({best_base:.2f} s)")
        verdict = "meets" if ratio >= GOAL else "MISSES"
        print(f"ratio          : {ratio:.0%} ({verdict} the >= {GOAL:.0%} goal)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
