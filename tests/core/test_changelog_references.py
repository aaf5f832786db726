"""Issue 12.3 / 13.2: what long-lived changelogs need is kept by every deleting command and
demanded by ``inspect --check``; lists Paimon deletes by design are never "missing"."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pyarrow as pa
import pytest
from support import java_paimon
from support import pypaimon_writer as pw
from support.invariants import (
    age_tree,
    assert_no_dangling_references,
    assert_rows_intact,
    copy_scenario,
    referenced_paths,
)

from core.ops.inspection.check import check_table
from core.retention.references import collect_references
from core.runtime.executors.local import LocalExecutor
from core.table.table import open_table

SCHEMA = pa.schema([("id", pa.int64()), ("p", pa.string())])


@pytest.fixture
def java_optional() -> java_paimon.JavaPaimon | None:
    """Apache Paimon (Java) as a second reader where it is installed (required in CI)."""
    reason = java_paimon.unavailable()
    if reason and java_paimon.REQUIRED:
        pytest.fail(f"PAIMON_CLI_REQUIRE_JAVA=1 but {reason}")
    return None if reason else java_paimon.JavaPaimon()


Rows = dict[int, list[pw.Row]]


def _rows(current: dict[str, list[pw.Row]]) -> list[pw.Row]:
    return pw.sort_rows(r for part in current.values() for r in part)


def _none_producer_table(wh: Path, tag_retained: str | None) -> tuple[str, Rows]:
    """Append table, producer none, decoupled by ``changelog.time-retained``: 1-3 append to
    p=a and p=b (tag t on 3), 4 overwrites p=a, 5 appends to p=b, 6 to p=a."""
    ident = f"{pw.DB}.cl_none"
    t = pw.create_table(
        wh, ident, SCHEMA, partition_keys=("p",), options={"changelog.time-retained": "7 d"}
    )
    current: dict[str, list[pw.Row]] = {"a": [], "b": []}
    rows: Rows = {}
    for i in range(1, 4):
        new = [{"id": i, "p": "a"}, {"id": 10 + i, "p": "b"}]
        for r in new:
            current[str(r["p"])].append(r)
        rows[pw.append(t, new)] = _rows(current)
    pw.create_tag(t, "t", 3, time_retained=tag_retained)
    current["a"] = [{"id": 400, "p": "a"}]
    rows[pw.overwrite(t, current["a"], {"p": "a"})] = _rows(current)
    for sid, part in ((5, "b"), (6, "a")):
        r = {"id": 100 * sid, "p": part}
        current[part].append(r)
        assert pw.append(t, [r]) == sid
        rows[sid] = _rows(current)
    return ident, rows


def _changelog_needs(root: Path) -> dict[str, int]:
    table = open_table(str(root))
    needs: dict[str, int] = {}
    for cl in table.changelogs.snapshots():
        collect_references(
            table, cl, None, lambda p, _s, _r, cid=cl.id: needs.setdefault(p, cid), kind="changelog"
        )
    return needs


def _assert_snapshots_read(wh: Path, ident: str, rows: Rows) -> None:
    root = pw.table_root(wh, ident)
    for sid in open_table(str(root)).snapshots.ids():
        assert pw.read_rows(wh, ident, snapshot_id=sid) == rows[sid], f"snapshot {sid}"


@pytest.mark.parametrize("how", ["delete-tag", "expire-tags"])
def test_tag_deletion_and_coupled_expiry_keep_changelog_files(
    run: Callable[..., object],
    tmp_path: Path,
    how: str,
    java_optional: java_paimon.JavaPaimon | None,
) -> None:
    wh = tmp_path / "wh"
    ident, rows = _none_producer_table(wh, "1ms" if how == "expire-tags" else None)
    root = pw.table_root(wh, ident)
    doc = run.json("expire-snapshots", root, "--retain-min", "2", "--older-than", "0 ms")  # type: ignore[attr-defined]
    assert doc["plan"]["details"]["config"]["changelog_decoupled"] is True
    assert open_table(str(root)).changelogs.ids() == [1, 2, 3, 4]
    needs = _changelog_needs(root)
    a_files = {p for p in needs if "/p=a/" in p}
    assert a_files  # p=a's first three files: only tag t and changelog-1..3 hold them
    java_before = java_optional.verify(root) if java_optional else None

    if how == "delete-tag":
        run.json("delete-tag", root, "t")  # type: ignore[attr-defined]
    else:
        run.json("expire-tags", root)  # type: ignore[attr-defined]
    assert open_table(str(root)).tags.names() == []
    assert all(Path(p).exists() for p in needs), "a changelog lost a file to the tag deletion"
    assert_no_dangling_references(root)
    if java_optional and java_before:
        java_paimon.assert_same_rows(java_before, java_optional.verify(root))

    t = pw.open_table(wh, ident)
    rows[7] = pw.sort_rows([r for r in rows[6] if r["p"] == "a"] + [{"id": 700, "p": "b"}])
    assert pw.overwrite(t, [{"id": 700, "p": "b"}], {"p": "b"}) == 7
    rows[8] = pw.sort_rows([*rows[7], {"id": 800, "p": "a"}])
    assert pw.append(t, [{"id": 800, "p": "a"}]) == 8
    # decoupling switched off through --options: a coupled run over 5..7 whose delta 7
    # deletes p=b files that changelog-1..3 still need
    doc = run.json(  # type: ignore[attr-defined]
        "expire-snapshots",
        root,
        "--retain-min",
        "1",
        "--older-than",
        "0 ms",
        "--options",
        "changelog.time-retained=1ms",
    )
    details = doc["plan"]["details"]
    assert details["config"]["changelog_decoupled"] is False
    assert details["expire_until"] == 8
    kept = {k["path"] for k in details["kept_by_changelog"]}
    assert {p for p in needs if "/p=b/" in p} <= kept
    assert all(Path(p).exists() for p in needs)
    assert_no_dangling_references(root)
    _assert_snapshots_read(wh, ident, rows)
    if java_optional:
        java_paimon.assert_java_ok(java_optional.verify(root))


def test_check_sees_a_file_a_changelog_lost(tmp_path: Path, run: Callable[..., object]) -> None:
    wh = tmp_path / "wh"
    ident, _rows_ = _none_producer_table(wh, None)
    root = pw.table_root(wh, ident)
    run.json("expire-snapshots", root, "--retain-min", "2", "--older-than", "0 ms")  # type: ignore[attr-defined]
    run.json("delete-tag", root, "t")  # type: ignore[attr-defined]
    table = open_table(str(root))
    in_snapshots = referenced_paths(table, table.snapshots.snapshots())
    only_changelog = sorted(
        p for p in _changelog_needs(root) if "/data-" in p and p not in in_snapshots
    )
    Path(only_changelog[0]).unlink()
    with LocalExecutor(2) as ex:
        report = check_table(open_table(str(root)), executor=ex)
    assert [(p.path, p.kind) for p in report.problems] == [(only_changelog[0], "missing")]
    assert report.problems[0].referenced_by.startswith("changelog ")


def test_changelog_decoupled_fixture_checks_and_cleans(
    java_built: Callable[[str], Path], run: Callable[..., object]
) -> None:
    """Producer input: Paimon deleted the changelogs' base and delta lists by design."""
    root = java_built("changelog_decoupled")
    with LocalExecutor(2) as ex:
        report = check_table(open_table(str(root)), executor=ex)
    assert report.ok, report.problems[:3]
    age_tree(root)
    orphan = root / "dt=2024-01-01" / "bucket-0" / "data-orphan-0.parquet"
    orphan.write_bytes(b"x")
    age_tree(root)
    doc = run.json("delete-orphan-files", root)  # type: ignore[attr-defined]
    assert [
        a["path"] for p in doc["plan"]["phases"] for a in p["actions"] if a["op"] == "delete"
    ] == [str(orphan)]
    assert not orphan.exists()
    assert_no_dangling_references(root)


