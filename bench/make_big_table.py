#!/usr/bin/env python3
"""Generate a big, synthetic but valid Paimon table for benchmarks, in seconds.

Usage: python bench/make_big_table.py --out DIR [--snapshots N] [--files-per-snapshot K]
       [--partitions P] [--overwrite-every M] [--force] [--no-verify]

The table is ``DIR/bench.db/big`` (columns ``id BIGINT, p INT, v STRING``, partitioned
by ``p``, an unaware-bucket append table). pypaimon writes snapshot 1 (one row per
partition, so one data file per partition); snapshots 2..N are written here, the way
pypaimon 2.1 commits without merging manifests:

* data files: byte copies of pypaimon's one-row parquet file of the same partition, so
  every path exists with its recorded size and pypaimon can read every row;
* one manifest per snapshot (DELETE entries first, then ADD, as pypaimon orders them);
* delta manifest list = that manifest; base manifest list = base + delta manifests of the
  previous snapshot, i.e. every earlier manifest in commit order;
* snapshot JSON copied from pypaimon's snapshot 1 with id, lists and their sizes, counts,
  ``commitKind``, ``uuid`` and ``timeMillis`` replaced. Times increase by 1 s and end 1 s
  before generation (snapshot 1's time is rewritten to fit), so age-based expiry applies.

Snapshot ``i`` (``i >= 2``) is an OVERWRITE of partition ``(i // M) % P`` when ``M > 0``
and ``i % M == 0`` (DELETE entries for every live file of that partition, then K new
files there); otherwise an APPEND of K files spread round-robin over the partitions.

Avro files use the writer schemas, codec and record layout read back from pypaimon's own
manifests. Base manifest lists re-list a growing prefix of records: their complete Avro
blocks (cut where fastavro cuts them, at 16000 bytes) are compressed once and reused,
which is what keeps thousands of snapshots cheap.

Prints the table root as the only stdout line; a summary goes to stderr. Unless
``--no-verify``, pypaimon then plans a scan of the latest snapshot and must find exactly
the live files the generator tracked.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import shutil
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import fastavro
from fastavro.write import Writer

DATABASE = "bench"
TABLE = "big"
SYNC_INTERVAL = 16000  # fastavro's default block size; pypaimon's writers keep it
TIME_STEP_MS = 1000

Record = dict[str, Any]


@dataclass(frozen=True)
class BigTable:
    """What was generated (the tracked model, independent of any reader)."""

    root: Path
    snapshots: int
    partitions: int
    data_files: int  # data files written over all snapshots
    manifest_entries: int  # ADD + DELETE entries over all manifests
    delete_entries: int
    live_files: frozenset[str]  # data file names live in the latest snapshot
    total_records: int
    seconds: float


@dataclass(frozen=True)
class _LiveFile:
    partition: int
    size: int
    rows: int
    created: datetime


class _Block:
    """The two attributes fastavro's ``Writer.write_block`` reads."""

    def __init__(self, count: int, data: bytes) -> None:
        self.num_records = count
        self.bytes_ = io.BytesIO(data)


class AvroFiles:
    """Avro container files of one schema and codec, assembled from encoded records."""

    def __init__(self, schema: Record, codec: str) -> None:
        self.schema = fastavro.parse_schema(schema)
        self.codec = codec
        self.sync = os.urandom(16)
        self.header = self.container(b"", [])

    def encode(self, record: Record) -> bytes:
        buf = io.BytesIO()
        fastavro.schemaless_writer(buf, self.schema, record)
        return buf.getvalue()

    def container(self, blocks: bytes, tail: Sequence[bytes]) -> bytes:
        """Header + already encoded ``blocks`` + one block holding the ``tail`` records."""
        buf = io.BytesIO()
        writer = Writer(buf, self.schema, codec=self.codec, sync_marker=self.sync)
        buf.write(blocks)
        if tail:
            writer.write_block(_Block(len(tail), b"".join(tail)))
        writer.flush()
        return buf.getvalue()

    def block(self, records: Sequence[bytes]) -> bytes:
        return self.container(b"", records)[len(self.header) :]


class PrefixLists:
    """Manifest lists that hold a growing prefix of one record sequence (base lists)."""

    def __init__(self, files: AvroFiles) -> None:
        self.files = files
        self.blocks: list[bytes] = []  # complete, compressed blocks
        self.open: list[bytes] = []  # encoded records of the block being filled
        self.open_size = 0

    def append(self, record: bytes) -> None:
        self.open.append(record)
        self.open_size += len(record)
        if self.open_size >= SYNC_INTERVAL:  # fastavro closes the block after this record
            self.blocks.append(self.files.block(self.open))
            self.open, self.open_size = [], 0

    def file_bytes(self) -> bytes:
        return self.files.container(b"".join(self.blocks), self.open)


