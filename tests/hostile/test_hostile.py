"""Hostile and broken input (issue 8): every case of ``support/hostile_cases.py`` with every
command it lists.

Invariants checked on every run:

* the exit code the case expects (0 success, 1 failure, 2 usage error);
* no traceback anywhere, no internal error ("unexpected …, rerun with --debug");
* a failing run says so in one or two lines on stderr that name the culprit (a file, a path
  or an option), and changes nothing: the tree of the table, of the directory outside it and
  of every protected path is identical, and no ``.paimon-cli/`` junk stays behind;
* ``inspect`` never changes anything; a destructive run that succeeds leaves everything
  outside the table (and protected paths, nested tables) as it was, and no journal;
* nothing outside the table root is ever written or deleted through ``FileIO`` (a sandbox
  refuses and records it; symlinked directories are resolved), remote storage is never
  reached (a non-local filesystem cannot be opened here).
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import stat
import traceback
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from support.hostile_cases import CASES, DESTRUCTIVE, Case, Ctx, nothing, plant
from support.invariants import tree_state
from typer.testing import CliRunner

from core.errors import PaimonError, StorageError
from core.format import metadata_io
from core.io.fileio import FileIO, normalize_path
from core.ops.inspection.check import check_table
from core.runtime.executors.local import LocalExecutor
from core.table.table import open_table
from paimon_cli.main import app

RUNNER = CliRunner()
ENV: dict[str, str | None] = {
    "PAIMON_WAREHOUSE": None,
    "PAIMON_DEBUG": None,
    "PAIMON_LOG_LEVEL": None,
    "FORCE_COLOR": None,
    "NO_COLOR": "1",
    "COLUMNS": "400",  # wide: paths in rendered tables stay on one line
}


def invoke(argv: list[str]) -> Any:
    """The CLI in-process; exceptions are caught so a traceback is reported, not raised."""
    return RUNNER.invoke(app, argv, env=ENV, catch_exceptions=True)


# ---------------------------------------------------------------------------------------------
# Tree state
# ---------------------------------------------------------------------------------------------


def _entry(path: str) -> tuple[Any, ...]:
    st = os.lstat(path)
    if stat.S_ISLNK(st.st_mode):
        return ("link", os.readlink(path))
    if stat.S_ISDIR(st.st_mode):
        return ("dir", stat.S_IMODE(st.st_mode))
    return ("file", st.st_size, st.st_mtime_ns)


def state(*tops: Path) -> dict[str, tuple[Any, ...]]:
    """Every file, directory and symlink under the tops (links not followed)."""
    out: dict[str, tuple[Any, ...]] = {}
    for top in map(str, tops):
        if not os.path.lexists(top):
            out[top] = ("absent",)
            continue
        out[top] = _entry(top)
        if out[top][0] != "dir":
            continue
        for dirpath, dirs, files in os.walk(top):
            for name in dirs + files:
                path = os.path.join(dirpath, name)
                out[path] = _entry(path)
    return out


def protected_state(paths: list[Path]) -> dict[str, tuple[Any, ...]]:
    out = {}
    for p in paths:
        if not os.path.lexists(p):
            out[str(p)] = ("absent",)
        elif p.is_symlink():
            out[str(p)] = ("link", os.readlink(p))
        else:
            out[str(p)] = ("file", hashlib.sha256(p.read_bytes()).hexdigest())
    return out


# ---------------------------------------------------------------------------------------------
# FileIO sandbox: no mutation outside the allowed roots, no remote storage, simulated EACCES
# ---------------------------------------------------------------------------------------------


class SandboxViolation(BaseException):
    """Not an Exception: the CLI's last-resort handler must not swallow it."""


class _Unreachable:
    """A remote filesystem behind a dead network: every call is ECONNREFUSED."""

    def __getattr__(self, name: str) -> Any:
        def refuse(*_args: Any, **_kwargs: Any) -> Any:
            raise ConnectionRefusedError(111, "Connection refused (no network in tests)")

        return refuse


