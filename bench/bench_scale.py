#!/usr/bin/env python3
"""Scale benchmark (issue 27): the local engine's peak RSS, files/s and wall time on a
``synth://`` table of N files, beside the same run's baseline.

Usage: python bench/bench_scale.py [--files N ...] [--commands orphans,expire,spark-orphans]
       [--dry-run] [--no-baseline] [--spark-conf K=V ...]

The table (``bench/synth``): ``partitions`` x ``buckets`` = 20 x 10 bucket directories,
half of N live data files bulk-loaded in snapshot 1, 99 more commits of 100 files (every
5th a COMPACT of 50 files, so expiry deletes), tags at snapshots 20 and 60, and N/2 orphan
data files (4/5 of them older than the cut-off). Nothing is on disk: the table is generated
on read, deletions are kept as bits in the process.

(a) ours: ``paimon delete-orphan-files synth://t --older-than '1 d' -q`` and
    ``paimon expire-snapshots synth://t --retain-max 10 -q`` (``--dry-run``: plan only),
    each a subprocess under ``/usr/bin/time -v``: wall time, CPU time, peak RSS.
(c) ``spark-orphans``: ``delete-orphan-files synth://t --older-than '1 d' --dry-run -q
    --engine spark --spark-master 'local[2]'`` (always a dry run: deletions made in Spark's
    Python workers stay in those processes). The driver's peak RSS is its own ``VmHWM``
    (the wrapper of ``bench_orphans_spark.py``, which explains why ``/usr/bin/time`` cannot
    tell it); the JVM's and the largest Python worker's peaks are printed beside it.
(b) baseline, a subprocess too: a bare listing of every directory orphan cleaning lists
    (``fs.ls`` with details) plus a bare ``fastavro.reader`` pass over every manifest list
    and manifest any snapshot or tag names (each once, reads included): what any orphan
    cleaning must at least do. files/s = files in the table / wall time.
Nothing here fails on a slow or big result (``MISSES`` is printed beside a missed goal).
Goals: peak RSS <= 1 GiB for both local commands at every size; Spark driver <= 256 MiB.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
GIB = 1 << 30


def spec_options(files: int) -> dict[str, str]:
    groups = 200
    return {
        "partitions": "20",
        "buckets": "10",
        "base_files": str(max(1, files // 2 // groups)),
        "snapshots": "100",
        "files_per_commit": "100",
        "compact_every": "5",
        "compact_files": "50",
        "tags": "20,60",
        "orphans": str(files // 2),
        "manifest_entries": "100000",
    }


def fs_args(options: dict[str, str]) -> list[str]:
    return [a for k, v in options.items() for a in ("--fs-option", f"{k}={v}")]


def _run(cmd: list[str]) -> tuple[float, str]:
    """Wall seconds and stderr of a subprocess that must succeed (synth:// importable)."""
    start = time.monotonic()
    proc = subprocess.run(
        cmd,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(HERE / "synth")},
    )
    wall = time.monotonic() - start
    if proc.returncode != 0:
        raise SystemExit(f"{cmd[:3]} failed:\n{proc.stderr[-3000:]}")
    return wall, proc.stderr


def timed(cmd: list[str]) -> dict[str, float]:
    """Wall, CPU seconds and peak RSS (bytes) of a subprocess, from /usr/bin/time -v."""
    wall, stderr = _run(["/usr/bin/time", "-v", *cmd])

    def field(name: str) -> float:
        m = re.search(rf"{name}: ([\d.]+)", stderr)
        return float(m.group(1)) if m else 0.0

    cpu = field(r"User time \(seconds\)") + field(r"System time \(seconds\)")
    return {"wall": wall, "cpu": cpu, "rss": field(r"Maximum resident set size \(kbytes\)") * 1024}


def spark_driver(cmd: list[str], work: Path) -> dict[str, float]:
    """(c): wall, the driver's own peak RSS (bytes), and the JVM's and the largest Python
    worker's peaks, measured by bench_orphans_spark's wrapper. No CPU figure: the JVM and
    the Python workers are not children this process waits for, so rusage misses them."""
    from bench_orphans_spark import WRAPPER

    rss_file = work / "spark-rss.json"
    wall, _stderr = _run([sys.executable, "-c", WRAPPER, str(rss_file), *cmd])
    rss = json.loads(rss_file.read_text())
    peaks = {kind: max((kb for _n, k, kb in rss["children"] if k == kind), default=0)
             for kind in ("jvm", "python")}  # fmt: skip
    return {
        "wall": wall,
        "rss": rss["self_kb"] * 1024,
        "jvm": peaks["jvm"] * 1024,
        "worker": peaks["python"] * 1024,
    }


