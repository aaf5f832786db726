"""Every command of the README's "Common jobs" runs, and its sample output is current (issue 37).

Each recipe runs on a fresh table pypaimon writes (tests/support/readme_recipes.py); the
README's sample must equal the real output once times, run ids, sizes and durations are
normalised. After an intended change of the output, rewrite the samples with
``PAIMON_CLI_UPDATE_README=1 .venv/bin/python -m pytest tests/docs/test_readme_recipes.py``
and review the diff.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from support import readme_recipes as rr

TEXT = rr.README.read_text(encoding="utf-8")
RECIPES = rr.recipes(TEXT)
SETUP = """# paimon-cli

```sh
make demo   # install, write a sample table with pypaimon, inspect it, dry-run an expiry
make test   # install the test dependencies, then ruff, mypy and the whole test suite
```
"""


def test_the_readme_starts_with_the_two_set_up_commands() -> None:
    assert TEXT.startswith(SETUP)


def test_the_readme_stays_short() -> None:
    assert len(TEXT.encode("utf-8")) < 25_000, "move detail into docs/"


def test_common_jobs_has_five_recipes_each_with_commands_and_a_sample() -> None:
    assert [r.title for r in RECIPES] == [
        "Look at a table",
        "Gate CI on the table's integrity",
        "Expire snapshots now",
        "Maintain every table every hour (cron, systemd)",
        "Undo a run",
    ]
    for recipe in RECIPES:
        assert rr.commands(recipe.script), recipe.title
        assert recipe.sample is not None, f"{recipe.title}: no ```text sample after it"


@pytest.mark.parametrize("index", range(len(RECIPES)), ids=[r.title for r in RECIPES])
def test_recipe_runs_and_prints_its_sample(tmp_path: Path, index: int) -> None:
    recipe = RECIPES[index]
    warehouse = tmp_path / "wh"
    rr.make_warehouse(warehouse)
    runs = [rr.run(command, warehouse, tmp_path) for command in rr.commands(recipe.script)]
    for ran in runs:
        assert ran.exit_code == 0, f"{ran.command} exited {ran.exit_code}:\n{ran.output}"
    actual = rr.transcript(runs)
    if os.environ.get(rr.UPDATE_VAR):
        text = rr.README.read_text(encoding="utf-8")
        rr.README.write_text(rr.update(text, {index: actual}), encoding="utf-8")
        return
    assert recipe.sample is not None
    assert rr.normalise(recipe.sample) == rr.normalise(actual), (
        f"README's sample of {recipe.title!r} is stale: run with {rr.UPDATE_VAR}=1 and review\n"
        f"{actual}"
    )


def test_the_ci_gate_exits_3_and_names_the_file_when_data_is_missing(tmp_path: Path) -> None:
    (gate,) = rr.commands(RECIPES[1].script)
    warehouse = tmp_path / "wh"
    root = rr.make_warehouse(warehouse)
    lost = sorted((root / "dt=2024-01-01" / "bucket-0").glob("data-*"))[-1]
    lost.unlink()
    ran = rr.run(gate, warehouse, tmp_path)
    assert ran.exit_code == 3, ran.output
    assert lost.name in ran.output


def test_the_cron_line_is_the_tested_command() -> None:
    (tested,) = rr.commands(RECIPES[3].script)
    start, end = rr.section(TEXT)
    cron = [
        line.split(None, 5)[5]
        for block in TEXT[start:end].split("```cron\n")[1:]
        for line in block.split("```")[0].splitlines()
        if line.strip()
    ]
    assert cron, "the cron recipe has no ```cron line"
    for line in cron:
        program, rest = line.split(" ", 1)
        assert program.rsplit("/", 1)[-1] == "paimon-cli"
        assert rest.replace("/etc/paimon/prod.yaml", "prod.yaml") == tested.split(" ", 1)[1]


def test_normalising_keeps_what_a_reader_relies_on() -> None:
    sample = RECIPES[0].sample
    assert sample is not None and "16 files" in sample
    assert rr.normalise(sample) != rr.normalise(sample.replace("16 files", "17 files"))
    (when,) = re.findall(r"at (\d{4}-\d\d-\d\d \d\d:\d\d:\d\d[+-]\d\d:\d\d)", sample)
    later = sample.replace(when, "2031-01-02 03:04:05+11:00")
    assert later != sample and rr.normalise(later) == rr.normalise(sample)


def test_updating_rewrites_only_the_sample_of_its_recipe() -> None:
    updated = rr.update(TEXT, {2: "new sample\n"})
    again = rr.recipes(updated)
    assert again[2].sample == "new sample\n"
    assert [r.sample for i, r in enumerate(again) if i != 2] == [
        r.sample for i, r in enumerate(RECIPES) if i != 2
    ]
    assert updated.startswith(SETUP)