class Sandbox:
    def __init__(self, allowed: list[Path], deny: list[Path], *, leased: Path) -> None:
        self.allowed = [os.path.realpath(p) for p in allowed]
        self.deny = [normalize_path(str(p)) for p in deny]
        self.violations: list[str] = []
        self.remote: list[str] = []
        # Every real run of a changing command takes and releases the table's lease, one
        # that refuses too (on a table without one it leaves nothing: the tree checks say so).
        cli_dir = os.path.join(os.path.realpath(leased), ".paimon-cli")
        self.lease = (cli_dir, os.path.join(cli_dir, "lease"))

    def _inside(self, real: str) -> bool:
        if real in self.lease or real.startswith(self.lease[1] + os.sep):
            return True
        return any(real == a or real.startswith(a + os.sep) for a in self.allowed)

    def mutate(self, op: str, path: str, *, follow: bool) -> None:
        """Refuse a write/delete whose real location is outside the allowed roots."""
        if not FileIO().is_local(path):
            self.violations.append(f"{op} {path} (remote)")
            raise SandboxViolation(f"{op} {path}")
        path = normalize_path(path)
        if follow:
            real = os.path.realpath(path)
        else:  # unlink/rmdir act on the directory entry: resolve the parent only
            real = os.path.join(os.path.realpath(os.path.dirname(path)), os.path.basename(path))
        if not self._inside(real):
            self.violations.append(f"{op} {path} (really {real})")
            raise SandboxViolation(f"{op} {path}")

    def denied(self, path: str, *, self_too: bool) -> bool:
        path = normalize_path(path)
        return any(path.startswith(d + "/") or (self_too and path == d) for d in self.deny)

    def install(self, monkeypatch: pytest.MonkeyPatch) -> None:
        sandbox = self
        orig = {
            name: getattr(FileIO, name)
            for name in (
                "write_bytes",
                "write_if_absent",
                "delete",
                "delete_empty_dir",
                "list_dir",
                "scan_dir_pages",
                "read_bytes",
                "info",
                "_fs",
            )
        }

        def write_bytes(self: FileIO, path: str, data: bytes) -> None:
            sandbox.mutate("write", path, follow=True)
            if sandbox.denied(path, self_too=False):
                raise StorageError(f"cannot write {path}: Permission denied")
            orig["write_bytes"](self, path, data)

        def write_if_absent(self: FileIO, path: str, data: bytes) -> bool:
            sandbox.mutate("create", path, follow=True)
            return bool(orig["write_if_absent"](self, path, data))

        def delete(self: FileIO, path: str) -> bool:
            sandbox.mutate("delete", path, follow=False)
            if sandbox.denied(path, self_too=False):
                raise StorageError(f"cannot delete {path}: Permission denied")
            return bool(orig["delete"](self, path))

        def delete_empty_dir(self: FileIO, path: str) -> bool:
            sandbox.mutate("rmdir", path, follow=False)
            return bool(orig["delete_empty_dir"](self, path))

        def list_dir(self: FileIO, path: str) -> Any:
            if sandbox.denied(path, self_too=True):
                raise StorageError(f"cannot list {path}: Permission denied")
            return orig["list_dir"](self, path)

        def scan_dir_pages(self: FileIO, path: str, **kw: Any) -> Any:
            if sandbox.denied(path, self_too=True):
                raise StorageError(f"cannot list {path}: Permission denied")
            return orig["scan_dir_pages"](self, path, **kw)

        def read_bytes(self: FileIO, path: str) -> Any:
            if sandbox.denied(path, self_too=False):
                raise StorageError(f"cannot read {path}: Permission denied")
            return orig["read_bytes"](self, path)

        def info(self: FileIO, path: str) -> Any:
            if sandbox.denied(path, self_too=False):
                raise StorageError(f"cannot stat {path}: Permission denied")
            return orig["info"](self, path)

        def _fs(self: FileIO, path: str) -> Any:
            if not self.is_local(path):
                sandbox.remote.append(path)
                return _Unreachable(), path.split("://", 1)[1]
            return orig["_fs"](self, path)

        for name, fn in (
            ("write_bytes", write_bytes),
            ("write_if_absent", write_if_absent),
            ("delete", delete),
            ("delete_empty_dir", delete_empty_dir),
            ("list_dir", list_dir),
            ("scan_dir_pages", scan_dir_pages),
            ("read_bytes", read_bytes),
            ("info", info),
            ("_fs", _fs),
        ):
            monkeypatch.setattr(FileIO, name, fn)