def test_tagged_snapshot_changelog_goes_and_check_agrees(
    scenarios,
    tmp_path: Path,
    run: Callable[..., object],
    java_optional: java_paimon.JavaPaimon | None,
) -> None:
    """Issue 12.4, following Paimon: a tag keeps the data it reads, not its snapshot's
    changelog; expiry deletes that changelog and says so, and ``--check`` agrees."""
    s, wh, root = copy_scenario(scenarios, "pk_table", tmp_path)
    (root / "consumer" / "consumer-cdc").unlink()  # it would hold snapshot 2 on
    tagged = open_table(str(root)).tags.tag("mid").snapshot
    assert tagged.changelog_manifest_list
    java_before = java_optional.verify(root) if java_optional else None
    doc = run.json("expire-snapshots", root, "--retain-min", "2", "--older-than", "0 ms")  # type: ignore[attr-defined]
    details = doc["plan"]["details"]
    assert tagged.id in details["snapshots"]
    assert any("changelog files of tagged snapshots" in n and "mid" in n for n in details["notes"])
    deleted = {
        a["path"] for p in doc["plan"]["phases"] for a in p["actions"] if a["op"] == "delete"
    }
    assert str(root / "manifest" / tagged.changelog_manifest_list) in deleted
    assert not (root / "manifest" / tagged.changelog_manifest_list).exists()
    assert_no_dangling_references(root)
    assert_rows_intact(wh, s)
    if java_optional and java_before:
        after = java_optional.verify(root)
        assert "tag-mid" in java_paimon.entry_keys(after)
        java_paimon.assert_same_rows(java_before, after)
