"""The root command group: usage errors in our words (and as JSON with --json), global
diagnostics flags accepted after the command name too, help that never wraps an example
and never breaks an option name or a path at a hyphen."""

from __future__ import annotations

import difflib
import json
import re
import signal
import sys
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from typer import _click
from typer.core import TyperGroup
from typer.exceptions import Abort, Exit
from typer.models import Context

from core.runtime.interrupts import terminable
from paimon_cli.errors import closed_pipe
from paimon_cli.output import OutputClosed, printable

EXIT_USAGE = 2
# Root flags that may also follow the command name (`paimon expire-snapshots T -v`).
_GLOBAL_FLAGS = frozenset({"--verbose", "--debug", "--no-color"})
_GLOBAL_WITH_VALUE = frozenset({"--log-level"})
_VERBOSE = re.compile(r"-v+")
# Command options that may also precede the command name (`paimon -q expire-snapshots T`).
_COMMAND_FLAGS = frozenset({"-q", "--quiet", "--json"})


def _is_global(token: str) -> bool:
    return token in _GLOBAL_FLAGS or _VERBOSE.fullmatch(token) is not None


def reorder(args: Sequence[str], commands: Sequence[str]) -> list[str]:
    """Move root flags found after the command name before it, and command flags found
    before it after it; everything after ``--`` stays where it is."""
    args = list(args)
    end = args.index("--") if "--" in args else len(args)
    at = 0
    while at < end and args[at] not in commands:
        at += 2 if args[at] in _GLOBAL_WITH_VALUE else 1
    if at >= end:
        return args
    before, command, after, rest = args[:at], args[at], args[at + 1 : end], args[end:]
    root = [t for t in before if t not in _COMMAND_FLAGS]
    moved_in = [t for t in before if t in _COMMAND_FLAGS]
    kept: list[str] = []
    i = 0
    while i < len(after):
        token = after[i]
        if _is_global(token):
            root.append(token)
        elif token in _GLOBAL_WITH_VALUE and i + 1 < len(after):
            root += [token, after[i + 1]]
            i += 1
        elif token.split("=", 1)[0] in _GLOBAL_WITH_VALUE:
            root.append(token)
        else:
            kept.append(token)
        i += 1
    return [*root, command, *moved_in, *kept, *rest]


def _wants_json(args: Sequence[str]) -> bool:
    end = list(args).index("--") if "--" in args else len(args)
    return "--json" in args[:end]


def _choices_of(message: str) -> list[str]:
    _, _, tail = message.partition("is not one of ")
    return re.findall(r"'([^']*)'", tail)


def our_words(exc: _click.exceptions.UsageError) -> str:
    """The message of a usage error, with the validation library's phrasing replaced."""
    message = exc.message
    cause = exc.__cause__
    errors = getattr(cause, "errors", None)
    if not isinstance(exc, _click.exceptions.BadParameter) or not callable(errors):
        return message
    first = (errors() or [{}])[0]
    kind, value = str(first.get("type", "")), first.get("input")
    limits = first.get("ctx") or {}
    if kind == "int_parsing":
        return f"{value!r} is not a whole number"
    if kind == "float_parsing":
        return f"{value!r} is not a number"
    if kind == "bool_parsing":
        return f"{value!r} is not true or false"
    if kind in ("greater_than_equal", "greater_than"):
        bound = limits.get("ge", limits.get("gt"))
        return f"{value} is too small (the minimum is {bound})"
    if kind in ("less_than_equal", "less_than"):
        bound = limits.get("le", limits.get("lt"))
        return f"{value} is too large (the maximum is {bound})"
    choices = _choices_of(str(first.get("msg", "")))
    if choices:
        text = f"{value!r} is not one of {', '.join(choices)}"
        close = difflib.get_close_matches(str(value), choices, n=1)
        return text + (f"; did you mean {close[0]!r}?" if close else "")
    return message.removeprefix("Value error, ")


def _usage_hint(exc: _click.exceptions.UsageError) -> str | None:
    ctx = exc.ctx
    if ctx is None:
        return None
    return f"see '{ctx.command_path} {ctx.help_option_names[0]}'"


def show_usage_error(exc: _click.exceptions.UsageError, *, as_json: bool) -> None:
    """Click's usage block and message on stderr, or one JSON error document there."""
    if isinstance(exc, _click.exceptions.BadParameter):
        exc.message = our_words(exc)
    elif isinstance(exc, _click.exceptions.NoSuchOption):
        close = difflib.get_close_matches(exc.option_name, exc.possibilities or (), n=1)
        exc.message = f"No such option: {exc.option_name}" + (
            f"; did you mean {close[0]}?" if close else ""
        )
        exc.possibilities = None  # said above, once
    if as_json:
        error: dict[str, Any] = {"kind": "usage_error", "message": exc.format_message()}
        hint = _usage_hint(exc)
        if hint:
            error["hint"] = hint
        sys.stderr.write(json.dumps({"error": error}) + "\n")
        return
    exc.show()