# ---------------------------------------------------------------------------------------------
# The test
# ---------------------------------------------------------------------------------------------


def missing_references(root: Path) -> set[str] | None:
    """Paths some snapshot, tag or changelog references that do not exist (None when the
    table cannot be checked at all: then nothing is compared)."""
    try:
        with LocalExecutor(4) as ex:
            report = check_table(open_table(str(root)), executor=ex)
    except PaimonError:
        return None
    return {p.path for p in report.problems if p.kind == "missing"}


def _params() -> Iterator[Any]:
    for case in CASES:
        if case.inapplicable is not None and case.inapplicable():
            continue  # e.g. chmod 000 as root: its *_simulated twin runs instead
        for key, expect in case.expect.items():
            marks = []
            if expect.xfail:
                marks.append(pytest.mark.xfail(strict=True, reason=expect.xfail))
            yield pytest.param(case, key, id=f"{case.id}-{key}", marks=marks)


_LOG_LINE = re.compile(r"^(warning|info): ")


def _message_lines(stderr: str) -> list[str]:
    """stderr without click's usage boilerplate, log lines (an announced retry) and blank
    lines: the error message itself."""
    return [
        line
        for line in stderr.splitlines()
        if line.strip() and not line.startswith(("Usage: ", "Try '")) and not _LOG_LINE.match(line)
    ]


def _describe(result: Any) -> str:
    text = f"exit {result.exit_code}\n--- stdout ---\n{result.stdout}\n--- stderr ---\n"
    text += result.stderr
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        text += "--- exception ---\n" + "".join(traceback.format_exception(*result.exc_info))
    return text


def _build(base: Path, case: Case, scenarios: Any) -> Ctx:
    """Lay out <base>/wh/db.db/<table> (a copy), <base>/scratch, <base>/outside; damage."""
    wh = base / "wh"
    tmp = base / "scratch"
    tmp.mkdir(parents=True)
    plant(base / "outside" / "canary", b"must survive")
    if case.base is not None:
        source = scenarios[case.base].root
        root = wh / "db.db" / source.name
        shutil.copytree(source, root, symlinks=True)
    else:
        source, root = None, wh / "db.db" / "absent"
    c = Ctx(root, tmp, base / "outside", wh, scenarios, base_root=source)
    case.damage(c)
    return c


@pytest.fixture(scope="session")
def shared() -> Iterator[dict[str, Ctx]]:
    """Damaged copies shared by the read-only commands of a case (they must not change)."""
    cache: dict[str, Ctx] = {}
    yield cache
    for c in cache.values():
        for undo in c.cleanup:
            undo()


@pytest.fixture
def ctx(
    request: pytest.FixtureRequest,
    scenarios: Any,
    tmp_path: Path,
    tmp_path_factory: pytest.TempPathFactory,
    shared: dict[str, Ctx],
) -> Iterator[Ctx]:
    case: Case = request.node.callspec.params["case"]
    key: str = request.node.callspec.params["key"]
    may_write = key in DESTRUCTIVE and case.expect[key].code == 0
    if case.damage is nothing and not may_write:
        # Nothing to damage and nothing may change: run on the session's table itself
        # (the sandbox then refuses any mutation of it).
        c = _build(tmp_path, Case(case.id, None, nothing, {}), scenarios)
        if case.base is not None:
            c.root = c.base_root = scenarios[case.base].root
            c.wh, c.writable = c.root.parents[1], False
        yield c
        return
    if key not in DESTRUCTIVE:
        if case.id not in shared:
            shared[case.id] = _build(tmp_path_factory.mktemp(case.id), case, scenarios)
        yield shared[case.id]
        return
    c = _build(tmp_path, case, scenarios)
    try:
        yield c
    finally:
        for undo in c.cleanup:
            undo()


