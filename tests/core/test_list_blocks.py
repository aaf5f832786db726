"""Manifest lists read block by block (``core.format.list_blocks``) give exactly what the
whole-file decode gives, reuse blocks and prefixes only when their bytes say so, and fail
on damaged lists as the whole-file decode does."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import fastavro
import pytest
from support.invariants import copy_scenario

from core.errors import CorruptMetadataError
from core.format.avro_blocks import split_container
from core.format.list_blocks import ListBlocks
from core.format.manifest import decode_manifest_list_names
from core.format.model import UNRECORDED, Expected
from core.table.table import open_table


def _whole(data: bytes) -> list[Any]:
    return decode_manifest_list_names(data, "list", expect=UNRECORDED)


def _blocks(reader: ListBlocks, data: bytes, expect: Expected = UNRECORDED) -> list[Any]:
    return [ref for block in reader.read(data, "list", expect) for ref in block.refs]


def test_every_list_of_a_pypaimon_table_reads_as_the_whole_decode(scenarios, tmp_path: Path):
    _s, _wh, root = copy_scenario(scenarios, "many_commits", tmp_path)
    table = open_table(str(root))
    for snap in table.snapshots.snapshots():
        for name in snap.manifest_lists:
            data = Path(table.paths.manifest_path(name)).read_bytes()
            whole = decode_manifest_list_names(data, name, expect=snap.list_expected(name))
            assert table.manifest_list_names(snap, name) == whole, (snap.id, name)


def _schema_and_row(scenarios: Any, tmp_path: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    _s, _wh, root = copy_scenario(scenarios, "many_commits", tmp_path)
    table = open_table(str(root))
    snap = table.snapshots.latest()
    assert snap is not None
    data = Path(table.paths.manifest_path(snap.delta_manifest_list)).read_bytes()
    reader = fastavro.reader(io.BytesIO(data))
    return reader.writer_schema, next(iter(reader))  # type: ignore[return-value]


def _write(schema: dict[str, Any], rows: list[dict[str, Any]], codec: str) -> bytes:
    out = io.BytesIO()
    fastavro.writer(out, schema, rows, codec=codec, sync_interval=500)
    return out.getvalue()


@pytest.mark.parametrize("codec", ["null", "deflate", "snappy", "zstandard"])
def test_growing_lists_as_pypaimon_writes_them(scenarios, tmp_path: Path, codec: str) -> None:
    """Lists of 1..120 rows, each the previous plus one (a base list of a table that never
    merges manifests): many blocks, most repeated, the last one extended."""
    schema, row = _schema_and_row(scenarios, tmp_path)
    rows = [{**row, "_FILE_NAME": f"manifest-{i}", "_FILE_SIZE": 1000 + i} for i in range(120)]
    reader = ListBlocks()
    for n in range(1, len(rows) + 1):
        data = _write(schema, rows[:n], codec)
        assert _blocks(reader, data) == _whole(data), n
    container = split_container(data)
    assert container is not None and len(container.blocks) > 10


def test_a_list_shorter_than_recorded_fails_as_the_whole_decode(scenarios, tmp_path: Path):
    schema, row = _schema_and_row(scenarios, tmp_path)
    rows = [{**row, "_FILE_NAME": f"manifest-{i}"} for i in range(60)]
    data = _write(schema, rows, "zstandard")
    container = split_container(data)
    assert container is not None
    cut = data[: len(data) - len(container.blocks[-1][1]) - 20]  # the last block dropped
    for expect in (Expected(size=len(data)), Expected(entries=60)):
        with pytest.raises(CorruptMetadataError):
            _whole(cut) if expect.entries is None else decode_manifest_list_names(
                cut, "list", expect=expect
            )
        with pytest.raises(CorruptMetadataError):
            _blocks(ListBlocks(), cut, expect)


def test_a_damaged_block_fails_even_after_its_prefix_was_decoded(scenarios, tmp_path: Path):
    schema, row = _schema_and_row(scenarios, tmp_path)
    rows = [{**row, "_FILE_NAME": f"manifest-{i}"} for i in range(3)]
    reader = ListBlocks()
    _blocks(reader, _write(schema, rows[:2], "null"))
    data = bytearray(_write(schema, rows, "null"))
    at = data.rindex(b"manifest-2")
    data[at - 1] = 0x7F  # the third name's length: past the block's end
    with pytest.raises(CorruptMetadataError):
        _whole(bytes(data))
    with pytest.raises(CorruptMetadataError):
        _blocks(reader, bytes(data))


def test_not_avro_falls_back_to_the_whole_decode() -> None:
    with pytest.raises(CorruptMetadataError):
        ListBlocks().read(b"", "list", UNRECORDED)
    with pytest.raises(CorruptMetadataError):
        ListBlocks().read(b"PAR1 but not really", "list", UNRECORDED)


def test_a_table_sent_to_a_worker_process_takes_an_empty_cache() -> None:
    import pickle

    reader = ListBlocks(max_blocks=7)
    copy = pickle.loads(pickle.dumps(reader))
    assert isinstance(copy, ListBlocks) and copy.max_blocks == 7
