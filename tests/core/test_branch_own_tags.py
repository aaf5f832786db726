"""Issue 12.2: a branch's expiry sees exactly that branch's tags (Paimon, per branch)."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
from support import pypaimon_writer as pw
from support.invariants import assert_no_dangling_references

from core.table.table import open_table

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string())])


Rows = dict[int, list[pw.Row]]


def _branch_with_own_tag(wh: Path) -> tuple[str, Rows, Rows]:
    """main 1..6 (tag x on 6); branch b from tag base (3): 4, 5 (tag y), 6, 7 overwrites
    every row, 8. Returns (identifier, branch rows per snapshot, main rows per snapshot)."""
    ident = f"{pw.DB}.branch_tags"
    main = pw.create_table(wh, ident, SCHEMA)
    rows: list[pw.Row] = []
    main_rows: Rows = {}
    for i in range(1, 4):
        new = [{"id": i, "v": f"m{i}"}]
        rows += new
        main_rows[pw.append(main, new)] = pw.sort_rows(rows)
    pw.create_tag(main, "base", 3)
    branch_rows = {3: pw.sort_rows(rows)}
    b = pw.create_branch(main, "b", "base")
    current = list(rows)
    for i in range(4, 9):
        if i == 7:
            current = [{"id": 700, "v": "ow"}]
            sid = pw.overwrite(b, current)
        else:
            new = [{"id": 100 + i, "v": f"b{i}"}]
            sid = pw.append(b, new)
            current += new
        assert sid == i
        branch_rows[sid] = pw.sort_rows(current)
        if i == 5:
            pw.create_tag(b, "y", 5)
    for i in range(4, 7):
        new = [{"id": 10 * i, "v": f"m{i}"}]
        rows += new
        main_rows[pw.append(main, new)] = pw.sort_rows(rows)
    pw.create_tag(main, "x", 6)
    return ident, branch_rows, main_rows


def test_branch_expiry_keeps_the_branch_tag_not_mains(run, tmp_path: Path) -> None:
    wh = tmp_path / "wh"
    ident, branch_rows, main_rows = _branch_with_own_tag(wh)
    root = pw.table_root(wh, ident)
    doc = run.json(
        "expire-snapshots", root, "--branch", "b", "--retain-min", "1", "--older-than", "0 ms"
    )
    assert doc["plan"]["details"]["expire_until"] == 8
    kept_tags = {k["tag"] for k in doc["plan"]["details"]["kept_by_tag"]}
    assert kept_tags == {"y"}  # y's files outlive the overwrite; main's x is not b's tag
    assert pw.read_rows(wh, ident, tag="y", branch="b") == branch_rows[5]
    assert pw.read_rows(wh, ident, branch="b") == branch_rows[8]
    assert pw.read_rows(wh, ident, tag="x") == main_rows[6]
    for sid in open_table(str(root)).snapshots.ids():  # main is untouched
        assert pw.read_rows(wh, ident, snapshot_id=sid) == main_rows[sid]
    assert_no_dangling_references(root)


def test_tag_deletion_on_a_branch_touches_only_that_branchs_tags(run, tmp_path: Path) -> None:
    wh = tmp_path / "wh"
    ident, branch_rows, main_rows = _branch_with_own_tag(wh)
    root = pw.table_root(wh, ident)
    pw.create_tag(pw.open_table(wh, ident), "y", 2)  # main has a tag of the same name
    # --force: the refusal for "a branch was created from this tag" also fires for the branch's
    # own tag today (issue 12, extras); the files the branch uses are kept either way
    doc = run.json("delete-tag", root, "y", "--branch", "b", "--force")
    assert [t["tag"] for t in doc["plan"]["details"]["tags"]] == ["y"]
    assert not (root / "branch" / "branch-b" / "tag" / "tag-y").exists()
    assert sorted(open_table(str(root)).tags.names()) == ["base", "x", "y"]
    assert pw.read_rows(wh, ident, tag="y") == main_rows[2]
    assert pw.read_rows(wh, ident, branch="b", snapshot_id=5) == branch_rows[5]
    assert_no_dangling_references(root)
