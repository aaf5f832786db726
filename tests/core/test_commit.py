"""The commit path: Java's Avro layout, Jackson-style JSON, atomic publish, lost races."""

from __future__ import annotations

import glob
import io
from pathlib import Path
from typing import Any

import fastavro
import pytest
from support import pypaimon_writer as pw
from support.fixtures import JAVA_FIXTURES
from support.invariants import assert_no_dangling_references

from core.errors import SafetyRefusalError, StorageError, WriteOutcomeUnknownError
from core.io.fileio import FileIO
from core.ops.expiry.expire_partitions import drop_partitions_builder, live_raw_entries
from core.table.table import open_table
from core.write.commit import (
    Changes,
    CommitConflictError,
    CommitOutcomeUnknownError,
    Publication,
    PublishState,
    RetryPolicy,
    check_publishable,
    commit,
    java_json,
)
from core.write.manifest_writer import (
    INDEX_MANIFEST_ENTRY_SCHEMA,
    MANIFEST_ENTRY_SCHEMA,
    MANIFEST_FILE_META_SCHEMA,
    conform_entry,
    encode_avro,
)

# Field layouts of Paimon's ManifestEntry, DataFileMeta and ManifestFileMeta row types (Java
# master; _VERSION from its versioned serializer), as (name, Avro type) pairs.
JAVA_ENTRY_TOP = [
    ("_VERSION", "int"),
    ("_KIND", "int"),
    ("_PARTITION", "bytes"),
    ("_BUCKET", "int"),
    ("_TOTAL_BUCKETS", "int"),
]
JAVA_FILE_FIELDS = [
    "_FILE_NAME", "_FILE_SIZE", "_ROW_COUNT", "_MIN_KEY", "_MAX_KEY", "_KEY_STATS",
    "_VALUE_STATS", "_MIN_SEQUENCE_NUMBER", "_MAX_SEQUENCE_NUMBER", "_SCHEMA_ID", "_LEVEL",
    "_EXTRA_FILES", "_CREATION_TIME", "_DELETE_ROW_COUNT", "_EMBEDDED_FILE_INDEX",
    "_FILE_SOURCE", "_VALUE_STATS_COLS", "_EXTERNAL_PATH", "_FIRST_ROW_ID", "_WRITE_COLS",
    "_WRITE_COLS_SEQUENCES",
]  # fmt: skip
JAVA_LIST_FIELDS = [
    "_VERSION", "_FILE_NAME", "_FILE_SIZE", "_NUM_ADDED_FILES", "_NUM_DELETED_FILES",
    "_PARTITION_STATS", "_SCHEMA_ID", "_MIN_BUCKET", "_MAX_BUCKET", "_MIN_LEVEL", "_MAX_LEVEL",
    "_MIN_ROW_ID", "_MAX_ROW_ID",
]  # fmt: skip
NON_NULL = {
    "_FILE_NAME", "_FILE_SIZE", "_ROW_COUNT", "_MIN_KEY", "_MAX_KEY", "_KEY_STATS",
    "_VALUE_STATS", "_MIN_SEQUENCE_NUMBER", "_MAX_SEQUENCE_NUMBER", "_SCHEMA_ID", "_LEVEL",
    "_EXTRA_FILES", "_VERSION", "_NUM_ADDED_FILES", "_NUM_DELETED_FILES", "_PARTITION_STATS",
}  # fmt: skip


def _strip_names(t: Any) -> Any:
    """An Avro type without record names (Java readers resolve by field name)."""
    if isinstance(t, list):
        return [_strip_names(x) for x in t]
    if isinstance(t, dict):
        if t.get("type") == "record":
            return [(f["name"], _strip_names(f["type"])) for f in t["fields"]]
        return {k: _strip_names(v) for k, v in t.items() if k not in ("name", "namespace")}
    return t


def _assert_prefix(mine: Any, java: Any, where: str) -> None:
    """Same fields, types and order; ``mine`` may append fields to a record."""
    is_record = isinstance(java, list) and all(isinstance(x, tuple) for x in java)
    if not is_record or not java:
        assert mine == java, where
        return
    assert len(mine) >= len(java), where
    for (name, t), (java_name, java_t) in zip(mine, java, strict=False):
        assert name == java_name, where
        _assert_prefix(t, java_t, f"{where}:{name}")


def _schema_of(data: bytes) -> dict[str, Any]:
    schema: dict[str, Any] = fastavro.reader(io.BytesIO(data)).writer_schema
    return schema


