#!/usr/bin/env python3
"""Against Apache Paimon 0.9 (Java), on identical copies in the same run (issue 27).

Usage: python bench/bench_java.py [--rounds R] [--scale S] [--workdir DIR]

The table is written by Apache Paimon 0.9 itself (``JavaMaintain write``: one streaming
writer, Paimon's defaults, so manifests are merged at commit as in production and the
writer's bucket compaction adds COMPACT snapshots): an append table over 20 partitions x 4
buckets, 16 files per commit, until it has 2,000 snapshots. Then 200,000 zero-byte orphan
data files are planted round-robin over the bucket directories, 3 to 17 days old, and
every table file is aged to two days ago, so every file is a candidate for orphan cleaning
(``--scale`` multiplies the files per commit and the orphans). ``--table DIR`` keeps the
built table there and reuses it in later runs (it takes Java a few minutes to write).
``--from DIR`` copies another table instead (``make_deep_table.py``'s pypaimon table, or
``make_big_table.py``'s 10,000-snapshot one) and plants and ages the same way.

Each round copies the table for each side (``cp -a``), runs ours on one copy and Java on
another (rotating which goes first), whole processes (start-up included), and keeps the
best wall time of ``--rounds`` (3) for each side; ``--before DIR`` runs another source
tree of ours as a third side (``git archive main | tar -x -C DIR``: an optimisation
measured before/after in the same run):
- ``paimon expire-snapshots --retain-max 10 --retain-min 10 --max-deletes 100000000`` vs
  ``ExpireSnapshots`` with the same config (all but the last 10 snapshots expire);
- ``paimon delete-orphan-files --older-than T`` vs ``OrphanFilesClean.olderThan(T)``, T a
  day ago.
The two copies must then hold the same files. Also printed: CPU seconds of each side, the
load average, and for orphans the floor of the same run: a bare ``os.scandir`` walk with
``lstat`` + bare ``fastavro`` decoding of every manifest list and manifest the snapshots
name + a bare ``os.unlink`` of the same orphans; for expiry the floor is ``json.loads`` of
every snapshot + bare ``fastavro`` decoding of the manifest lists of the expiring snapshots
and of the first one kept, and of the delta manifests of the expiring ones and of the
first one kept (where the deleted files are named) + a bare ``os.unlink`` of the same
files. Goals: <= 0.2x Java, <= 1.25x the floor.

Our source trees (this one and ``--before``'s) are byte-compiled first, as an install is
(pip compiles at install time): with ``PYTHONDONTWRITEBYTECODE`` set, as in some
environments, every run would otherwise compile ~200 modules again (~0.1 s a run).
"""

from __future__ import annotations

import argparse
import datetime as dt
import io
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path

import fastavro

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent / "tests")]
DAY_NS = 86_400 * 10**9

from bench_orphans import (  # noqa: E402
    _age_all,
    _read_local,
    _threaded,
    _touch_all,
    _walk_files,
    decode_baseline,
    list_baseline,
)
from support import java_toolchain  # noqa: E402


def build(dest: Path, java: list[str], scale: float, snapshots: int) -> Path:
    """Java writes the table into ``dest``; orphans planted and every file aged (docstring)."""
    subprocess.run(
        [*java, "write", str(dest), str(snapshots), "20", "4", str(max(1, round(16 * scale)))],
        check=True,
        capture_output=True,
    )
    return plant(dest, scale)


