"""expire-snapshots in bounded memory (issue 27): a tag's protection is decided from the
entries of the files the expiry deletes, never from the tag's whole live set. These
checks compare plans with the ones the whole live set gives, on pypaimon tables with tags
and on a synthetic table whose tags keep compacted files."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from support.invariants import copy_scenario

import core.ops.expiry.expire_snapshots as expire_snapshots
from core.format.model import Tag
from core.io.fileio import FileIO
from core.ops.expiry.expire_snapshots import ExpireFlags, plan_expire_snapshots
from core.runtime.executors.base import Executor
from core.runtime.executors.local import LocalExecutor
from core.table.scan import ManifestCache, full_live_set
from core.table.table import PaimonTable, open_table

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench" / "synth"))
import synth_table as st  # noqa: E402

NOW = 4_000_000_000_000  # far future: every snapshot is "old"
KeySet = set[tuple[bytes, int, str]]


def _whole_live_set_keys(table: PaimonTable, executor: Executor, _wanted: KeySet) -> Any:
    """The reference: every live file of the tag, as before issue 27."""
    cache = ManifestCache(table, executor)
    keys: dict[str, KeySet] = {}

    def keys_of(tag: Tag) -> KeySet:
        if tag.name not in keys:
            live = full_live_set(table, tag.snapshot, cache)
            keys[tag.name] = {(e.partition, e.bucket, e.file.file_name) for e in live.values()}
        return keys[tag.name]

    return keys_of


def _plans(table: PaimonTable, monkeypatch: pytest.MonkeyPatch, **flags: int) -> tuple[str, str]:
    def plan() -> str:
        with LocalExecutor(4) as ex:
            p = plan_expire_snapshots(table, ExpireFlags(**flags), now_ms=NOW, executor=ex)
        return json.dumps(p.to_json(), sort_keys=True)

    bounded = plan()
    with monkeypatch.context() as m:
        m.setattr(expire_snapshots, "_tag_keys", _whole_live_set_keys)
        whole = plan()
    return bounded, whole


@pytest.mark.parametrize(
    ("name", "flags"),
    [
        ("append_partitioned", {"retain_min": 1}),  # a consumer stops it at 3
        ("tags_consumers_branches", {"retain_min": 1}),
        ("many_commits", {"retain_min": 2}),
    ],
)
def test_tag_protection_is_the_whole_live_sets(
    scenarios, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str, flags: dict[str, int]
) -> None:
    _s, _wh, root = copy_scenario(scenarios, name, tmp_path)
    consumers = root / "consumer"
    if consumers.exists():
        for c in consumers.iterdir():
            c.unlink()  # let the expiry reach past the tags
    bounded, whole = _plans(open_table(str(root)), monkeypatch, **flags)
    assert bounded == whole
    plan = json.loads(bounded)
    assert plan["details"]["snapshots"]
    if name == "append_partitioned":  # the overwrite at 5 removed files tag 'mid' needs
        assert plan["details"]["kept_by_tag"]


def test_tag_protection_on_a_synthetic_table(monkeypatch: pytest.MonkeyPatch) -> None:
    spec = st.Spec(
        snapshots=30,
        partitions=2,
        buckets=3,
        base_files=12,
        files_per_commit=4,
        compact_every=3,
        compact_files=2,
        manifest_entries=7,
        tags=(4, 9, 20),
        end_s=st._default_end_s(),
    )
    st.register()
    st.forget()
    try:
        table = open_table(f"synth://{spec.root}", fileio=FileIO(spec.options()))
        bounded, whole = _plans(table, monkeypatch, retain_max=3, retain_min=3)
    finally:
        st.forget()
    assert bounded == whole
    kept = json.loads(bounded)["details"]["kept_by_tag"]
    assert {k["tag"] for k in kept} == {"t4", "t9", "t20"}
