#!/usr/bin/env python3
"""delete-orphan-files at 1,000,000 files: driver memory of the Spark engine vs the local one.

Usage: python bench/bench_orphans_spark.py [--files N] [--scale S] [--partitions P]
       [--spark-master M] [--verify sample|full|none] [--no-small] [--workdir DIR] [--keep]

The tree is ``bench_orphans.build_orphan_table``'s: about N/2 table files (``make_big_table``,
500 data files per APPEND snapshot over P partitions) plus N/2 zero-byte orphans spread over
the bucket directories and ``manifest/``; everything is days old. The same command runs as a
subprocess on the same tree, once per engine:

    paimon delete-orphan-files TABLE --older-than '1 d' --dry-run --json --report-file F
        [--engine spark --spark-master 'local[2]']

Driver peak RSS: the CLI runs inside a tiny wrapper (``python -c``) that calls
``paimon_cli.main.main()`` in-process and, at exit, records its own ``VmHWM`` from
``/proc/self/status``: the peak RSS of the Python driver alone. ``RUSAGE_CHILDREN`` seen
from the benchmark would not do: it reports the largest of all waited-for descendants, and
with Spark the JVM (a child of the driver, started by PySpark) is the largest. Nor would
the wrapper's own ``getrusage(RUSAGE_SELF).ru_maxrss``: Linux carries the high-water mark
of the pre-exec address space across ``execve``, and subprocess spawns with ``vfork``, so
the child's ``ru_maxrss`` starts at the benchmark's own peak (hundreds of MiB here, after
generating a million paths); ``VmHWM`` belongs to the new address space. The wrapper
also samples ``VmHWM`` of its descendants every 0.2 s: the JVM (driver + executors of
local mode) and the Python workers are printed separately.

Goal: local driver peak / Spark driver peak >= 5x. The bound stated for the Spark driver is
"independent of the file count": at most its peak on a small table of the same shape
(20,000 files, so the 10,000-orphan sample is full in both runs; ``--no-small`` skips it)
+ 200 bytes per extra partition or bucket directory + 10% slack.

Both report files must list exactly the planted orphans (compared path by path). The
table is valid for pypaimon: ``--verify sample`` (default) plans a pypaimon scan of the
latest snapshot filtered to partition ``p=0`` and compares it with the generator's model
of that partition (a full scan of 500,000 live files would take minutes); ``full`` scans
everything, ``none`` skips it. ``tests/test_bench_smoke.py`` checks the generator in full
on small tables.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from bench_orphans import OrphanTable, build_orphan_table, estimate_bytes, mib, pick_parent
from make_big_table import pypaimon_live_files, scratch_dir

OLDER_THAN = "1 d"
RATIO_GOAL = 5.0
SMALL_FILES = 20_000
DIR_BYTES = 200
SLACK = 1.10

# Runs the CLI in this very process and records its own VmHWM (/proc/self/status) at exit:
# the driver alone (ru_maxrss would start at the benchmark's peak, see above). argv:
# -c OUT_JSON paimon-args...
WRAPPER = r"""
import json, os, resource, sys, threading, time

out_path, args = sys.argv[1], sys.argv[2:]
peaks = {}  # pid -> [name, kind, VmHWM kB]
stop = threading.Event()

def descendants(root):
    kids = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as fh:
                stat = fh.read()
        except OSError:
            continue
        ppid = int(stat[stat.rindex(")") + 2 :].split()[1])
        kids.setdefault(ppid, []).append(int(entry))
    found, todo = [], [root]
    while todo:
        for child in kids.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found

def sample():
    for pid in descendants(os.getpid()):
        try:
            with open(f"/proc/{pid}/status") as fh:
                status = fh.read()
            with open(f"/proc/{pid}/cmdline", "rb") as fh:
                cmd = fh.read().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        hwm = [int(l.split()[1]) for l in status.splitlines() if l.startswith("VmHWM:")]
        if not hwm:
            continue
        name = status.split("\n", 1)[0].split(":", 1)[1].strip()
        kind = "jvm" if name == "java" or "/java " in cmd else (
            "python" if "python" in name or "pyspark" in cmd else "other")
        slot = peaks.setdefault(pid, [name, kind, 0])
        slot[0], slot[1] = name, kind  # bash exec()s into java: keep the latest
        slot[2] = max(slot[2], hwm[0])

def loop():
    while not stop.wait(0.2):
        sample()

