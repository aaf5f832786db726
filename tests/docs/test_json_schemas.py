"""Each command's `--json` document has a JSON Schema in docs/schema/ (issue 37).

Every golden document (tests/golden/) validates against its command's schema, and so do
documents of real runs on a table pypaimon writes; a document missing a required key or
holding a value of the wrong type does not. ``PAIMON_CLI_UPDATE_SCHEMAS=1`` rewrites the
schemas from the golden files (tests/support/json_schemas.py).
"""

from __future__ import annotations

import copy
import json
import os
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import typer.main
from support import json_schemas as js
from support import pypaimon_writer as pw
from support.fixtures import Run

from paimon_cli.main import app

GOLDEN = js.golden_documents()


def _validator(name: str) -> jsonschema.Draft202012Validator:
    return jsonschema.Draft202012Validator(js.load(name))


def _errors(name: str, document: Any) -> list[str]:
    return [
        f"{'/'.join(map(str, e.absolute_path))}: {e.message}"
        for e in _validator(name).iter_errors(document)
    ]


def test_schemas_are_current_or_rewritten() -> None:
    fresh = js.schemas(GOLDEN)
    if os.environ.get(js.UPDATE_VAR):
        js.SCHEMA_DIR.mkdir(parents=True, exist_ok=True)
        for name, schema in fresh.items():
            (js.SCHEMA_DIR / f"{name}.schema.json").write_text(js.render(schema), "utf-8")
    on_disk = {p.name.removesuffix(".schema.json") for p in js.SCHEMA_DIR.glob("*.schema.json")}
    assert on_disk == set(fresh), f"run with {js.UPDATE_VAR}=1"


def test_every_command_has_a_schema() -> None:
    commands = set(typer.main.get_command(app).commands)  # type: ignore[attr-defined]
    assert commands
    for name in commands | {js.ERROR}:
        jsonschema.Draft202012Validator.check_schema(js.load(name))


@pytest.mark.parametrize("case", sorted(GOLDEN))
def test_golden_document_matches_its_schema(case: str) -> None:
    document = js.denormalise(GOLDEN[case])
    errors = _errors(js.schema_name(document), document)
    assert not errors, f"{case}: " + "; ".join(errors[:5])


def test_a_document_missing_a_required_key_fails() -> None:
    document = js.denormalise(GOLDEN["expire-snapshots"])
    for path in (["plan"], ["plan", "phases"], ["report", "status"]):
        mutated = copy.deepcopy(document)
        parent = mutated
        for key in path[:-1]:
            parent = parent[key]
        del parent[path[-1]]
        assert _errors("expire-snapshots", mutated), f"missing {'.'.join(path)} passed"


def test_a_value_of_the_wrong_type_fails() -> None:
    document = js.denormalise(GOLDEN["inspect-summary"])
    for path, value in (
        (["schema_version"], "1"),
        (["table"], 5),
        (["summary", "live", "files"], "16"),
        (["command"], "expire-snapshots"),
    ):
        mutated = copy.deepcopy(document)
        parent = mutated
        for key in path[:-1]:
            parent = parent[key]
        parent[path[-1]] = value
        assert _errors("inspect", mutated), f"{'.'.join(path)} = {value!r} passed"
    bad_phase = js.denormalise(GOLDEN["expire-snapshots"])
    bad_phase["plan"]["phases"][0]["actions"][0]["size"] = "600 B"
    assert _errors("expire-snapshots", bad_phase)
    assert _errors(js.ERROR, {"error": {"message": "no kind"}})
    assert _errors(js.ERROR, {"kind": "usage_error"})


@pytest.fixture(scope="module")
def table(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A partitioned append table with eight snapshots, a tag and a consumer (pypaimon)."""
    warehouse = tmp_path_factory.mktemp("schema") / "wh"
    return pw.append_partitioned(warehouse, commits=8).root


LIVE = [
    ("inspect", ()),
    ("inspect", ("snapshots",)),
    ("inspect", ("files",)),
    ("inspect", ("tags",)),
    ("inspect", ("retention",)),
    ("inspect", ("--check",)),
    ("expire-snapshots", ("--retain-max", "2", "--retain-min", "1", "--dry-run")),
    ("delete-orphan-files", ("--dry-run",)),
    ("expire-tags", ("--older-than", "0 s", "--dry-run")),
    ("compact", ("--dry-run",)),
    ("maintain", ("--dry-run",)),
]


@pytest.mark.parametrize(("command", "args"), LIVE, ids=[" ".join([c, *a]) for c, a in LIVE])
def test_a_live_document_matches_its_schema(
    run: Run, table: Path, command: str, args: tuple[str, ...]
) -> None:
    result = run(command, table, *args, "--json")
    assert result.exit_code == 0, result.stderr
    document = json.loads(result.stdout)
    errors = _errors(command, document)
    assert not errors, "; ".join(errors[:5])


REAL_RUNS = [
    ("expire-snapshots", ("--retain-max", "4", "--retain-min", "1", "--quarantine")),
    ("inspect", ("runs",)),
    ("restore", ("--last", "--dry-run")),
    ("restore", ("--last",)),
    ("purge-quarantine", ("--dry-run",)),
    ("create-tag", ("t7", "--snapshot", "7")),
    ("rename-tag", ("t7", "t7b")),
    ("delete-tag", ("t7b", "--dry-run")),
    ("create-branch", ("b1", "--tag", "mid")),
    ("rollback", ("--to-snapshot", "6", "--dry-run")),
    ("expire-partitions", ("--expiration-time", "1 d", "--dry-run")),
    ("remove-unexisting-files", ("--dry-run",)),
    ("maintain", ()),
]


def test_documents_of_real_runs_match_their_schemas(run: Run, tmp_path: Path) -> None:
    """One table through a sequence of real runs: each document against its schema."""
    root = pw.append_partitioned(tmp_path / "wh", commits=8).root
    failures = []
    for command, args in REAL_RUNS:
        result = run(command, root, *args, "--json")
        assert result.exit_code in (0, 1), f"{command} {args}: {result.stderr}"
        document = json.loads(result.stdout)
        errors = _errors(command, document)
        if errors:
            failures.append(f"{command} {' '.join(args)}: " + "; ".join(errors[:3]))
    assert not failures, "\n".join(failures)
