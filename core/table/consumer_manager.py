"""ConsumerManager: streaming consumers' progress (``consumer/consumer-<id>``)."""

from __future__ import annotations

from core.format.metadata_io import KindDirectory, list_named, read_json
from core.format.model import Consumer
from core.io.fileio import FileIO


class ConsumerManager(KindDirectory):
    def __init__(self, fileio: FileIO, branch_root: str) -> None:
        super().__init__(fileio, branch_root, "consumer")

    def consumers(self) -> list[Consumer]:
        out = []
        for cid, info in sorted(list_named(self.fileio, self.directory, self.prefix).items()):
            try:
                data = read_json(self.fileio, info.path)
            except FileNotFoundError:
                continue  # removed between listing and reading: Paimon skips it too
            out.append(Consumer.from_json(cid, data, info.path, info.mtime_ms, info.size))
        return out

    def min_next_snapshot(self, consumers: list[Consumer] | None = None) -> Consumer | None:
        """The consumer with the smallest nextSnapshot (the one that bounds expiry)."""
        found = self.consumers() if consumers is None else consumers
        return min(found, key=lambda c: (c.next_snapshot, c.id)) if found else None
