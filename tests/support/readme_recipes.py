"""The README's "Common jobs" recipes, run for real (tests/docs/test_readme_recipes.py).

A recipe is a fenced ```sh block under "## Common jobs"; its sample output is the fenced
```text block right after it. Every command line of a recipe (a line starting with
``paimon-cli``) runs against a table pypaimon writes in a temporary directory: the README's
warehouse ``/wh`` becomes that directory, and ``prod.yaml`` a filesystem catalog of it.
The sample is the real output with what varies between runs normalised (times, run ids,
durations, the temporary directory); ``PAIMON_CLI_UPDATE_README=1`` rewrites the samples
in README.md from a real run instead of comparing.
"""

from __future__ import annotations

import os
import re
import shlex
import socket
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa

from support import pypaimon_writer as pw

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
UPDATE_VAR = "PAIMON_CLI_UPDATE_README"
SECTION = "## Common jobs"
README_WAREHOUSE = "/wh"
TABLE = "db.orders"
COMMITS = 8

_BLOCK = re.compile(r"```(sh|text)\n(.*?)```\n", re.S)
_RUN_ID = re.compile(r"\b[0-9a-f]{12}\b")
_TIME = re.compile(
    r"\d{4}-\d\d-\d\d[ T]\d\d:\d\d(:\d\d(\.\d+)?)?(Z|[+-]\d\d:\d\d)?|\d{4}-\d\d-\d\d\b"
)
_DURATION = re.compile(r"\b\d+(\.\d+)? ?(ms|s|min|h|d)\b( (ago|\d+ ?(ms|s|min)))?")
_SIZE = re.compile(r"\b\d+(\.\d+)? ?(B|KiB|MiB|GiB|KB|MB|GB)\b")
_UUID = re.compile(r"\b[0-9a-f]{8}-[0-9a-f-]{3,}")
_PERCENT = re.compile(r"\b\d+(\.\d+)?(%|x\b)")
_BAR = re.compile(r"[█░]+")
_SPACES = re.compile(r"[ \t]+")
_RULE = re.compile(r"[─━═]+")


@dataclass
class Recipe:
    """A ```sh block of the section and the ```text sample after it (None: no sample)."""

    title: str
    script: str
    sample: str | None
    sample_span: tuple[int, int] | None  # where the sample's text sits in README.md


def section(text: str) -> tuple[int, int]:
    start = text.index(SECTION)
    end = text.find("\n## ", start + len(SECTION))
    return start, len(text) if end < 0 else end


def recipes(text: str) -> list[Recipe]:
    """The recipes of "## Common jobs", in order."""
    start, end = section(text)
    found: list[Recipe] = []
    title = ""
    pos = start
    for match in _BLOCK.finditer(text, start, end):
        heading = text.rfind("\n### ", pos, match.start())
        if heading >= 0:
            title = text[heading + 5 : text.index("\n", heading + 1)]
        pos = match.end()
        if match.group(1) == "sh":
            found.append(Recipe(title, match.group(2), None, None))
        elif found and found[-1].sample is None:
            found[-1].sample = match.group(2)
            found[-1].sample_span = (match.start(2), match.end(2))
    return found


def commands(script: str) -> list[str]:
    """The command lines of a recipe (continuations joined)."""
    joined = script.replace("\\\n", " ")
    return [line.strip() for line in joined.splitlines() if line.strip().startswith("paimon-cli ")]


def make_warehouse(warehouse: Path) -> Path:
    """db.orders: an append table partitioned by dt, COMMITS snapshots written by pypaimon."""
    schema = pa.schema([("order_id", pa.int64()), ("dt", pa.string()), ("amount", pa.float64())])
    table = pw.create_table(warehouse, TABLE, schema, partition_keys=("dt",))
    for i in range(1, COMMITS + 1):
        pw.append(
            table,
            [
                {"order_id": 10 * i + k, "dt": f"2024-01-0{1 + k}", "amount": 1.5 * i}
                for k in range(2)
            ],
        )
    (warehouse.parent / "prod.yaml").write_text(
        f"metastore: filesystem\nwarehouse: {warehouse}\n", encoding="utf-8"
    )
    return pw.table_root(warehouse, TABLE)


@dataclass
class Ran:
    command: str
    exit_code: int
    output: str


def run(command: str, warehouse: Path, cwd: Path) -> Ran:
    """Run one README command line with the README's warehouse replaced by ``warehouse``."""
    argv = shlex.split(command.replace(README_WAREHOUSE + "/", f"{warehouse}/"))
    assert argv[0] == "paimon-cli", command
    # A reader's shell has none of the program's settings (catalog, warehouse, quarantine).
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("PAIMON_")},
        "COLUMNS": "100",
        "NO_COLOR": "1",
        "TZ": "UTC",
        "PAIMON_CLI_HOME": str(cwd),
        # the user of a run record (getpass reads these first); the host is replaced below
        "LOGNAME": "etl",
        "USER": "etl",
    }
    env.pop("FORCE_COLOR", None)
    # The console script the README names, where this environment has it (an editable or
    # wheel install); else the same program through its module.
    script = Path(sys.executable).with_name("paimon-cli")
    program = [str(script)] if script.is_file() else [sys.executable, "-m", "paimon_cli"]
    proc = subprocess.run(
        [*program, *argv[1:]],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    out = (proc.stdout + proc.stderr).replace(str(warehouse), README_WAREHOUSE)
    out = out.replace(f"etl@{socket.gethostname()}", "etl@host")
    return Ran(command, proc.returncode, out)


def transcript(runs: list[Ran]) -> str:
    """A recipe's sample: each command's output (a `$ ` line before each when several)."""
    parts: list[str] = []
    for ran in runs:
        if len(runs) > 1:
            parts.append(f"$ {ran.command}")
        output = "\n".join(line.rstrip() for line in ran.output.rstrip("\n").splitlines())
        parts.append(output or "(no output)")
        if ran.exit_code:
            parts.append(f"(exit {ran.exit_code})")
    return "\n".join(parts) + "\n"


def normalise(text: str) -> str:
    """What differs between two runs: times, run ids, durations, sizes, spacing and rules."""
    text = _UUID.sub("<uuid>", text)
    text = _TIME.sub("<time>", text)
    text = _RUN_ID.sub("<run-id>", text)
    text = _SIZE.sub("<size>", text)
    text = _DURATION.sub("<duration>", text)
    text = _PERCENT.sub("<percent>", text)
    text = _BAR.sub("<bar>", text)
    text = _RULE.sub("─", text)
    lines = [_SPACES.sub(" ", line).strip() for line in text.splitlines()]
    return "\n".join(line for line in lines if line)


def update(text: str, samples: dict[int, str]) -> str:
    """README text with the samples of recipes (by index) replaced."""
    found = recipes(text)
    for index in sorted(samples, reverse=True):
        span = found[index].sample_span
        assert span is not None, f"recipe {found[index].title!r} has no ```text sample"
        text = text[: span[0]] + samples[index] + text[span[1] :]
    return text
