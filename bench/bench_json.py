#!/usr/bin/env python3
"""What ``--json`` adds to a plan of 100,000 paths (issue 36: <= 0.5 s).

Usage: python bench/bench_json.py [--paths N] [--rounds R]

A dry-run orphan plan of ``--paths`` delete actions (paths, sizes and reasons shaped as
orphan cleaning writes them), written by ``Output.json`` (``paimon_cli.json_stream``) to
/dev/null, against the standard library's indenting encoder on the same document (what
``Output.json`` used before), interleaved, best of ``--rounds``. Both outputs must be
byte for byte the same. Prints CPU seconds per 100,000 paths (one thread: on a machine
shared with others the CPU time is the steady figure) and the ratio, and the load.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from core.runtime.plans import FileAction, LazyRows  # noqa: E402
from paimon_cli.output import Mode, Output, _json_default  # noqa: E402


def _document(paths: int) -> dict[str, Any]:
    actions = tuple(
        FileAction(
            "delete",
            f"/warehouse/db.db/t/p={i % 20}/bucket-{i % 4}/"
            f"data-{i:08x}-5c1e6a2b-8d6f-4f1e-9a3b-0c2d4e6f8a1b-0.parquet",
            "data",
            1000 + i,
            "orphan: older than 2026-12-05 10:00:00+00:00, no root references it",
        )
        for i in range(paths)
    )
    phase = {"name": "data", "sequential": False, "files": paths, "bytes": 0}
    return {
        "dry_run": True,
        "plan": {"phases": [{**phase, "actions": LazyRows(actions, FileAction.to_json)}]},
    }


def _stdlib(doc: dict[str, Any]) -> None:
    encoder = json.JSONEncoder(indent=2, default=_json_default)
    write = sys.stdout.write
    for chunk in encoder.iterencode(doc):
        write(chunk)
    write("\n")


def _ours(doc: dict[str, Any]) -> None:
    Output(Mode.JSON).json(doc)


def _timed(fn: Callable[[dict[str, Any]], None], doc: dict[str, Any]) -> float:
    real = sys.stdout
    with open(os.devnull, "w") as sink:
        sys.stdout = sink
        try:
            start = time.process_time()  # CPU: on a shared machine wall time is the neighbours'
            fn(doc)
            return time.process_time() - start
        finally:
            sys.stdout = real


def _text(fn: Callable[[dict[str, Any]], None], doc: dict[str, Any]) -> str:
    real, sys.stdout = sys.stdout, io.StringIO()
    try:
        fn(doc)
        return sys.stdout.getvalue()
    finally:
        sys.stdout = real


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--paths", type=int, default=100_000)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    doc = _document(args.paths)
    same = _text(_ours, doc) == _text(_stdlib, doc)
    load = os.getloadavg()[0]
    best = {"stdlib": float("inf"), "ours": float("inf")}
    for r in range(args.rounds):
        order = [("stdlib", _stdlib), ("ours", _ours)]
        for name, fn in order if r % 2 == 0 else order[::-1]:
            best[name] = min(best[name], _timed(fn, doc))
    per = 100_000 / args.paths
    size = len(_text(_ours, doc)) / args.paths
    print(
        f"load {load:.1f} -> {os.getloadavg()[0]:.1f}; {args.paths} paths, {size:.0f} bytes a path"
    )
    print(f"stdlib indenting encoder: {best['stdlib'] * per:.2f} s per 100k paths")
    print(f"paimon_cli.json_stream:   {best['ours'] * per:.2f} s per 100k paths")
    print(f"ratio ours / stdlib {best['ours'] / best['stdlib']:.2f}; identical output: {same}")
    goal = best["ours"] * per <= 0.5
    print(f"goal <= 0.5 s per 100k paths: {'meets' if goal else 'MISSES'}")


if __name__ == "__main__":
    main()
