"""Storage that refuses us (no credentials, 403) says which setting to fix, never "a bug"."""

from __future__ import annotations

import pytest

from core.errors import StorageAccessError
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
    pytest.importorskip("s3fs", reason="s3fs is needed to reach S3")
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
