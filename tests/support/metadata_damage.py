"""A catalogue of damaged metadata: every kind of file a root references, missing,
truncated mid-block or cut at an Avro block boundary (which decodes without error, as zero
entries: issue 28), one at a time (issue 17). Shared by the local, S3 and Spark tests.

Each damage names a scenario, how to prepare a copy of it, and which file to damage. A
missing snapshot, tag or changelog file is simply not a root (nothing references it), so
those kinds are only truncated."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from core.table.table import PaimonTable, open_table
from support import pypaimon_writer as pw
from support.invariants import age_tree, plant

Pick = Callable[[PaimonTable, Path], Path]


def _mid(table: PaimonTable) -> int:
    ids = table.snapshots.ids()
    return ids[len(ids) // 2]


def _manifest(table: PaimonTable, root: Path) -> Path:
    """The first delta manifest of a mid-history snapshot (the issue's reproduction)."""
    snap = table.snapshots.snapshot(_mid(table))
    name = table.manifest_list_names(snap, snap.delta_manifest_list)[0].file_name
    return root / "manifest" / name


def _base_list(table: PaimonTable, root: Path) -> Path:
    return root / "manifest" / table.snapshots.snapshot(_mid(table)).base_manifest_list


def _delta_list(table: PaimonTable, root: Path) -> Path:
    return root / "manifest" / table.snapshots.snapshot(_mid(table)).delta_manifest_list


def _index_manifest(table: PaimonTable, root: Path) -> Path:
    latest = table.snapshots.latest()
    assert latest is not None and latest.index_manifest
    return root / "manifest" / latest.index_manifest


def _snapshot(table: PaimonTable, root: Path) -> Path:
    return root / "snapshot" / f"snapshot-{_mid(table)}"


def _tag(table: PaimonTable, root: Path) -> Path:
    return root / "tag" / f"tag-{table.tags.names()[0]}"


def _tag_only_list(table: PaimonTable, root: Path) -> Path:
    """The delta list of a tagged snapshot after its snapshot file is gone: only the tag
    references it (see ``_tag_only`` preparation)."""
    tag = table.tags.tags()[0]
    return root / "manifest" / tag.snapshot.delta_manifest_list


def _branch_list(table: PaimonTable, root: Path) -> Path:
    branch = table.for_branch(table.branches.branches()[0])
    latest = branch.snapshots.latest()
    assert latest is not None
    return root / "manifest" / latest.delta_manifest_list


def _changelog(table: PaimonTable, root: Path) -> Path:
    ids = table.changelogs.ids()
    assert ids, "the preparation writes long-lived changelogs"
    return root / "changelog" / f"changelog-{ids[len(ids) // 2]}"


def _no_preparation(_root: Path) -> None:
    return None


def _tag_only(root: Path) -> None:
    """Expire the tagged snapshot's file the way Paimon does (the tag keeps its copy)."""
    table = open_table(str(root))
    tag = table.tags.tags()[0]
    (root / "snapshot" / f"snapshot-{tag.snapshot.id}").unlink()


def _long_lived_changelogs(root: Path) -> None:
    """Decoupled expiry writes changelog-N files for the expired snapshots."""
    from core.ops.expiry.expire_snapshots import ExpireFlags, plan_expire_snapshots
    from core.ops.expiry.expire_snapshots_checks import recheck
    from core.runtime.executors.local import LocalExecutor
    from support.lifecycle import apply

    table = open_table(str(root), dynamic_options={"changelog.num-retained.min": "25"})
    with LocalExecutor(2) as ex:
        plan = plan_expire_snapshots(
            table,
            ExpireFlags(retain_min=20, max_deletes=50),
            now_ms=4_000_000_000_000,
            executor=ex,
        )
        apply(table, plan, recheck=recheck, executor=ex)
    assert open_table(str(root)).changelogs.ids()


@dataclass(frozen=True)
class Damage:
    kind: str  # what is damaged
    mode: str  # missing | truncated | cut (at the end of the Avro header, a block boundary)
    scenario: str
    pick: Pick
    prepare: Callable[[Path], None] = _no_preparation

    @property
    def id(self) -> str:
        return f"{self.kind}-{self.mode}"

    def apply(self, root: Path) -> Path:
        """Damage the copy at ``root``; returns the damaged file's path."""
        self.prepare(root)
        path = self.pick(open_table(str(root)), root)
        assert path.is_file(), path
        data = path.read_bytes()
        if self.mode == "missing":
            path.unlink()
        elif self.mode == "cut":
            path.write_bytes(avro_header(data))
        else:
            path.write_bytes(data[: len(data) // 2])
        return path


def avro_header(data: bytes) -> bytes:
    """An Avro file cut right after its header (magic, metadata, sync marker): a valid
    file without rows, as an interrupted copy or sync leaves it at a block boundary."""
    assert data[:4] == b"Obj\x01", "not an Avro file"
    sync = data[-16:]  # every block ends with the file's sync marker
    cut = data.index(sync) + 16
    assert cut < len(data)
    return data[:cut]


TCB = "tags_consumers_branches"
_BOTH = ("missing", "truncated", "cut")
DAMAGES: list[Damage] = [
    *(Damage("manifest", m, TCB, _manifest) for m in _BOTH),
    *(Damage("base-manifest-list", m, TCB, _base_list) for m in _BOTH),
    *(Damage("delta-manifest-list", m, TCB, _delta_list) for m in _BOTH),
    *(Damage("tag-manifest-list", m, TCB, _tag_only_list, _tag_only) for m in _BOTH),
    *(Damage("branch-manifest-list", m, TCB, _branch_list) for m in _BOTH),
    # Nothing records an index manifest's size or entry count: a cut one is undetectable.
    *(
        Damage("index-manifest", m, "append_deletion_vectors", _index_manifest)
        for m in ("missing", "truncated")
    ),
    Damage("snapshot", "truncated", TCB, _snapshot),
    Damage("tag", "truncated", TCB, _tag),
    Damage("changelog", "truncated", "many_commits", _changelog, _long_lived_changelogs),
]
# The S3 and Spark suites (slower per case) cut one manifest and one list: the size and
# count checks are the same code for every kind, which the local suite covers.
REMOTE_DAMAGES = [
    d for d in DAMAGES if d.mode != "cut" or d.kind in ("manifest", "delta-manifest-list")
]


def damaged_copy(
    scenarios: dict[str, pw.Scenario], damage: Damage, dest: Path
) -> tuple[Path, Path, Path]:
    """An aged copy of the damage's scenario with one planted orphan manifest (something a
    clean run would delete) and the damage applied: (table root, damaged file, orphan)."""
    src = scenarios[damage.scenario].root
    root = dest / "wh" / src.parent.name / src.name
    shutil.copytree(src, root, symlinks=True)
    damaged = damage.apply(root)
    age_tree(root)
    orphan = plant(root / "manifest" / "manifest-0ddba11-0")
    return root, damaged, orphan