@pytest.mark.parametrize(("case", "key"), list(_params()))
def test_hostile(case: Case, key: str, ctx: Ctx, monkeypatch: pytest.MonkeyPatch) -> None:
    expect = case.expect[key]
    template = case.command(key)
    argv = [ctx.fill(a) for a in template]
    tops = [ctx.root, ctx.outside, *ctx.watch]
    before, protected, watched = state(*tops), protected_state(ctx.protect), state(*ctx.watch)
    before_tree = tree_state(ctx.root) if ctx.root.is_dir() else {}
    had_cli_dir = (ctx.root / ".paimon-cli").exists()

    sandbox = Sandbox([ctx.root] * ctx.writable + [ctx.tmp / "pristine"], ctx.deny, leased=ctx.root)
    sandbox.install(monkeypatch)
    # Corrupt JSON is re-read after 0.1 s (a writer may be mid-overwrite): no waiting here.
    monkeypatch.setattr(metadata_io, "_JSON_RETRY_S", 0.0)
    may_write = key in DESTRUCTIVE and expect.code == 0
    dangling_before = missing_references(ctx.root) if may_write else None
    try:
        result = invoke(argv)
    except SandboxViolation:
        pytest.fail(f"touched outside the table: {sandbox.violations}\nargv: {argv}")
    shown = f"paimon {' '.join(map(repr, argv))}\n{_describe(result)}"

    assert not sandbox.violations, f"touched outside the table: {sandbox.violations}\n{shown}"
    crashed = result.exception is not None and not isinstance(result.exception, SystemExit)
    assert not crashed, f"uncaught exception\n{shown}"
    assert "Traceback" not in result.stdout + result.stderr, shown
    assert "rerun with --debug" not in result.stderr, f"internal error, not a message\n{shown}"
    assert result.exit_code == expect.code, shown
    assert protected_state(ctx.protect) == protected, f"a protected path changed\n{shown}"
    assert state(*ctx.watch) == watched, f"a watched tree changed\n{shown}"

    if expect.code != 0:
        lines = _message_lines(result.stderr)
        if key == "check" and not lines:
            # --check reports its problems on stdout (the report is the result).
            lines = [result.stdout]
        else:
            assert 1 <= len(lines) <= 2, f"want a one-or-two-line message\n{shown}"
        if expect.phrase is not None:
            phrase = ctx.fill(expect.phrase)
            text = "\n".join(lines)
            if key == "check" and phrase not in text:
                # Long paths fold inside table cells: look in the JSON report as well.
                again = invoke([*argv, "--json"])
                text += again.stdout + again.stderr
            assert phrase in text, f"message does not name {phrase!r}\n{shown}"
        assert state(*tops) == before, f"a failing run changed the tree\n{shown}"
        assert (tree_state(ctx.root) if ctx.root.is_dir() else {}) == before_tree, shown
        assert (ctx.root / ".paimon-cli").exists() == had_cli_dir, shown
        return

    if key not in DESTRUCTIVE:
        assert state(*tops) == before, f"inspect changed the tree\n{shown}"
    else:
        assert state(ctx.outside) == {
            k: v for k, v in before.items() if k.startswith(str(ctx.outside))
        }, f"outside the table changed\n{shown}"
        journal = ctx.root / ".paimon-cli" / "journal"
        left = sorted(p.name for p in journal.iterdir()) if journal.is_dir() else []
        assert had_cli_dir or not left, f"journal left behind: {left}\n{shown}"
        if dangling_before is not None:
            # A run may delete only what nothing references: no reference newly dangles.
            after = missing_references(ctx.root)
            assert after == dangling_before, f"dangling now: {after}\n{shown}"
    if case.verify is not None:
        case.verify(ctx, key, template, invoke)