def _read_avro(path: Path) -> tuple[Record, str, list[Record]]:
    with path.open("rb") as fh:
        reader = fastavro.reader(fh)
        schema = json.loads(reader.metadata["avro.schema"])
        codec = reader.metadata.get("avro.codec", "null")
        return schema, codec, [r for r in reader if isinstance(r, dict)]


def _write_bytes(path: Path, data: bytes) -> None:
    with path.open("wb") as fh:
        fh.write(data)


def _write_all(jobs: list[tuple[Path, bytes]]) -> None:
    for path, data in jobs:
        _write_bytes(path, data)


class _Writes:
    """Batched file writes over a few threads (creating ~100k small files is the generator's
    main cost on a real disk; open/write release the GIL)."""

    def __init__(self, threads: int = 4, batch: int = 4096) -> None:
        self.threads = threads
        self.pool = ThreadPoolExecutor(threads, thread_name_prefix="bench-write")
        self.batch = batch
        self.jobs: list[tuple[Path, bytes]] = []

    def add(self, path: Path, data: bytes) -> None:
        self.jobs.append((path, data))
        if len(self.jobs) >= self.batch:
            self.flush()

    def flush(self) -> None:
        jobs, self.jobs = self.jobs, []
        slices = [jobs[i :: self.threads] for i in range(self.threads)]
        for _ in self.pool.map(_write_all, slices):
            pass


def _seed(warehouse: Path, partitions: int) -> Path:
    """Snapshot 1, written by pypaimon: one row in each partition 0..P-1."""
    import pyarrow as pa
    from pypaimon import CatalogFactory, Schema

    schema = pa.schema([("id", pa.int64()), ("p", pa.int32()), ("v", pa.string())])
    catalog = CatalogFactory.create({"warehouse": str(warehouse)})
    catalog.create_database(DATABASE, True)
    identifier = f"{DATABASE}.{TABLE}"
    catalog.create_table(
        identifier, Schema.from_pyarrow_schema(schema, partition_keys=["p"]), False
    )
    table = catalog.get_table(identifier)
    rows = [{"id": p, "p": p, "v": f"seed-{p}"} for p in range(partitions)]
    builder = table.new_batch_write_builder()
    write, commit = builder.new_write(), builder.new_commit()
    try:
        write.write_arrow(pa.Table.from_pylist(rows, schema=schema))
        commit.commit(write.prepare_commit())
    finally:
        write.close()
        commit.close()
    return warehouse / f"{DATABASE}.db" / TABLE


