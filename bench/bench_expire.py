#!/usr/bin/env python3
"""expire-snapshots benchmark: planning against bare decoding, then a whole CLI run.

Usage: python bench/bench_expire.py [--scale S] [--rounds R] [--workdir DIR] [--keep]

The table (scale 1): 2,001 snapshots of 25 files over 20 partitions, every 10th an
OVERWRITE of one partition (so DELETE entries exist): ~50,000 data files. With
``retain-max 10, retain-min 1, max-deletes 2000, older-than 0 ms`` exactly 2,000 snapshot
ids expire (1..2000; 2001 is kept).

(a) ``core.ops.expiry.expire_snapshots.plan_expire_snapshots`` wall time (best of R rounds);
(b) baseline: bare ``fastavro.reader`` decoding of the Avro files the plan cannot avoid
    reading: base and delta manifest lists of every expiring snapshot and of the first
    kept one, plus the delta manifests of snapshots (begin, end] -- each file once, bytes
    read into memory beforehand. Reading those bytes is timed separately; the plan's own
    time includes its reads. Ratio plan / decode; goal <= 2x.
(c) ``paimon expire-snapshots`` on a copy of the table as a subprocess: wall time and peak
    RSS (``/usr/bin/time -v`` if present), then ``paimon inspect --check`` must pass.
"""

from __future__ import annotations

import argparse
import io
import json
import re
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path

import fastavro
from make_big_table import BigTable, make_big_table, scratch_dir

from core.ops.expiry.expire_snapshots import ExpireFlags, plan_expire_snapshots
from core.runtime.executors.local import LocalExecutor
from core.runtime.plans import Plan
from core.table.table import open_table

RETAIN_MAX, RETAIN_MIN = 10, 1
PLAN_GOAL = 2.0


def _paimon() -> str:
    script = Path(sys.executable).parent / "paimon"
    if not script.exists():
        raise SystemExit(f"{script} not found: install the package into this interpreter's env")
    return str(script)


def _plan(root: Path, expire_ids: int, now_ms: int) -> Plan:
    table = open_table(str(root))
    flags = ExpireFlags(
        retain_min=RETAIN_MIN, retain_max=RETAIN_MAX, older_than_ms=now_ms, max_deletes=expire_ids
    )
    with LocalExecutor() as executor:
        return plan_expire_snapshots(table, flags, now_ms=now_ms, executor=executor)


def _plan_inputs(root: Path, begin: int, end: int) -> list[Path]:
    """Avro files the planner must decode at least once (see the module docstring)."""
    manifest_dir = root / "manifest"
    names: dict[str, None] = {}
    for sid in range(begin, end + 1):
        snap = json.loads((root / "snapshot" / f"snapshot-{sid}").read_text())
        names[snap["baseManifestList"]] = None
        names[snap["deltaManifestList"]] = None
        if sid > begin:
            with (manifest_dir / snap["deltaManifestList"]).open("rb") as fh:
                for meta in fastavro.reader(fh):
                    assert isinstance(meta, dict)
                    names[meta["_FILE_NAME"]] = None
    return [manifest_dir / n for n in names]


def planning(big: BigTable, expire_ids: int, rounds: int) -> Plan:
    now_ms = int(time.time() * 1000)
    plan: Plan | None = None
    best = float("inf")
    for _ in range(rounds):
        started = time.perf_counter()
        plan = _plan(big.root, expire_ids, now_ms)
        best = min(best, time.perf_counter() - started)
    assert plan is not None
    assert plan.details.expire_range is not None
    begin, end = plan.details.expire_range
    phases = {p.name: p.actions for p in plan.phases}
    data = sum(1 for a in phases.get("data-files", ()) if a.kind == "data")
    manifests = len(phases.get("manifests", ()))
    print(
        f"(a) plan_expire_snapshots: expires {len(plan.details.snapshots)} snapshots "
        f"({begin}..{end - 1}), plans {data} data files and {manifests} manifest-family "
        f"files for deletion; best of {rounds}: {best:.2f} s"
    )

    files = _plan_inputs(big.root, begin, end)
    started = time.perf_counter()
    blobs = [f.read_bytes() for f in files]
    read_s = time.perf_counter() - started
    decode_s = float("inf")
    records = 0
    for _ in range(rounds):
        started = time.perf_counter()
        records = 0
        for data_bytes in blobs:
            for _record in fastavro.reader(io.BytesIO(data_bytes)):
                records += 1
        decode_s = min(decode_s, time.perf_counter() - started)
    mb = sum(len(b) for b in blobs) / 1e6
    print(
        f"(b) baseline: fastavro decodes the {len(blobs)} files the plan must read "
        f"({records:,} records, {mb:.1f} MB) in {decode_s:.2f} s (best of {rounds}); "
        f"reading them took {read_s:.2f} s"
    )
    ratio = best / decode_s
    verdict = "meets" if ratio <= PLAN_GOAL else "MISSES"
    print(f"    ratio plan/decode {ratio:.2f}x   (goal <= {PLAN_GOAL:.0f}x: {verdict})")
    return plan


