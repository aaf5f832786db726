"""Output: the only writer to stdout. Human (Rich), JSON, or quiet; diagnostics to stderr.

Everything given to Output is data, shown exactly as it is: table names, paths, partition
values, tag names and messages may hold ``[bold]``, ``[/]`` or ``:smile:``, and Rich never
reads them as markup or emoji codes. Our own styling is explicit: a ``Styled`` part
(``bold("expire-snapshots")``, ``red("failed")``) among the parts of a line or a cell.
"""

from __future__ import annotations

import datetime as dt
import shutil
import sys
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from enum import Enum
from functools import partial, wraps
from typing import Any, NamedTuple, TypeVar, cast

from rich import box
from rich.cells import cell_len
from rich.console import Console
from rich.table import Table
from rich.text import Text

from paimon_cli.json_stream import iterencode
from paimon_cli.layout import (
    MIN_RECORD_WIDTH,
    Fold,
    fold,
    fold_of,
    layout,
    unbreakable,
    wrap_prose,
)

SCHEMA_VERSION = 1
# Rows a listing shows on a terminal without --limit: about a screenful (DECISIONS D19).
SCREEN = 40
# Wider than any row: Rich sizes tables to their content, so nothing is padded to it.
_UNLIMITED_WIDTH = 1_000_000


class OutputClosed(Exception):
    """stdout or stderr was closed under us (``... | head -1``): the reader has what it
    wanted, so the command stops quietly (``paimon_cli.errors.closed_pipe``)."""


_Method = TypeVar("_Method", bound=Callable[..., None])


def _writes(method: _Method) -> _Method:
    """Only writes to our own streams become OutputClosed: a storage socket's EPIPE stays a
    storage failure."""

    @wraps(method)
    def wrapper(*args: Any, **kwargs: Any) -> None:
        try:
            method(*args, **kwargs)
        except BrokenPipeError:
            raise OutputClosed from None

    return cast(_Method, wrapper)


class _Console(Console):
    def on_broken_pipe(self) -> None:
        # Rich would exit 1 here, as a failure: we stop quietly instead (OutputClosed).
        self.quiet = True
        raise OutputClosed


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


# -- one format for times, durations and limits in human output ---------------------------
_INT_MAX = 2**31 - 1  # Java's Integer.MAX_VALUE: Paimon's "no limit"


def human_time(ms: int | None, zone: dt.tzinfo | None) -> str:
    """An instant in the table zone (--timezone, else this machine's) with its offset:
    ``2026-11-21 22:10:00+01:00``, whatever ``TZ`` says once --timezone is given."""
    from core.runtime.timeparse import format_instant

    return "-" if ms is None else format_instant(ms, zone)


def human_wall_clock(value: dt.datetime | str | None, zone: dt.tzinfo | None) -> str:
    """A wall-clock time Paimon stores without a zone (file and tag creation), read in the
    table zone and shown like every other time."""
    from core.runtime.timeparse import format_wall_clock, system_zone

    if value is None:
        return "-"
    naive = dt.datetime.fromisoformat(value) if isinstance(value, str) else value
    return format_wall_clock(naive, zone if zone is not None else system_zone())


def human_duration(ms: int | None) -> str:
    """``1 h``, ``1 h 30 min``, ``23 d 1 h 22 min``: largest units first, zeros left out."""
    from core.runtime.timeparse import format_duration

    return "-" if ms is None else format_duration(ms)


def human_elapsed(seconds: float) -> str:
    """How long something took, in the one duration format: ``38 ms`` under a second, whole
    seconds and up beyond (``2 s``, ``1 min 5 s``)."""
    from core.runtime.timeparse import format_elapsed

    return format_elapsed(round(seconds * 1000))


def listed(values: Iterable[Any] | None) -> str:
    """Values as a reader writes them, ``dt, hr`` (never a Python list's ``['dt', 'hr']``);
    none: ``-``."""
    return ", ".join(str(v) for v in values or ()) or "-"


def partition_text(partition: Mapping[str, Any] | None) -> str:
    """A partition as its directory names it, ``dt=2024-01-01/hr=0`` (never a dict's repr);
    the unpartitioned one: ``-``."""
    return "/".join(f"{k}={v}" for k, v in (partition or {}).items()) or "-"


def human_limit(n: int) -> str:
    """A count limit; Paimon's Integer.MAX_VALUE default means there is none."""
    return "unlimited" if n >= _INT_MAX else str(n)


