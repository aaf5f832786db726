"""PaimonTable: a location + FileIO + options + managers for one branch; open_table()."""

from __future__ import annotations

import logging
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field

from core.errors import MissingFileError, TableNotFoundError
from core.format.list_blocks import ListBlock, ListBlocks
from core.format.manifest import (
    decode_expire_entries,
    decode_index_manifest,
    decode_manifest,
    decode_manifest_list,
    live_entries,
)
from core.format.model import (
    UNRECORDED,
    ExpireFileEntry,
    IndexManifestEntry,
    ManifestEntry,
    ManifestFileMeta,
    ManifestRef,
    Snapshot,
    TableSchema,
)
from core.format.options import TableOptions
from core.io.fileio import FileIO, normalize_path
from core.table.branch_manager import BranchManager
from core.table.catalog_env import PATH, CatalogEnvironment
from core.table.consumer_manager import ConsumerManager
from core.table.paths import PathFactory, branch_root_of
from core.table.schema_manager import SchemaManager
from core.table.snapshot_manager import SnapshotManager
from core.table.tag_manager import TagManager

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class PaimonTable:
    location: str
    fileio: FileIO
    branch: str
    schema: TableSchema
    options: TableOptions
    paths: PathFactory
    branch_root: str
    snapshots: SnapshotManager = field(repr=False)
    changelogs: SnapshotManager = field(repr=False)
    tags: TagManager = field(repr=False)
    consumers: ConsumerManager = field(repr=False)
    schemas: SchemaManager = field(repr=False)
    branches: BranchManager = field(repr=False)
    #: the catalog the table was loaded from (its name, identifier, commit lock)
    catalog: CatalogEnvironment = field(default=PATH, repr=False)
    # Decoded manifest-list blocks, shared by every read through this table (and views of
    # it): content-addressed, so never stale (core.format.list_blocks).
    list_blocks: ListBlocks = field(default_factory=ListBlocks, repr=False, compare=False)

    @property
    def name(self) -> str:
        if self.catalog.identifier:
            return self.catalog.identifier
        parts = self.location.rstrip("/").split("/")
        db = parts[-2][:-3] if len(parts) > 1 and parts[-2].endswith(".db") else None
        return f"{db}.{parts[-1]}" if db else parts[-1]

    @property
    def is_primary_key(self) -> bool:
        return bool(self.schema.primary_keys)

    def for_branch(self, branch: str) -> PaimonTable:
        """The same table seen from another branch (shares FileIO and dynamic options)."""
        return open_table(
            self.location,
            fileio=self.fileio,
            branch=branch,
            dynamic_options=self.options.dynamic,
            catalog=self.catalog,
        )

    # -- metadata reading -------------------------------------------------------------------
    def _read(self, name: str, what: str) -> tuple[str, bytes]:
        path = self.paths.manifest_path(name)
        try:
            return path, self.fileio.read_bytes(path)
        except FileNotFoundError:
            raise MissingFileError(path, what) from None

    # Every read passes what the referencing file records (format.manifest): the size a
    # root records for its lists, the size and entry count a list records for a manifest.
    def manifest_list(self, root: Snapshot, name: str) -> list[ManifestFileMeta]:
        """One of ``root``'s manifest lists (``root``: a snapshot, tag or changelog)."""
        path, data = self._read(name, "manifest list")
        return decode_manifest_list(data, path, expect=root.list_expected(name))

    def manifest_list_names(self, root: Snapshot, name: str) -> list[ManifestRef]:
        """The manifests of one of ``root``'s lists, without building ManifestFileMeta."""
        return [ref for block in self.manifest_list_blocks(root, name) for ref in block.refs]

    def manifest_list_blocks(self, root: Snapshot, name: str) -> list[ListBlock]:
        """``manifest_list_names`` by Avro block: a block met before (the previous base
        list's, in a table that never merges manifests) is not decoded again, and callers
        that remember block keys can skip what they have already seen."""
        path, data = self._read(name, "manifest list")
        return self.list_blocks.read(data, path, root.list_expected(name))

    def manifest(self, ref: ManifestFileMeta | ManifestRef) -> Iterator[ManifestEntry]:
        """The entries of a manifest, as its list names it."""
        path, data = self._read(ref.file_name, "manifest")
        return decode_manifest(data, path, expect=ref.expected())

    def expire_entries(self, ref: ManifestFileMeta | ManifestRef) -> Iterator[ExpireFileEntry]:
        """The entries of a manifest as expiry reads them: kind and location only."""
        path, data = self._read(ref.file_name, "manifest")
        return decode_expire_entries(data, path, expect=ref.expected())

    def index_manifest(self, root: Snapshot) -> list[IndexManifestEntry]:
        """``root``'s index manifest (nothing records its size)."""
        if not root.index_manifest:
            return []
        path, data = self._read(root.index_manifest, "index manifest")
        return decode_index_manifest(data, path, expect=UNRECORDED)

    def data_manifests(self, snapshot: Snapshot) -> list[ManifestFileMeta]:
        """Manifests of the snapshot's data view: base list, then delta list."""
        return self.manifest_list(snapshot, snapshot.base_manifest_list) + self.manifest_list(
            snapshot, snapshot.delta_manifest_list
        )

    def entries(self, manifests: list[ManifestFileMeta]) -> Iterator[ManifestEntry]:
        for meta in manifests:
            yield from self.manifest(meta)

    def live_files(self, snapshot: Snapshot) -> list[ManifestEntry]:
        """Files of a snapshot (base + delta replayed, ADD/DELETE merged)."""
        return live_entries(self.entries(self.data_manifests(snapshot)))

    def changelog_files(self, snapshot: Snapshot) -> list[ManifestEntry]:
        if not snapshot.changelog_manifest_list:
            return []
        return list(self.entries(self.manifest_list(snapshot, snapshot.changelog_manifest_list)))

    def index_files(self, snapshot: Snapshot) -> list[IndexManifestEntry]:
        return self.index_manifest(snapshot)


