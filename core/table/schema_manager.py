"""SchemaManager: the table's schemas (``schema/schema-N``)."""

from __future__ import annotations

from core.errors import CorruptMetadataError
from core.format.metadata_io import list_versioned, read_json
from core.format.model import TableSchema
from core.io.fileio import FileIO, join


class SchemaManager:
    def __init__(self, fileio: FileIO, branch_root: str) -> None:
        self.fileio = fileio
        self.directory = join(branch_root, "schema")

    def ids(self) -> list[int]:
        return sorted(list_versioned(self.fileio, self.directory, "schema-"))

    def schema(self, schema_id: int) -> TableSchema:
        path = join(self.directory, f"schema-{schema_id}")
        try:
            return TableSchema.from_json(read_json(self.fileio, path), path)
        except FileNotFoundError:
            raise CorruptMetadataError(path, "schema file is missing") from None

    def latest(self) -> TableSchema | None:
        ids = self.ids()
        return self.schema(ids[-1]) if ids else None