def plant(dest: Path, scale: float) -> Path:
    """Age every file of the table in ``dest`` to two days ago and plant 200,000 x ``scale``
    orphan data files round-robin over its bucket directories, 3 to 17 days old."""
    now_ns = time.time_ns()
    table_paths = _walk_files(dest)
    _threaded(_age_all, [(table_paths[i::4], now_ns - 2 * DAY_NS) for i in range(4)])
    buckets = sorted(str(p) for p in dest.glob("p=*/bucket-*"))
    count = round(200_000 * scale)
    orphans = [f"{buckets[i % len(buckets)]}/data-{uuid.uuid4()}-0.parquet" for i in range(count)]
    mtimes = [now_ns - 3 * DAY_NS - (i * 7919 % 1000) * 14 * DAY_NS // 1000 for i in range(count)]
    _threaded(_touch_all, [(orphans[i::4], mtimes[i::4]) for i in range(4)])
    return dest


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


def byte_compile(tree: Path) -> None:
    """Compile a source tree's modules into their __pycache__, as an install does."""
    subprocess.run(
        [sys.executable, "-m", "compileall", "-q", str(tree / "core"), str(tree / "paimon_cli")],
        check=True,
    )


def timed(cmd: list[str], timeout: float | None = None) -> tuple[float, float]:
    """(wall, CPU seconds) of a subprocess; ``subprocess.TimeoutExpired`` after ``timeout``."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
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
    sides: dict[str, Callable[[Path], list[str]]],
    timeout: float | None = None,
) -> tuple[float, set[str]]:
    """Best wall time of ``ours``; the files it removed (relative paths). ``sides``: ours,
    java and maybe before (another source tree of ours), run in a rotating order."""
    best = dict.fromkeys(sides, (1e9, 0.0))
    removed: set[str] = set()
    stopped: set[str] = set()  # stopped at ``timeout``: their figure is a lower bound
    for r in range(rounds):
        copies = {side: work / f"{name}-{side}-{r}" for side in best}
        for path in copies.values():
            subprocess.run(["cp", "-a", str(table), str(path)], check=True)
        order = list(sides)
        order = order[r % len(order) :] + order[: r % len(order)]
        for side in order:
            try:
                best[side] = min(best[side], timed(sides[side](copies[side]), timeout))
            except subprocess.TimeoutExpired:
                stopped.add(side)
                best[side] = (timeout or 0.0, float("nan"))
        removed = tree(table) - tree(copies["ours"])
        for side in sides:
            if side in stopped:
                continue
            if side != "ours" and tree(copies["ours"]) != tree(copies[side]):
                diff = tree(copies["ours"]) ^ tree(copies[side])
                print(
                    f"  {name}: ours and {side} DIFFER ({len(diff)} files, e.g. {sorted(diff)[:3]})"
                )
        for path in copies.values():
            shutil.rmtree(path)
    (ow, oc), (jw, jc) = best["ours"], best["java"]
    goal = "meets" if ow <= 0.2 * jw else "MISSES"
    load = f"[load {os.getloadavg()[0]:.1f}]"
    if "java" in stopped:
        print(
            f"{name}: ours {ow:.2f} s (CPU {oc:.2f} s), Java stopped unfinished after "
            f"{jw:.0f} s: < {ow / jw:.3f}x ({goal} <= 0.2x)  {load}",
            flush=True,
        )
        return ow, removed
    print(
        f"{name}: ours {ow:.2f} s (CPU {oc:.2f} s), Java {jw:.2f} s (CPU {jc:.2f} s): "
        f"{ow / jw:.2f}x ({goal} <= 0.2x)  {load}",
        flush=True,
    )
    if "before" in best:
        bw, bc = best["before"]
        print(
            f"{name}: before {bw:.2f} s (CPU {bc:.2f} s) -> ours {ow:.2f} s (CPU {oc:.2f} s): "
            f"{ow / bw:.2f}x, Java ratio before {bw / jw:.2f}x  {load}",
            flush=True,
        )
    return ow, removed


def _avro(path: Path) -> list[dict[str, object]]:
    return [r for r in fastavro.reader(io.BytesIO(_read_local(str(path)))) if isinstance(r, dict)]


def expire_floor_decode(table: Path, retain: int) -> tuple[int, int]:
    """What Paimon's expiry has to read, read barely (module docstring): (avro files, records)."""
    ids = sorted(int(n[9:]) for n in os.listdir(table / "snapshot") if n.startswith("snapshot-"))
    kept = ids[-retain]
    wanted = [i for i in ids if i <= kept]
    docs = {i: json.loads(_read_local(str(table / "snapshot" / f"snapshot-{i}"))) for i in wanted}
    files = records = 0
    for i in wanted:
        for key in ("baseManifestList", "deltaManifestList"):
            metas = _avro(table / "manifest" / docs[i][key])
            files, records = files + 1, records + len(metas)
            if key == "deltaManifestList" and i > wanted[0]:
                for meta in metas:
                    entries = _avro(table / "manifest" / str(meta["_FILE_NAME"]))
                    files, records = files + 1, records + len(entries)
    return files, records


def floor(name: str, parts: list[tuple[str, Callable[[], object]]], ours_s: float) -> None:
    """Time each part in this process; print them, their sum and ours / floor."""
    shown = []
    total = cpu = 0.0
    for label, run in parts:
        wall0, cpu0 = time.perf_counter(), time.process_time()
        run()
        wall, spent = time.perf_counter() - wall0, time.process_time() - cpu0
        total, cpu = total + wall, cpu + spent
        shown.append(f"{label} {wall:.2f} s")
    goal = "meets" if ours_s <= 1.25 * total else "MISSES"
    print(
        f"{name} floor: {' + '.join(shown)} = {total:.2f} s (CPU {cpu:.2f} s); ours / floor "
        f"{ours_s / total:.2f}x ({goal} <= 1.25x)  [load {os.getloadavg()[0]:.1f}]",
        flush=True,
    )


def unlink_all(copy: Path, removed: set[str]) -> Callable[[], None]:
    paths = [str(copy / rel) for rel in sorted(removed)]
    return lambda: [os.unlink(p) for p in paths]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--scale", type=float, default=1.0)
    parser.add_argument("--workdir", type=Path)
    parser.add_argument("--snapshots", type=int, default=2000)
    parser.add_argument("--table", type=Path, help="keep the built table here; reuse it")
    parser.add_argument("--commands", default="expire,orphans")
    parser.add_argument(
        "--java-timeout",
        type=float,
        default=None,
        help="stop a side after this many seconds (its figure is then a lower bound)",
    )
    parser.add_argument(
        "--from",
        dest="source",
        type=Path,
        help="copy this table (e.g. a deep pypaimon table) instead of having Java write one",
    )
    parser.add_argument(
        "--before", type=Path, help="also run this source tree of ours (e.g. `git archive main`)"
    )
    args = parser.parse_args()
    parent = args.workdir or (Path("/dev/shm") if Path("/dev/shm").is_dir() else None)
    with tempfile.TemporaryDirectory(prefix="bench-java-", dir=parent) as tmp:
        work = Path(tmp)
        java = compile_java(work / "classes")
        started = time.perf_counter()
        table = args.table or work / "table"
        if args.source is not None and not (table / "snapshot").is_dir():
            shutil.copytree(args.source, table, symlinks=True)
            plant(table, args.scale)
        elif not (table / "snapshot").is_dir():
            build(table, java, args.scale, args.snapshots)
            print(f"table written by Java in {time.perf_counter() - started:.1f} s")
        files = len(tree(table))
        snapshots = len(os.listdir(table / "snapshot")) - 2
        print(f"table {table}: {files:,} files, {snapshots:,} snapshots", flush=True)
        for source in (HERE.parent, *([args.before] if args.before else [])):
            byte_compile(source)
        paimon = [sys.executable, "-m", "paimon_cli"]
        # -P: the source tree on PYTHONPATH, not the current directory, is imported.
        before = (
            []
            if args.before is None
            else ["env", f"PYTHONPATH={args.before}", sys.executable, "-P", "-m", "paimon_cli"]
        )

        def sides(
            ours: Callable[[Path], list[str]], java: Callable[[Path], list[str]]
        ) -> dict[str, Callable[[Path], list[str]]]:
            out = {"ours": ours, "java": java}
            if before:
                out["before"] = lambda p: [*before, *ours(p)[len(paimon) :]]
            return out

        wanted = args.commands.split(",")
        if "expire" in wanted:
            ours_s, removed = compare(
                "expire-snapshots --retain-max 10",
                table,
                work,
                args.rounds,
                sides(
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
                ),
                args.java_timeout,
            )
            copy = work / "floor"
            subprocess.run(["cp", "-a", str(table), str(copy)], check=True)
            floor(
                "expire",
                [
                    ("decoding", lambda: expire_floor_decode(table, 10)),
                    (f"unlink of {len(removed):,} files", unlink_all(copy, removed)),
                ],
                ours_s,
            )
            shutil.rmtree(copy)
        if "orphans" in wanted:
            cutoff = (dt.datetime.now() - dt.timedelta(days=1)).strftime("%Y-%m-%d %H:%M:%S")
            ours_s, removed = compare(
                "delete-orphan-files",
                table,
                work,
                args.rounds,
                sides(
                    lambda p: [
                        *paimon,
                        "delete-orphan-files",
                        str(p),
                        "--older-than",
                        cutoff,
                        "-q",
                    ],
                    lambda p: [*java, "orphans", str(p), cutoff],
                ),
                args.java_timeout,
            )
            copy = work / "floor"
            subprocess.run(["cp", "-a", str(table), str(copy)], check=True)
            floor(
                "orphans",
                [
                    ("listing", lambda: list_baseline(table)),
                    ("decoding", lambda: decode_baseline(table)),
                    (f"unlink of {len(removed):,} files", unlink_all(copy, removed)),
                ],
                ours_s,
            )
            shutil.rmtree(copy)
    return 0


if __name__ == "__main__":
    sys.exit(main())