def test_manifest_layout_is_javas_field_by_field() -> None:
    fields = MANIFEST_ENTRY_SCHEMA["fields"]
    # Java master rejects anything but exactly these six non-union top-level fields.
    assert [(f["name"], f["type"]) for f in fields[:5]] == JAVA_ENTRY_TOP
    assert [f["name"] for f in fields] == [n for n, _ in JAVA_ENTRY_TOP] + ["_FILE"]
    file_fields = fields[5]["type"]["fields"]
    assert [f["name"] for f in file_fields] == JAVA_FILE_FIELDS
    for f in file_fields:
        nullable = isinstance(f["type"], list)
        assert nullable == (f["name"] not in NON_NULL), f["name"]
        if nullable:
            assert f["type"][0] == "null" and f["default"] is None
    assert [f["name"] for f in MANIFEST_FILE_META_SCHEMA["fields"]] == JAVA_LIST_FIELDS
    assert MANIFEST_ENTRY_SCHEMA["name"] == "record"
    assert MANIFEST_ENTRY_SCHEMA["namespace"] == "org.apache.paimon.avro.generated"
    assert fields[5]["type"]["name"] == "record__FILE"
    assert [f["name"] for f in INDEX_MANIFEST_ENTRY_SCHEMA["fields"]][:8] == [
        "_VERSION", "_KIND", "_PARTITION", "_BUCKET", "_INDEX_TYPE", "_FILE_NAME", "_FILE_SIZE",
        "_ROW_COUNT",
    ]  # fmt: skip


def _java_avro_files(kind: str) -> list[str]:
    out = []
    for path in sorted(glob.glob(str(JAVA_FIXTURES / "*/*/*/manifest/*"))):
        name = Path(path).name
        if not name.startswith(kind) or (kind == "manifest-" and "list" in name):
            continue
        with open(path, "rb") as fh:
            if fh.read(4) == b"Obj\x01":
                out.append(path)
    return out


@pytest.mark.parametrize(
    ("kind", "ours"),
    [("manifest-list-", MANIFEST_FILE_META_SCHEMA), ("manifest-", MANIFEST_ENTRY_SCHEMA)],
)
def test_same_schema_as_java_written_files(kind: str, ours: dict[str, Any]) -> None:
    files = _java_avro_files(kind)
    assert files, f"no Java-written Avro {kind} files under {JAVA_FIXTURES}"
    mine = _strip_names(fastavro.parse_schema(ours))
    for path in files[:5]:
        java = _strip_names(_schema_of(Path(path).read_bytes()))
        # Java 1.x files are our layout minus fields added since (nullable, at the end).
        _assert_prefix(mine, java, path)


def test_copied_java_rows_round_trip_unchanged(tmp_path: Path) -> None:
    files = _java_avro_files("manifest-")
    assert files, f"no Java-written Avro manifests under {JAVA_FIXTURES}"
    for path in files[:5]:
        rows = list(fastavro.reader(io.BytesIO(Path(path).read_bytes())))
        data = encode_avro(MANIFEST_ENTRY_SCHEMA, [conform_entry(r) for r in rows], "zstandard")
        again = list(fastavro.reader(io.BytesIO(data)))
        for before, after in zip(rows, again, strict=True):
            assert {k: v for k, v in after["_FILE"].items() if k in before["_FILE"]} == before[
                "_FILE"
            ]
            assert {k: after[k] for k in before if k != "_FILE"} == {
                k: v for k, v in before.items() if k != "_FILE"
            }


def test_conform_keeps_shaped_rows_and_reshapes_the_rest() -> None:
    """A row already in the writer's layout is returned as it is (compactions carry 10,000s
    over as DELETE entries); anything else is reshaped into a new row, the input untouched."""
    empty = {"_MIN_VALUES": b"", "_MAX_VALUES": b"", "_NULL_COUNTS": [0]}
    file: dict[str, Any] = dict.fromkeys(JAVA_FILE_FIELDS)
    file.update(
        _FILE_NAME="data-x-0.parquet",
        _FILE_SIZE=10,
        _ROW_COUNT=1,
        _MIN_KEY=b"",
        _MAX_KEY=b"",
        _KEY_STATS=empty,
        _VALUE_STATS=dict(empty),
        _MIN_SEQUENCE_NUMBER=0,
        _MAX_SEQUENCE_NUMBER=0,
        _SCHEMA_ID=0,
        _LEVEL=0,
        _EXTRA_FILES=[],
    )
    row = {"_VERSION": 2, "_KIND": 1, "_PARTITION": b"p", "_BUCKET": 0, "_TOTAL_BUCKETS": -1}
    row["_FILE"] = file
    assert conform_entry(row) is row

    old = {k: v for k, v in file.items() if k not in ("_FIRST_ROW_ID", "_EXTRA_FILES")}
    old["_UNKNOWN"] = 1
    old["_MIN_KEY"] = bytearray(b"k")
    old["_VALUE_STATS"] = {**empty, "_NULL_COUNTS": (0,)}
    before = repr(old)
    shaped = conform_entry({**row, "_FILE": old, "_PARTITION": memoryview(b"p")})
    assert repr(old) == before  # the input is not modified
    f = shaped["_FILE"]
    assert f.keys() == set(JAVA_FILE_FIELDS)
    assert f["_FIRST_ROW_ID"] is None and f["_EXTRA_FILES"] == []
    assert type(f["_MIN_KEY"]) is bytes and type(shaped["_PARTITION"]) is bytes
    assert f["_VALUE_STATS"]["_NULL_COUNTS"] == [0]
    assert f["_KEY_STATS"] is empty  # shaped already: shared, not copied


