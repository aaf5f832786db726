"""inspect never answers another question than the one asked (issue 37.8): a snapshot or tag
that is not there is "not found" (exit 1, naming what is there) in every view that takes
one, and an option the chosen view ignores is a usage error (exit 2). pypaimon tables."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support import pypaimon_writer as pw


@pytest.fixture(scope="module")
def table(tmp_path_factory: pytest.TempPathFactory) -> Path:
    scenario = pw.append_partitioned(tmp_path_factory.mktemp("selectors") / "wh")
    pw.create_tag(pw.open_table(scenario.warehouse, scenario.identifier), "release")
    return scenario.root


@pytest.mark.parametrize(
    ("args", "option"),
    [
        (("--snapshot", "99"), "--snapshot"),
        (("summary", "--tag", "nope"), "--tag"),
        (("snapshots", "--snapshot", "2"), "--snapshot"),
        (("tags", "--tag", "release"), "--tag"),
        (("retention", "--snapshot", "latest"), "--snapshot"),
        (("files", "--check"), "VIEW"),
        (("files", "--skip-storage"), "--skip-storage"),
        (("--check", "--skip-storage"), "--skip-storage"),
    ],
)
def test_an_option_the_view_ignores_is_a_usage_error(
    run, table: Path, args: tuple[str, ...], option: str
) -> None:
    result = run("inspect", table, *args)
    assert result.exit_code == 2, result.stdout
    assert option in result.stderr and "Traceback" not in result.stderr
    as_json = run("inspect", table, *args, "--json")
    assert json.loads(as_json.stderr)["error"]["kind"] == "usage_error"


@pytest.mark.parametrize("view", ["files", "manifests", "partitions", "--check"])
def test_a_missing_snapshot_or_tag_is_not_found_in_every_view(run, table: Path, view: str) -> None:
    snapshot = run("inspect", table, view, "--snapshot", "99")
    assert snapshot.exit_code == 1, snapshot.stdout
    assert "snapshot 99 not found" in snapshot.stderr
    assert "Hint: its snapshots are 1..6" in snapshot.stderr
    tag = run("inspect", table, view, "--tag", "releas", "--json")
    assert tag.exit_code == 1, tag.stdout
    error = json.loads(tag.stderr)["error"]
    assert error["kind"] == "missing_file" and "tag 'releas' not found" in error["message"]
    assert error["hint"] == "did you mean release?"
    # What is there is shown as before.
    assert run("inspect", table, view, "--tag", "release").exit_code == 0
    assert run("inspect", table, view, "--snapshot", "2").exit_code == 0
