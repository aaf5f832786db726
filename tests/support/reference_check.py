"""An independent reference checker for local Paimon tables, written for the tests only.

It shares no code with ``core``: it reads snapshot/tag/changelog JSON with ``json`` and
manifests with ``fastavro``, and finds files by name in the places Paimon puts them. What it
demands of each root is what a Paimon reader needs to read it:

* a snapshot of ``snapshot/`` (any branch): base and delta manifest lists with their
  manifests, every live data file (ADD minus DELETE over base + delta) and its extra files,
  the index manifest and its index files, statistics; and its changelog list with the
  changelog files (streaming readers read those of retained snapshots);
* a tag: the same without the changelog (Paimon's tags never keep changelog files);
* every root and every live data file: the schema it names (``schemaId``, ``_SCHEMA_ID``) in
  its branch's ``schema/`` (a reader cannot decode a file without its schema);
* a long-lived changelog ``changelog/changelog-N``: with a changelog list, that list, its
  manifests and files; without one (producer ``none``), the delta list, its manifests and the
  files its ADD entries name, except compaction outputs (base lists are never read for
  changelogs).

Avro manifests only (what pypaimon writes); names carry UUIDs, so finding a file by name in
its kind of directory is exact enough.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import fastavro


@dataclass(frozen=True)
class Missing:
    root: str  # e.g. "main snapshot 7", "b1 tag t2", "main changelog 3"
    kind: str  # manifest-list, manifest, data, extra, index-manifest, index, statistics
    name: str


@dataclass
class Registry:
    """Where files of each kind are, by name (built once per check by walking the tree)."""

    metadata: set[str] = field(default_factory=set)  # manifest/ (lists, manifests, index m.)
    index: set[str] = field(default_factory=set)  # index/
    statistics: set[str] = field(default_factory=set)
    data: set[str] = field(default_factory=set)  # anything under a bucket-N directory

    @classmethod
    def scan(cls, root: Path, external: list[Path]) -> Registry:
        reg = cls()
        for base in [root, *external]:
            for dirpath, _dirs, files in os.walk(base):
                rel = Path(dirpath).relative_to(base).parts
                if ".paimon-cli" in rel:
                    continue
                if rel[:1] == ("manifest",):
                    reg.metadata.update(files)
                elif rel[:1] == ("index",):
                    reg.index.update(files)
                elif rel[:1] == ("statistics",):
                    reg.statistics.update(files)
                elif rel and rel[-1].startswith("bucket-"):
                    reg.data.update(files)
        return reg


def _read_avro(path: Path) -> list[dict[str, Any]]:
    with open(path, "rb") as f:
        return list(fastavro.reader(f))


def _json_files(directory: Path, prefix: str) -> Iterator[tuple[str, dict[str, Any]]]:
    if not directory.is_dir():
        return
    for p in sorted(directory.iterdir()):
        if p.name.startswith(prefix) and p.is_file():
            try:
                yield p.name[len(prefix) :], json.loads(p.read_text())
            except (OSError, ValueError):
                continue  # a vanished or torn file is no root


def _branch_roots(root: Path) -> Iterator[tuple[str, Path]]:
    yield "main", root
    branches = root / "branch"
    if branches.is_dir():
        for b in sorted(branches.iterdir()):
            if b.name.startswith("branch-"):
                yield b.name[len("branch-") :], b


class _Checker:
    def __init__(self, root: Path, registry: Registry) -> None:
        self.root = root
        self.reg = registry
        self.schemas: set[str] = set()  # schema ids present in the current branch's schema/
        self.missing: list[Missing] = []
        self._lists: dict[str, list[dict[str, Any]] | None] = {}
        self._manifests: dict[str, list[dict[str, Any]] | None] = {}

    def _need(self, where: str, kind: str, name: str, present: set[str]) -> bool:
        if name in present:
            return True
        self.missing.append(Missing(where, kind, name))
        return False

    def _avro(self, cache: dict[str, Any], name: str) -> list[dict[str, Any]] | None:
        if name not in cache:
            path = self.root / "manifest" / name
            try:
                cache[name] = _read_avro(path)
            except (OSError, ValueError, EOFError, StopIteration):
                cache[name] = None
        return cache[name]  # type: ignore[no-any-return]

    def _entries(self, where: str, list_name: str | None) -> list[dict[str, Any]]:
        """Manifest entries behind one manifest list; records what is missing."""
        if not list_name:
            return []
        if not self._need(where, "manifest-list", list_name, self.reg.metadata):
            return []
        metas = self._avro(self._lists, list_name)
        if metas is None:
            self.missing.append(Missing(where, "manifest-list(unreadable)", list_name))
            return []
        out: list[dict[str, Any]] = []
        for meta in metas:
            for extra in meta.get("_EXTRA_FILES") or []:
                self._need(where, "manifest-extra", extra, self.reg.metadata)
            name = meta["_FILE_NAME"]
            if not self._need(where, "manifest", name, self.reg.metadata):
                continue
            entries = self._avro(self._manifests, name)
            if entries is None:
                self.missing.append(Missing(where, "manifest(unreadable)", name))
                continue
            out.extend(entries)
        return out

    def _files(self, where: str, entries: list[dict[str, Any]], *, merge: bool) -> None:
        live: dict[tuple[bytes, int, str], dict[str, Any]] = {}
        for e in entries:
            f = e["_FILE"]
            key = (e["_PARTITION"], e["_BUCKET"], f["_FILE_NAME"])
            if e["_KIND"] == 0:
                live[key] = f
            elif merge:
                live.pop(key, None)
        for f in live.values():
            self._need(where, "data", f["_FILE_NAME"], self.reg.data)
            self._need(where, "schema", str(f["_SCHEMA_ID"]), self.schemas)
            for extra in f.get("_EXTRA_FILES") or []:
                self._need(where, "extra", extra, self.reg.data)

    def _index(self, where: str, name: str | None) -> None:
        if not name:
            return
        if not self._need(where, "index-manifest", name, self.reg.metadata):
            return
        entries = self._avro(self._lists, name)
        if entries is None:
            self.missing.append(Missing(where, "index-manifest(unreadable)", name))
            return
        for e in entries:
            if e.get("_EXTERNAL_PATH"):
                continue  # outside index/: not what these tests write
            self._need(where, "index", e["_FILE_NAME"], self.reg.index)

    def snapshot_like(self, where: str, snap: dict[str, Any], *, changelog: bool) -> None:
        self._need(where, "schema", str(snap.get("schemaId")), self.schemas)
        base = self._entries(where, snap.get("baseManifestList"))
        delta = self._entries(where, snap.get("deltaManifestList"))
        self._files(where, base + delta, merge=True)
        self._index(where, snap.get("indexManifest"))
        if snap.get("statistics"):
            self._need(where, "statistics", snap["statistics"], self.reg.statistics)
        if changelog and snap.get("changelogManifestList"):
            self._files(where, self._entries(where, snap["changelogManifestList"]), merge=False)

    def long_lived_changelog(self, where: str, snap: dict[str, Any], producer: str) -> None:
        if snap.get("changelogManifestList"):
            self._files(where, self._entries(where, snap["changelogManifestList"]), merge=False)
        elif producer == "none":
            # Producer none: the changelog is the delta's new input files. Files a compaction
            # wrote (_FILE_SOURCE 1) are no changelog, and Paimon's expiry deletes them.
            delta = self._entries(where, snap.get("deltaManifestList"))
            news = [e for e in delta if e["_KIND"] == 0 and e["_FILE"].get("_FILE_SOURCE") != 1]
            self._files(where, news, merge=False)


def _options(root: Path) -> dict[str, str]:
    schemas = sorted((root / "schema").glob("schema-*"), key=lambda p: int(p.name.split("-", 1)[1]))
    if not schemas:
        return {}
    options: dict[str, str] = json.loads(schemas[-1].read_text()).get("options", {})
    return options


def external_roots(root: Path) -> list[Path]:
    """``data-file.external-paths`` of the newest schema (local ``file:`` URIs only)."""
    options = _options(root)
    out = []
    for uri in filter(None, options.get("data-file.external-paths", "").split(",")):
        out.append(Path(uri.removeprefix("file://").removeprefix("file:")))
    return out


def missing_references(root: Path) -> list[Missing]:
    """Everything any snapshot, tag or long-lived changelog of any branch needs and lacks."""
    checker = _Checker(root, Registry.scan(root, external_roots(root)))
    # Without a changelog list, a changelog is the delta's new files only for producer none;
    # for other producers such a snapshot (e.g. a compaction) simply has no changelog.
    producer = _options(root).get("changelog-producer", "none")
    for branch, broot in _branch_roots(root):
        checker.schemas = {
            p.name[len("schema-") :] for p in (broot / "schema").glob("schema-*") if p.is_file()
        }
        for sid, snap in _json_files(broot / "snapshot", "snapshot-"):
            checker.snapshot_like(f"{branch} snapshot {sid}", snap, changelog=True)
        for name, snap in _json_files(broot / "tag", "tag-"):
            checker.snapshot_like(f"{branch} tag {name}", snap, changelog=False)
        for cid, snap in _json_files(broot / "changelog", "changelog-"):
            checker.long_lived_changelog(f"{branch} changelog {cid}", snap, producer)
    return checker.missing
