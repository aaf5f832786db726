"""The installed program, run as a user runs it (subprocesses, fastapi-cli's test_script)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from importlib.metadata import distribution
from pathlib import Path

from core import __version__

BIN = Path(sys.executable).parent
ENTRY_POINT = "paimon_cli.main:main"


def _env(**extra: str) -> dict[str, str]:
    """This environment with the venv's bin first on PATH and no completion request."""
    env = {k: v for k, v in os.environ.items() if not k.endswith("_COMPLETE")}
    env["PATH"] = os.pathsep.join([str(BIN), env.get("PATH", "")])
    env.update(extra)
    return env


def _run(*argv: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        list(argv), env=_env(**env), capture_output=True, text=True, check=False, timeout=120
    )


def _script(name: str) -> str:
    found = shutil.which(name, path=_env()["PATH"])
    assert found is not None, f"{name} is not installed in {BIN}"
    return found


def test_help_exits_0() -> None:
    proc = _run(_script("paimon"), "--help")
    assert proc.returncode == 0, proc.stderr
    assert "Usage: paimon [OPTIONS] COMMAND [ARGS]..." in proc.stdout
    assert proc.stderr == ""


def test_python_m_prints_the_version() -> None:
    proc = _run(sys.executable, "-m", "paimon_cli", "--version")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == f"paimon-cli {__version__}\n"
    assert __version__ == distribution("paimon-cli").version


def test_paimon_cli_script_prints_the_version() -> None:
    proc = _run(_script("paimon-cli"), "--version")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == f"paimon-cli {__version__}\n"


def test_completion_source_bash() -> None:
    proc = _run(_script("paimon"), _PAIMON_COMPLETE="source_bash")
    assert proc.returncode == 0, proc.stderr
    assert "_PAIMON_COMPLETE=complete_bash" in proc.stdout
    assert "complete -o default -F _paimon_completion paimon" in proc.stdout


def test_completion_lists_commands() -> None:
    proc = _run(
        _script("paimon"), _PAIMON_COMPLETE="complete_bash", COMP_WORDS="paimon ", COMP_CWORD="1"
    )
    assert proc.returncode == 0, proc.stderr
    assert "inspect" in proc.stdout.split()


def test_paimon_cli_completes_as_paimon_cli() -> None:
    script = _run(_script("paimon-cli"), _PAIMON_CLI_COMPLETE="source_bash")
    assert script.returncode == 0, script.stderr
    assert "complete -o default -F _paimon_cli_completion paimon-cli" in script.stdout
    proc = _run(
        _script("paimon-cli"),
        _PAIMON_CLI_COMPLETE="complete_bash",
        COMP_WORDS="paimon-cli ",
        COMP_CWORD="1",
    )
    assert proc.returncode == 0, proc.stderr
    assert "expire-snapshots" in proc.stdout.split()


def test_paimon_on_path_is_ours_not_pypaimons() -> None:
    # pypaimon ships a `paimon` console script too; whichever was installed last owns it.
    found = Path(_script("paimon"))
    assert found.parent == BIN
    declared = [
        ep.value
        for ep in distribution("paimon-cli").entry_points
        if ep.group == "console_scripts" and ep.name == "paimon"
    ]
    assert declared == [ENTRY_POINT]
    text = found.read_text(encoding="utf-8")
    match = re.search(r"^from (\S+) import (\S+)$", text, flags=re.MULTILINE)
    assert match is not None, f"{found} is not a console-script wrapper:\n{text}"
    assert f"{match[1]}:{match[2]}" == ENTRY_POINT, (
        f"{found} runs {match[1]}:{match[2]} (pypaimon's?); reinstall with "
        "`pip install -e .` after pypaimon"
    )
    proc = _run(str(found), "--version")
    assert proc.stdout.startswith("paimon-cli "), proc.stdout + proc.stderr


# Runs every command's --help in one interpreter, then reports which heavy modules loaded.
_PROBE = """
import json, sys
import typer.main
from paimon_cli.main import app, main

def paths(cmd, path):
    yield path
    for name, sub in getattr(cmd, "commands", {}).items():
        yield from paths(sub, [*path, name])

codes = {}
for path in paths(typer.main.get_command(app), []):
    sys.argv = ["paimon", *path, "--help"]
    try:
        main()
    except SystemExit as exc:
        codes[" ".join(path) or "paimon"] = exc.code
heavy = sorted(m for m in sys.modules if m.split(".")[0] in ("pyarrow", "pyspark"))
print("PROBE " + json.dumps({"codes": codes, "heavy": heavy}))
"""


def test_help_imports_neither_pyarrow_nor_pyspark() -> None:
    proc = _run(sys.executable, "-c", _PROBE)
    assert proc.returncode == 0, proc.stderr
    probe = json.loads(proc.stdout.rsplit("PROBE ", 1)[1])
    assert probe["codes"] and set(probe["codes"].values()) == {0}, probe["codes"]
    assert probe["heavy"] == [], "help must stay instant: move these imports into functions"


def test_completion_imports_neither_pyarrow_nor_pyspark() -> None:
    probe = (
        "import runpy, sys\n"
        "try:\n    runpy.run_module('paimon_cli', run_name='__main__')\n"
        "except SystemExit:\n    pass\n"
        "print('HEAVY', sorted(m for m in sys.modules "
        "if m.split('.')[0] in ('pyarrow', 'pyspark')))"
    )
    proc = _run(
        sys.executable,
        "-c",
        probe,
        _PAIMON_COMPLETE="complete_bash",
        COMP_WORDS="paimon inspect --",
        COMP_CWORD="2",
    )
    assert proc.returncode == 0, proc.stderr
    assert "--warehouse" in proc.stdout.split()
    assert proc.stdout.rstrip().endswith("HEAVY []"), proc.stdout
