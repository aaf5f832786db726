"""Catalog configurations: pypaimon's paimon.yaml read unchanged, named catalogs in
~/.paimon-cli.yaml with PyIceberg-style environment overrides, typos refused."""

from __future__ import annotations

from pathlib import Path

import pytest

from core.catalog.config import default_catalog_config, load_catalog_config
from core.catalog.options import storage_options
from core.errors import CatalogConfigError


def test_paimon_yaml_values_are_strings(tmp_path: Path) -> None:
    path = tmp_path / "paimon.yaml"
    path.write_text(
        "metastore: jdbc\nuri: jdbc:sqlite:/c.db\nwarehouse: /wh\nlock.enabled: true\n"
        "lock-acquire-timeout: 30 s\nfs.s3.accessKeyId: AK\n",
        encoding="utf-8",
    )
    config = load_catalog_config(str(path), {})
    assert config.name == str(path)
    assert config.options["lock.enabled"] == "true"
    assert config.options["lock-acquire-timeout"] == "30 s"


def test_environment_overrides_and_defines(tmp_path: Path) -> None:
    (tmp_path / ".paimon-cli.yaml").write_text(
        "catalog:\n  Prod:\n    metastore: jdbc\n    uri: jdbc:sqlite:/old.db\n",
        encoding="utf-8",
    )
    env = {
        "PAIMON_CLI_HOME": str(tmp_path),
        "PAIMON_CLI_CATALOG__PROD__URI": "jdbc:sqlite:/new.db",
        "PAIMON_CLI_CATALOG__PROD__LOCK__ENABLED": "true",
        "PAIMON_CLI_CATALOG__PROD__CATALOG_KEY": "k",
        "PAIMON_CLI_CATALOG__PROD__FS__S3__ACCESSKEYID": "AK",
        "PAIMON_CLI_CATALOG__DEV__WAREHOUSE": "/dev-wh",  # a catalog the file lacks
    }
    prod = load_catalog_config("Prod", env)
    assert prod.options == {
        "metastore": "jdbc",
        "uri": "jdbc:sqlite:/new.db",
        "lock.enabled": "true",
        "catalog-key": "k",
        "fs.s3.accessKeyId": "AK",
    }
    assert load_catalog_config("dev", env).options == {"warehouse": "/dev-wh"}
    assert default_catalog_config(env) is None  # no default-catalog, none named default
    env["PAIMON_CLI_DEFAULT_CATALOG"] = "dev"
    default = default_catalog_config(env)
    assert default is not None and default.name == "dev"


def test_typos_are_refused_with_the_closest_key(tmp_path: Path) -> None:
    (tmp_path / ".paimon-cli.yaml").write_text(
        "catalog:\n  prod:\n    metastore: jdbc\n    lock.enable: true\n", encoding="utf-8"
    )
    with pytest.raises(CatalogConfigError, match="did you mean 'lock.enabled'"):
        load_catalog_config("prod", {"PAIMON_CLI_HOME": str(tmp_path)})
    (tmp_path / ".paimon-cli.yaml").write_text("catalogs:\n  prod: {}\n", encoding="utf-8")
    with pytest.raises(CatalogConfigError, match="unknown top-level key 'catalogs'"):
        load_catalog_config("prod", {"PAIMON_CLI_HOME": str(tmp_path)})


def test_invalid_yaml_is_one_line(tmp_path: Path) -> None:
    path = tmp_path / "paimon.yaml"
    path.write_text("metastore: [jdbc\n", encoding="utf-8")
    with pytest.raises(CatalogConfigError, match="is not valid YAML"):
        load_catalog_config(str(path), {})


def test_storage_credentials_become_fileio_settings() -> None:
    assert storage_options(
        {"fs.s3.accessKeyId": "AK", "fs.s3.accessKeySecret": "SK", "fs.s3.endpoint": "minio:9000"}
    ) == {"key": "AK", "secret": "SK", "endpoint_url": "https://minio:9000"}
    assert storage_options({"s3.endpoint": "http://127.0.0.1:9000"}) == {
        "endpoint_url": "http://127.0.0.1:9000"
    }


@pytest.mark.parametrize(
    "text",
    [
        "metastore: filesystem\nwarehouse: /wh\nlock.enabled: true\nlock.type: hive\n",
        "metastore: jdbc\nuri: jdbc:sqlite:/c.db\nwarehouse: /wh\nlock.type: zookeeper\n",
        "metastore: jdbc\nuri: jdbc:mysql://h/db\nwarehouse: /wh\n",
        "metastore: hive\nwarehouse: /wh\n",
    ],
    ids=["filesystem-lock", "jdbc-zookeeper-lock", "mysql", "hive"],
)
def test_catalogs_whose_commits_we_cannot_guard_are_refused(tmp_path: Path, text: str) -> None:
    from core.catalog.factory import open_catalog

    path = tmp_path / "paimon.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(CatalogConfigError):
        open_catalog(str(path), spec="db.t", warehouse=None, fs_options={}, environ={})
