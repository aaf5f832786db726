"""Configure logging once: WARNING by default, -v INFO, -vv DEBUG, or --log-level."""

from __future__ import annotations

import logging
import os
import sys


class _StderrHandler(logging.StreamHandler):  # type: ignore[type-arg]
    """Writes to whatever sys.stderr is at emit time (it may be swapped, e.g. in tests)."""

    @property
    def stream(self) -> object:
        return sys.stderr

    @stream.setter
    def stream(self, _value: object) -> None:
        pass


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
    handler: logging.Handler
    if sys.stderr.isatty():
        from rich.console import Console
        from rich.logging import RichHandler

        # Log messages carry paths and names: never read as markup or emoji codes.
        console = Console(file=sys.stderr, markup=False, emoji=False)
        handler = RichHandler(console=console, show_path=False, rich_tracebacks=False, markup=False)
        handler.setFormatter(logging.Formatter("%(message)s"))
    else:
        handler = _StderrHandler()
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    if level > logging.DEBUG:
        handler.addFilter(_Py4jRootRecords())
    setattr(handler, "_paimon_cli", True)  # noqa: B010 - marks our handler for reconfiguration
    root.addHandler(handler)
    root.setLevel(level)
    # Storage libraries are chatty at DEBUG and may log request details: keep them quieter.
    for noisy in ("fsspec", "s3fs", "aiobotocore", "botocore", "urllib3", "py4j"):
        logging.getLogger(noisy).setLevel(max(level, logging.WARNING))
