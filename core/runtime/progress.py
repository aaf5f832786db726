"""Progress protocol: planners and executors report, the CLI decides how to draw."""

from __future__ import annotations

from typing import Protocol


class Progress(Protocol):
    def start(self, phase: str, total: int | None = None) -> None: ...

    def advance(self, amount: int = 1) -> None: ...

    def finish(self) -> None: ...


class NullProgress:
    def start(self, phase: str, total: int | None = None) -> None:
        pass

    def advance(self, amount: int = 1) -> None:
        pass

    def finish(self) -> None:
        pass
