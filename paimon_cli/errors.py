"""Map engine errors to one or two clear lines and an exit code; the only typer.Exit raiser."""

from __future__ import annotations

import json
import logging
import os
import signal
import sys
import traceback
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import typer

from core.errors import (
    InvalidOptionError,
    PaimonError,
    RunInterruptedError,
    StorageAccessError,
)
from core.io.retry import is_network_failure, summary
from paimon_cli.logs import say_preface
from paimon_cli.output import OutputClosed, printable

logger = logging.getLogger(__name__)

# The exit codes (README "Exit codes", docs/automation.md, DECISIONS D5).
EXIT_OK = 0
EXIT_FAILURE = 1  # failed, partly failed, or could not check
EXIT_USAGE = 2
EXIT_DAMAGED = 3  # a check ran and found the table damaged (inspect --check, maintain)
EXIT_CLOSED_PIPE = 141  # 128 + SIGPIPE: stdout's reader went away (`| head`), as cat's
# Interrupted: 128 + the signal, as a shell reports a process the signal killed
# (130 for SIGINT, 143 for SIGTERM).


def debug_enabled(debug: bool) -> bool:
    return debug or os.environ.get("PAIMON_DEBUG", "") not in ("", "0", "false")


def report_error(kind: str, message: str, hint: str | None, *, as_json: bool) -> None:
    if as_json:
        payload: dict[str, object] = {"kind": kind, "message": message}
        if hint:
            payload["hint"] = hint
        sys.stderr.write(json.dumps({"error": payload}) + "\n")
        return
    say_preface()  # a maintain run's first line comes first (DECISIONS D22)
    sys.stderr.write(f"Error: {printable(message)}\n")
    if hint:
        sys.stderr.write(f"Hint: {printable(hint)}\n")


@contextmanager
def guard(*, as_json: bool, debug: bool) -> Iterator[None]:
    """Run a command body: engine errors exit 1 with a message, never a traceback."""
    try:
        yield
    except (typer.Exit, OutputClosed):
        raise
    except RunInterruptedError as exc:
        report_error(exc.kind, exc.message, exc.hint, as_json=as_json)
        raise typer.Exit(128 + exc.signum) from None
    except PaimonError as exc:
        if debug_enabled(debug):
            traceback.print_exc()
        report_error(exc.kind, exc.message, exc.hint, as_json=as_json)
        # Impossible options are usage errors (exit 2) wherever they are detected.
        code = EXIT_USAGE if isinstance(exc, InvalidOptionError) else EXIT_FAILURE
        raise typer.Exit(code) from None
    except KeyboardInterrupt as exc:  # Ctrl-C, or SIGTERM (core.runtime.interrupts.terminable)
        signum = getattr(exc, "signum", signal.SIGINT)
        name = signal.Signals(signum).name
        report_error("interrupted", f"interrupted by {name}", None, as_json=as_json)
        raise typer.Exit(128 + signum) from None
    except Exception as exc:  # noqa: BLE001 - last line of defence: no traceback for users
        if debug_enabled(debug):
            traceback.print_exc()
        if is_network_failure(exc):  # a storage library's own error, past every retry
            report_error(
                StorageAccessError.kind,
                f"the connection to the storage failed: {summary(exc)}",
                "check the network and the store's health, then run again (a run cut short "
                "is finished or discarded by the next one)",
                as_json=as_json,
            )
            raise typer.Exit(EXIT_FAILURE) from None
        report_error(
            "internal_error",
            f"unexpected {type(exc).__name__}: {exc}",
            "rerun with --debug for a traceback and report it as a bug",
            as_json=as_json,
        )
        raise typer.Exit(EXIT_FAILURE) from None


def closed_pipe() -> int:
    """stdout (or stderr) lost its reader: the exit code, after pointing both at /dev/null
    so that nothing more, not even the interpreter's last flush, fails on them."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    for stream in (sys.stdout, sys.stderr):
        try:
            os.dup2(devnull, stream.fileno())
        except (AttributeError, OSError, ValueError):  # not a file (a test's capture)
            continue
    os.close(devnull)
    return EXIT_CLOSED_PIPE


def completion_candidates(produce: Callable[[], list[str]]) -> list[str]:
    """Candidates for tab completion, which runs inside the user's shell at every <TAB>: a
    table that cannot be read (yet), a bad option, a storage error give none, never an
    error or a traceback in the middle of the command line being typed."""
    try:
        return produce()
    except Exception:  # noqa: BLE001 - the shell is the caller; nothing may escape to it
        return []