def test_jackson_pretty_printing() -> None:
    text = java_json({"a": 1, "b": [1, 2], "c": {}, "d": {"x": "ü"}, "e": [], "f": None})
    assert text == (
        '{\n  "a" : 1,\n  "b" : [ 1, 2 ],\n  "c" : { },\n  "d" : {\n    "x" : "ü"\n  },\n'
        '  "e" : [ ],\n  "f" : null\n}'
    )


def _names(root: Path) -> list[str]:
    """The sorted names of everything below ``root``."""
    return sorted(p.name for p in root.rglob("*"))


def _drop_first_day(root: Path) -> Any:
    table = open_table(str(root))
    latest = table.snapshots.latest()
    assert latest is not None
    parts = {
        bytes(r["_PARTITION"])
        for r in live_raw_entries(table, latest)
        if table.paths.partition_spec(bytes(r["_PARTITION"]))["dt"] == "2024-07-01"
    }
    return table, drop_partitions_builder(table, sorted(parts))


class RacingFileIO(FileIO):
    """Lets a pypaimon writer commit right before our first snapshot publish(es)."""

    def __init__(self, warehouse: Path, identifier: str, races: int) -> None:
        super().__init__()
        self.warehouse, self.identifier, self.races = warehouse, identifier, races

    def write_if_absent(self, path: str, data: bytes) -> bool:
        if "/snapshot/snapshot-" in path and self.races > 0:
            self.races -= 1
            table = pw.open_table(self.warehouse, self.identifier)
            pw.append(table, [{"id": 5000 + self.races, "dt": "2024-07-09", "hr": "00"}])
        return super().write_if_absent(path, data)


def test_lost_race_rebuilds_retries_and_cleans_up(dated) -> None:
    wh, s = dated
    fileio = RacingFileIO(wh, s.identifier, races=2)
    table = open_table(str(s.root), fileio=fileio)
    manifests_before = set((s.root / "manifest").iterdir())
    _, build = _drop_first_day(s.root)
    result = commit(table, build, sleep=lambda _s: None)
    assert result.snapshot is not None and result.attempts == 3
    assert result.snapshot.id == 6  # 3 by the builder, 2 by the racing writer, then ours
    ids = sorted(int(p.name.split("-")[1]) for p in (s.root / "snapshot").glob("snapshot-*"))
    assert ids == list(range(1, 7))
    rows = pw.read_rows(wh, s.identifier)
    assert {r["id"] for r in rows if r["dt"] == "2024-07-01"} == set()
    assert {5000, 5001} <= {r["id"] for r in rows}
    assert (s.root / "snapshot" / "LATEST").read_text() == "6"
    # Lost attempts removed their own manifests: every new manifest file is referenced.
    new = set((s.root / "manifest").iterdir()) - manifests_before
    referenced = {str(p) for p in new if _referenced(s.root, p.name)}
    assert {str(p) for p in new} == referenced
    assert_no_dangling_references(s.root)


def _referenced(root: Path, name: str) -> bool:
    table = open_table(str(root))
    for snap in table.snapshots.snapshots():
        lists = [snap.base_manifest_list, snap.delta_manifest_list]
        if snap.changelog_manifest_list:
            lists.append(snap.changelog_manifest_list)
        if snap.index_manifest == name or name in lists:
            return True
        if any(m.file_name == name for lst in lists for m in table.manifest_list(snap, lst)):
            return True
    return False


