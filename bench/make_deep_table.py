#!/usr/bin/env python3
"""A pypaimon-shaped deep table: N commits of ten rows each, written by pypaimon itself.

Usage: python bench/make_deep_table.py [--commits N] [--cache DIR] [--force]

pypaimon never merges manifests, so snapshot N's base manifest list names every earlier
delta manifest (~N of them): the shape issue 36 is about. The table is made once by a loop
of ``write_arrow`` + ``commit`` on an append table partitioned by ``p`` (4 partitions,
round-robin), every 50th commit an overwrite of one partition (so expiry has data files to
delete), and cached under ``--cache`` (default /tmp/paimon-deep-<N>); later calls return the
cached root. Benchmarks copy it before changing it. Prints the table root.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import time
from pathlib import Path

DATABASE, TABLE = "bench", "deep"
PARTITIONS = 4
OVERWRITE_EVERY = 50


def table_root(cache: Path) -> Path:
    return cache / f"{DATABASE}.db" / TABLE


def make_deep_table(commits: int, cache: Path, *, force: bool = False) -> Path:
    """The cached table root, written first if absent (or ``force``)."""
    root = table_root(cache)
    done = cache / "COMPLETE"
    if done.exists() and not force:
        return root
    if cache.exists():
        shutil.rmtree(cache)
    cache.mkdir(parents=True)
    import pyarrow as pa
    from pypaimon import CatalogFactory, Schema

    schema = pa.schema([("id", pa.int64()), ("p", pa.int32()), ("v", pa.string())])
    catalog = CatalogFactory.create({"warehouse": str(cache)})
    catalog.create_database(DATABASE, True)
    identifier = f"{DATABASE}.{TABLE}"
    catalog.create_table(
        identifier, Schema.from_pyarrow_schema(schema, partition_keys=["p"]), False
    )
    table = catalog.get_table(identifier)
    started = time.perf_counter()
    for i in range(commits):
        part = i % PARTITIONS
        rows = pa.Table.from_pylist(
            [{"id": i * 10 + k, "p": part, "v": f"row-{i}-{k}"} for k in range(10)], schema=schema
        )
        builder = table.new_batch_write_builder()
        if i and i % OVERWRITE_EVERY == 0:
            builder = builder.overwrite({"p": part})
        write, commit = builder.new_write(), builder.new_commit()
        try:
            write.write_arrow(rows)
            commit.commit(write.prepare_commit())
        finally:
            write.close()
            commit.close()
        if (i + 1) % 500 == 0:
            print(f"  {i + 1} commits, {time.perf_counter() - started:.0f} s", file=sys.stderr)
    done.write_text(f"{commits}\n")
    return root


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--commits", type=int, default=2000)
    ap.add_argument("--cache", type=Path, default=None)
    ap.add_argument("--force", action="store_true")
    args = ap.parse_args()
    cache = args.cache or Path(f"/tmp/paimon-deep-{args.commits}")
    print(make_deep_table(args.commits, cache, force=args.force))


if __name__ == "__main__":
    main()
