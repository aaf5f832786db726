"""BranchManager: ``branch/branch-<name>`` directories."""

from __future__ import annotations

from core.io.fileio import FileIO, join


class BranchManager:
    def __init__(self, fileio: FileIO, table_root: str) -> None:
        self.fileio = fileio
        self.directory = join(table_root, "branch")

    def branches(self) -> list[str]:
        """Names of non-main branches (directories only)."""
        return sorted(
            info.name[len("branch-") :]
            for info in self.fileio.list_dir(self.directory)
            if info.is_dir and info.name.startswith("branch-") and len(info.name) > 7
        )
