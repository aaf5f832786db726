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


def hanging_indent(text: str, width: int) -> int:
    """Where the continuation lines of a wrapped line of prose start: under the first word
    after its label (``  older than: ...`` -> under ``...``), else two columns in from the
    line's own indent."""
    lead = len(text) - len(text.lstrip(" "))
    colon = text.find(": ", lead)
    if colon >= 0 and cell_len(text[: colon + 2]) <= width // 2:
        return cell_len(text[: colon + 2])
    return min(lead + 2, max(width - MIN_RECORD_WIDTH, 0))


def _fits_in(text: str, start: int, room: int) -> int:
    """The largest end with ``text[start:end]`` at most ``room`` cells (at least one char)."""
    end = start + 1
    while end < len(text) and cell_len(text[start : end + 1]) <= room:
        end += 1
    return end


def wrap_prose(text: str, width: int) -> tuple[int, list[tuple[int, int]]]:
    """A line of prose wrapped to ``width`` cells: the hanging indent of the lines after the
    first, and each line as ``[begin, end)`` of ``text``. Lines break between words, and a
    path (a word with ``/``) only after a ``/``, never inside a name; only a single name
    wider than the whole line is cut."""
    hang = hanging_indent(text, width)
    lines: list[tuple[int, int]] = []
    start = 0
    while start < len(text):
        room = width - (hang if lines else 0)
        if cell_len(text[start:]) <= room:
            lines.append((start, len(text)))
            break
        limit = _fits_in(text, start, room)  # text[start:limit] fits
        end = next(
            (
                e
                for e in range(limit, start, -1)
                if e < len(text) and (text[e] == " " or text[e - 1] == "/")
            ),
            None,
        )
        if end is None or not text[start:end].strip():
            end = limit  # one name wider than the line: the one cut no wrap avoids
        trimmed = end
        while trimmed > start + 1 and text[trimmed - 1] == " ":
            trimmed -= 1
        lines.append((start, trimmed))
        start = end
        while start < len(text) and text[start] == " ":
            start += 1
    return hang, lines
