"""Configure logging once: WARNING by default, -v INFO, -vv DEBUG, or --log-level."""

from __future__ import annotations

import logging
import os
import sys
import threading

from core.runtime.log_context import where


def labelled(message: str) -> str:
    """``message`` as a line of the table and step this thread works on
    (``db.orders expire-snapshots: message``; core/runtime/log_context.py), else as is."""
    label = where()
    return f"{label}: {message}" if label else message


class _Preface:
    """A line said once before anything else on stderr (``paimon maintain run <id>
    started <time>``): by the log handler before its first line, by the shell before its
    own warnings (:func:`say_preface`)."""

    def __init__(self) -> None:
        self.line: str | None = None
        self.lock = threading.Lock()

    def take(self) -> str | None:
        with self.lock:
            line, self.line = self.line, None
            return line


_PREFACE = _Preface()


def set_preface(line: str | None) -> None:
    """Say ``line`` on stderr before the next line written there (None: forget it)."""
    with _PREFACE.lock:
        _PREFACE.line = line


def say_preface() -> None:
    """Write the preface now, unless it was said already."""
    line = _PREFACE.take()
    if line is not None:
        sys.stderr.write(line + "\n")
        sys.stderr.flush()


class _LineHandler(logging.Handler):
    """Every log line in the one format of the CLI's own warnings (``Output.warn``):
    ``warning: message``, the level word coloured on a terminal; ``debug: module:
    message`` at -vv only. Inside a table's step (``maintain``) the message starts with the
    table and step, ``warning: db.orders expire-snapshots: message``. No timestamp or module
    name of its own at the default level: a cron mail or the journal dates the lines, and
    module names are ours, not the user's. Writes to whatever sys.stderr is at emit time
    (tests swap it), after the run's preface (:func:`set_preface`) when one is pending."""

    def emit(self, record: logging.LogRecord) -> None:
        try:
            say_preface()
            level = record.levelname.lower()
            message = labelled(self.format(record))
            if record.levelno <= logging.DEBUG:
                message = f"{record.name}: {message}"
            if not sys.stderr.isatty():
                sys.stderr.write(f"{level}: {message}\n")
                return
            from rich.console import Console
            from rich.text import Text

            # Log messages carry paths and names: never read as markup or emoji codes.
            console = Console(file=sys.stderr, markup=False, emoji=False, highlight=False)
            style = _STYLES.get(record.levelno, "")
            console.print(Text.assemble((f"{level}:", style), " ", message), soft_wrap=True)
        except Exception:  # noqa: BLE001 - logging must never fail the run
            self.handleError(record)


_STYLES = {logging.WARNING: "yellow", logging.ERROR: "red", logging.CRITICAL: "red"}


class _Py4jRootRecords(logging.Filter):
    """py4j's gateway logs through the root logger (``logging.exception``), so a Spark JVM
    that dies mid-run printed py4j's own traceback before our one-line error, whatever the
    level of the ``py4j`` loggers. Below DEBUG those records are dropped: the error the CLI
    reports says what happened, and ``-vv`` shows them."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not (record.name == "root" and f"{os.sep}py4j{os.sep}" in record.pathname)


def configure(verbosity: int, level_name: str | None) -> None:
    name = level_name or os.environ.get("PAIMON_LOG_LEVEL")
    if name:
        level = logging.getLevelName(name.upper())
        if not isinstance(level, int):
            level = logging.WARNING
    else:
        level = {0: logging.WARNING, 1: logging.INFO}.get(verbosity, logging.DEBUG)
    root = logging.getLogger()
    for old in list(root.handlers):
        if getattr(old, "_paimon_cli", False):
            root.removeHandler(old)
    handler = _LineHandler()
    handler.setFormatter(logging.Formatter("%(message)s"))
    if level > logging.DEBUG:
        handler.addFilter(_Py4jRootRecords())
    setattr(handler, "_paimon_cli", True)  # noqa: B010 - marks our handler for reconfiguration
    root.addHandler(handler)
    root.setLevel(level)
    # Storage libraries are chatty at DEBUG and may log request details: keep them quieter.
    for noisy in ("fsspec", "s3fs", "aiobotocore", "botocore", "urllib3", "py4j"):
        logging.getLogger(noisy).setLevel(max(level, logging.WARNING))