def _copy(src: Path, dst: Path) -> float:
    started = time.perf_counter()
    dst.parent.mkdir(parents=True, exist_ok=True)
    if shutil.which("cp"):
        subprocess.run(["cp", "-a", str(src), str(dst)], check=True)
    else:
        shutil.copytree(src, dst, symlinks=True)
    return time.perf_counter() - started


def whole_run(big: BigTable, workdir: Path, expire_ids: int) -> None:
    copy = workdir / "copy" / big.root.parent.name / big.root.name
    copy_s = _copy(big.root, copy)
    cmd = [
        _paimon(),
        "expire-snapshots",
        str(copy),
        "--retain-max",
        str(RETAIN_MAX),
        "--retain-min",
        str(RETAIN_MIN),
        "--max-deletes",
        str(expire_ids),
        "--older-than",
        "0 ms",
        "--quiet",
    ]
    gnu_time = Path("/usr/bin/time")
    use_time = gnu_time.exists()
    if use_time:
        cmd = [str(gnu_time), "-v", *cmd]
    started = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.perf_counter() - started
    if proc.returncode != 0:
        print(proc.stdout, proc.stderr, file=sys.stderr)
        raise SystemExit(f"expire-snapshots failed with exit code {proc.returncode}")
    rss_kb: int | None = None
    if use_time:
        found = re.search(r"Maximum resident set size \(kbytes\): (\d+)", proc.stderr)
        rss_kb = int(found.group(1)) if found else None
    if rss_kb is None:  # Linux reports kilobytes; the largest child so far (cp is far smaller)
        rss_kb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    left = sorted(
        int(p.name.split("-", 1)[1])
        for p in (copy / "snapshot").iterdir()
        if p.name.startswith("snapshot-")
    )
    print(
        f"(c) paimon expire-snapshots on a copy (copied in {copy_s:.1f} s): "
        f"wall {wall:.2f} s, peak RSS {rss_kb / 1024:.0f} MiB; "
        f"snapshots left {left[0]}..{left[-1]} ({len(left)})"
    )
    started = time.perf_counter()
    check = subprocess.run(
        [_paimon(), "inspect", str(copy), "--check"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    lines = check.stdout.strip().splitlines()
    status = "clean" if check.returncode == 0 else f"NOT CLEAN (exit {check.returncode})"
    print(
        f"    paimon inspect --check: {status} ({time.perf_counter() - started:.1f} s): "
        f"{lines[-1] if lines else ''}"
    )
    if check.returncode != 0:
        print(check.stdout, file=sys.stderr)
        raise SystemExit(1)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scale", type=float, default=1.0, help="shrink the table (e.g. 0.05)")
    parser.add_argument("--rounds", type=int, default=2, help="planning/decoding rounds")
    parser.add_argument("--workdir", type=Path, help="where to generate (default: tmpfs if any)")
    parser.add_argument("--keep", action="store_true", help="keep the generated tables")
    args = parser.parse_args()
    expire_ids = max(RETAIN_MAX + 2, round(2000 * args.scale))
    with scratch_dir(args.workdir, keep=args.keep) as workdir:
        big = make_big_table(
            workdir / "wh",
            snapshots=expire_ids + 1,
            files_per_snapshot=25,
            partitions=20,
            overwrite_every=10,
        )
        print(
            f"table: {big.snapshots} snapshots, {big.data_files:,} data files in "
            f"{big.partitions} partitions, {big.manifest_entries:,} manifest entries "
            f"({big.delete_entries:,} DELETE); generated in {big.seconds:.1f} s"
        )
        planning(big, expire_ids, args.rounds)
        whole_run(big, workdir, expire_ids)
    return 0


if __name__ == "__main__":
    sys.exit(main())
