"""The `--json` documents of every command, pinned against tests/golden/ (docs/json.md,
docs/schema/): keys, value types and structure, on small pypaimon tables written once per
module. What varies between runs is normalised (tests/support/golden.py); rewrite the
files with PAIMON_CLI_UPDATE_GOLDEN=1 after an intended, additive change."""

from __future__ import annotations

import json
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from support import golden
from support import pypaimon_writer as pw
from support.fixtures import Run
from support.invariants import age_tree, plant

# Tables of the golden warehouse, by the name their cases use.
BUILDERS: dict[str, Callable[[Path], pw.Scenario]] = {
    "append": pw.append_partitioned,
    "pk": pw.pk_table,
    "dated": pw.dated_partitions,
    "branches": pw.tags_consumers_branches,
}

Setup = Callable[[Path, Run], None]


@dataclass(frozen=True)
class Case:
    """One command line: ``TABLE`` in ``args`` stands for the copied table's root, ``WH``
    for its warehouse; ``setup`` prepares the copy (and may run commands) first."""

    table: str
    args: tuple[str, ...]
    setup: Setup | None = None
    exit_code: int = 0
    stderr: bool = False  # the document is the error on stderr


def _orphans(root: Path, _run: Run) -> None:
    age_tree(root)
    plant(root / "manifest" / "manifest-orphan-0", content=b"m")
    plant(root / "dt=2024-01-01" / "hr=0" / "bucket-0" / "data-orphan-0.parquet", content=b"d")


def _quarantined(root: Path, run: Run) -> None:
    args = ["expire-snapshots", root, "--retain-max", "2", "--retain-min", "1", "--quarantine"]
    assert run(*args).exit_code == 0


def _no_consumers(root: Path, _run: Run) -> None:
    shutil.rmtree(root / "consumer")


# changelog.num-retained.min above the snapshot's decouples the changelog lifecycle
DECOUPLED = (
    *("--retain-max", "2", "--retain-min", "1"),
    *("--options", "changelog.num-retained.min=20,changelog.num-retained.max=30"),
)


def _decoupled_expiry(root: Path, run: Run) -> None:
    _no_consumers(root, run)
    assert run("expire-snapshots", root, *DECOUPLED).exit_code == 0


def _missing_data_files(root: Path, _run: Run) -> None:
    """Every data file of one bucket gone (what remove-unexisting-files repairs)."""
    bucket = root / "dt=2024-01-02" / "hr=1" / "bucket-0"
    doomed = sorted(bucket.glob("data-*"))
    assert doomed
    for path in doomed:
        path.unlink()


def _future() -> str:
    return str(int(time.time() * 1000) + 86_400_000)


