#!/usr/bin/env python3
"""Against Apache Paimon 0.9 (Java), on identical copies in the same run (issue 27).

Usage: python bench/bench_java.py [--rounds R] [--scale S] [--workdir DIR]

The table: ``bench/synth``'s generator written to disk (tmpfs when it has room): 2,000
snapshots over 20 partitions x 4 buckets (100 files bulk-loaded per bucket, then 16 files
per commit, every 10th commit a COMPACT of 5 files), 200,000 orphan data files, all older
than a day; ~240,000 files in all (``--scale`` multiplies the file counts).

Each round copies the table twice (``cp -a``), runs ours on one copy and Java on the other
(alternating which goes first), whole processes (start-up included), and keeps the best
wall time of ``--rounds`` (3) for each side:
- ``paimon expire-snapshots --retain-max 10 --retain-min 10 --max-deletes 100000000`` vs
  ``ExpireSnapshots`` with the same config (all but the last 10 snapshots expire);
- ``paimon delete-orphan-files --older-than T`` vs ``OrphanFilesClean.olderThan(T)``, T a
  day ago.
The two copies must then hold the same files. Also printed: CPU seconds of each side, the
load average, and for orphans the floor of the same run: a bare ``os.scandir`` walk with
``lstat`` + bare ``fastavro`` decoding of every manifest list and manifest the snapshots
name + a bare ``os.unlink`` of the same orphans. Goals: <= 0.2x Java, <= 1.25x the floor.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE / "synth"), str(HERE.parent / "tests")]

import synth_table as st  # noqa: E402
from bench_orphans import decode_baseline, list_baseline  # noqa: E402
from support import java_toolchain  # noqa: E402


def build(dest: Path, scale: float) -> Path:
    spec = st.Spec(
        root="t",
        snapshots=2000,
        partitions=20,
        buckets=4,
        base_files=max(20, round(100 * scale)),
        files_per_commit=max(1, round(16 * scale)),
        compact_every=10,
        compact_files=5,
        orphans=round(200_000 * scale),
        end_s=int(time.time()) - 2 * 86_400,
    )
    return Path(st.materialize(spec, str(dest)))


def compile_java(into: Path) -> list[str]:
    """javac of bench/java against the tests' Paimon 0.9 jars; the java command prefix."""
    classpath = [str(p) for p in (java_toolchain._paimon_jar(), *java_toolchain._pyspark_jars())]
    subprocess.run(
        ["javac", "-nowarn", "-d", str(into), "-cp", os.pathsep.join(classpath)]
        + [str(p) for p in (HERE / "java").glob("*.java")],
        check=True,
    )
    cp = os.pathsep.join([*classpath, str(into)])
    return ["java", "-cp", cp, "paimonbench.JavaMaintain"]


def timed(cmd: list[str]) -> tuple[float, float]:
    """(wall, CPU seconds) of a subprocess."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise SystemExit(f"{cmd[:4]} failed:\n{proc.stderr[-3000:]}")
    cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    return wall, cpu


def tree(root: Path) -> set[str]:
    return {
        str(Path(d, n).relative_to(root))
        for d, _dirs, names in os.walk(root)
        for n in names
        if ".paimon-cli" not in d
    }


def compare(
    name: str,
    table: Path,
    work: Path,
    rounds: int,
    ours: Callable[[Path], list[str]],
    java: Callable[[Path], list[str]],
) -> tuple[float, set[str]]:
    """Best wall time of ours; the files ours removed."""
    best = {"ours": (1e9, 0.0), "java": (1e9, 0.0)}
    removed: set[str] = set()
    for r in range(rounds):
        copies = {side: work / f"{name}-{side}-{r}" for side in best}
        for path in copies.values():
            subprocess.run(["cp", "-a", str(table), str(path)], check=True)
        order = ["ours", "java"] if r % 2 == 0 else ["java", "ours"]
        for side in order:
            cmd = ours(copies[side]) if side == "ours" else java(copies[side])
            result = timed(cmd)
            best[side] = min(best[side], result)
        removed = tree(table) - tree(copies["ours"])
        if tree(copies["ours"]) != tree(copies["java"]):
            diff = tree(copies["ours"]) ^ tree(copies["java"])
            print(f"  {name}: the copies DIFFER ({len(diff)} files, e.g. {sorted(diff)[:3]})")
        for path in copies.values():
            shutil.rmtree(path)
    (ow, oc), (jw, jc) = best["ours"], best["java"]
    goal = "meets" if ow <= 0.2 * jw else "MISSES"
    print(
        f"{name}: ours {ow:.2f} s (CPU {oc:.2f} s), Java {jw:.2f} s (CPU {jc:.2f} s): "
        f"{ow / jw:.2f}x ({goal} <= 0.2x)  [load {os.getloadavg()[0]:.1f}]",
        flush=True,
    )
    return ow, removed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--scale", type=float, default=1.0)
    parser.add_argument("--workdir", type=Path)
    parser.add_argument("--commands", default="expire,orphans")
    args = parser.parse_args()
    parent = args.workdir or (Path("/dev/shm") if Path("/dev/shm").is_dir() else None)
    with tempfile.TemporaryDirectory(prefix="bench-java-", dir=parent) as tmp:
        work = Path(tmp)
        java = compile_java(work / "classes")
        started = time.perf_counter()
        table = build(work / "table", args.scale)
        files = len(tree(table))
        print(f"table: {files:,} files, written in {time.perf_counter() - started:.1f} s")
        paimon = [sys.executable, "-m", "paimon_cli"]
        wanted = args.commands.split(",")
        if "expire" in wanted:
            compare(
                "expire-snapshots --retain-max 10",
                table,
                work,
                args.rounds,
                lambda p: [
                    *paimon,
                    "expire-snapshots",
                    str(p),
                    "--retain-max",
                    "10",
                    "--retain-min",
                    "10",
                    "--max-deletes",
                    "100000000",
                    "-q",
                ],
                lambda p: [*java, "expire", str(p), "10"],
            )
        if "orphans" not in wanted:
            return 0
        cutoff = (dt.datetime.now() - dt.timedelta(days=1)).strftime("%Y-%m-%d %H:%M:%S")
        ours_s, removed = compare(
            "delete-orphan-files",
            table,
            work,
            args.rounds,
            lambda p: [*paimon, "delete-orphan-files", str(p), "--older-than", cutoff, "-q"],
            lambda p: [*java, "orphans", str(p), cutoff],
        )
        listing, _entries, _dirs = list_baseline(table)
        decoding, _avro, _records = decode_baseline(table)
        copy = work / "floor"
        subprocess.run(["cp", "-a", str(table), str(copy)], check=True)
        orphans = [str(copy / rel) for rel in sorted(removed)]
        start = time.perf_counter()
        for path in orphans:
            os.unlink(path)
        unlink = time.perf_counter() - start
        floor = listing + decoding + unlink
        goal = "meets" if ours_s <= 1.25 * floor else "MISSES"
        print(
            f"orphan floor: listing {listing:.2f} s + decoding {decoding:.2f} s + unlink of "
            f"{len(orphans):,} files {unlink:.2f} s = {floor:.2f} s; ours / floor "
            f"{ours_s / floor:.2f}x ({goal} <= 1.25x)"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
