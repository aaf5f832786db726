"""The used names of orphan cleaning: every file name any root (snapshot, tag, long-lived
changelog) of any branch references, as Paimon matches them, by name. Roots and their
manifest lists are read first, then every manifest once; names go to one set, or to hash
partitions on local disk for tables too big for memory (``core.ops.orphans.orphan_sets``)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from functools import partial
from typing import Any, TypeVar

from core.errors import MissingFileError, PaimonError, SafetyRefusalError
from core.format.manifest import decode_manifest_file_names
from core.format.model import Expected, ManifestRef, Snapshot
from core.io.fileio import FileIO
from core.ops.orphans.orphan_sets import LazySpill, UsedNames
from core.retention.references import RootKind, producer_of, root_lists
from core.runtime.executors.base import Executor, Work
from core.runtime.progress import Progress
from core.table.table import PaimonTable

T = TypeVar("T")

_ROOT_KINDS: dict[str, RootKind] = {"snapshot": "snapshot", "tag": "tag", "changelog": "changelog"}


@dataclass(frozen=True, slots=True)
class RootsSeen:
    """The roots a used-name set was built from, per branch (to find new ones later)."""

    snapshots: dict[str, list[int]]
    tags: dict[str, dict[str, int]]
    changelogs: dict[str, list[int]]

    def to_json(self) -> dict[str, Any]:
        return {"snapshots": self.snapshots, "tags": self.tags, "changelogs": self.changelogs}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> RootsSeen:
        return cls(dict(data["snapshots"]), dict(data["tags"]), dict(data["changelogs"]))


# Worth decoding in worker processes (each costs ~0.2 s of CPU to start): manifests of
# 1 MiB or more (~0.3 s of decoding), or 64 roots or more (their manifest lists).
PROCESS_MIN_BYTES = 1 << 20
PROCESS_MIN_ROOTS = 64


@dataclass
class _Used:
    names: set[str] = field(default_factory=set)
    manifests: dict[str, ManifestRef] = field(default_factory=dict)  # by name


def views_of(table: PaimonTable) -> list[PaimonTable]:
    branches = table.branches.branches()
    base = table if table.branch == "main" else table.for_branch("main")
    views = [base]
    missing = []
    for name in branches:
        try:
            views.append(base.for_branch(name))
        except PaimonError as exc:
            missing.append(f"{name} ({exc.message})")
    if missing:
        # Paimon aborts too: without a branch's schema its roots cannot be read.
        raise SafetyRefusalError(
            f"branches without a readable schema: {', '.join(missing)}; refusing to clean orphans"
        )
    return views


def _root_names(view: PaimonTable, kind: RootKind, snap: Snapshot, used: _Used) -> None:
    """Names a root references directly; manifests are decoded later, once each. Lists
    Paimon deletes by design (a changelog's base and delta lists with a changelog producer,
    a tag's changelog list) count when present, as in Paimon, and are never "missing"."""
    lists = root_lists(kind, snap, producer_of(view))
    present = [n for n in lists.optional if view.fileio.exists(view.paths.manifest_path(n))]
    for list_name in (*lists.required, *present):
        used.names.add(list_name)
        try:
            refs = view.manifest_list_names(snap, list_name)
        except MissingFileError:
            if list_name in lists.required:
                raise
            continue  # an optional list deleted meanwhile
        for ref in refs:
            used.names.add(ref.file_name)
            used.manifests[ref.file_name] = ref
    # Snapshot expiry handles index files, so a changelog's may be gone (as in Paimon).
    index_gone = (
        kind == "changelog"
        and snap.index_manifest is not None
        and not view.fileio.exists(view.paths.manifest_path(snap.index_manifest))
    )
    if snap.index_manifest and not index_gone:
        # Paimon treats a missing index manifest as empty, which would make the live
        # deletion vectors look like orphans; here it is missing metadata (D3).
        used.names.add(snap.index_manifest)
        used.names.update(e.file_name for e in view.index_manifest(snap))
    if snap.statistics:
        used.names.add(snap.statistics)


def _load_root(view: PaimonTable, kind: str, key: int | str) -> Snapshot:
    if kind == "snapshot":
        return view.snapshots.snapshot(int(key))
    if kind == "changelog":
        return view.changelogs.snapshot(int(key))
    return view.tags.tag(str(key)).snapshot


def root_chunk(
    views: dict[str, PaimonTable], jobs: list[tuple[str, str, int | str]]
) -> tuple[int, _Used]:
    """(roots read, their names) for a chunk of roots (worker processes read big chunks)."""
    part = _Used()
    for branch, kind, key in jobs:
        _add_root(views[branch], kind, key, part)
    return len(jobs), part


def names_in_manifest_files(
    fileio: FileIO, manifests: list[tuple[str, Expected]]
) -> tuple[int, list[str], list[str]]:
    """(manifests read, names, paths of missing manifests) for a chunk of (path, what its
    list records) pairs (worker processes read big chunks). A missing manifest is never
    "empty": the caller aborts unless no root present references it any more
    (``check_missing_manifests``); a truncated one is corrupt metadata."""
    out: list[str] = []
    missing: list[str] = []
    for path, expect in manifests:
        try:
            data = fileio.read_bytes(path)
        except FileNotFoundError:
            missing.append(path)
            continue
        out += decode_manifest_file_names(data, path, expect=expect)
    return len(manifests), out, missing


def check_missing_manifests(views: list[PaimonTable], missing: Iterable[str]) -> None:
    """Manifests that were missing when read: fine only if every root that referenced them
    went meanwhile (a concurrent expiry); a root present now that names one means its
    files would look unused, so nothing may be deleted (issue 17; Paimon skips, D3)."""
    names = {m.rpartition("/")[2]: m for m in missing}
    if not names:
        return
    for view in views:
        roots: list[tuple[str, int | str]] = [("snapshot", i) for i in view.snapshots.ids()]
        roots += [("tag", n) for n in view.tags.names()]
        roots += [("changelog", i) for i in view.changelogs.ids()]
        for kind, key in roots:
            try:
                snap = _load_root(view, kind, key)
            except MissingFileError:
                continue
            lists = root_lists(_ROOT_KINDS[kind], snap, producer_of(view))
            for list_name in (*lists.required, *lists.optional):
                try:
                    refs = view.manifest_list_names(snap, list_name)
                except MissingFileError:
                    if list_name in lists.optional:
                        continue
                    raise
                hit = next((r.file_name for r in refs if r.file_name in names), None)
                if hit is not None:
                    raise SafetyRefusalError(
                        f"{kind} {key} of branch {view.branch} references missing manifest "
                        f"{names[hit]}; its files would look unused, so nothing is deleted",
                        hint="`paimon inspect TABLE --check` lists what is missing",
                    )


def _add_root(view: PaimonTable, kind: str, key: int | str, used: _Used) -> None:
    """Collect one root; metadata that vanished together with its root is skipped (a
    concurrent expiry), missing metadata of a root that still exists is fatal (D3)."""
    try:
        snap = _load_root(view, kind, key)
    except MissingFileError:
        return  # the root itself was removed meanwhile
    try:
        _root_names(view, _ROOT_KINDS[kind], snap, used)
    except MissingFileError as exc:
        still_there = {
            "snapshot": lambda: view.fileio.exists(view.snapshots.path(int(key))),
            "changelog": lambda: view.fileio.exists(view.changelogs.path(int(key))),
            "tag": lambda: view.fileio.exists(view.tags.path(str(key))),
        }[kind]()
        if still_there:
            raise SafetyRefusalError(
                f"{kind} {key} of branch {view.branch} references missing {exc.path}; an "
                "incomplete used set must never drive deletions",
                hint="`paimon inspect TABLE --check` lists what is missing",
            ) from None


def collect_roots(views: list[PaimonTable]) -> RootsSeen:
    """Roots of every branch; a snapshot directory that lists empty while its hints name a
    snapshot is an unreliable listing, never "no snapshots" (D3)."""
    for view in views:
        if not view.snapshots.ids():
            hints = [
                h
                for h in (view.snapshots.latest_hint(), view.snapshots.earliest_hint())
                if h is not None
            ]
            if hints:
                raise SafetyRefusalError(
                    f"{view.snapshots.directory} lists no snapshot but its hints name snapshot "
                    f"{hints[0]}; refusing to trust the listing"
                )
    return RootsSeen(
        snapshots={v.branch: v.snapshots.ids() for v in views},
        tags={v.branch: {t.name: t.snapshot.id for t in v.tags.tags()} for v in views},
        changelogs={v.branch: v.changelogs.ids() for v in views},
    )


CHUNK_ENTRIES = 200_000  # manifest entries per chunk a worker decodes (its names: ~20 MB)


def _entry_chunks(
    reader: PaimonTable, refs: list[tuple[str, ManifestRef]], executor: Executor
) -> list[list[tuple[str, Expected]]]:
    """About four chunks per worker, none of more than CHUNK_ENTRIES entries."""
    per = max(1, -(-sum(r.entries for _, r in refs) // (executor.parallelism * 4)))
    per = min(per, CHUNK_ENTRIES)
    chunks: list[list[tuple[str, Expected]]] = []
    size = per
    for name, ref in refs:
        if size + ref.entries > per:
            chunks.append([])
            size = 0
        chunks[-1].append((reader.paths.manifest_path(name), ref.expected()))
        size += ref.entries
    return chunks


def _chunks(items: list[T], executor: Executor) -> list[list[T]]:
    """About four chunks per worker."""
    step = max(1, -(-len(items) // (executor.parallelism * 4)))
    return [items[i : i + step] for i in range(0, len(items), step)]


def _advance(progress: Progress) -> Callable[[tuple[Any, ...]], None]:
    """Progress per item of a chunk's (items done, result)."""
    return lambda result: progress.advance(result[0])


def used_names(
    views: list[PaimonTable],
    roots: RootsSeen,
    executor: Executor,
    progress: Progress,
    *,
    only_new_since: RootsSeen | None = None,
) -> set[str]:
    """Every file name any root references (ADD and DELETE entries alike, as Paimon), as
    one set (the roots a re-check finds new, a Spark apply's protections)."""
    used = collect_used(views, roots, executor, progress, only_new_since=only_new_since)
    assert used.names is not None
    return used.names


def collect_used(
    views: list[PaimonTable],
    roots: RootsSeen,
    executor: Executor,
    progress: Progress,
    *,
    only_new_since: RootsSeen | None = None,
    spill: LazySpill | None = None,
) -> UsedNames:
    """Every file name any root references, in memory or, given ``spill`` and more names
    than memory should hold, in hash partitions on local disk (``core.ops.orphans.orphan_sets``)."""
    keys: list[tuple[str, str, int | str]] = []  # (branch, kind, key) of each root to read
    for view in views:
        b = view.branch
        old = only_new_since
        for sid in roots.snapshots.get(b, []):
            if old is None or sid not in old.snapshots.get(b, []):
                keys.append((b, "snapshot", sid))
        for name, tid in roots.tags.get(b, {}).items():
            if old is None or old.tags.get(b, {}).get(name) != tid:
                keys.append((b, "tag", name))
        for cid in roots.changelogs.get(b, []):
            if old is None or cid not in old.changelogs.get(b, []):
                keys.append((b, "changelog", cid))
    reader = views[0]
    local = reader.fileio.is_local(reader.location)
    # Decoding manifest lists and manifests is CPU-bound: on big local tables it goes to
    # worker processes (threads share one GIL), in chunks so each view or FileIO is
    # pickled once per chunk; remote stores keep threads, to overlap request latency.
    progress.start("reading roots", len(keys))
    read_roots = partial(root_chunk, {v.branch: v for v in views})
    if local and len(keys) >= PROCESS_MIN_ROOTS:
        parts = executor.map(
            read_roots, _chunks(keys, executor), on_result=_advance(progress), work="cpu"
        )
    else:
        parts = executor.map(read_roots, [[k] for k in keys], on_result=_advance(progress))
    direct = _Used()
    for _count, part in parts:
        direct.names |= part.names
        direct.manifests.update(part.manifests)
    progress.finish()
    # The lists say how many entries each manifest holds: an upper bound of the names.
    expected = len(direct.names) + sum(r.entries for r in direct.manifests.values())
    used = UsedNames(expected if spill is not None else 0, spill or LazySpill())
    used.update(direct.names)
    refs = sorted(direct.manifests.items())
    del direct
    progress.start("reading manifests", len(refs))
    # Processes for big local tables, as the roots; chunks of a bounded number of entries
    # (each chunk's names come back as one list) read a few at a time, so the names are
    # never all in flight at once.
    work: Work = "cpu" if local and sum(r.file_size for _, r in refs) >= PROCESS_MIN_BYTES else "io"
    chunks = (
        _entry_chunks(reader, refs, executor)
        if work == "cpu"
        else [[(reader.paths.manifest_path(name), ref.expected())] for name, ref in refs]
    )
    missing: list[str] = []
    read_names = partial(names_in_manifest_files, reader.fileio)
    for count, names, gone in executor.imap(read_names, chunks, work=work):
        progress.advance(count)
        used.update(names)
        missing += gone
    progress.finish()
    check_missing_manifests(views, missing)
    return used


def check_used_set(used_count: int, roots: RootsSeen) -> None:
    if used_count == 0 and any(roots.snapshots.values()):
        raise SafetyRefusalError(
            "the set of used files is empty but the table has snapshots; "
            "refusing to delete anything"
        )
