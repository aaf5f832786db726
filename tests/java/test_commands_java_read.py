"""Every writing and deleting command leaves Java-written tables readable by Apache Paimon
(Java), with unchanged rows in every remaining snapshot and tag.

On a copy of each table of a cross-section of ``tests/data/java-written`` and
``java-0.9-built`` (formats, partitions, primary keys, deletion vectors, schema evolution,
nested types, data evolution, long-lived changelogs), the commands run one after another:
compact, create-tag (latest and earliest), rename-tag, expire-partitions, expire-snapshots,
expire-changelogs, delete-orphan-files, delete-tag, expire-tags. After each command that
changed the table, Java reads every remaining snapshot and tag: no error, no missing file,
the rows and checksum each had before. A command that refuses (exit 1: e.g. compaction of
a table with deletion vectors, commits to tables with ORC manifests; exit 2: nothing to do,
e.g. expire-partitions on an unpartitioned table) must leave the table untouched.
Tables with external paths are left out: their copies would still point into the fixture.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import pytest
from support.fixtures import JAVA_BUILT, JAVA_FIXTURES, Run
from support.java_paimon import JavaPaimon, assert_java_ok, assert_same_rows, entry_keys

pytestmark = pytest.mark.java

WRITTEN = [
    "avro/append_with_multiple_ts_precision_and_timezone",
    "orc/append_09",
    "orc/append_complex_data",
    "orc/multi_partition_append_table",
    "orc/pk_09",
    "orc/pk_table_with_alter_table",
    "orc/pk_table_nested_type",
    "orc/append_with_global_index",
]
BUILT = ["changelog_decoupled", "pk_deletion_vectors"]


def _params() -> list[Any]:
    out = [
        pytest.param(
            JAVA_FIXTURES / f"{n.split('/')[0]}" / f"{n.split('/')[1]}.db" / n.split("/")[1], id=n
        )
        for n in WRITTEN
    ]
    for name in BUILT:
        out.append(pytest.param(JAVA_BUILT / name / "table", id=f"java-0.9-built/{name}"))
    return out


def _state(root: Path) -> dict[str, tuple[int, int]]:
    """Every file under the table with (size, mtime): did a command change anything?"""
    out = {}
    for dirpath, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if d != ".paimon-cli"]  # our run records, not the table
        for f in files:
            st = os.stat(os.path.join(dirpath, f))
            out[os.path.relpath(os.path.join(dirpath, f), root)] = (st.st_size, st.st_mtime_ns)
    return out


class _Chain:
    """Runs commands on one table copy; Java re-reads it after each command that changed it."""

    def __init__(self, java: JavaPaimon, run: Run, root: Path) -> None:
        self.java, self.run, self.root = java, run, root
        self.doc = java.verify(root)
        assert_java_ok(self.doc)
        self.first = self.doc  # rows of every snapshot and tag as Java wrote them

    def step(
        self,
        *args: Any,
        may_refuse: bool = False,
        same_latest: bool = True,
        renamed: tuple[str, str] | None = None,
    ) -> dict[str, Any] | None:
        before = _state(self.root)
        result = self.run(args[0], self.root, *args[1:])
        if result.exit_code != 0:
            # 1: refused (unsupported table); 2: nothing to do (e.g. not partitioned).
            assert may_refuse and result.exit_code in (1, 2), (args, result.stdout, result.stderr)
            assert _state(self.root) == before, f"{args[0]} refused but changed the table"
            return None
        if _state(self.root) == before:
            return self.doc
        after = self.java.verify(self.root)
        keys = entry_keys(after) | ({"latest"} if same_latest else set())
        assert_same_rows(self.doc, after, keys=keys)
        assert_same_rows(self.first, after, keys=entry_keys(after) & entry_keys(self.first))
        if renamed:
            old, new = (f"tag-{n}" for n in renamed)
            assert after["entries"][new] == self.doc["entries"][old]
        self.doc = after
        return after


@pytest.mark.parametrize("source", _params())
def test_commands_leave_every_snapshot_and_tag_readable_in_java(
    java: JavaPaimon, run: Run, tmp_path: Path, source: Path
) -> None:
    root = tmp_path / "wh" / "db.db" / source.parent.name.removesuffix(".db")
    shutil.copytree(source, root, symlinks=True)  # copy2 keeps modification times
    chain = _Chain(java, run, root)
    snapshots = chain.doc["snapshot_ids"]

    chain.step("compact", may_refuse=True)
    doc = chain.step("create-tag", "cli_latest")
    assert doc is not None and doc["entries"]["tag-cli_latest"] == doc["entries"]["latest"]
    chain.step("create-tag", "cli_first", "--snapshot", snapshots[0])
    chain.step("rename-tag", "cli_first", "cli_renamed", renamed=("cli_first", "cli_renamed"))
    chain.step(
        "expire-partitions",
        "--expire-strategy",
        "update-time",
        "--expiration-time",
        "1 d",
        "--max-expires",
        "1",
        may_refuse=True,
        same_latest=False,
    )
    doc = chain.step("expire-snapshots", "--retain-max", "1", "--retain-min", "1")
    assert doc is not None and {"tag-cli_latest", "tag-cli_renamed"} <= set(doc["entries"])
    chain.step("expire-changelogs", "--retain-max", "1", "--retain-min", "1", may_refuse=True)
    chain.step("delete-orphan-files")
    chain.step("delete-tag", "cli_renamed")
    chain.step("expire-tags", "--older-than", "0 s")


def test_compaction_rewrites_java_written_avro_files(
    java: JavaPaimon, run: Run, tmp_path: Path
) -> None:
    """Java's own avro data files (every TIMESTAMP precision Avro holds, with and without
    local time zone) plus pypaimon appends of the same rows, compacted into one file by
    paimon-cli: Java reads the same rows and checksum."""
    from support import pypaimon_writer as pw

    name = "append_with_multiple_ts_precision_and_timezone"
    source = JAVA_FIXTURES / "avro" / f"{name}.db" / name
    warehouse = tmp_path / "wh"
    shutil.copytree(source, warehouse / "db.db" / name, symlinks=True)
    root = warehouse / "db.db" / name
    table = pw.open_table(warehouse, f"db.{name}")
    rows = pw.read_rows(warehouse, f"db.{name}")
    for _ in range(4):
        pw.append(table, rows)
    before = java.verify(root)
    assert_java_ok(before)
    assert before["entries"]["latest"]["rows"] == 5 * len(rows)

    result = run("compact", root)
    assert result.exit_code == 0, result.stderr
    after = java.verify(root)
    assert after["latest_snapshot_id"] == before["latest_snapshot_id"] + 1
    assert_same_rows(before, after, keys=entry_keys(after) | {"latest"})
    (files,) = after["live_files_by_partition"].values()
    assert len(files) == 1 and files[0].endswith(".avro")
