#!/usr/bin/env python3
"""Start-up and manifest-decoding benchmark; prints figures, asserts nothing.

Usage: python bench/bench_inspect.py [--scale S] [--runs R] [--workdir DIR] [--keep]

(a) cold start: median wall time of ``paimon --help`` against ``python -c pass`` (same
    interpreter, same run), and which heavy packages ``paimon --help`` imports
    (``python -X importtime``).
(b) manifest decoding: every data manifest of a generated table (400 snapshots x 500 files
    at scale 1, i.e. >= 200,000 entries) is read into memory first, then decoded by bare
    ``fastavro.reader`` (iterate the records) and by ``core.format.manifest.decode_manifest``
    (consume the iterator). Entries per second for both and the ratio core / fastavro.
    Goal: >= 50%.
"""

from __future__ import annotations

import argparse
import io
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import fastavro
from make_big_table import make_big_table, scratch_dir

from core.format.manifest import decode_manifest
from core.format.model import UNRECORDED

HEAVY = ("pyarrow", "pyspark", "pandas", "numpy", "pypaimon", "fsspec", "fastavro", "rich")
DECODE_GOAL = 0.5


def _paimon_script() -> str:
    script = Path(sys.executable).parent / "paimon"
    if not script.exists():
        raise SystemExit(f"{script} not found: install the package into this interpreter's env")
    return str(script)


def _wall(cmd: list[str]) -> float:
    started = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - started


def cold_start(runs: int) -> None:
    paimon = _paimon_script()
    base_cmd = [sys.executable, "-c", "pass"]
    help_cmd = [sys.executable, paimon, "--help"]
    _wall(help_cmd)  # byte-compile and warm the OS file cache once
    base, cli = [], []
    for _ in range(runs):  # interleaved, so drift hits both equally
        base.append(_wall(base_cmd))
        cli.append(_wall(help_cmd))
    b, c = statistics.median(base), statistics.median(cli)
    print(f"(a) cold start, median of {runs} runs")
    print(f"    python -c pass       {b * 1000:8.1f} ms   (baseline)")
    print(
        f"    paimon --help        {c * 1000:8.1f} ms   "
        f"{c / b:.1f}x baseline, +{(c - b) * 1000:.0f} ms"
    )

    proc = subprocess.run(
        [sys.executable, "-X", "importtime", paimon, "--help"],
        check=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    cumulative: dict[str, int] = {}
    for line in proc.stderr.splitlines():
        if not line.startswith("import time:") or "|" not in line:
            continue
        parts = line.split("|")
        name = parts[-1].strip()
        try:
            us = int(parts[1].strip())
        except ValueError:
            continue  # the header line
        package = name.split(".", 1)[0]
        cumulative[package] = max(cumulative.get(package, 0), us)
    imported = set(cumulative)
    flags = ", ".join(f"{pkg} {'YES' if pkg in imported else 'no'}" for pkg in HEAVY)
    print(f"    imported by --help: {flags}")
    top = sorted(cumulative.items(), key=lambda kv: -kv[1])[:6]
    print(
        "    slowest packages (largest cumulative import): "
        + ", ".join(f"{n} {us / 1000:.0f} ms" for n, us in top)
    )


def _best(fn: Callable[[], int], rounds: int) -> tuple[int, float]:
    best = float("inf")
    count = 0
    for _ in range(rounds):
        started = time.perf_counter()
        count = fn()
        best = min(best, time.perf_counter() - started)
    return count, best


def decoding(workdir: Path, scale: float, rounds: int) -> None:
    snapshots = max(2, round(400 * scale))
    big = make_big_table(
        workdir,
        snapshots=snapshots,
        files_per_snapshot=500,
        partitions=20,
        overwrite_every=50,
    )
    manifests = sorted(
        p
        for p in (big.root / "manifest").iterdir()
        if p.name.startswith("manifest-") and not p.name.startswith("manifest-list-")
    )
    blobs = [(str(p), p.read_bytes()) for p in manifests]  # I/O excluded from both timings
    size = sum(len(d) for _, d in blobs)

    def bare() -> int:
        n = 0
        for _path, data in blobs:
            for _record in fastavro.reader(io.BytesIO(data)):
                n += 1
        return n

    def core() -> int:
        n = 0
        for path, data in blobs:
            for _entry in decode_manifest(data, path, expect=UNRECORDED):
                n += 1
        return n

    # interleave rounds so both see the same machine state; keep each one's best round
    bare_n, bare_s, core_n, core_s = 0, float("inf"), 0, float("inf")
    for _ in range(rounds):
        bare_n, t = _best(bare, 1)
        bare_s = min(bare_s, t)
        core_n, t = _best(core, 1)
        core_s = min(core_s, t)
    if bare_n != core_n or bare_n != big.manifest_entries:
        raise SystemExit(
            f"entry counts differ: fastavro {bare_n}, core {core_n}, "
            f"generated {big.manifest_entries}"
        )
    ratio = (core_n / core_s) / (bare_n / bare_s)
    print(
        f"(b) manifest decoding: {len(blobs)} manifests, {bare_n} entries, "
        f"{size / 1e6:.1f} MB in memory (table: {big.snapshots} snapshots x 500 files, "
        f"generated in {big.seconds:.1f}s); best of {rounds} rounds"
    )
    print(
        f"    fastavro.reader      {bare_n / bare_s:10,.0f} entries/s  {bare_s:6.2f} s   (baseline)"
    )
    print(f"    core decode_manifest {core_n / core_s:10,.0f} entries/s  {core_s:6.2f} s")
    verdict = "meets" if ratio >= DECODE_GOAL else "MISSES"
    print(f"    ratio core/fastavro  {ratio:.0%}   (goal >= {DECODE_GOAL:.0%}: {verdict})")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scale", type=float, default=1.0, help="shrink the table (e.g. 0.05)")
    parser.add_argument("--runs", type=int, default=7, help="cold-start runs per command")
    parser.add_argument("--rounds", type=int, default=3, help="decoding rounds (best is kept)")
    parser.add_argument("--workdir", type=Path, help="where to generate (default: tmpfs if any)")
    parser.add_argument("--keep", action="store_true", help="keep the generated table")
    args = parser.parse_args()
    cold_start(args.runs)
    with scratch_dir(args.workdir, keep=args.keep) as workdir:
        decoding(workdir, args.scale, args.rounds)
    return 0


if __name__ == "__main__":
    sys.exit(main())
