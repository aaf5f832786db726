"""BranchManager: ``branch/branch-<name>`` directories."""

from __future__ import annotations

from core.errors import InvalidOptionError
from core.format.metadata_io import KindDirectory
from core.io.fileio import FileIO, join

MAIN = "main"


def validate_branch_name(name: str) -> str:
    """Paimon's rules (``BranchManager.validateBranch``): not ``main``, not blank, not all
    digits; and since the name becomes a directory, no separators and no leading dot."""
    if name == MAIN:
        raise InvalidOptionError(f"branch name {MAIN!r} is the default branch and cannot be used")
    if not name or not name.strip():
        raise InvalidOptionError("branch name must not be blank")
    if name.isdigit():
        raise InvalidOptionError(f"branch name cannot be pure numeric string but is {name!r}")
    if "/" in name or "\\" in name or name.startswith("."):
        raise InvalidOptionError(
            f"invalid branch name {name!r}: it becomes the directory branch/branch-<name>, so "
            "it may not contain '/' or '\\' or start with '.'"
        )
    return name


class BranchManager(KindDirectory):
    """``path(name)`` is the branch's root directory."""

    def __init__(self, fileio: FileIO, table_root: str) -> None:
        super().__init__(fileio, table_root, "branch")

    def branches(self) -> list[str]:
        """Names of non-main branches (directories only). A directory left without any
        schema, snapshot or tag file is no branch: no reader can open it, nothing in it
        references a file, and it is what a delete-branch leaves when it is stopped right
        after its schemas went (its journal removes the empty directories)."""
        return sorted(
            info.name[len(self.prefix) :]
            for info in self.fileio.list_dir(self.directory)
            if info.is_dir
            and info.name.startswith(self.prefix)
            and len(info.name) > len(self.prefix)
            and not self._remnant(info.path)
        )

    def _remnant(self, root: str) -> bool:
        return not any(
            not f.is_dir
            for sub in ("schema", "snapshot", "tag")
            for f in self.fileio.list_dir(join(root, sub))
        )