class AlwaysLosing(FileIO):
    def write_if_absent(self, path: str, data: bytes) -> bool:
        if "/snapshot/snapshot-" in path:
            return False
        return super().write_if_absent(path, data)


def test_gives_up_cleanly_after_the_retry_limit(dated) -> None:
    _, s = dated
    before = _names(s.root)
    table = open_table(str(s.root), fileio=AlwaysLosing())
    _, build = _drop_first_day(s.root)
    with pytest.raises(CommitConflictError, match="gave up after 3 attempts"):
        commit(table, build, policy=RetryPolicy(2, 1, 2), sleep=lambda _s: None)
    assert _names(s.root) == before


class FailingPublish(FileIO):
    """The snapshot create fails: ``landed`` stores it first (its answer is an error)."""

    def __init__(self, error: StorageError, *, landed: bool) -> None:
        super().__init__()
        self.error, self.landed = error, landed

    def write_if_absent(self, path: str, data: bytes) -> bool:
        if "/snapshot/snapshot-" in path:
            if self.landed:
                super().write_if_absent(path, data)
            raise self.error
        return super().write_if_absent(path, data)


def test_an_error_answer_for_a_stored_snapshot_is_our_commit(dated) -> None:
    _, s = dated
    table = open_table(str(s.root), fileio=FailingPublish(StorageError("500"), landed=True))
    _, build = _drop_first_day(s.root)
    publication = Publication(table.fileio)
    result = commit(table, build, publication=publication)
    assert result.snapshot is not None and result.snapshot.id == 4 and result.attempts == 1
    assert publication.state is PublishState.PUBLISHED
    assert_no_dangling_references(s.root)


def test_an_unknown_outcome_keeps_everything_the_snapshot_would_reference(dated) -> None:
    _, s = dated
    before = _names(s.root)
    unknown = WriteOutcomeUnknownError("connection dropped after the upload")
    table = open_table(str(s.root), fileio=FailingPublish(unknown, landed=False))
    _, build = _drop_first_day(s.root)
    publication = Publication(table.fileio, outputs=[str(s.root / "README.md")])
    with pytest.raises(CommitOutcomeUnknownError, match="may still land"):
        commit(table, build, publication=publication)
    assert publication.state is PublishState.PUBLISHING
    assert publication.discard_outputs() == [str(s.root / "README.md")]
    # The attempt's manifests stay: a PUT still in flight could land and need them.
    kept = set(_names(s.root)) - set(before)
    assert len(kept) == 3 and all(n.startswith("manifest") for n in kept)


def test_a_refused_publish_removes_the_attempts_manifests(dated) -> None:
    _, s = dated
    before = _names(s.root)
    table = open_table(str(s.root), fileio=FailingPublish(StorageError("403"), landed=False))
    _, build = _drop_first_day(s.root)
    with pytest.raises(StorageError, match="403"):
        commit(table, build)
    assert _names(s.root) == before


def test_write_if_absent_is_true_only_for_identical_bytes(tmp_path: Path) -> None:
    fio, path = FileIO(), str(tmp_path / "f")
    assert fio.write_if_absent(path, b"ours")
    assert fio.write_if_absent(path, b"ours")  # an earlier try of ours landed
    assert not fio.write_if_absent(path, b"theirs")
    assert not fio.write_if_absent(path, b"our")
    assert (tmp_path / "f").read_bytes() == b"ours"


class NoConditionalCreate(FileIO):
    def conditional_create_supported(self, path: str) -> bool:
        return False


def test_store_without_atomic_create_is_refused_unless_opted_in(dated, tmp_path: Path) -> None:
    _, s = dated
    before = _names(s.root)
    table = open_table(str(s.root), fileio=NoConditionalCreate())
    with pytest.raises(SafetyRefusalError, match="atomic"):
        check_publishable(table, allow_unsafe=False)
    _, build = _drop_first_day(s.root)
    with pytest.raises(SafetyRefusalError):
        commit(table, build)
    assert _names(s.root) == before
    result = commit(table, build, allow_unsafe=True)
    assert result.snapshot is not None


def test_orc_manifest_tables_are_refused(dated) -> None:
    _, s = dated
    table = open_table(str(s.root), dynamic_options={"manifest.format": "orc"})
    with pytest.raises(SafetyRefusalError, match="manifest.format=orc"):
        commit(table, lambda latest: Changes(()))


def test_nothing_to_drop_writes_nothing(dated) -> None:
    _, s = dated
    before = _names(s.root)
    table = open_table(str(s.root))
    result = commit(table, lambda latest: Changes(()))
    assert result.snapshot is None
    assert _names(s.root) == before
