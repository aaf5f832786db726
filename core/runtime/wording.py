"""Counts in messages: ``1 file``, ``2 files`` (core's messages and the CLI's alike)."""

from __future__ import annotations


def plural(n: int, noun: str, many: str | None = None) -> str:
    """``1 problem``, ``2 problems``."""
    return f"{n} {noun if n == 1 else many or noun + 's'}"
