"""bench/synth: the synth:// table answers exactly like the same table written to disk.

The benchmarks at 10 and 100 million files run on ``synth://`` (nothing on disk); these
checks make their figures mean something: the hand-made Avro is fastavro's byte for byte,
and ``inspect --check``, the orphan plan, the expiry plan and the trees real runs leave
are the same on the synthetic table and on its materialised copy.
"""

from __future__ import annotations

import io
import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import fastavro
import pytest

from core.write.manifest_writer import MANIFEST_ENTRY_SCHEMA, MANIFEST_FILE_META_SCHEMA

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench" / "synth"))
import synth_table as st  # noqa: E402

SPEC = st.Spec(
    snapshots=12,
    partitions=2,
    buckets=2,
    base_files=6,
    files_per_commit=3,
    compact_every=4,
    compact_files=2,
    manifest_entries=5,
    orphans=10,
    manifest_orphans=4,
    tags=(5,),
    end_s=(st._default_end_s()),
)
SYNTH_ROOT = f"synth://{SPEC.root}"
# Every generated file is older than this instant (epoch ms), its snapshot hour aside.
CUTOFF = str((SPEC.end_s - 3600) * 1000)


@pytest.fixture
def synth() -> Iterator[list[str]]:
    """synth:// registered, a fresh filesystem (deletions of another test forgotten); the
    --fs-option arguments that select SPEC's table."""
    st.register()
    st.forget()
    args = [a for k, v in SPEC.options().items() for a in ("--fs-option", f"{k}={v}")]
    yield args
    st.forget()


@pytest.fixture
def real(tmp_path: Path) -> Path:
    return Path(st.materialize(SPEC, str(tmp_path / "t")))


def _encoded(schema: dict[str, Any], row: dict[str, Any]) -> bytes:
    buf = io.BytesIO()
    fastavro.schemaless_writer(buf, fastavro.parse_schema(schema), row)
    return buf.getvalue()


def test_hand_encoded_rows_are_fastavros() -> None:
    partition = st._partition(1)
    stats = {"_MIN_VALUES": st._EMPTY_ROW, "_MAX_VALUES": st._EMPTY_ROW, "_NULL_COUNTS": []}
    entry = {
        "_VERSION": 2,
        "_KIND": 1,
        "_PARTITION": partition,
        "_BUCKET": 3,
        "_TOTAL_BUCKETS": 4,
        "_FILE": {
            "_FILE_NAME": "data-x-0.parquet",
            "_FILE_SIZE": 123456,
            "_ROW_COUNT": st.ROWS_PER_FILE,
            "_MIN_KEY": st._EMPTY_ROW,
            "_MAX_KEY": st._EMPTY_ROW,
            "_KEY_STATS": stats,
            "_VALUE_STATS": stats,
            "_MIN_SEQUENCE_NUMBER": 7_000_000,
            "_MAX_SEQUENCE_NUMBER": 7_000_000 + st.ROWS_PER_FILE - 1,
            "_SCHEMA_ID": 0,
            "_LEVEL": 0,
            "_EXTRA_FILES": [],
            "_CREATION_TIME": 1_700_000_000_000,
            "_DELETE_ROW_COUNT": 0,
            "_EMBEDDED_FILE_INDEX": None,
            "_FILE_SOURCE": 1,
            "_VALUE_STATS_COLS": [],
            "_EXTERNAL_PATH": None,
            "_FIRST_ROW_ID": None,
            "_WRITE_COLS": None,
            "_WRITE_COLS_SEQUENCES": None,
        },
    }
    mine = st.encode_entry(1, 1, 3, 4, "data-x-0.parquet", 123456, 7_000_000, 1_700_000_000_000, 1)
    assert mine == _encoded(MANIFEST_ENTRY_SCHEMA, entry)
    meta = {
        "_VERSION": 2,
        "_FILE_NAME": "manifest-x-0",
        "_FILE_SIZE": 999,
        "_NUM_ADDED_FILES": 5,
        "_NUM_DELETED_FILES": 2,
        "_PARTITION_STATS": {
            "_MIN_VALUES": st._partition(0),
            "_MAX_VALUES": partition,
            "_NULL_COUNTS": [0],
        },
        "_SCHEMA_ID": 0,
        "_MIN_BUCKET": 0,
        "_MAX_BUCKET": 3,
        "_MIN_LEVEL": 0,
        "_MAX_LEVEL": 0,
        "_MIN_ROW_ID": None,
        "_MAX_ROW_ID": None,
    }
    assert st.encode_meta("manifest-x-0", 999, 5, 2, 0, 1, 0, 3) == _encoded(
        MANIFEST_FILE_META_SCHEMA, meta
    )


# What depends on the moment a command ran (its "now"), not on the table.
_MOMENTARY = frozenset(
    {"now_ms", "created_ms", "age_ms", "run_id", "seconds", "table", "older_than_ms"}
)


