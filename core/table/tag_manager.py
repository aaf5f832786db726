"""TagManager: ``tag/tag-<name>`` files of one branch."""

from __future__ import annotations

import difflib

from core.errors import MissingFileError
from core.format.metadata_io import KindDirectory, list_named, read_json
from core.format.model import Tag
from core.io.fileio import FileInfo, FileIO


class TagManager(KindDirectory):
    def __init__(self, fileio: FileIO, branch_root: str) -> None:
        super().__init__(fileio, branch_root, "tag")

    def listing(self) -> dict[str, FileInfo]:
        return list_named(self.fileio, self.directory, self.prefix)

    def names(self) -> list[str]:
        return sorted(self.listing())

    def tag(self, name: str) -> Tag:
        path = self.path(name)
        try:
            return Tag.from_json(name, read_json(self.fileio, path), path)
        except FileNotFoundError:
            raise MissingFileError(path, f"tag {name!r}") from None

    def missing(self, name: str) -> MissingFileError:
        """The error for a tag a user named that is not there, with the closest names."""
        names = self.names()
        close = difflib.get_close_matches(name, names, n=3)
        hint = (
            f"did you mean {', '.join(close)}?"
            if close
            else f"its tags: {', '.join(names[:10])}{' ...' if len(names) > 10 else ''}"
            if names
            else "the table has no tags"
        )
        return MissingFileError(self.path(name), f"tag {name!r}", hint=hint)

    def tags(self) -> list[Tag]:
        """All tags sorted by snapshot id then name; tags deleted meanwhile are skipped."""
        out = []
        for name in self.names():
            try:
                out.append(self.tag(name))
            except MissingFileError:
                continue
        return sorted(out, key=lambda t: (t.snapshot.id, t.name))