class Styled(NamedTuple):
    """Text shown in a Rich style (never parsed: it may be data too)."""

    text: str
    style: str


def bold(text: str) -> Styled:
    return Styled(text, "bold")


def dim(text: str) -> Styled:
    return Styled(text, "dim")


def green(text: str) -> Styled:
    return Styled(text, "green")


def red(text: str) -> Styled:
    return Styled(text, "red")


def yellow(text: str) -> Styled:
    return Styled(text, "yellow")


Part = str | Styled


def rich_text(*parts: Part) -> Text:
    """The parts as one Rich ``Text``: plain strings as they are, ``Styled`` in their style;
    nothing is read as markup or emoji."""
    text = Text()
    for part in parts:
        if isinstance(part, Styled):
            text.append(printable(part.text), style=part.style)
        else:
            text.append(printable(part))
    return text


def _cell(value: Any) -> Styled:
    """A table cell as its text and style (``None`` shows as ``-``)."""
    if isinstance(value, Styled):
        return Styled(printable(value.text), value.style)
    return Styled(printable("-" if value is None else str(value)), "")


def terminal_width() -> int | None:
    """The width of the terminal stdout is, or None for a pipe or a file (never folded)."""
    if not sys.stdout.isatty():
        return None
    return shutil.get_terminal_size().columns


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


def row_limit(limit: int | None, terminal: bool) -> int | None:
    """How many rows a listing shows (DECISIONS D19): ``--limit N`` when given (0: all);
    else a screenful on a terminal and every row in a pipe or a file, so grep sees all."""
    if limit is not None:
        return limit or None
    return SCREEN if terminal else None


def _print_prose(console: Console, text: Text) -> None:
    """A line of prose: on a terminal narrower than it, wrapped between words under its
    first word after the label, a path only after a "/" (DECISIONS D19); pipes and files
    have no width, so are never wrapped."""
    width = console.width
    if "\n" in text.plain or cell_len(text.plain) <= width or console.soft_wrap:
        console.print(text)
        return
    hang, lines = wrap_prose(text.plain, width)
    for n, (begin, end) in enumerate(lines):
        piece = text[begin:end]
        if n:
            piece = Text(" " * hang) + piece
        console.print(piece, no_wrap=True, overflow="ignore", crop=False)


