#!/usr/bin/env python3
"""Deep pypaimon tables: thousands of commits over unmerged manifests (issue 36).

Usage: python bench/bench_deep.py [--commits N] [--rounds R] [--before DIR] [--java]
                                  [--commands expire,check,summary,maintain]

The table is ``make_deep_table.py``'s (a loop of pypaimon ``write_arrow`` + ``commit``,
cached under /tmp/paimon-deep-N; made on first use). Each round copies it to ``--workdir``
(tmpfs by default) and runs whole processes (start-up included), best of ``--rounds``,
printing wall and CPU seconds (on a shared machine CPU is the steady figure) and the load:

- ``expire``: ``paimon expire-snapshots --retain-max 10 --retain-min 10 --max-deletes
  100000000`` (all but the last 10 snapshots expire); with ``--java`` Apache Paimon 0.9's
  ``ExpireSnapshots`` on another copy (``bench_java.py``'s JavaMaintain), the two copies
  must then hold the same files. Goal <= 0.3x Java.
- ``check``: ``paimon inspect TABLE --check`` against the floor measured in the same run,
  in one thread: ``json.loads`` of every snapshot, bare ``fastavro`` decoding of each
  distinct list record and manifest entry once (every manifest, every delta list and the
  latest base list), and one ``os.scandir`` + stat of every directory.
  Goal <= 3 s.
- ``summary``: ``paimon inspect TABLE`` (and with ``--skip-storage``). Goal <= 2 s.
- ``maintain``: ``paimon maintain TABLE --dry-run`` (default ``--check``,
  ``--check-level full``) against the same floor. Goal <= 3 s.

``--table DIR`` takes an existing table instead (e.g. ``make_big_table.py --snapshots 10000
--files-per-snapshot 1``, pypaimon's layout written by a generator: a loop of 10,000
pypaimon commits takes hours, pypaimon re-reading its own growing lists at every commit).
``--before DIR`` runs another source tree of ours as well (``git archive <rev> | tar -x
-C DIR``): the same commands, before and after, in the same run.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import fastavro

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent / "tests")]

from bench_java import byte_compile, compile_java, timed, tree  # noqa: E402
from make_deep_table import make_deep_table  # noqa: E402

EXPIRE = ["--retain-max", "10", "--retain-min", "10", "--max-deletes", "100000000"]


def _paimon(src: Path, *args: str) -> list[str]:
    code = f"import sys; sys.path.insert(0, {str(src)!r}); from paimon_cli.main import main; main()"
    return [sys.executable, "-c", code, *args]


def floor(table: Path) -> float:
    """Read every snapshot and decode each distinct manifest-list record and manifest entry
    once (every manifest, every delta list, the latest base list, which names every earlier
    delta manifest again), stat every directory's entries: what any check of the table must
    at least do (one thread)."""
    start = time.process_time()
    snaps = [json.loads(p.read_bytes()) for p in (table / "snapshot").glob("snapshot-*")]
    latest = max(snaps, key=lambda s: int(s["id"]))
    lists = [s["deltaManifestList"] for s in snaps] + [latest["baseManifestList"]]
    manifests = [p.name for p in (table / "manifest").glob("manifest-*")]
    for name in lists + [m for m in manifests if not m.startswith("manifest-list-")]:
        for _row in fastavro.reader(io.BytesIO((table / "manifest" / name).read_bytes())):
            pass
    for directory, dirs, _files in os.walk(table):
        for entry in os.scandir(directory):
            entry.stat(follow_symlinks=False)
        dirs[:] = [d for d in dirs if d != ".paimon-cli"]
    return time.process_time() - start


def best(rounds: int, run: Callable[[], tuple[float, float]]) -> tuple[float, float]:
    results = [run() for _ in range(rounds)]
    return min(r[0] for r in results), min(r[1] for r in results)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--commits", type=int, default=2000)
    ap.add_argument("--cache", type=Path, default=None)
    ap.add_argument("--table", type=Path, default=None, help="an existing table instead")
    ap.add_argument("--workdir", type=Path, default=Path("/dev/shm"))
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--before", type=Path, default=None)
    ap.add_argument("--java", action="store_true")
    ap.add_argument("--commands", default="expire,check,summary,maintain")
    args = ap.parse_args()
    wanted = set(args.commands.split(","))
    source = args.table or make_deep_table(
        args.commits, args.cache or Path(f"/tmp/paimon-deep-{args.commits}")
    )
    sides = {"ours": HERE.parent}
    if args.before is not None:
        sides["before"] = args.before.resolve()
    for src in sides.values():
        byte_compile(src)
    work = Path(tempfile.mkdtemp(prefix="bench-deep-", dir=args.workdir))
    try:
        table = work / "table"
        shutil.copytree(source, table, symlinks=True)
        commits = len(list((source / "snapshot").glob("snapshot-*")))
        print(f"{commits} commits: {source}; load {os.getloadavg()[0]:.1f}")
        floor_s = min(floor(table) for _ in range(args.rounds))
        print(f"floor (decode everything once, stat every entry; CPU): {floor_s:.2f} s")
        checks = {
            "check": ("inspect", str(table), "--check"),
            "summary": ("inspect", str(table)),
            "summary --skip-storage": ("inspect", str(table), "--skip-storage"),
            "maintain": ("maintain", str(table), "--dry-run"),
        }
        for name, cmd in checks.items():
            if name.split()[0] not in wanted:
                continue
            for side, src in sides.items():
                wall, cpu = best(args.rounds, lambda src=src, cmd=cmd: timed(_paimon(src, *cmd)))
                ratio = (
                    f", CPU / floor {cpu / floor_s:.1f}x" if name in ("check", "maintain") else ""
                )
                print(f"{name:24} {side:7} wall {wall:6.2f} s  CPU {cpu:6.2f} s{ratio}")
        if "expire" in wanted:
            _expire(source, work, sides, args)
        print(f"load now {os.getloadavg()[0]:.1f}")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


def _expire(source: Path, work: Path, sides: dict[str, Path], args: argparse.Namespace) -> None:
    java = compile_java(work / "classes") if args.java else None
    results: dict[str, tuple[float, float]] = {}
    trees: dict[str, set[str]] = {}
    for r in range(args.rounds):
        for side, src in sides.items():
            copy = work / f"expire-{side}-{r}"
            shutil.copytree(source, copy, symlinks=True)
            got = timed(_paimon(src, "expire-snapshots", str(copy), *EXPIRE, "-q"))
            results[side] = min(results.get(side, got), got)
            trees[side] = tree(copy)
            shutil.rmtree(copy)
        if java is not None:
            copy = work / f"expire-java-{r}"
            shutil.copytree(source, copy, symlinks=True)
            got = timed([*java, "expire", str(copy), "10"])
            results["java"] = min(results.get("java", got), got)
            trees["java"] = tree(copy)
            shutil.rmtree(copy)
    for side, (wall, cpu) in results.items():
        java_ratio = ""
        if "java" in results and side != "java":
            java_ratio = (
                f", / Java {wall / results['java'][0]:.2f}x (CPU {cpu / results['java'][1]:.2f}x)"
            )
        print(f"{'expire-snapshots':24} {side:7} wall {wall:6.2f} s  CPU {cpu:6.2f} s{java_ratio}")
    same = len({frozenset(t) for t in trees.values()}) == 1
    print(f"expire-snapshots: every side left the same files: {same}")


if __name__ == "__main__":
    sys.exit(main())
