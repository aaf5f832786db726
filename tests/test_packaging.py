"""What an install gets (issue 37, DECISIONS D21): the wheel ships the man pages and shell
completions as data files under share/, and the extras' dependency ranges resolve together
with pypaimon 2.1 (the demo and dev extras), read from installed metadata, no network."""

from __future__ import annotations

import importlib.metadata
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.version import Version

REPO = Path(__file__).resolve().parent.parent
# Where each generated file is installed, under the environment's prefix.
SHARE = {
    "man": "share/man/man1",
    "completions/paimon.bash": "share/bash-completion/completions",
    "completions/paimon-cli.bash": "share/bash-completion/completions",
    "completions/_paimon": "share/zsh/site-functions",
    "completions/_paimon-cli": "share/zsh/site-functions",
    "completions/paimon.fish": "share/fish/vendor_completions.d",
    "completions/paimon-cli.fish": "share/fish/vendor_completions.d",
}
# fsspec implementations versioned by the calendar in step with fsspec (s3fs and gcsfs pin
# fsspec==their own version): each must stay below the fsspec pypaimon accepts.
FSSPEC_FAMILY = ("fsspec", "s3fs", "gcsfs", "adlfs", "ossfs")


def _pyproject() -> dict[str, object]:
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+
    with (REPO / "pyproject.toml").open("rb") as f:
        project: dict[str, object] = tomllib.load(f)["project"]
    return project


def _requirements() -> dict[str, list[Requirement]]:
    """Our requirements by extra ("" for the core ones)."""
    project = _pyproject()
    groups = {"": list(project["dependencies"])}  # type: ignore[call-overload]
    groups.update(project["optional-dependencies"])  # type: ignore[call-overload]
    return {extra: [Requirement(r) for r in reqs] for extra, reqs in groups.items()}


def _pypaimon_requirements() -> dict[str, SpecifierSet]:
    """pypaimon's own requirements (no extra) that apply to this Python, by name."""
    try:
        raw = importlib.metadata.requires("pypaimon") or []
    except importlib.metadata.PackageNotFoundError:
        pytest.skip("pypaimon is not installed (pip install -e '.[dev]')")
    found: dict[str, SpecifierSet] = {}
    for text in raw:
        req = Requirement(text)
        if req.marker is not None and not req.marker.evaluate({"extra": ""}):
            continue
        found[req.name.lower().replace("_", "-").replace(".", "-")] = req.specifier
    return found


def _key(name: str) -> str:
    return name.lower().replace("_", "-").replace(".", "-")


def test_extras_stay_within_what_pypaimon_accepts() -> None:
    """Every range we share with pypaimon overlaps it (the installed version satisfies
    both), and nothing of the fsspec family reaches the fsspec pypaimon refuses."""
    theirs = _pypaimon_requirements()
    (cap,) = [Version(s.version) for s in theirs["fsspec"] if s.operator == "<"]
    checked = set()
    for extra, reqs in _requirements().items():
        for req in reqs:
            name = _key(req.name)
            if req.marker is not None and not req.marker.evaluate({"extra": extra}):
                continue
            if name in FSSPEC_FAMILY:
                assert not req.specifier.contains(cap, prereleases=True), (
                    f"[{extra or 'core'}] {req} allows {name} {cap}, whose fsspec pypaimon "
                    f"refuses (fsspec{theirs['fsspec']})"
                )
                assert req.specifier.contains(f"{cap.major - 1}.12.0"), req
            if name in theirs:
                installed = importlib.metadata.version(req.name)
                assert req.specifier.contains(installed, prereleases=True), (extra, str(req))
                assert theirs[name].contains(installed, prereleases=True), (name, installed)
                checked.add(name)
    assert {"fsspec", "pyarrow", "fastavro", "pyyaml"} <= checked


def test_installed_fsspec_implementations_agree_with_pypaimon() -> None:
    """The environment the extras built resolves: s3fs's exact fsspec pin is one pypaimon
    accepts."""
    theirs = _pypaimon_requirements()
    fsspec = importlib.metadata.version("fsspec")
    assert theirs["fsspec"].contains(fsspec)
    for dist in ("s3fs", "gcsfs"):
        try:
            requires = importlib.metadata.requires(dist) or []
        except importlib.metadata.PackageNotFoundError:
            continue
        for text in requires:
            req = Requirement(text)
            if _key(req.name) == "fsspec":
                assert req.specifier.contains(fsspec), (dist, str(req))


def _build_wheel(tmp_path: Path) -> Path:
    """The wheel of a copy of the sources (the repository's tree stays as it is)."""
    src = tmp_path / "src"
    ignore = shutil.ignore_patterns("__pycache__", "*.egg-info", "build")
    for name in ("core", "paimon_cli", "man", "completions"):
        shutil.copytree(REPO / name, src / name, ignore=ignore)
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(REPO / name, src / name)
    out = tmp_path / "dist"
    proc = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", str(src), "--no-deps", "-q", "-w", str(out)],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    if proc.returncode != 0 and "No matching distribution found for setuptools" in proc.stderr:
        pytest.skip("the build backend (setuptools) is not installable here")
    assert proc.returncode == 0, proc.stderr
    (wheel,) = out.glob("paimon_cli-*.whl")
    return wheel


def test_the_wheel_ships_man_pages_and_completions(tmp_path: Path) -> None:
    wheel = _build_wheel(tmp_path)
    with zipfile.ZipFile(wheel) as zf:
        data = {
            name.split(".data/data/", 1)[1]: zf.read(name)
            for name in zf.namelist()
            if ".data/data/" in name
        }
    expected: dict[str, bytes] = {}
    for source, share in SHARE.items():
        files = sorted((REPO / source).glob("*.1")) if source == "man" else [REPO / source]
        for path in files:
            expected[f"{share}/{path.name}"] = path.read_bytes()
    assert len([k for k in expected if k.startswith("share/man/man1/")]) > 10
    assert data == expected