# U+2011 NON-BREAKING HYPHEN stands in for "-" while Click wraps help text: its wrapper
# breaks words after a hyphen ("--max-requests-" / "per-second", ".paimon-" / "cli/").
_HYPHEN_STAND_IN = "\u2011"


def _whole(text: str) -> str:
    return text.replace("-", _HYPHEN_STAND_IN)


class HelpFormatter(_click.HelpFormatter):
    """Click's help layout, wrapped only between words: option names, paths and other
    hyphenated words stay whole on narrow terminals."""

    @contextmanager
    def _restored(self) -> Iterator[None]:
        start = len(self.buffer)
        yield
        self.buffer[start:] = [s.replace(_HYPHEN_STAND_IN, "-") for s in self.buffer[start:]]

    def write_usage(self, prog: str, args: str = "", prefix: str | None = None) -> None:
        with self._restored():
            super().write_usage(prog, _whole(args), prefix)

    def write_text(self, text: str) -> None:
        with self._restored():
            super().write_text(_whole(text))

    def write_dl(
        self, rows: Iterable[tuple[str, str]], col_max: int = 30, col_spacing: int = 2
    ) -> None:
        with self._restored():
            super().write_dl([(_whole(a), _whole(b)) for a, b in rows], col_max, col_spacing)


class PaimonContext(Context):
    formatter_class = HelpFormatter


def _mark_examples(epilog: str | None) -> str | None:
    """Click rewraps epilog paragraphs to the terminal; ``\\b`` keeps an example whole."""
    if not epilog:
        return epilog
    blocks = epilog.split("\n\n")
    return "\n\n".join(
        "\b\n" + block if block.startswith("  ") and not block.startswith("\b") else block
        for block in blocks
    )


def _usage_name(param: _click.Parameter) -> str:
    name = param.metavar or (param.name or "").upper()
    if not param.required:
        name = f"[{name}]"
    return name + ("..." if param.nargs != 1 else "")


def _upper_metavars(command: _click.Command) -> None:
    """Arguments read as ``TABLE`` and ``[VIEW]`` in usage lines, as in every man page
    (Typer would show a required one as ``{table}``)."""
    for param in command.params:
        if param.param_type_name == "argument" and param.metavar is None and param.name:
            param.metavar = param.name.upper()
            # Typer asks the argument itself for its usage-line name.
            setattr(param, "_usage_display_name", lambda p=param: _usage_name(p))  # noqa: B010


def _flush_stdout() -> None:
    try:
        sys.stdout.flush()
    except BrokenPipeError:
        raise OutputClosed from None


class PaimonGroup(TyperGroup):
    """`paimon`: the Typer group with the behaviour described in the module docstring."""

    context_class = PaimonContext

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        for command in self.commands.values():
            command.epilog = _mark_examples(command.epilog)
            command.context_class = PaimonContext
            _upper_metavars(command)

    def invoke(self, ctx: _click.Context) -> Any:
        try:
            with terminable():
                try:
                    return super().invoke(ctx)
                finally:
                    # What is still buffered fails here, not in the interpreter's last flush.
                    _flush_stdout()
        except OutputClosed:
            # Not Click's handling of EPIPE (exit 1, as a failure): quiet, exit 141.
            raise Exit(closed_pipe()) from None
        except KeyboardInterrupt as exc:  # outside a command's guard (Click would say 130)
            signum = getattr(exc, "signum", signal.SIGINT)
            sys.stderr.write(f"Error: interrupted by {signal.Signals(signum).name}\n")
            raise Exit(128 + signum) from None

    def main(  # type: ignore[override]
        self,
        args: Sequence[str] | None = None,
        prog_name: str | None = None,
        complete_var: str | None = None,
        standalone_mode: bool = True,
        **extra: Any,
    ) -> Any:
        argv = reorder(sys.argv[1:] if args is None else args, list(self.commands))
        try:
            rv = super().main(
                args=argv,
                prog_name=prog_name,
                complete_var=complete_var,
                standalone_mode=False,
                **extra,
            )
        except _click.exceptions.NoArgsIsHelpError as exc:
            if not standalone_mode:
                raise
            # `paimon` alone: the help is what was asked for, so stdout and success.
            sys.stdout.write(printable(exc.format_message()) + "\n")
            sys.exit(0)
        except _click.exceptions.UsageError as exc:
            if not standalone_mode:
                raise
            show_usage_error(exc, as_json=_wants_json(argv))
            sys.exit(EXIT_USAGE)
        except _click.exceptions.ClickException as exc:
            if not standalone_mode:
                raise
            exc.show()
            sys.exit(exc.exit_code)
        except Abort:
            if not standalone_mode:
                raise
            sys.stderr.write("Aborted!\n")
            sys.exit(1)
        if not standalone_mode:
            return rv
        sys.exit(rv if isinstance(rv, int) else 0)
