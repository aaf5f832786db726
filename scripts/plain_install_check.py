"""Does a plain ``pip install paimon-cli`` (no extras) read and maintain Paimon's tables?

Creates a fresh venv, installs this checkout into it without extras, and runs
``inspect --check``, ``expire-snapshots --dry-run`` and ``delete-orphan-files --dry-run``
on every table of the Java-written corpus and on tables pypaimon-rust writes with each
Avro manifest codec (zstd, snappy, deflate, none). Any error fails the run (exit 1).

The tables are written by the development venv (``--writer-python``, which has
pypaimon-rust); the commands run in the plain venv, from a directory outside the checkout
so that nothing imports the source tree. Stdlib only: run it with any Python >= 3.10.

    python3 scripts/plain_install_check.py            # CI (.ci/run), or locally
    python3 scripts/plain_install_check.py --venv /tmp/plain --keep   # reuse, keep tables
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
# The Java-written tables of the repository's test data (tests/data/README.md).
CORPUS = REPO / "tests" / "data"
RUST_WRITER = REPO / "tests" / "support" / "rust_writer.py"

COMMANDS: tuple[tuple[str, ...], ...] = (
    ("inspect", "--check"),
    ("expire-snapshots", "--dry-run", "--retain-min", "1", "--retain-max", "1"),
    ("delete-orphan-files", "--dry-run"),
)


def table_roots(corpus: Path) -> list[Path]:
    """Every table root under ``corpus`` (a directory holding ``schema/``), branches aside."""
    return sorted(
        s.parent
        for s in corpus.glob("**/schema")
        if s.is_dir() and s.parent.parent.name != "branch"
    )


def run(cmd: Sequence[str | Path], **kwargs: object) -> None:
    print("+", " ".join(str(c) for c in cmd), flush=True)
    subprocess.run([str(c) for c in cmd], check=True, **kwargs)  # type: ignore[call-overload]


def make_venv(venv: Path) -> Path:
    """A venv at ``venv`` with this checkout installed without extras; its python."""
    python = venv / "bin" / "python"
    if not python.exists():
        run([sys.executable, "-m", "venv", venv])
    run([python, "-m", "pip", "install", "-q", "--disable-pip-version-check", REPO])
    run([python, "-m", "pip", "check"])
    run([venv / "bin" / "paimon", "--version"])  # the console script starts
    return python


def copy_tables(corpus: Path, dest: Path) -> list[Path]:
    """A writable copy of the corpus (CI's is read-only); the copied table roots."""
    shutil.copytree(corpus, dest, symlinks=True)  # times kept: orphan age floors see the real ones
    for path in (dest, *dest.rglob("*")):
        if not path.is_symlink():
            path.chmod(path.stat().st_mode | 0o200)
    return table_roots(dest)


def write_rust_tables(writer_python: Path, dest: Path) -> list[Path]:
    out = subprocess.run(
        [str(writer_python), str(RUST_WRITER), "codec-tables", str(dest)],
        check=True,
        capture_output=True,
        text=True,
    )
    return [Path(line) for line in out.stdout.splitlines() if line]


# -- the part that runs inside the plain venv -----------------------------------------------------
def _invoke(args: list[str]) -> tuple[int, str, str]:
    """Run the installed CLI in-process (one interpreter for all tables): exit code, out, err."""
    from paimon_cli.main import app

    out, err = io.StringIO(), io.StringIO()
    code = 0
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            app(args=args, prog_name="paimon")
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 1
    return code, out.getvalue(), err.getvalue()


def _external_roots(table: Path) -> list[str]:
    """Declared ``data-file.external-paths`` of the table's latest schema, as local paths."""
    schemas = sorted((table / "schema").glob("schema-*"), key=lambda p: int(p.name.split("-")[1]))
    options = json.loads(schemas[-1].read_text()).get("options", {})
    paths = options.get("data-file.external-paths") or ""
    return [p.split("://", 1)[-1].rstrip("/") for p in paths.split(",") if p.strip()]


def _only_absent_external_roots(table: Path, stdout: str) -> bool:
    """``inspect --check`` found problems, each a file under a declared external root that
    does not exist here (the corpus was copied without it): the table's own files are fine."""
    if not stdout.strip():
        return False  # an error before any result: stderr says which
    problems = json.loads(stdout)["check"]["problems"]
    roots = [r for r in _external_roots(table) if not Path(r).exists()]
    return bool(problems) and all(
        p["kind"] == "missing" and any(p["path"].startswith(r + "/") for r in roots)
        for p in problems
    )


def check_tables(tables: Sequence[Path]) -> int:
    """Run every command on every table; print one line per failure and a summary."""
    import paimon_cli

    print(f"paimon-cli from {Path(paimon_cli.__file__).parent}")
    passed = failed = 0
    for table in tables:
        for command in COMMANDS:
            code, out, err = _invoke([*command, str(table), "--json"])
            ok = code == 0 or (
                command[0] == "inspect" and code == 3 and _only_absent_external_roots(table, out)
            )
            if ok:
                passed += 1
                continue
            failed += 1
            print(f"FAIL (exit {code}) paimon {' '.join(command)} {table}\n{err.strip()}")
    print(f"plain install: {passed} checks succeeded, {failed} failed")
    return 1 if failed else 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--venv", type=Path, help="venv to (re)use; default: a new temporary one")
    parser.add_argument("--corpus", type=Path, default=CORPUS, help="Java corpus")
    parser.add_argument(
        "--writer-python",
        type=Path,
        default=REPO / ".venv" / "bin" / "python",
        help="python of the development venv (pypaimon-rust writes the tables)",
    )
    parser.add_argument("--keep", action="store_true", help="keep the work directory")
    parser.add_argument("--check", nargs="+", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.check:
        return check_tables(args.check)
    if not (args.corpus / "java-written").is_dir():
        parser.error(f"no Java-written corpus in {args.corpus} (java-written/ missing)")
    work = Path(tempfile.mkdtemp(prefix="paimon-plain-install-"))
    try:
        python = make_venv(args.venv or work / "venv")
        tables = copy_tables(args.corpus, work / "java")
        tables += write_rust_tables(args.writer_python, work / "rust")
        print(f"checking {len(tables)} tables", flush=True)
        # From the work directory: the checkout's core/ and paimon_cli/ are not importable.
        done = subprocess.run(
            [str(python), str(Path(__file__).resolve()), "--check", *map(str, tables)],
            cwd=work,
        )
        return done.returncode
    finally:
        if args.keep:
            print(f"kept {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
