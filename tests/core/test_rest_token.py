"""Vended credentials: fetched on first use, fetched again once less than min(5 min, half
their life) is left, and shipped to executors as the credentials held now."""

from __future__ import annotations

import pickle

import pytest

from core.catalog import rest_token
from core.catalog.rest_token import VendedFileIO
from core.io.fileio import FileIO


class Vendor:
    def __init__(self, life_ms: int) -> None:
        self.life_ms = life_ms
        self.now = 1_000_000
        self.calls = 0

    def __call__(self) -> tuple[dict[str, str], int]:
        self.calls += 1
        token = {
            "fs.s3.accessKeyId": f"AK{self.calls}",
            "fs.s3.accessKeySecret": "secret",
            "fs.s3.securityToken": "session",
            "fs.s3.endpoint": "http://127.0.0.1:9",
        }
        return token, self.now + self.life_ms


@pytest.fixture
def vendor(monkeypatch: pytest.MonkeyPatch) -> Vendor:
    v = Vendor(life_ms=60_000)
    monkeypatch.setattr(rest_token, "_now_ms", lambda: v.now)
    return v


def test_renewed_at_half_life(vendor: Vendor) -> None:
    fio = VendedFileIO({"region_name": "us-east-1"}, vendor)
    fio.renew_credentials()
    assert vendor.calls == 1 and fio.storage_options["key"] == "AK1"
    assert fio.storage_options["region_name"] == "us-east-1"  # the catalog's own settings stay
    vendor.now += 29_000
    fio.renew_credentials()
    assert vendor.calls == 1  # more than half its life left
    vendor.now += 2_000
    fio.renew_credentials()
    assert vendor.calls == 2 and fio.storage_options["key"] == "AK2"


def test_long_tokens_renewed_five_minutes_ahead(vendor: Vendor) -> None:
    vendor.life_ms = 3_600_000
    fio = VendedFileIO({}, vendor)
    fio.renew_credentials()
    vendor.now += 3_600_000 - 301_000
    fio.renew_credentials()
    assert vendor.calls == 1
    vendor.now += 2_000
    fio.renew_credentials()
    assert vendor.calls == 2


def test_executors_get_the_current_credentials(vendor: Vendor) -> None:
    fio = VendedFileIO({}, vendor)
    shipped = pickle.loads(pickle.dumps(fio))
    assert type(shipped) is FileIO
    assert shipped.storage_options["key"] == "AK1"
    assert shipped.storage_options["endpoint_url"] == "http://127.0.0.1:9"