def open_table(
    location: str,
    *,
    fileio: FileIO | None = None,
    branch: str = "main",
    dynamic_options: Mapping[str, str] | None = None,
    catalog: CatalogEnvironment = PATH,
) -> PaimonTable:
    """Open a table at ``location``; TableNotFoundError if it holds no Paimon schema.
    ``catalog``: the catalog it was loaded from (``core.catalog``), if any."""
    fileio = fileio or FileIO()
    root = normalize_path(location)
    info = fileio.info(root)
    if info is None:
        raise TableNotFoundError(f"table not found: {root} does not exist")
    if not info.is_dir and fileio.is_local(root):
        raise TableNotFoundError(f"table not found: {root} is not a directory")
    branches = BranchManager(fileio, root)
    branch_root = branch_root_of(root, branch)
    if branch != "main" and branch not in branches.branches():
        raise TableNotFoundError(
            f"branch {branch!r} not found in {root}",
            hint=f"existing branches: {', '.join(branches.branches()) or 'none'}",
        )
    schemas = SchemaManager(fileio, branch_root)
    schema = schemas.latest()
    if schema is None and branch != "main":
        raise TableNotFoundError(
            f"branch {branch!r} of {root} has no schema/schema-N file",
            hint=f"the branch directory {branch_root} is incomplete",
        )
    if schema is None:
        raise TableNotFoundError(
            f"not a Paimon table: {root} has no schema/schema-N file",
            hint="point at the table directory (<warehouse>/<db>.db/<table>) "
            "or use DB.TABLE with --warehouse",
        )
    options = TableOptions(schema.options, dynamic_options)
    paths = PathFactory(root, schema, options)
    return PaimonTable(
        location=root,
        fileio=fileio,
        branch=branch,
        schema=schema,
        options=options,
        paths=paths,
        branch_root=branch_root,
        snapshots=SnapshotManager(fileio, branch_root),
        changelogs=SnapshotManager(fileio, branch_root, kind="changelog"),
        tags=TagManager(fileio, branch_root),
        consumers=ConsumerManager(fileio, branch_root),
        schemas=schemas,
        branches=branches,
        catalog=catalog,
    )
