"""py4j logs a dying Spark JVM through the root logger with a traceback: below DEBUG the CLI
drops those records (its own error says what happened), at -vv they show."""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Iterator

import pytest

from paimon_cli import logs


@pytest.fixture(autouse=True)
def _reset() -> Iterator[None]:
    yield
    logs.configure(0, None)


def _emit(pathname: str, name: str = "root") -> None:
    try:
        raise ConnectionResetError("answer from Java side is empty")
    except ConnectionResetError:
        record = logging.getLogger().makeRecord(
            name, logging.ERROR, pathname, 1, "Exception while sending command.", (), sys.exc_info()
        )
    logging.getLogger().handle(record)


GATEWAY = os.path.join(sys.prefix, "lib", "site-packages", "py4j", "java_gateway.py")


def test_py4j_root_records_are_dropped_below_debug(capsys: pytest.CaptureFixture[str]) -> None:
    logs.configure(0, None)
    _emit(GATEWAY)
    assert capsys.readouterr().err == ""
    _emit("/somewhere/else/module.py")  # anyone else's root records still show
    assert "Exception while sending command." in capsys.readouterr().err


def test_py4j_root_records_show_at_debug(capsys: pytest.CaptureFixture[str]) -> None:
    logs.configure(2, None)
    _emit(GATEWAY)
    out = capsys.readouterr().err
    assert "Exception while sending command." in out and "Traceback" in out