def make_big_table(
    out: Path,
    *,
    snapshots: int,
    files_per_snapshot: int,
    partitions: int,
    overwrite_every: int,
    force: bool = False,
) -> BigTable:
    """Write the table under warehouse ``out`` and return the generator's model of it."""
    if snapshots < 1 or files_per_snapshot < 1 or partitions < 1 or overwrite_every < 0:
        raise ValueError("snapshots, files-per-snapshot, partitions >= 1; overwrite-every >= 0")
    started = time.perf_counter()
    out = Path(out).resolve()
    target = out / f"{DATABASE}.db" / TABLE
    if target.exists():
        if not force:
            raise FileExistsError(f"{target} exists (use --force to replace it)")
        shutil.rmtree(target)
    out.mkdir(parents=True, exist_ok=True)
    root = _seed(out, partitions)
    manifest_dir, snapshot_dir = root / "manifest", root / "snapshot"

    # -- what pypaimon wrote: schemas, codec, templates --------------------------------------
    snap1: Record = json.loads((snapshot_dir / "snapshot-1").read_text())
    list_schema, list_codec, seed_metas = _read_avro(manifest_dir / snap1["deltaManifestList"])
    if len(seed_metas) != 1:
        raise RuntimeError(f"expected one manifest in pypaimon's delta, got {len(seed_metas)}")
    entry_schema, entry_codec, seed_entries = _read_avro(manifest_dir / seed_metas[0]["_FILE_NAME"])
    templates: dict[int, Record] = {}  # partition -> ADD entry pypaimon wrote
    data: dict[int, bytes] = {}  # partition -> bytes of a one-row parquet file
    bucket_dirs: dict[int, Path] = {}
    for entry in seed_entries:
        name = entry["_FILE"]["_FILE_NAME"]
        found = list(root.glob(f"p=*/bucket-{entry['_BUCKET']}/{name}"))
        if len(found) != 1:
            raise RuntimeError(f"cannot locate data file {name}")
        part = int(found[0].parent.parent.name.split("=", 1)[1])
        templates[part], data[part], bucket_dirs[part] = (
            entry,
            found[0].read_bytes(),
            found[0].parent,
        )
    if sorted(templates) != list(range(partitions)):
        raise RuntimeError(f"pypaimon wrote partitions {sorted(templates)}")

    entries = AvroFiles(entry_schema, entry_codec)
    lists = AvroFiles(list_schema, list_codec)
    prefix = PrefixLists(lists)
    prefix.append(lists.encode(seed_metas[0]))
    meta_template = seed_metas[0]

    live: dict[int, dict[str, _LiveFile]] = {p: {} for p in range(partitions)}
    for part, entry in templates.items():
        f = entry["_FILE"]
        live[part][f["_FILE_NAME"]] = _LiveFile(
            part, f["_FILE_SIZE"], f["_ROW_COUNT"], f["_CREATION_TIME"]
        )

    now_ms = int(time.time() * 1000)
    first_ms = now_ms - snapshots * TIME_STEP_MS
    snap1["timeMillis"] = first_ms
    _write_bytes(snapshot_dir / "snapshot-1", json.dumps(snap1, indent=2).encode())
    total_records = int(snap1["totalRecordCount"])
    commit_user = str(uuid.uuid4())
    data_files, entry_count, delete_count = partitions, len(seed_entries), 0

    def entry_record(kind: int, name: str, f: _LiveFile) -> Record:
        template = templates[f.partition]
        file_meta = {
            **template["_FILE"],
            "_FILE_NAME": name,
            "_FILE_SIZE": f.size,
            "_ROW_COUNT": f.rows,
            "_CREATION_TIME": f.created,
        }
        return {**template, "_KIND": kind, "_FILE": file_meta}

    writes = _Writes()
    try:
        for sid in range(2, snapshots + 1):
            time_ms = first_ms + (sid - 1) * TIME_STEP_MS
            created = datetime.fromtimestamp(time_ms / 1000, tz=timezone.utc)
            overwrite = overwrite_every > 0 and sid % overwrite_every == 0
            records: list[Record] = []
            if overwrite:
                target_part = (sid // overwrite_every) % partitions
                records += [entry_record(1, n, f) for n, f in live[target_part].items()]
                live[target_part] = {}
                targets = [target_part] * files_per_snapshot
            else:
                start = (sid * files_per_snapshot) % partitions
                targets = [(start + j) % partitions for j in range(files_per_snapshot)]
            writer_ids = {p: uuid.uuid4() for p in dict.fromkeys(targets)}
            counters = dict.fromkeys(writer_ids, 0)
            for part in targets:
                name = f"data-{writer_ids[part]}-{counters[part]}.parquet"
                counters[part] += 1
                writes.add(bucket_dirs[part] / name, data[part])
                f = _LiveFile(
                    part, len(data[part]), templates[part]["_FILE"]["_ROW_COUNT"], created
                )
                live[part][name] = f
                records.append(entry_record(0, name, f))
            deletes = len(records) - len(targets)
            delta_rows = sum(r["_FILE"]["_ROW_COUNT"] * (-1 if r["_KIND"] else 1) for r in records)
            data_files += len(targets)
            entry_count += len(records)
            delete_count += deletes

            buf = io.BytesIO()
            fastavro.writer(buf, entries.schema, records, codec=entries.codec)
            manifest_bytes = buf.getvalue()
            manifest_name = f"manifest-{uuid.uuid4()}-0"
            writes.add(manifest_dir / manifest_name, manifest_bytes)
            touched = set(targets)  # an overwrite deletes only in its target partition
            meta = {
                **meta_template,
                "_FILE_NAME": manifest_name,
                "_FILE_SIZE": len(manifest_bytes),
                "_NUM_ADDED_FILES": len(targets),
                "_NUM_DELETED_FILES": deletes,
                "_PARTITION_STATS": {
                    **meta_template["_PARTITION_STATS"],
                    "_MIN_VALUES": templates[min(touched)]["_PARTITION"],
                    "_MAX_VALUES": templates[max(touched)]["_PARTITION"],
                },
            }
            list_uuid = uuid.uuid4()
            base_name, delta_name = f"manifest-list-{list_uuid}-0", f"manifest-list-{list_uuid}-1"
            base_bytes = prefix.file_bytes()
            meta_bytes = lists.encode(meta)
            delta_bytes = lists.container(b"", [meta_bytes])
            prefix.append(meta_bytes)
            writes.add(manifest_dir / base_name, base_bytes)
            writes.add(manifest_dir / delta_name, delta_bytes)

            total_records += delta_rows
            snap = {
                **snap1,
                "id": sid,
                "baseManifestList": base_name,
                "deltaManifestList": delta_name,
                "totalRecordCount": total_records,
                "deltaRecordCount": delta_rows,
                "commitUser": commit_user,
                "commitKind": "OVERWRITE" if overwrite else "APPEND",
                "timeMillis": time_ms,
                "baseManifestListSize": len(base_bytes),
                "deltaManifestListSize": len(delta_bytes),
                "uuid": str(uuid.uuid4()),
            }
            writes.add(snapshot_dir / f"snapshot-{sid}", json.dumps(snap, indent=2).encode())
        writes.flush()
    finally:
        writes.pool.shutdown()
    _write_bytes(snapshot_dir / "LATEST", str(snapshots).encode())

    return BigTable(
        root=root,
        snapshots=snapshots,
        partitions=partitions,
        data_files=data_files,
        manifest_entries=entry_count,
        delete_entries=delete_count,
        live_files=frozenset(n for files in live.values() for n in files),
        total_records=total_records,
        seconds=time.perf_counter() - started,
    )


@contextlib.contextmanager
def scratch_dir(workdir: Path | None = None, *, keep: bool = False) -> Iterator[Path]:
    """A fresh directory for benchmark tables: under ``workdir`` if given, else in tmpfs
    (``/dev/shm``) when available so disk noise stays out of the figures. Removed afterwards
    unless ``keep``."""
    parent = workdir
    if parent is None and os.access("/dev/shm", os.W_OK):
        parent = Path("/dev/shm")
    if parent is not None:
        parent.mkdir(parents=True, exist_ok=True)
    path = Path(tempfile.mkdtemp(prefix="paimon-bench-", dir=parent))
    try:
        yield path
    finally:
        if keep:
            print(f"kept {path}", file=sys.stderr)
        else:
            shutil.rmtree(path, ignore_errors=True)


def pypaimon_live_files(root: Path) -> set[str]:
    """Data file names in pypaimon's scan plan of the latest snapshot."""
    from pypaimon.table.file_store_table import FileStoreTable

    table = FileStoreTable.from_path(str(root))
    splits = table.new_read_builder().new_scan().plan().splits()
    return {f.file_name for s in splits for f in s.files}


def verify(big: BigTable) -> None:
    """pypaimon must plan exactly the live files the generator tracked."""
    found = pypaimon_live_files(big.root)
    if found != big.live_files:
        raise AssertionError(
            f"pypaimon scan found {len(found)} files, expected {len(big.live_files)} "
            f"({len(found - big.live_files)} unexpected, {len(big.live_files - found)} missing)"
        )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, required=True, help="warehouse directory")
    parser.add_argument("--snapshots", type=int, default=100, help="snapshots in total (N)")
    parser.add_argument("--files-per-snapshot", type=int, default=10, help="new files (K)")
    parser.add_argument("--partitions", type=int, default=4, help="partitions p=0..P-1")
    parser.add_argument(
        "--overwrite-every", type=int, default=10, help="every M-th snapshot overwrites (0: never)"
    )
    parser.add_argument("--force", action="store_true", help="replace an existing table")
    parser.add_argument("--no-verify", action="store_true", help="skip the pypaimon scan check")
    args = parser.parse_args(argv)
    big = make_big_table(
        args.out,
        snapshots=args.snapshots,
        files_per_snapshot=args.files_per_snapshot,
        partitions=args.partitions,
        overwrite_every=args.overwrite_every,
        force=args.force,
    )
    print(
        f"generated {big.snapshots} snapshots, {big.data_files} data files, "
        f"{big.manifest_entries} manifest entries ({big.delete_entries} DELETE), "
        f"{len(big.live_files)} live files in {big.seconds:.1f}s",
        file=sys.stderr,
    )
    if not args.no_verify:
        started = time.perf_counter()
        verify(big)
        print(
            f"verified: pypaimon plans the {len(big.live_files)} live files "
            f"({time.perf_counter() - started:.1f}s)",
            file=sys.stderr,
        )
    print(big.root)
    return 0


if __name__ == "__main__":
    sys.exit(main())
