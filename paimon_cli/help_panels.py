"""--help in headed panels: the command's own options first, then the shared ones grouped
(run control, output, table, storage, Spark), each default shown one way, ``[default: x]``.

The panel of an option is Typer's ``rich_help_panel``; the app renders help without Rich
(``rich_markup_mode=None``), so the grouping is done here, for --help and the man pages
alike (``docgen`` reads :func:`panels`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from typer import _click
from typer.core import TyperCommand

#: the panel of a command's own options (and of -h/--help)
OWN = "Options"
RUN_CONTROL = "Run control"
OUTPUT = "Output"
TABLE = "Table"
STORAGE = "Storage"
SPARK = "Spark"
#: the shared panels, in the order --help lists them after the command's own options
SHARED_PANELS = (RUN_CONTROL, OUTPUT, TABLE, STORAGE, SPARK)

Record = tuple[str, str]
#: a check of the raw arguments before parsing: a usage message for a spelling that is no
#: longer accepted (``maintain --check full``), or None
OldSpelling = Callable[[Sequence[str]], "str | None"]


def help_record(param: _click.Parameter, ctx: _click.Context) -> Record | None:
    """The option's help record, a default given as text shown as ``[default: text]``
    (Typer writes ``[default: (text)]``)."""
    record = param.get_help_record(ctx)
    shown = getattr(param, "show_default", None)
    if record is None or not isinstance(shown, str):
        return record
    name, text = record
    # "[default: (text)]", or "[default: (text); 1<=x<=1024]" with a range
    return name, text.replace(f"[default: ({shown})", f"[default: {shown}")


def panel_of(param: _click.Parameter) -> str:
    return getattr(param, "rich_help_panel", None) or OWN


def panels(command: _click.Command, ctx: _click.Context) -> list[tuple[str, list[Any]]]:
    """The command's options by panel, in --help order: its own, then the shared panels;
    each entry is ``(panel, [(param, record), ...])`` in declaration order."""
    grouped: dict[str, list[Any]] = {}
    for param in command.get_params(ctx):
        if param.param_type_name != "option":
            continue
        record = help_record(param, ctx)
        if record is not None:
            grouped.setdefault(panel_of(param), []).append((param, record))
    order = [OWN, *SHARED_PANELS]
    extra = [name for name in grouped if name not in order]
    return [(name, grouped[name]) for name in [*order, *extra] if name in grouped]


class PanelCommand(TyperCommand):
    """A command whose --help lists its options in panels (module docstring), and that
    names the new spelling of an option value it no longer takes (``old_spelling``)."""

    def format_options(self, ctx: _click.Context, formatter: _click.HelpFormatter) -> None:
        args = [
            record
            for param in self.get_params(ctx)
            if param.param_type_name == "argument"
            for record in [param.get_help_record(ctx)]
            if record is not None
        ]
        if args:
            with formatter.section("Arguments"):
                formatter.write_dl(args)
        for name, rows in panels(self, ctx):
            with formatter.section(name):
                formatter.write_dl([record for _param, record in rows])

    def parse_args(self, ctx: _click.Context, args: list[str]) -> list[str]:
        check: OldSpelling | None = getattr(self.callback, "old_spelling", None)
        message = check(args) if check is not None else None
        if message is not None:
            raise _click.exceptions.UsageError(message, ctx=ctx)
        return super().parse_args(ctx, args)