RETAIN = ("--retain-max", "2", "--retain-min", "1")
CASES: dict[str, Case] = {
    # expire-snapshots
    "expire-snapshots-dry-run": Case("append", ("expire-snapshots", "TABLE", *RETAIN, "--dry-run")),
    "expire-snapshots": Case("append", ("expire-snapshots", "TABLE", *RETAIN)),
    "expire-snapshots-glob-dry-run": Case(
        "append", ("expire-snapshots", "db.*", "-w", "WH", *RETAIN, "--dry-run")
    ),
    "expire-snapshots-decoupled-dry-run": Case(
        "pk", ("expire-snapshots", "TABLE", *DECOUPLED, "--dry-run"), _no_consumers
    ),
    "expire-snapshots-quarantine": Case(
        "append", ("expire-snapshots", "TABLE", *RETAIN, "--quarantine")
    ),
    # expire-changelogs
    "expire-changelogs-dry-run": Case(
        "pk", ("expire-changelogs", "TABLE", "--retain-max", "1", "--dry-run"), _decoupled_expiry
    ),
    "expire-changelogs": Case(
        "pk", ("expire-changelogs", "TABLE", "--retain-max", "1"), _decoupled_expiry
    ),
    # expire-partitions
    # a partition without a date in its values is kept and fails the real run (exit 1),
    # and the dry run, which predicts it
    "expire-partitions-dry-run": Case(
        "dated",
        ("expire-partitions", "TABLE", "--expiration-time", "1 d", "--dry-run"),
        exit_code=1,
    ),
    "expire-partitions": Case(
        "dated", ("expire-partitions", "TABLE", "--expiration-time", "1 d"), exit_code=1
    ),
    # delete-orphan-files
    "delete-orphan-files-dry-run": Case(
        "append", ("delete-orphan-files", "TABLE", "--dry-run"), _orphans
    ),
    "delete-orphan-files": Case("append", ("delete-orphan-files", "TABLE"), _orphans),
    # tags
    "create-tag-dry-run": Case(
        "append",
        ("create-tag", "TABLE", "t1", "--snapshot", "2", "--time-retained", "7 d", "--dry-run"),
    ),
    "create-tag": Case(
        "append", ("create-tag", "TABLE", "t1", "--snapshot", "2", "--time-retained", "7 d")
    ),
    "create-tag-from-timestamp-dry-run": Case(
        "append", ("create-tag", "TABLE", "t1", "--from-timestamp", "1000000000000", "--dry-run")
    ),
    "delete-tag-dry-run": Case("append", ("delete-tag", "TABLE", "mid", "--dry-run")),
    "delete-tag": Case("append", ("delete-tag", "TABLE", "mid")),
    "rename-tag-dry-run": Case("append", ("rename-tag", "TABLE", "mid", "mid2", "--dry-run")),
    "rename-tag": Case("append", ("rename-tag", "TABLE", "mid", "mid2")),
    "expire-tags-dry-run": Case(
        "append", ("expire-tags", "TABLE", "--older-than", "0 s", "--dry-run")
    ),
    "expire-tags": Case("append", ("expire-tags", "TABLE", "--older-than", "0 s")),
    # branches
    "create-branch-dry-run": Case(
        "branches", ("create-branch", "TABLE", "b2", "--tag", "t2", "--dry-run")
    ),
    "create-branch": Case("branches", ("create-branch", "TABLE", "b2", "--tag", "t2")),
    "delete-branch-dry-run": Case("branches", ("delete-branch", "TABLE", "b1", "--dry-run")),
    "delete-branch": Case("branches", ("delete-branch", "TABLE", "b1")),
    "fast-forward-dry-run": Case(
        "branches", ("fast-forward", "TABLE", "b1", "--force", "--dry-run")
    ),
    "fast-forward": Case("branches", ("fast-forward", "TABLE", "b1", "--force")),
    # compact
    "compact-dry-run": Case("pk", ("compact", "TABLE", "--dry-run")),
    "compact": Case("pk", ("compact", "TABLE")),
    "compact-append-dry-run": Case("append", ("compact", "TABLE", "--dry-run")),
    "compact-manifests-dry-run": Case("append", ("compact", "TABLE", "--manifests", "--dry-run")),
    "compact-manifests": Case("append", ("compact", "TABLE", "--manifests")),
    # undo and repair
    "rollback-dry-run": Case("append", ("rollback", "TABLE", "--to-snapshot", "4", "--dry-run")),
    "rollback": Case("append", ("rollback", "TABLE", "--to-snapshot", "4")),
    "rollback-to-timestamp-dry-run": Case(
        "append", ("rollback", "TABLE", "--to-timestamp", "FUTURE", "--dry-run")
    ),
    "remove-unexisting-files-dry-run": Case(
        "append", ("remove-unexisting-files", "TABLE", "--dry-run"), _missing_data_files
    ),
    "remove-unexisting-files": Case(
        "append", ("remove-unexisting-files", "TABLE"), _missing_data_files
    ),
    "restore-dry-run": Case("append", ("restore", "TABLE", "--last", "--dry-run"), _quarantined),
    "restore": Case("append", ("restore", "TABLE", "--last"), _quarantined),
    "purge-quarantine-dry-run": Case(
        "append", ("purge-quarantine", "TABLE", "--dry-run"), _quarantined
    ),
    "purge-quarantine": Case("append", ("purge-quarantine", "TABLE"), _quarantined),
    # maintain
    "maintain-dry-run": Case("append", ("maintain", "TABLE", "--orphans", "--dry-run"), _orphans),
    "maintain": Case("append", ("maintain", "TABLE", "--orphans"), _orphans),
    # inspect
    **{
        f"inspect-{view}": Case("append", ("inspect", "TABLE", view))
        for view in (
            "summary",
            "snapshots",
            "files",
            "manifests",
            "partitions",
            "tags",
            "consumers",
            "schema",
            "options",
            "retention",
        )
    },
    "inspect-branches": Case("branches", ("inspect", "TABLE", "branches")),
    "inspect-runs": Case("append", ("inspect", "TABLE", "runs"), _quarantined),
    "inspect-check": Case("append", ("inspect", "TABLE", "--check")),
    "inspect-check-problems": Case(
        "append", ("inspect", "TABLE", "--check"), _missing_data_files, exit_code=3
    ),
    # errors (on stderr)
    "error-usage": Case(
        "append",
        ("expire-snapshots", "TABLE", "--retain-min", "0"),
        exit_code=2,
        stderr=True,
    ),
    "error-table-not-found": Case(
        "append", ("inspect", "WH/db.db/missing"), exit_code=1, stderr=True
    ),
}


@pytest.fixture(scope="module")
def golden_tables(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    wh = tmp_path_factory.mktemp("golden-wh")
    return {name: build(wh).root for name, build in BUILDERS.items()}


def _argument(arg: str, root: Path, wh: Path) -> str:
    if arg == "TABLE":
        return str(root)
    if arg == "FUTURE":
        return _future()
    return arg.replace("WH", str(wh))


@pytest.mark.parametrize("name", list(CASES))
def test_json_document_matches_golden(
    name: str, golden_tables: dict[str, Path], tmp_path: Path, run: Run
) -> None:
    case = CASES[name]
    wh = tmp_path / "wh"
    source = golden_tables[case.table]
    root = wh / source.parent.name / source.name
    shutil.copytree(source, root, symlinks=True)
    if case.setup is not None:
        case.setup(root, run)
    before = {p.stem for p in (root / ".paimon-cli" / "runs").glob("*.json")}
    result = run(*(_argument(a, root, wh) for a in case.args), "--json")
    assert result.exit_code == case.exit_code, result.stderr
    if case.stderr:
        assert result.stdout == ""
        document = json.loads(result.stderr)
    else:
        document = json.loads(result.stdout)
    run_ids = golden.collect_run_ids(document) | {s.rpartition("-")[2] for s in before}
    normalise = golden.Normaliser([tmp_path, wh], run_ids)
    golden.check(name, normalise(document))