def _normalised(doc: Any, roots: tuple[str, ...]) -> Any:
    """Paths relative to the table; what depends on the moment of the run dropped."""
    if isinstance(doc, dict):
        return {k: _normalised(v, roots) for k, v in doc.items() if k not in _MOMENTARY}
    if isinstance(doc, list):
        return [_normalised(v, roots) for v in doc]
    if isinstance(doc, str):
        for root in roots:
            doc = doc.replace(root, "<table>")
        return doc
    return doc


def _both(run: Any, real: Path, synth: list[str], *args: str) -> tuple[Any, Any]:
    """The same command's --json document on the real table and on the synthetic one."""
    docs = []
    for table, extra in ((str(real), []), (SYNTH_ROOT, synth)):
        result = run(*args[:1], table, *args[1:], *extra, "--json")
        assert result.exit_code == 0, result.stderr
        docs.append(_normalised(json.loads(result.stdout), (str(real), SYNTH_ROOT)))
    return docs[0], docs[1]


def _tree(fs: Any, path: str, strip: str) -> dict[str, tuple[int, int]]:
    """relative path -> (size, mtime s) of every file below ``path`` (.paimon-cli aside)."""
    out: dict[str, tuple[int, int]] = {}
    for entry in fs.ls(path, detail=True):
        rel = entry["name"][len(strip) :].lstrip("/")
        if rel.startswith(".paimon-cli"):
            continue
        if entry["type"] == "directory":
            out.update(_tree(fs, entry["name"], strip))
        else:
            # a file written by the run (a hint) has the moment it was written
            mtime = int(entry["mtime"])
            out[rel] = (int(entry["size"]), mtime if mtime <= SPEC.end_s else -1)
    return out


def _trees(real: Path) -> tuple[dict[str, tuple[int, int]], dict[str, tuple[int, int]]]:
    import fsspec

    local = fsspec.filesystem("file")
    synthetic = fsspec.filesystem(st.PROTOCOL, **SPEC.options(), use_listings_cache=False)
    return _tree(local, str(real), str(real)), _tree(synthetic, SPEC.root, SPEC.root)


def test_materialised_tree_is_the_synthetic_one(real: Path, synth: list[str]) -> None:
    on_disk, generated = _trees(real)
    assert on_disk == generated
    snapshot_files = [p for p in generated if p.startswith("snapshot/snapshot-")]
    assert len(snapshot_files) == SPEC.snapshots
    data = [p for p in generated if p.startswith("p=")]
    table = st.SynthTable(SPEC)
    appended = sum(table.appended(i, g) for i in range(2, 13) for g in range(SPEC.groups))
    compactions = SPEC.snapshots // SPEC.compact_every
    assert len(data) == SPEC.groups * SPEC.base_files + appended + compactions + SPEC.orphans
    assert os.path.getmtime(real / "snapshot" / "snapshot-12") == SPEC.end_s


def test_inspect_check_and_plans_are_the_same(run: Any, real: Path, synth: list[str]) -> None:
    check_real, check_synth = _both(run, real, synth, "inspect", "--check")
    assert check_real == check_synth
    orphans_real, orphans_synth = _both(
        run, real, synth, "delete-orphan-files", "--dry-run", "--older-than", CUTOFF
    )
    assert orphans_real == orphans_synth
    found = orphans_real["plan"]["details"]["orphans"]
    assert len(found) == SPEC.orphans + SPEC.manifest_orphans
    expiry_real, expiry_synth = _both(
        run, real, synth, "expire-snapshots", "--dry-run", "--retain-max", "3", "--retain-min", "3"
    )
    assert expiry_real == expiry_synth
    phases = {p["name"]: p for p in expiry_real["plan"]["phases"]}
    assert phases["snapshot-files"]["files"] == SPEC.snapshots - 3 + 1  # + EARLIEST
    # Compactions 4 and 8 expire: 4's files go, 8's were live in tag t5 and stay.
    assert phases["data-files"]["files"] == SPEC.compact_files
    assert len(expiry_real["plan"]["details"]["kept_by_tag"]) == SPEC.compact_files


def test_real_runs_leave_the_same_trees(run: Any, real: Path, synth: list[str]) -> None:
    for args in (
        ("delete-orphan-files", "--older-than", CUTOFF),
        ("expire-snapshots", "--retain-max", "3", "--retain-min", "3"),
    ):
        done_real, done_synth = _both(run, real, synth, *args)
        assert done_real["report"]["status"] == "ok"
        assert done_real["plan"]["phases"] == done_synth["plan"]["phases"]
        on_disk, generated = _trees(real)
        assert on_disk == generated
    check_real, check_synth = _both(run, real, synth, "inspect", "--check")
    assert check_real == check_synth
    assert check_real["check"]["ok"] is True