threading.Thread(target=loop, daemon=True).start()
code = 0
try:
    from paimon_cli.main import main
    sys.argv = ["paimon", *args]
    main()
except SystemExit as exc:
    code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
finally:
    sample()
    stop.set()
    with open("/proc/self/status") as fh:
        hwm = [int(l.split()[1]) for l in fh if l.startswith("VmHWM:")]
    with open(out_path, "w") as fh:
        json.dump({
            "self_kb": hwm[0] if hwm else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
            "children": list(peaks.values()),
        }, fh)
sys.stdout.flush()
os._exit(code)
"""


@dataclass(frozen=True)
class DriverRun:
    label: str
    wall: float
    driver_kb: int
    jvm_kb: int  # largest JVM
    worker_kb: int  # largest single Python worker
    workers: int
    orphan_count: int
    truncated: bool
    report_lines: int


def run_cli(label: str, table: Path, work: Path, extra: list[str]) -> DriverRun:
    rss_file, out_file, report = (work / f"{label}.{s}" for s in ("rss.json", "out.json", "jsonl"))
    args = [
        "delete-orphan-files",
        str(table),
        "--older-than",
        OLDER_THAN,
        "--dry-run",
        "--json",
        "--report-file",
        str(report),
        *extra,
    ]
    started = time.perf_counter()
    with out_file.open("wb") as out:
        proc = subprocess.run(
            [sys.executable, "-c", WRAPPER, str(rss_file), *args],
            stdout=out,
            stderr=subprocess.PIPE,
        )
    wall = time.perf_counter() - started
    if proc.returncode != 0:
        print(proc.stderr.decode(errors="replace")[-4000:], file=sys.stderr)
        raise SystemExit(f"{label}: delete-orphan-files failed with exit code {proc.returncode}")
    rss = json.loads(rss_file.read_text())
    jvm = [kb for _n, kind, kb in rss["children"] if kind == "jvm"]
    workers = [kb for _n, kind, kb in rss["children"] if kind == "python"]
    with out_file.open("rb") as fh:  # the plan of the local engine lists every orphan
        head = fh.read()
    count = re.search(rb'"orphan_count": (\d+)', head)
    truncated = re.search(rb'"truncated": (true|false)', head)
    with report.open("rb") as fh:
        lines = sum(1 for _ in fh)
    return DriverRun(
        label,
        wall,
        int(rss["self_kb"]),
        max(jvm, default=0),  # the Spark JVM; Spark's launcher is a small, brief JVM
        max(workers, default=0),
        len(workers),
        int(count.group(1)) if count else -1,
        bool(truncated and truncated.group(1) == b"true"),
        lines,
    )


def same_orphans(a: Path, b: Path, expected: list[str]) -> str:
    """Both report files (sorted by path) list exactly the planted orphans."""
    want = sorted(expected)
    for report in (a, b):
        with report.open() as fh:
            got = [json.loads(line)["path"] for line in fh]
        if got != want:
            missing = len(set(want) - set(got))
            return f"DIFFERENT: {report.name} has {len(got):,} paths, {missing:,} planted missing"
    return "both list exactly the planted orphans"


def verify(t: OrphanTable, mode: str) -> str:
    if mode == "none":
        return "skipped (--verify none)"
    started = time.perf_counter()
    if mode == "full":
        found = pypaimon_live_files(t.root)
        want = set(t.big.live_files)
    else:
        from pypaimon.table.file_store_table import FileStoreTable

        table = FileStoreTable.from_path(str(t.root))
        builder = table.new_read_builder()
        pred = builder.new_predicate_builder().equal("p", 0)
        splits = builder.with_filter(pred).new_scan().plan().splits()
        found = {f.file_name for s in splits for f in s.files}
        want = {n for n in t.big.live_files if (t.root / "p=0" / "bucket-0" / n).exists()}
    took = time.perf_counter() - started
    scope = "all partitions" if mode == "full" else "partition p=0"
    if found != want:
        return f"MISMATCH in {scope}: pypaimon plans {len(found):,}, model {len(want):,}"
    return f"pypaimon plans the {len(found):,} live files of {scope} ({took:.1f} s)"


def describe(r: DriverRun) -> str:
    workers = f", Python workers {r.workers} (largest {mib(r.worker_kb)})" if r.workers else ""
    jvm = f", JVM {mib(r.jvm_kb)}" if r.jvm_kb else ""
    return (
        f"wall {r.wall:6.1f} s, driver peak RSS {mib(r.driver_kb)}{jvm}{workers}; "
        f"plan: {r.orphan_count:,} orphans{' (truncated sample)' if r.truncated else ''}, "
        f"report file {r.report_lines:,} lines"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--files", type=int, default=1_000_000, help="files in the tree (N)")
    parser.add_argument("--scale", type=float, default=1.0, help="multiply N (0.02: smoke run)")
    parser.add_argument("--partitions", type=int, default=100, help="partitions p=0..P-1")
    parser.add_argument("--spark-master", default="local[2]")
    parser.add_argument(
        "--spark-conf",
        action="append",
        default=[],
        metavar="K=V",
        help="passed on (e.g. spark.driver.memory=4g: local mode runs every task in the JVM)",
    )
    parser.add_argument("--verify", choices=("sample", "full", "none"), default="sample")
    parser.add_argument("--no-small", action="store_true", help="skip the small-table run")
    parser.add_argument("--workdir", type=Path, help="where to generate (default: tmpfs if room)")
    parser.add_argument("--keep", action="store_true", help="keep the generated trees")
    args = parser.parse_args()
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    files = max(2000, round(args.files * args.scale))
    spark = ["--engine", "spark", "--spark-master", args.spark_master]
    for conf in args.spark_conf:
        spark += ["--spark-conf", conf]
    parent = pick_parent(args.workdir, estimate_bytes(files, copies=1) + (80 << 20) * 4)
    with scratch_dir(parent, keep=args.keep) as workdir:
        small_run: DriverRun | None = None
        small_dirs = 0  # partition + bucket directories of the small table
        if not args.no_small:
            small = build_orphan_table(workdir / "small", SMALL_FILES, args.partitions)
            small_run = run_cli("spark-small", small.root, workdir, spark)
            small_dirs = small.big.partitions + small.bucket_dirs
            print(
                f"small table: {small.total_files:,} files ({len(small.orphans):,} orphans), "
                f"{small.bucket_dirs} bucket dirs\n    spark {describe(small_run)}"
            )

        t = build_orphan_table(workdir / "wh", files, args.partitions)
        print(
            f"table: {t.big.snapshots:,} snapshots, {t.table_files:,} table files + "
            f"{len(t.orphans):,} orphans = {t.total_files:,} files, {t.bucket_dirs} bucket "
            f"dirs; built in {t.seconds:.1f} s under {workdir}"
        )
        valid = verify(t, args.verify)
        print(f"    validity: {valid}")
        local = run_cli("local", t.root, workdir, [])
        print(f"local {describe(local)}")
        sp = run_cli("spark", t.root, workdir, spark)
        print(f"spark {describe(sp)}  [{args.spark_master}]")
        check = same_orphans(workdir / "local.jsonl", workdir / "spark.jsonl", t.orphans)
        counts_ok = local.orphan_count == sp.orphan_count == len(t.orphans)
        print(
            f"    results: plans count {local.orphan_count:,} (local) and {sp.orphan_count:,} "
            f"(spark) of {len(t.orphans):,} planted; report files: {check}"
        )
        ratio = local.driver_kb / sp.driver_kb
        verdict = "meets" if ratio >= RATIO_GOAL else "MISSES"
        print(
            f"    driver peak RSS local / spark: {mib(local.driver_kb)} / {mib(sp.driver_kb)} "
            f"= {ratio:.1f}x   (goal >= {RATIO_GOAL:.0f}x: {verdict})"
        )
        print(
            f"    wall spark / local: {sp.wall:.1f} s / {local.wall:.1f} s = "
            f"{sp.wall / local.wall:.1f}x; JVM peak RSS {mib(sp.jvm_kb)} (not in the driver "
            "figure)"
        )
        if small_run is not None:
            extra_dirs = max(t.big.partitions + t.bucket_dirs - small_dirs, 0)
            bound_kb = int(small_run.driver_kb * SLACK + extra_dirs * DIR_BYTES / 1024)
            within = "within" if sp.driver_kb <= bound_kb else "ABOVE"
            print(
                f"    Spark driver bound (independent of the file count): <= small-table peak "
                f"{mib(small_run.driver_kb)} x {SLACK:.2f} + {DIR_BYTES} B per extra "
                f"directory = {mib(bound_kb)}; at {t.total_files:,} files: "
                f"{mib(sp.driver_kb)}, {within} the bound"
            )
        if not (counts_ok and check.startswith("both") and "MISMATCH" not in valid):
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
