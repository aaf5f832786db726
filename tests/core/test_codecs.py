"""Every Avro codec Paimon writes is readable by this install; a missing codec library is a
clear error naming the package, never "corrupt metadata"."""

from __future__ import annotations

import io
from pathlib import Path

import fastavro
import pytest
from support import rust_writer as rw
from support.fixtures import Run

import core.format.codecs
from core.format.codecs import avro_codec_available

# Avro (Java)'s codecs, which Paimon's manifest.compression / file.compression map onto.
PAIMON_AVRO_CODECS = ("null", "deflate", "snappy", "bzip2", "xz", "zstandard")
AVRO_CODEC_OF = {"zstd": "zstandard", "snappy": "snappy", "deflate": "deflate", "none": "null"}


@pytest.mark.parametrize("codec", PAIMON_AVRO_CODECS)
def test_every_codec_paimon_writes_is_available(codec: str) -> None:
    assert avro_codec_available(codec)


@pytest.fixture(scope="module")
def codec_tables(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    return rw.codec_tables(tmp_path_factory.mktemp("codec-tables"))


def _manifest_codecs(root: Path) -> set[str]:
    return {fastavro.reader(io.BytesIO(p.read_bytes())).codec for p in root.glob("manifest/*")}


def test_pypaimon_rust_tables_of_every_manifest_codec_pass_check(
    run: Run, codec_tables: list[Path]
) -> None:
    seen = set()
    for root in codec_tables:
        codec = root.name.split("_")[1]
        assert _manifest_codecs(root) == {AVRO_CODEC_OF[codec]}  # the codec really is in use
        seen.add(codec)
        result = run("inspect", root, "--check")
        assert result.exit_code == 0, result.stderr
    assert seen == set(rw.MANIFEST_CODECS)


def test_missing_codec_library_names_the_package(
    run: Run, codec_tables: list[Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    # As on an install made with --no-deps: fastavro cannot decode zstandard here.
    monkeypatch.setattr(
        core.format.codecs, "avro_codec_available", lambda codec: codec != "zstandard"
    )
    zstd = next(r for r in codec_tables if r.name.startswith("codec_zstd_"))
    commands = (
        ("inspect", "--check"),
        ("expire-snapshots", "--dry-run", "--retain-min", "1", "--retain-max", "1"),
        ("delete-orphan-files", "--dry-run"),
    )
    for command in commands:
        result = run(command[0], zstd, *command[1:], "--json")
        assert result.exit_code == 1, result.stdout
        assert '"kind": "missing_dependency"' in result.stderr
        assert "backports.zstd" in result.stderr
        assert "corrupt" not in result.stderr
    snappy = next(r for r in codec_tables if r.name.startswith("codec_snappy_"))
    assert run("inspect", snappy, "--check").exit_code == 0
