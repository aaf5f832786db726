"""`paimon inspect --check` as a CI gate: the whole problem list whatever is damaged, every
root that needs a file, a scope (latest, a snapshot, a tag, everything), gaps in the
history, -q, and an integrity gauge per table (issue 25.3)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from core.ops.maintain.metrics import parse


def _problems(run, root: Path, *args: str) -> tuple[int, list[dict]]:
    result = run("inspect", root, "--check", "--json", *args)
    assert result.exit_code in (0, 3), result.stderr
    assert "Traceback" not in result.stderr
    return result.exit_code, json.loads(result.stdout)["check"]["problems"]


def _first_data_file(run, root: Path) -> Path:
    """The data file snapshot 1 wrote: every later snapshot, every tag and the branch
    still read it (the table only appends)."""
    files = run.json("inspect", root, "files", "--snapshot", "1")["files"]
    (only,) = files
    return Path(only["path"])


def test_a_corrupt_snapshot_is_a_problem_and_the_rest_is_checked(run, scenarios, copy_table):
    root = copy_table(scenarios["tags_consumers_branches"].root)
    (root / "snapshot" / "snapshot-5").write_text('{"version": 3, "id": 5, "sch')
    victim = _first_data_file(run, root)
    victim.unlink()
    code, problems = _problems(run, root)
    assert code == 3
    by_path = {p["path"]: p for p in problems}
    corrupt = by_path[str(root / "snapshot" / "snapshot-5")]
    assert (corrupt["kind"], corrupt["role"]) == ("unreadable", "snapshot")
    # The data file is still found missing, through every root that can be read.
    lost = by_path[str(victim)]
    assert lost["kind"] == "missing"
    snapshot_spans = [
        (s["first"], s["last"])
        for s in lost["roots"]
        if s["branch"] == "main" and s["kind"] == "snapshot"
    ]
    assert snapshot_spans == [(1, 4), (6, 8)]  # snapshot 5 cannot be read: it needs nothing
    human = run("inspect", root, "--check")
    assert human.exit_code == 3
    assert "snapshot-5" in human.stdout and victim.name in human.stdout


def test_a_corrupt_tag_is_a_problem(run, scenarios, copy_table):
    root = copy_table(scenarios["tags_consumers_branches"].root)
    (root / "tag" / "tag-t4").write_text("{")
    code, problems = _problems(run, root)
    assert code == 3
    ((path, kind, role),) = {(p["path"], p["kind"], p["role"]) for p in problems}
    assert (path, kind, role) == (str(root / "tag" / "tag-t4"), "unreadable", "tag")


def test_each_problem_names_every_root_that_needs_the_file(run, scenarios, copy_table):
    root = copy_table(scenarios["tags_consumers_branches"].root)
    victim = _first_data_file(run, root)
    victim.unlink()
    code, problems = _problems(run, root)
    assert code == 3
    (problem,) = problems
    assert problem["referenced_by"] == "snapshot 1"  # the first root, as before
    labels = {(s["branch"], s["kind"], s["first"], s["last"], s["tag"]) for s in problem["roots"]}
    assert ("main", "snapshot", 1, 8, None) in labels
    assert {("main", "tag", n, n, f"t{n}") for n in (2, 4, 6)} <= labels
    assert ("b1", "snapshot", 4, 6, None) in labels
    whole = next(s for s in problem["roots"] if s["kind"] == "snapshot" and s["branch"] == "main")
    assert whole["latest"] is True
    assert problem["root_count"] == sum(
        1 if s["tag"] else s["last"] - s["first"] + 1 for s in problem["roots"]
    )
    assert problem["needed_by"].startswith("snapshots 1..8 (latest), tag t2, tag t4 and ")
    assert problem["needed_by"].endswith(f"and {problem['root_count'] - 10} more")


def test_a_snapshot_missing_in_the_middle_of_the_history(run, scenarios, copy_table):
    root = copy_table(scenarios["many_commits"].root)
    (root / "snapshot" / "snapshot-12").unlink()
    (root / "snapshot" / "snapshot-13").unlink()
    code, problems = _problems(run, root)
    assert code == 3
    gaps = sorted(p["path"] for p in problems if p["role"] == "snapshot")
    assert gaps == [str(root / "snapshot" / f"snapshot-{i}") for i in (12, 13)]
    assert all(p["kind"] == "missing" for p in problems if p["role"] == "snapshot")
    # The oldest snapshots gone (an expiry) are no gap.
    other = copy_table(scenarios["tags_consumers_branches"].root)
    (other / "snapshot" / "snapshot-1").unlink()
    code, problems = _problems(run, other)
    assert not [p for p in problems if p["role"] == "snapshot"]


@pytest.mark.parametrize(
    ("args", "scope", "roots"),
    [
        ((), {"kind": "all", "snapshot": None, "tag": None}, None),
        (("--snapshot", "latest"), {"kind": "latest", "snapshot": None, "tag": None}, 1),
        (("--snapshot", "3"), {"kind": "snapshot", "snapshot": 3, "tag": None}, 1),
        (("--tag", "t6"), {"kind": "tag", "snapshot": None, "tag": "t6"}, 1),
    ],
)
def test_scope(run, scenarios, args, scope, roots):
    root = scenarios["tags_consumers_branches"].root
    doc = run.json("inspect", root, "--check", *args)["check"]
    assert doc["ok"] is True and doc["scope"] == scope
    if roots is not None:
        assert doc["roots"] == roots
    else:
        assert doc["roots"] > 10  # every snapshot, tag and branch root


def test_scope_finds_only_what_its_root_needs(run, scenarios, copy_table):
    root = copy_table(scenarios["tags_consumers_branches"].root)

    def files_at(snapshot: str) -> set[str]:
        return {
            f["path"] for f in run.json("inspect", root, "files", "--snapshot", snapshot)["files"]
        }

    (written_last,) = files_at("8") - files_at("7")  # only the latest snapshot reads it
    latest_only = Path(written_last)
    latest_only.unlink()
    assert run("inspect", root, "--check", "--snapshot", "3").exit_code == 0
    assert run("inspect", root, "--check", "--tag", "t2").exit_code == 0
    code, problems = _problems(run, root, "--snapshot", "latest")
    assert code == 3 and [p["path"] for p in problems] == [str(latest_only)]
    assert problems[0]["needed_by"] == "snapshot 8 (latest)"


def test_scope_of_an_absent_root_is_an_error(run, scenarios):
    root = scenarios["tags_consumers_branches"].root
    for args, phrase in ((("--snapshot", "99"), "snapshot 99"), (("--tag", "nope"), "nope")):
        result = run("inspect", root, "--check", *args)
        assert result.exit_code == 1 and phrase in result.stderr
        assert "Traceback" not in result.stderr
    bad = run("inspect", root, "--check", "--snapshot", "newest")
    assert bad.exit_code == 2 and "--snapshot" in bad.stderr


def test_quiet_prints_the_problem_paths_only(run, scenarios, copy_table):
    root = copy_table(scenarios["tags_consumers_branches"].root)
    ok = run("inspect", root, "--check", "-q")
    assert ok.exit_code == 0 and ok.stdout == ""
    victim = _first_data_file(run, root)
    victim.unlink()
    result = run("inspect", root, "--check", "-q")
    assert result.exit_code == 3
    assert result.stdout.splitlines() == [str(victim)]


def test_metrics_file_has_an_integrity_gauge_per_table(run, scenarios, copy_table, tmp_path):
    metrics = tmp_path / "paimon.prom"
    healthy = scenarios["many_commits"].root
    assert run("inspect", healthy, "--check", "--metrics-file", metrics).exit_code == 0
    broken = copy_table(scenarios["tags_consumers_branches"].root)
    _first_data_file(run, broken).unlink()
    (broken / "tag" / "tag-t4").write_text("{")
    assert run("inspect", broken, "--check", "--metrics-file", metrics).exit_code == 3
    samples = {(s.name, s.labels): s.value for s in parse(metrics.read_text())}

    def value(name: str, table: Path, **labels: str) -> float:
        key = tuple(sorted({"table": f"db.{table.name}", **labels}.items()))
        return samples[(name, key)]

    assert value("paimon_table_integrity_ok", healthy) == 1
    assert value("paimon_table_integrity_ok", broken) == 0
    assert value("paimon_table_integrity_problems", broken, kind="missing") == 1
    assert value("paimon_table_integrity_problems", broken, kind="unreadable") == 1
    assert value("paimon_table_integrity_problems", broken, kind="size-mismatch") == 0
    assert value("paimon_table_integrity_problems", healthy, kind="missing") == 0
    assert value("paimon_table_integrity_files_checked", healthy) > 0
    assert value("paimon_table_integrity_last_check_timestamp_seconds", broken) > 0


def test_the_examples_of_inspect_help_work(run, scenarios, tmp_path):
    """Every example `paimon inspect -h` shows runs as written (on a copy named orders)."""
    import shlex

    from paimon_cli.commands.inspect import EPILOG

    wh = tmp_path / "wh"
    shutil.copytree(scenarios["many_commits"].root, wh / "db.db" / "orders")
    examples = [
        block.replace("\\\n", " ").strip()
        for block in EPILOG.split("\n\n")
        if block.strip().startswith("paimon inspect")
    ]
    assert len(examples) >= 3
    for example in examples:
        args = shlex.split(
            example.replace("s3://lake/wh", str(wh))
            .replace("/var/lib/node_exporter", str(tmp_path))
            .replace(" /wh", f" {wh}")
        )
        result = run(*args[1:])
        assert result.exit_code == 0, (example, result.stdout, result.stderr)
    assert (tmp_path / "paimon.prom").exists()
