"""--catalog with a pypaimon paimon.yaml (metastore: filesystem) and named catalogs in
~/.paimon-cli.yaml: the same plans by name as by path, globs by the catalog's listing, and
one clear line for a mistyped key, an unknown name or an unknown table."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support.fixtures import Run
from support.golden import without_run_fields
from support.pypaimon_writer import append_partitioned, pk_table, read_rows

run = Run()


@pytest.fixture(scope="module")
def warehouse(tmp_path_factory: pytest.TempPathFactory) -> Path:
    wh = tmp_path_factory.mktemp("wh")
    append_partitioned(wh)
    pk_table(wh)
    return wh


@pytest.fixture
def paimon_yaml(tmp_path: Path, warehouse: Path) -> Path:
    path = tmp_path / "paimon.yaml"
    path.write_text(f"metastore: filesystem\nwarehouse: {warehouse}\n", encoding="utf-8")
    return path


def test_same_plan_by_name_as_by_path(warehouse: Path, paimon_yaml: Path) -> None:
    root = warehouse / "db.db" / "append_partitioned"
    for command in (
        ["expire-snapshots", "--retain-max", "2", "--retain-min", "1", "--dry-run"],
        ["delete-orphan-files", "--dry-run"],
        ["expire-tags", "--dry-run"],
    ):
        by_path = run.json(command[0], root, *command[1:])
        by_name = run.json(
            command[0], "db.append_partitioned", "--catalog", paimon_yaml, *command[1:]
        )
        assert by_name["identifier"] == "db.append_partitioned"
        assert without_run_fields(by_name) == without_run_fields(by_path), command[0]


def test_inspect_says_which_catalog(warehouse: Path, paimon_yaml: Path) -> None:
    doc = run.json("inspect", "db.pk_table", "--catalog", paimon_yaml)
    assert doc["summary"]["catalog"] == {
        "catalog": str(paimon_yaml),
        "kind": "filesystem",
        "identifier": "db.pk_table",
        "where": str(warehouse),
        "lock": "none",
    }
    human = run("inspect", "db.pk_table", "--catalog", paimon_yaml)
    assert human.exit_code == 0, human.stderr
    assert f"db.pk_table in the filesystem catalog {paimon_yaml}" in human.stdout


def test_glob_over_the_catalog_and_a_real_run(warehouse: Path, paimon_yaml: Path) -> None:
    doc = run.json("inspect", "*.*", "--catalog", paimon_yaml)
    assert [t["identifier"] for t in doc["tables"]] == ["db.append_partitioned", "db.pk_table"]
    result = run("maintain", "*.*", "--catalog", paimon_yaml, "-q")
    assert result.exit_code == 0, result.stderr
    # pypaimon still reads the tables it wrote.
    assert read_rows(warehouse, "db.pk_table")


def test_named_catalog_env_override_and_default(
    warehouse: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (home / ".paimon-cli.yaml").write_text(
        "default-catalog: lake\n"
        "catalog:\n"
        "  lake:\n"
        "    metastore: filesystem\n"
        "    warehouse: /nowhere\n",
        encoding="utf-8",
    )
    env = {
        "PAIMON_CLI_HOME": str(home),
        # The environment overrides the file, PyIceberg's way.
        "PAIMON_CLI_CATALOG__LAKE__WAREHOUSE": str(warehouse),
    }
    by_name = run("inspect", "db.pk_table", "--catalog", "lake", "--json", env=env)
    assert by_name.exit_code == 0, by_name.stderr
    assert json.loads(by_name.stdout)["summary"]["catalog"]["catalog"] == "lake"
    by_default = run("inspect", "db.pk_table", "--json", env=env)
    assert by_default.exit_code == 0, by_default.stderr
    unknown = run("inspect", "db.pk_table", "--catalog", "lkae", env=env)
    assert unknown.exit_code == 2
    assert "no catalog named 'lkae'" in unknown.stderr and "did you mean lake?" in unknown.stderr


def test_unknown_table_suggests_close_names(paimon_yaml: Path) -> None:
    result = run("expire-snapshots", "db.pk_tabel", "--catalog", paimon_yaml, "--dry-run")
    assert result.exit_code == 1
    assert "has no table 'db.pk_tabel'" in result.stderr
    assert "did you mean db.pk_table?" in result.stderr
    assert "Traceback" not in result.stderr


def test_typo_in_paimon_yaml_is_one_clear_usage_error(tmp_path: Path, warehouse: Path) -> None:
    bad = tmp_path / "paimon.yaml"
    bad.write_text(f"metastore: filesystem\nwarehous: {warehouse}\n", encoding="utf-8")
    result = run("inspect", "db.pk_table", "--catalog", bad, "--json")
    assert result.exit_code == 2
    error = json.loads(result.stderr)["error"]
    assert error["kind"] == "catalog_config"
    assert "'warehous' is not a catalog option" in error["message"]
    assert "did you mean 'warehouse'?" in error["message"]


def test_catalog_and_warehouse_together_are_refused(paimon_yaml: Path, warehouse: Path) -> None:
    result = run("inspect", "db.pk_table", "--catalog", paimon_yaml, "--warehouse", warehouse)
    assert result.exit_code == 2
    assert "--catalog and --warehouse" in result.stderr


def test_missing_catalog_file(tmp_path: Path) -> None:
    result = run("inspect", "db.t", "--catalog", tmp_path / "nope.yaml", "--json")
    assert result.exit_code == 2
    assert json.loads(result.stderr)["error"]["kind"] == "catalog_config"


def test_paimon_catalog_is_the_environment_twin(paimon_yaml: Path) -> None:
    result = run("inspect", "db.pk_table", "--json", env={"PAIMON_CATALOG": str(paimon_yaml)})
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout)["identifier"] == "db.pk_table"
