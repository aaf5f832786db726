"""`core` is a generic name: it must be ours, and a foreign `core` first on the path must
give a clear error, not a traceback (docs/DECISIONS.md D9)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import core

ROOT = Path(__file__).resolve().parents[1]


def test_core_is_ours() -> None:
    assert Path(core.__file__).resolve().parent == ROOT / "core"
    assert core.PAIMON_CLI_ENGINE is True


def test_foreign_core_first_on_the_path_is_a_clear_error(tmp_path: Path) -> None:
    foreign = tmp_path / "core"
    foreign.mkdir()
    (foreign / "__init__.py").write_text('"""Some other project\'s core."""\n')
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}
    done = subprocess.run(
        [sys.executable, "-m", "paimon_cli", "--version"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 1
    assert "is not paimon-cli's engine" in done.stderr
    assert str(foreign) in done.stderr
    assert "pipx install paimon-cli" in done.stderr
    assert "Traceback" not in done.stderr
