"""Output: the only writer to stdout. Human (Rich), JSON, or quiet; diagnostics to stderr."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable, Iterator, Mapping, Sequence
from enum import Enum
from typing import Any

from rich.console import Console
from rich.table import Table

SCHEMA_VERSION = 1


class Mode(str, Enum):
    HUMAN = "human"
    JSON = "json"
    QUIET = "quiet"

    @classmethod
    def of(cls, json_out: bool, quiet: bool) -> Mode:
        """--json wins over --quiet; neither is human output."""
        return cls.JSON if json_out else cls.QUIET if quiet else cls.HUMAN


def printable(text: str) -> str:
    """File names that are not UTF-8 arrive as surrogate escapes: show them as U+FFFD
    instead of failing to print (JSON keeps them exactly, as \\udcXX escapes)."""
    return text.encode("utf-8", "surrogateescape").decode("utf-8", "replace")


def human_bytes(n: int | None) -> str:
    if n is None:
        return "-"
    value = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if abs(value) < 1024 or unit == "PiB":
            return f"{int(value)} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    raise AssertionError("unreachable")


class _Streamed(list[Any]):
    """A lazy sequence the (pure-Python, indenting) JSON encoder iterates as an array:
    it only asks lists for truth and iteration."""

    def __init__(self, items: Sequence[Any]) -> None:
        super().__init__()
        self.items = items

    def __iter__(self) -> Iterator[Any]:
        return iter(self.items)

    def __len__(self) -> int:
        return len(self.items)


def _json_default(value: object) -> Any:
    # Plan parts made on access: rows become objects, sequences arrays; the rest, text.
    if isinstance(value, Mapping):
        return dict(value)
    if isinstance(value, Sequence) and not isinstance(value, (str, bytes)):
        return _Streamed(value)
    return str(value)


class Output:
    def __init__(self, mode: Mode, *, no_color: bool = False) -> None:
        self.mode = mode
        # Human tables show paths relative to the table being rendered.
        self.table_root: str | None = None
        color = None if not no_color and mode is Mode.HUMAN else False
        # Pipes get a wide fixed width so paths are not folded into unreadable columns.
        width = None if sys.stdout.isatty() else 160
        self.console = Console(
            file=sys.stdout,
            no_color=no_color or None,
            highlight=False,
            force_terminal=None if color is None else False,
            soft_wrap=False,
            width=width,
        )
        self.err = Console(file=sys.stderr, no_color=no_color or None, highlight=False)

    def rel(self, path: str, root: str | None = None) -> str:
        """``path`` relative to ``root`` (default: the table being rendered) when inside it."""
        base = (root if root is not None else self.table_root or "") + "/"
        return path[len(base) :] if base != "/" and path.startswith(base) else path

    @property
    def human(self) -> bool:
        return self.mode is Mode.HUMAN

    def json(self, document: dict[str, Any]) -> None:
        """Streamed: a plan of a million orphans is never one string in memory."""
        encoder = json.JSONEncoder(indent=2, default=_json_default)
        buffer: list[str] = []
        for chunk in encoder.iterencode(document):
            buffer.append(chunk)
            if len(buffer) >= 8192:
                sys.stdout.write("".join(buffer))
                buffer.clear()
        buffer.append("\n")
        sys.stdout.write("".join(buffer))
        sys.stdout.flush()

    def line(self, text: str = "", *, markup: bool = True) -> None:
        if self.mode is Mode.HUMAN:
            self.console.print(printable(text), markup=markup, highlight=False)

    def plain(self, text: str) -> None:
        """Unstyled line for quiet mode and pipes."""
        sys.stdout.write(printable(text) + "\n")

    def table(
        self,
        title: str | None,
        columns: Sequence[str],
        rows: Iterable[Sequence[Any]],
        *,
        limit: int | None = None,
        total: int | None = None,
    ) -> None:
        if self.mode is not Mode.HUMAN:
            return
        t = Table(title=title, title_justify="left", show_edge=False, pad_edge=False)
        for col in columns:
            t.add_column(col, overflow="fold")
        shown = 0
        for row in rows:
            if limit is not None and shown >= limit:
                break
            t.add_row(*["-" if v is None else printable(str(v)) for v in row])
            shown += 1
        self.console.print(t)
        if total is not None and limit is not None and total > shown:
            self.console.print(f"[dim]... {total - shown} more (use --json for all)[/dim]")

    def warn(self, text: str) -> None:
        self.err.print(f"[yellow]warning:[/yellow] {printable(text)}", highlight=False)

    def info(self, text: str) -> None:
        if self.mode is Mode.HUMAN:
            self.err.print(printable(text), highlight=False)
