"""Tables on a narrow terminal: which values may fold over lines, and where.

A time, a number, a name, an option or a header word is never broken: a reader copies it,
and ``14:05:49+00:0`` / ``0`` reads as a different time. Only paths fold, after a ``/``,
and prose (details, reasons) wraps between words; headers wrap between words. When that
is not enough for the terminal, each row is shown as ``column  value`` lines instead of a
table (only there may a single name longer than the whole line be cut). Pipes and files
are never folded (``Output`` gives them no width limit).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from enum import Enum

from rich.cells import cell_len

# Between two columns: a cell's right padding and the (blank) column separator.
COLUMN_GAP = 2
# Records narrower than this would read as confetti.
MIN_RECORD_WIDTH = 16


class Fold(Enum):
    NEVER = "never"  # times, numbers, names: kept whole, whatever the width
    PATH = "path"  # after a "/"
    WORDS = "words"  # between words


# Columns, by header, whose values may fold; every other column keeps its values whole.
_FOLDING: dict[str, Fold] = {
    "path": Fold.PATH,
    "partition": Fold.PATH,
    "table": Fold.PATH,
    "bucket directory": Fold.PATH,
    "detail": Fold.WORDS,
    "reason": Fold.WORDS,
    "needed by": Fold.WORDS,
    "error": Fold.WORDS,
    "type": Fold.WORDS,
    "value": Fold.WORDS,
    "tags": Fold.WORDS,
}


def fold_of(header: str) -> Fold:
    return _FOLDING.get(header, Fold.NEVER)


def _chop(piece: str, width: int) -> list[str]:
    """A piece wider than ``width`` (a file name longer than the column): cut by cells,
    the one break no layout can avoid."""
    out, line = [], ""
    for ch in piece:
        if line and cell_len(line + ch) > width:
            out.append(line)
            line = ""
        line += ch
    return [*out, line]


def _pack(pieces: Sequence[str], width: int, sep: str) -> list[str]:
    """Pieces joined by ``sep`` into lines of at most ``width`` cells, greedily, in order;
    a piece wider than a line is cut."""
    lines: list[str] = []
    line = ""
    for whole in pieces:
        for piece in _chop(whole, width) if cell_len(whole) > width else [whole]:
            joined = f"{line}{sep}{piece}" if line else piece
            if cell_len(joined) <= width:
                line = joined
            else:
                lines.append(line)
                line = piece
    return [*lines, line]


def fold(text: str, width: int, how: Fold) -> list[str]:
    """``text`` as lines of at most ``width`` cells: a path after its slashes, prose
    between words; a value that never folds stays one line."""
    out: list[str] = []
    for paragraph in text.split("\n"):
        if how is Fold.NEVER or cell_len(paragraph) <= width:
            out.append(paragraph)
        elif how is Fold.PATH:
            out += _pack(re.findall(r"[^/]*/|[^/]+", paragraph), width, "")
        else:
            out += _pack(paragraph.split(), width, " ")
    return out


def longest_word(text: str) -> int:
    return max((cell_len(w) for w in text.split()), default=0)


def unbreakable(text: str, how: Fold) -> int:
    """The widest piece of ``text`` that ``fold`` keeps on one line."""
    if how is Fold.NEVER:
        return max((cell_len(line) for line in text.split("\n")), default=0)
    if how is Fold.PATH:
        return max((cell_len(p) for p in re.findall(r"[^/]*/|[^/]+", text)), default=0)
    return longest_word(text)


@dataclass(frozen=True, slots=True)
class Layout:
    """Content widths of the columns of a table that fits, or ``records`` when no table
    fits the width without breaking a value that must stay whole."""

    widths: tuple[int, ...] = ()
    records: bool = False


def layout(headers: Sequence[str], rows: Sequence[Sequence[str]], width: int) -> Layout:
    """How a table of these cells fits ``width`` terminal cells."""
    folds = [fold_of(h) for h in headers]
    gaps = COLUMN_GAP * (len(headers) - 1)
    columns = range(len(headers))
    natural = [
        max([cell_len(headers[i])] + [unbreakable(row[i], Fold.NEVER) for row in rows])
        for i in columns
    ]
    if sum(natural) + gaps <= width:
        return Layout(tuple(natural))
    # Headers wrap between words, paths after a "/", prose between words.
    least = [
        max([longest_word(headers[i])] + [unbreakable(row[i], folds[i]) for row in rows])
        for i in columns
    ]
    widths = list(least)
    spare = width - gaps - sum(widths)
    if spare < 0:
        return Layout(records=True)
    # What is left goes to the folding columns, each up to its natural width, in turn.
    folding = [i for i, f in enumerate(folds) if f is not Fold.NEVER]
    while spare > 0:
        wanting = [i for i in folding if widths[i] < natural[i]]
        if not wanting:
            break
        share = max(spare // len(wanting), 1)
        for i in wanting:
            give = min(share, natural[i] - widths[i], spare)
            widths[i] += give
            spare -= give
    return Layout(tuple(widths))