class Output:
    def __init__(self, mode: Mode, *, no_color: bool = False, limit: int | None = None) -> None:
        self.mode = mode
        # Human tables show paths relative to the table being rendered.
        self.table_root: str | None = None
        color = None if not no_color and mode is Mode.HUMAN else False
        # Pipes and files get no width limit: a path is never folded, so grep finds it.
        terminal = terminal_width()
        width = terminal or _UNLIMITED_WIDTH
        #: the rows a listing shows (None: all), and whether --limit chose it
        self.row_limit = row_limit(limit, terminal is not None)
        self.limit_given = limit is not None
        # markup and emoji off: a string that reaches a console anyway stays as it is.
        plain = partial(
            _Console, no_color=no_color or None, highlight=False, markup=False, emoji=False
        )
        self.console = plain(
            file=sys.stdout,
            force_terminal=None if color is None else False,
            soft_wrap=False,
            width=width,
        )
        self.err = plain(file=sys.stderr, soft_wrap=not sys.stderr.isatty())

    def rel(self, path: str, root: str | None = None) -> str:
        """``path`` relative to ``root`` (default: the table being rendered) when inside it."""
        base = (root if root is not None else self.table_root or "") + "/"
        return path[len(base) :] if base != "/" and path.startswith(base) else path

    @property
    def human(self) -> bool:
        return self.mode is Mode.HUMAN

    @_writes
    def json(self, document: dict[str, Any]) -> None:
        """Streamed: a plan of a million orphans is never one string in memory; written as
        the indenting standard encoder writes it (``paimon_cli.json_stream``)."""
        buffer: list[str] = []
        for chunk in iterencode(document, _json_default):
            buffer.append(chunk)
            if len(buffer) >= 8192:
                sys.stdout.write("".join(buffer))
                buffer.clear()
        buffer.append("\n")
        sys.stdout.write("".join(buffer))
        sys.stdout.flush()

    @_writes
    def line(self, *parts: Part) -> None:
        """One line of human output: its parts side by side (see ``rich_text``)."""
        if self.mode is not Mode.HUMAN:
            return
        _print_prose(self.console, rich_text(*parts))

    @_writes
    def plain(self, text: str) -> None:
        """Unstyled line for quiet mode and pipes."""
        sys.stdout.write(printable(text) + "\n")

    @_writes
    def table(
        self,
        title: str | None,
        columns: Sequence[str],
        rows: Iterable[Sequence[Any]],
        *,
        limit: int | None = None,
        total: int | None = None,
        listing: bool = False,
    ) -> None:
        """A table of values (``None`` shows as ``-``; a ``Styled`` cell keeps its style),
        laid out for the terminal's width by ``paimon_cli.layout``: only paths and prose
        fold, and when that is not enough each row is shown as a record. A ``listing`` (a
        view's rows, a plan's actions) shows the rows of the one rule of ``row_limit``;
        ``limit`` caps a summary's top rows (``total`` of them)."""
        if self.mode is not Mode.HUMAN:
            return
        if listing:
            limit = self.row_limit
        cells: list[list[Styled]] = []
        skipped = 0
        for row in rows:
            if limit is not None and len(cells) >= limit:
                if not listing:
                    break
                skipped += 1  # counted, never rendered
                continue
            cells.append([_cell(v) for v in row])
        headers = [printable(c) for c in columns]
        if title is not None:
            self.line(title)
        fit = layout(headers, [[c.text for c in row] for row in cells], self.console.width)
        if fit.records:
            self._records(headers, cells)
        else:
            self._table(headers, cells, fit.widths)
        if skipped:
            self.more(skipped)
        elif total is not None and limit is not None and total > len(cells):
            self.line(dim(f"... {total - len(cells):,} more; --json has all"))

    def more(self, skipped: int) -> None:
        """The line that ends a listing cut by ``row_limit``: how many rows it left out and
        how to see them."""
        how = "--limit 0 shows all" if self.limit_given else "--limit N or a pipe shows all"
        self.line(dim(f"... {skipped:,} more; {how}"))

    def _table(
        self, headers: Sequence[str], cells: Sequence[Sequence[Styled]], widths: Sequence[int]
    ) -> None:
        # Columns apart by two blanks, the header ruled off: the most room on a terminal.
        t = Table(box=box.SIMPLE_HEAD, padding=(0, 1, 0, 0), show_edge=False, pad_edge=False)
        for header, width in zip(headers, widths, strict=True):
            lines = fold(header, width, Fold.WORDS)
            t.add_column(Text("\n".join(lines)), width=width, no_wrap=True)
        for row in cells:
            t.add_row(
                *[
                    Text("\n".join(fold(c.text, w, fold_of(h))), style=c.style)
                    for c, w, h in zip(row, widths, headers, strict=True)
                ]
            )
        self.console.print(t)

    def _records(self, headers: Sequence[str], cells: Sequence[Sequence[Styled]]) -> None:
        """Each row as ``column  value`` lines: what a table too wide for the terminal shows
        without breaking a value that must stay whole."""
        width = self.console.width
        label = max(cell_len(h) for h in headers)
        room = max(width - label - 2, MIN_RECORD_WIDTH)
        for n, row in enumerate(cells):
            if n:
                self.console.print()
            for header, cell in zip(headers, row, strict=True):
                how = fold_of(header)
                text = Text(header + " " * (label + 2 - cell_len(header)))
                if unbreakable(cell.text, how) <= room:
                    indent, lines = label + 2, fold(cell.text, room, how)
                else:  # a name longer than the room: under its label, the whole width
                    text.rstrip()
                    indent, lines = 2, ["", *fold(cell.text, max(width - 2, 1), how)]
                text.append(lines[0], style=cell.style)
                for more in lines[1:]:
                    text.append("\n" + " " * indent)
                    text.append(more, style=cell.style)
                self.console.print(text, no_wrap=True, overflow="ignore", crop=False)

    @_writes
    def problem(self, text: str) -> None:
        """A line of a failure summary: on stderr, whatever the mode (``-q`` included)."""
        _print_prose(self.err, rich_text(text))

    @_writes
    def warn(self, text: str) -> None:
        _print_prose(self.err, rich_text(yellow("warning:"), " ", text))

    @_writes
    def info(self, text: str) -> None:
        if self.mode is Mode.HUMAN:
            _print_prose(self.err, rich_text(text))
