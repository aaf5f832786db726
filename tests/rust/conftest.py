"""Fixtures for tables pypaimon-rust writes: one set per session, copied before any change."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from support import rust_writer as rw


@pytest.fixture(scope="session")
def rust_tables(tmp_path_factory: pytest.TempPathFactory) -> dict[str, rw.RustTable]:
    """Every pypaimon-rust scenario, written once per session (read-only: copy to change)."""
    from support import rust_writer as rw  # here: without pypaimon-rust the tests skip

    return rw.write_all(tmp_path_factory.mktemp("rust-wh"))


@pytest.fixture
def rust_copy(
    rust_tables: dict[str, rw.RustTable], tmp_path: Path
) -> Callable[[str], tuple[rw.RustWarehouse, rw.RustTable, Path]]:
    """A writable copy of a scenario in this test's warehouse (times kept): the warehouse to
    read it with, the scenario, and the copy's root."""

    def copy(name: str) -> tuple[rw.RustWarehouse, rw.RustTable, Path]:
        table = rust_tables[name]
        from support import rust_writer as rw

        wh = rw.RustWarehouse(tmp_path / "wh")
        root = wh.table_root(name)
        shutil.copytree(table.root, root, symlinks=True)
        return wh, table, root

    return copy
