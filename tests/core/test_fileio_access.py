"""Storage that refuses us (no credentials, 403) says which setting to fix, never "a bug"."""

from __future__ import annotations

import errno
import os
import uuid
from pathlib import Path
from typing import Any

import pytest
from support.fixtures import dev_dependency

from core.errors import StorageAccessError, StorageError
from core.io.fileio import FileIO


def test_a_refused_permission_names_what_to_change(monkeypatch: pytest.MonkeyPatch) -> None:
    fileio = FileIO()
    fs, _ = fileio._fs("memory://wh/t/snapshot/LATEST")

    def denied(_path: str) -> bytes:
        raise PermissionError("Access Denied")  # what s3fs raises for HTTP 403

    monkeypatch.setattr(fs, "cat_file", denied)
    with pytest.raises(StorageAccessError) as info:
        fileio.read_bytes("memory://wh/t/snapshot/LATEST")
    assert info.value.kind == "storage_access"
    assert "access denied to memory://wh/t/snapshot/LATEST" in info.value.message
    assert info.value.hint and "--fs-option" in info.value.hint


def test_missing_s3_credentials_name_the_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    dev_dependency("s3fs")
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent/credentials")
    monkeypatch.setenv("AWS_CONFIG_FILE", "/nonexistent/config")
    # Nothing listens on port 9: botocore gives up on credentials before connecting.
    fileio = FileIO({"endpoint_url": "http://127.0.0.1:9", "skip_instance_cache": "true"})
    with pytest.raises(StorageAccessError) as info:
        fileio.read_bytes("s3://bucket/wh/db.db/t/snapshot/LATEST")
    assert "no usable credentials" in info.value.message
    assert info.value.hint and "AWS_ACCESS_KEY_ID" in info.value.hint


@pytest.mark.parametrize(
    "code", [errno.EACCES, errno.ESTALE, errno.EIO], ids=["EACCES", "ESTALE", "EIO"]
)
def test_exists_answers_false_only_for_a_definite_not_found(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, code: int
) -> None:
    """Issue 22 defect 4: a directory briefly unreadable is not a missing one."""
    unreadable = tmp_path / "dt=1" / "bucket-0"
    unreadable.mkdir(parents=True)
    (unreadable / "data-1.parquet").write_bytes(b"x")
    real_lstat = os.lstat

    def lstat(path: Any, *args: Any, **kwargs: Any) -> os.stat_result:
        if str(path).startswith(str(unreadable)):
            raise OSError(code, os.strerror(code), str(path))
        return real_lstat(path, *args, **kwargs)

    fileio = FileIO()
    monkeypatch.setattr(os, "lstat", lstat)
    with pytest.raises(StorageError) as info:
        fileio.exists(str(unreadable / "data-1.parquet"))
    assert os.strerror(code) in info.value.message
    assert fileio.exists(str(tmp_path / "dt=1")) is True
    assert fileio.exists(str(tmp_path / "dt=2" / "bucket-0" / "data-1.parquet")) is False


def test_exists_on_an_object_store_raises_on_a_refused_permission(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    fileio = FileIO()
    bucket = f"memory://exists-{uuid.uuid4().hex}/t/dt=1/bucket-0"
    fs, key = fileio._fs(f"{bucket}/data-1.parquet")
    fs.pipe_file(key, b"x")
    assert fileio.exists(f"{bucket}/data-1.parquet") is True
    assert fileio.exists(f"{bucket}/data-2.parquet") is False

    def denied(_path: str, **_kw: Any) -> dict[str, Any]:
        raise PermissionError("Access Denied")

    monkeypatch.setattr(fs, "info", denied)
    with pytest.raises(StorageAccessError):
        fileio.exists(f"{bucket}/data-1.parquet")


def test_delete_each_answers_as_delete_does(tmp_path: Path) -> None:
    """Deleted, already absent, or the error ``delete`` raises: locally in one loop, and on
    another store (memory://) through ``delete`` itself."""
    (tmp_path / "a").write_bytes(b"x")
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "inner").write_bytes(b"x")
    fileio = FileIO()
    fileio.write_bytes("memory://each/b", b"x")
    paths = [str(tmp_path / "a"), str(tmp_path / "gone"), str(tmp_path / "d")]
    paths += ["memory://each/b", "memory://each/gone"]
    outcomes = fileio.delete_each(paths)
    assert outcomes[:2] == [True, False]
    assert isinstance(outcomes[2], StorageError)
    assert outcomes[2].message.startswith(f"cannot delete {tmp_path / 'd'}: ")
    assert outcomes[3:] == [True, False]
    assert not (tmp_path / "a").exists() and (tmp_path / "d" / "inner").exists()


@pytest.mark.parametrize("where", ["class", "instance"])
def test_delete_each_calls_a_patched_delete(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, where: str
) -> None:
    """Fault injection patches FileIO.delete on the class or on one FileIO: delete_each
    must go through it for every path, not unlink inline (a refused delete was counted done)."""
    (tmp_path / "a").write_bytes(b"x")
    seen: list[str] = []

    def refuse(*args: object) -> bool:
        seen.append(str(args[-1]))
        raise StorageError(f"cannot delete {args[-1]}: Permission denied")

    fileio = FileIO()
    if where == "class":
        monkeypatch.setattr(FileIO, "delete", refuse)
    else:
        monkeypatch.setattr(fileio, "delete", refuse)
    outcomes = fileio.delete_each([str(tmp_path / "a")])
    assert seen == [str(tmp_path / "a")] and isinstance(outcomes[0], StorageError)
    assert (tmp_path / "a").exists()