def baseline(options: dict[str, str]) -> None:
    """(b), in its own process: prints the number of files listed."""
    import fastavro
    import fsspec

    sys.path.insert(0, str(HERE / "synth"))
    import synth_table as st

    st.register()
    fs = fsspec.filesystem(st.PROTOCOL, **options, use_listings_cache=False)
    listed = 0
    todo = ["t"]
    while todo:
        path = todo.pop()
        for entry in fs.ls(path, detail=True):
            if entry["type"] == "directory":
                todo.append(entry["name"])
            else:
                listed += 1
    seen: set[str] = set()

    def decode(path: str) -> list[dict[str, object]]:
        return list(fastavro.reader(io.BytesIO(fs.cat_file(path))))

    roots = [e["name"] for e in fs.ls("t/snapshot", detail=True) if "snapshot-" in e["name"]]
    roots += [e["name"] for e in fs.ls("t/tag", detail=True)]
    for root in roots:
        snap = json.loads(fs.cat_file(root))
        for key in ("baseManifestList", "deltaManifestList"):
            name = snap.get(key)
            if not name or name in seen:
                continue
            seen.add(name)
            for meta in decode(f"t/manifest/{name}"):
                manifest = str(meta["_FILE_NAME"])
                if manifest not in seen:
                    seen.add(manifest)
                    for _ in decode(f"t/manifest/{manifest}"):
                        pass
    print(listed)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--files", type=int, nargs="+", default=[1_000_000])
    parser.add_argument("--commands", default="orphans,expire")
    parser.add_argument("--dry-run", action="store_true", help="plans only")
    parser.add_argument(
        "--no-baseline",
        action="store_true",
        help="skip (b): at 100M files it alone takes hours (no ratio is printed then)",
    )
    parser.add_argument(
        "--spark-conf",
        action="append",
        default=[],
        help="K=V for spark-orphans (e.g. spark.driver.memory=4g: local mode runs every task "
        "in the driver's JVM)",
    )
    parser.add_argument("--baseline-of", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.baseline_of:
        baseline(spec_options(args.baseline_of))
        return 0
    paimon = [sys.executable, "-m", "paimon_cli"]
    dry = ["--dry-run"] if args.dry_run else []
    commands = {
        "orphans": ["delete-orphan-files", "synth://t", "--older-than", "1 d", "-q", *dry],
        "expire": ["expire-snapshots", "synth://t", "--retain-max", "10", "-q", *dry],
        "spark-orphans": [
            "delete-orphan-files", "synth://t", "--older-than", "1 d", "-q", "--dry-run",
            "--engine", "spark", "--spark-master", "local[2]",
            *(a for conf in args.spark_conf for a in ("--spark-conf", conf)),
        ],
    }  # fmt: skip
    for files in args.files:
        options = spec_options(files)
        load = os.getloadavg()[0]
        base = None
        if args.no_baseline:
            print(f"{files:>12,} files  baseline not measured (--no-baseline)", flush=True)
        else:
            base = timed([sys.executable, __file__, "--baseline-of", str(files)])
            print(
                f"{files:>12,} files  baseline (bare listing + decode): {base['wall']:.1f} s "
                f"(CPU {base['cpu']:.1f} s), {files / base['wall']:,.0f} files/s, "
                f"peak {base['rss'] / 2**20:,.0f} MiB  [load {load:.1f}]",
                flush=True,
            )
        for name in args.commands.split(","):
            load = os.getloadavg()[0]
            if name == "spark-orphans":
                with tempfile.TemporaryDirectory() as work:
                    sp = spark_driver([*commands[name], *fs_args(options)], Path(work))
                verdict = "meets" if sp["rss"] <= 256 * 2**20 else "MISSES"
                ratio = f"{sp['wall'] / base['wall']:.2f}x baseline, " if base else ""
                print(
                    f"{'':>12}        {name} (dry run, local[2]): {sp['wall']:.1f} s, "
                    f"{files / sp['wall']:,.0f} files/s, "
                    f"{ratio}driver peak {sp['rss'] / 2**20:,.0f} MiB ({verdict} <= 256 MiB), "
                    f"JVM {sp['jvm'] / 2**20:,.0f} MiB, largest Python worker "
                    f"{sp['worker'] / 2**20:,.0f} MiB  [load {load:.1f}]",
                    flush=True,
                )
                continue
            ours = timed([*paimon, *commands[name], *fs_args(options)])
            verdict = "meets" if ours["rss"] <= GIB else "MISSES"
            ratio = f"{ours['wall'] / base['wall']:.2f}x baseline, " if base else ""
            print(
                f"{'':>12}        {name:<8}{' (dry run)' if dry else ''}: {ours['wall']:.1f} s "
                f"(CPU {ours['cpu']:.1f} s), {files / ours['wall']:,.0f} files/s, {ratio}peak "
                f"{ours['rss'] / 2**20:,.0f} MiB ({verdict} <= 1 GiB)  [load {load:.1f}]",
                flush=True,
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
