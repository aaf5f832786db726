"""The carried walk (``core.retention.carried``) names, for every snapshot, exactly the files
``collect_references`` names for it alone: holds and drops expanded back into one set per
snapshot, on pypaimon tables and on the Java corpus (merged manifests, changelogs, index
files, statistics)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from support.fixtures import java_table_params

from core.retention.carried import Carried
from core.retention.references import collect_references
from core.runtime.executors.local import LocalExecutor
from core.table.scan import ManifestCache, full_live_set
from core.table.table import PaimonTable, open_table


class _Expanding:
    """Every snapshot's files, from wants, holds and drops."""

    def __init__(self) -> None:
        self.ids: list[int] = []
        self.per_root: dict[int, dict[str, tuple[Any, str]]] = {}
        self.held: dict[str, tuple[Any, str, int]] = {}  # path -> size, role, first root

    def enter(self, sid: int) -> None:
        self.ids.append(sid)
        self.per_root[sid] = {}

    def want(self, path: str, size: Any, role: str) -> None:
        self.per_root[self.ids[-1]].setdefault(path, (size, role))

    def hold(self, path: str, size: Any, role: str) -> None:
        assert path not in self.held, path
        self.held[path] = (size, role, len(self.ids) - 1)

    def drop(self, path: str, *, through_current: bool = False) -> None:
        size, role, first = self.held.pop(path)
        last = len(self.ids) - (0 if through_current else 1)
        for sid in self.ids[first:last]:
            self.per_root[sid].setdefault(path, (size, role))


def _each_root(table: PaimonTable, cache: ManifestCache) -> dict[int, dict[str, tuple[Any, str]]]:
    out: dict[int, dict[str, tuple[Any, str]]] = {}
    for snap in table.snapshots.snapshots():
        wanted: dict[str, tuple[Any, str]] = {}
        live = full_live_set(table, snap, cache)
        collect_references(
            table,
            snap,
            live,
            lambda p, s, r: wanted.setdefault(p, (s, r)),  # noqa: B023
        )
        out[snap.id] = wanted
    return out


def _assert_same(root: Path) -> None:
    table = open_table(str(root))
    with LocalExecutor(1) as ex:
        expected = _each_root(table, ManifestCache(table, ex))
        sink = _Expanding()
        carried = Carried(table, sink, ManifestCache(table, ex))
        for snap in table.snapshots.snapshots():
            sink.enter(snap.id)
            carried.step(snap)
        carried.end()
    assert not sink.held
    assert sink.per_root.keys() == expected.keys()
    for sid, wanted in expected.items():
        assert sink.per_root[sid] == wanted, sid


@pytest.mark.parametrize(
    "name",
    [
        "many_commits",
        "pk_table",
        "tags_consumers_branches",
        "append_deletion_vectors",
        "unpartitioned_pk_dv",
    ],
)
def test_pypaimon_tables(scenarios: Any, name: str) -> None:
    _assert_same(Path(scenarios[name].root))


@pytest.mark.parametrize("root", java_table_params())
def test_java_tables(root: Path) -> None:
    _assert_same(root)


def test_space_spans_name_the_kinds_of_snapshots_holding_a_file() -> None:
    from core.ops.inspection.space import Holder, _Spans

    held: dict[str, Holder] = {}
    spans = _Spans(held, latest=10, expirable={1, 2, 3, 4, 5})
    for sid, path in ((1, "a"), (3, "b"), (5, "c")):
        spans.enter(sid)
        spans.hold(path, None, "data")
    spans.enter(7)  # a gap: "c" was last held by snapshot 5, not 6
    spans.drop("a")
    spans.drop("c")
    spans.enter(8)
    spans.hold("d", None, "data")
    spans.enter(10)
    spans.drop("b", through_current=True)
    spans.drop("d", through_current=True)
    assert held == {
        "a": Holder.EXPIRABLE,
        "c": Holder.EXPIRABLE,
        "b": Holder.EXPIRABLE | Holder.OLDER | Holder.LIVE,
        "d": Holder.OLDER | Holder.LIVE,
    }
    other: dict[str, Holder] = {}
    branch = _Spans(other, latest=None, expirable=None)
    branch.enter(1)
    branch.want("e", None, "manifest")
    assert other == {"e": Holder.BRANCH}
