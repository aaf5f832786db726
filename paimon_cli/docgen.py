"""Generate the man pages and shell completion scripts of `paimon`.

    python -m paimon_cli.docgen --update        rewrite man/ and completions/
    python -m paimon_cli.docgen --check         exit 1 with a unified diff when stale
    python -m paimon_cli.docgen --update --out DIR

Man pages walk Typer's command tree (`typer.main.get_command`) with a `typer.Context`;
click-man cannot see the options of a Typer >= 0.26 app, which vendors Click. Completion
scripts come from the program itself (`_PAIMON_COMPLETE=source_<shell> paimon`).
Output is deterministic: no dates, no machine paths, nothing wrapped to a terminal width.
"""

from __future__ import annotations

import argparse
import difflib
import inspect
import os
import subprocess
import sys
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import typer
import typer.main
from typer import _click
from typer.core import TyperGroup

from core import __version__
from paimon_cli.help_panels import OWN, help_record, panels
from paimon_cli.main import ALIAS, app

PROG = "paimon"
REPO_ROOT = Path(__file__).resolve().parent.parent
MAN_DIR = "man"
COMPLETIONS_DIR = "completions"
# Completion scripts per program name (`paimon`, and `paimon-cli`, the same program).
COMPLETION_FILES = {
    prog: {"bash": f"{prog}.bash", "zsh": f"_{prog}", "fish": f"{prog}.fish"}
    for prog in (PROG, ALIAS)
}
# Typer swaps its completion options for ones taking a shell name when this is set.
_TYPER_NO_DETECTION = "_TYPER_COMPLETE_TEST_DISABLE_SHELL_DETECTION"
# Nothing is wrapped by us (roff fills text); the width only pins what Click might format.
WIDTH = 80

EXIT_STATUS = (
    ("0", "Success, including dry runs and runs with nothing to do."),
    (
        "1",
        "Failure, or partial failure: some work was done and some failed; with "
        '--json the report still goes to stdout with "status": "partial".',
    ),
    ("2", "Usage error: an unknown option, a bad value or conflicting options."),
    (
        "3",
        "Damage found: a check ran and found the table damaged (inspect --check, maintain's "
        "check step); it outranks 1 when both apply.",
    ),
    ("130", "Interrupted by SIGINT (Ctrl-C), at a safe point; the next run finishes the work."),
    (
        "141",
        "Standard output closed early (the reader of a pipe went away, as with | head).",
    ),
    ("143", "Interrupted by SIGTERM, at a safe point; the next run finishes the work."),
)

ENVIRONMENT = (
    ("PAIMON_WAREHOUSE", "Warehouse root for DB.TABLE names and globs (--warehouse)."),
    ("PAIMON_CATALOG", "The catalog: a paimon.yaml file or a configured name (--catalog)."),
    (
        "PAIMON_CLI_HOME",
        "Directory of .paimon-cli.yaml, the named catalogs (default: the home directory).",
    ),
    (
        "PAIMON_CLI_CATALOG__NAME__KEY",
        "Sets option KEY of catalog NAME (__ in KEY is '.', _ is '-'), as PyIceberg's do.",
    ),
    ("PAIMON_CLI_DEFAULT_CATALOG", "The catalog DB.TABLE uses without --catalog/--warehouse."),
    ("PAIMON_LOG_LEVEL", "Log level name such as DEBUG or INFO (--log-level); overrides -v."),
    ("PAIMON_DEBUG", "Set to 1 to show tracebacks on errors (--debug)."),
    ("NO_COLOR", "When set, human output has no colours (--no-color)."),
    ("FORCE_COLOR", "When set, human output is coloured even when not on a terminal."),
    (
        "AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN",
        "Credentials for s3:// tables, read by s3fs through botocore.",
    ),
    (
        "AWS_PROFILE, AWS_REGION, AWS_DEFAULT_REGION, AWS_ENDPOINT_URL",
        "Profile, region and endpoint (for example MinIO) for s3:// tables.",
    ),
    ("GOOGLE_APPLICATION_CREDENTIALS", "Service account key file for gs:// tables (gcsfs)."),
    (
        "AZURE_STORAGE_CONNECTION_STRING, AZURE_STORAGE_ACCOUNT_NAME, AZURE_STORAGE_ACCOUNT_KEY",
        "Account and credentials for abfs:// and az:// tables (adlfs).",
    ),
    (
        "FSSPEC_<PROTOCOL>_<OPTION>",
        "Any fsspec storage option, for example "
        "FSSPEC_S3_ENDPOINT_URL; --fs-option takes precedence.",
    ),
)


@dataclass(frozen=True)
class Page:
    """One command (or group) of the tree, with the context it is documented in."""

    ctx: typer.Context
    children: list[Page] = field(default_factory=list)

    @property
    def command(self) -> _click.Command:
        return self.ctx.command

    @property
    def path(self) -> list[str]:
        return self.ctx.command_path.split()

    @property
    def name(self) -> str:
        return "-".join(self.path)


# -- walking the command tree -----------------------------------------------------------------
def _context(command: _click.Command, name: str, parent: typer.Context | None) -> typer.Context:
    settings = dict(command.context_settings)
    settings.setdefault("terminal_width", WIDTH)
    settings.setdefault("max_content_width", WIDTH)
    return typer.Context(command, parent=parent, info_name=name, **settings)


def _walk(command: _click.Command, name: str, parent: typer.Context | None) -> Page:
    page = Page(_context(command, name, parent))
    if isinstance(command, TyperGroup):
        for sub_name in command.list_commands(page.ctx):
            sub = command.get_command(page.ctx, sub_name)
            if sub is not None and not sub.hidden:
                page.children.append(_walk(sub, sub_name, page.ctx))
    return page


def command_tree() -> Page:
    """The root page of `paimon`, with every registered (non-hidden) command below it."""
    saved = os.environ.pop(_TYPER_NO_DETECTION, None)
    try:
        root = typer.main.get_command(app)
    finally:
        if saved is not None:
            os.environ[_TYPER_NO_DETECTION] = saved
    return _walk(root, PROG, None)


def iter_pages(page: Page) -> Iterator[Page]:
    """The page and all pages below it, parents first."""
    yield page
    for child in page.children:
        yield from iter_pages(child)


# -- roff -------------------------------------------------------------------------------------
def roff(text: str) -> str:
    """Escape text for roff: backslashes, hyphens, and control characters at line start."""
    text = text.replace("\\", "\\e").replace("-", "\\-")
    return "\n".join(
        "\\&" + line if line.startswith((".", "'")) else line for line in text.split("\n")
    )


def _bold(text: str) -> str:
    return f"\\fB{roff(text)}\\fR"


def _italic(text: str) -> str:
    # `\:` lets a long list of choices (a|b|c) break after a bar.
    breakable = roff(text).replace("|", "|\\:")
    return f"\\fI{breakable}\\fR"


def _help_text(command: _click.Command) -> str:
    return inspect.cleandoc(command.help or "").partition("\f")[0].strip()


def _paragraphs(text: str) -> list[str]:
    """Click's help paragraphs as roff: blank lines split, `\\b` keeps a block's lines."""
    out: list[str] = []
    for block in text.split("\n\n"):
        block = block.strip("\n")
        if not block.strip():
            continue
        if block.startswith("\b"):
            out.append(".nf\n" + roff(block[1:].strip("\n")) + "\n.fi")
        else:
            out.append(roff(" ".join(block.split())))
    return out


def _summary(command: _click.Command) -> str:
    if command.short_help:
        text = inspect.cleandoc(command.short_help)
    else:
        text = _help_text(command).split("\n\n")[0]
    return " ".join(text.split()).rstrip(".")


def _examples(command: _click.Command) -> list[str]:
    """The `  paimon ...` lines of the epilog, with their backslash continuations."""
    examples: list[str] = []
    continuing = False
    for line in (command.epilog or "").splitlines():
        stripped = line.strip()
        if continuing:
            examples[-1] += "\n" + stripped
        elif line[:1].isspace() and stripped.startswith(f"{PROG} "):
            examples.append(stripped)
        else:
            continue
        continuing = stripped.endswith("\\")
    return examples


def _page_examples(page: Page) -> list[str]:
    own = _examples(page.command)
    if own or not page.children:
        return own
    # A group without its own examples shows the first example of each command below it.
    return [ex[0] for child in page.children if (ex := _page_examples(child))]


def _name_roff(param: _click.Parameter, name: str) -> str:
    """A help record's name column: option names in bold, the value's metavar in italics."""
    if param.param_type_name == "argument":
        arg, _, kind = name.partition(" ")
        return _bold(arg) + (f" {_italic(kind)}" if kind else "")
    groups: list[str] = []
    for group in name.split(" / "):  # a flag and its secondary (--x / --no-x)
        *opts, last = group.split(", ")
        last, _, metavar = last.partition(" ")
        text = ", ".join(_bold(opt) for opt in [*opts, last])
        groups.append(f"{text} {_italic(metavar)}" if metavar else text)
    return " / ".join(groups)


def _help_record_roff(param: _click.Parameter, record: tuple[str, str]) -> str:
    name, help_text = record
    body = roff(" ".join(help_text.split()))
    return f".TP\n{_name_roff(param, name)}" + (f"\n{body}" if body else "")


def _is_help_option(param: _click.Parameter, ctx: typer.Context) -> bool:
    return param.param_type_name == "option" and set(param.opts) <= set(ctx.help_option_names)


def _option_sort_key(param: _click.Parameter, ctx: typer.Context) -> tuple[bool, str]:
    names = [*param.opts, *param.secondary_opts]
    longs = [n for n in names if n.startswith("--")] or names
    return _is_help_option(param, ctx), longs[0].lstrip("-").lower()


def _params(page: Page, kind: str) -> list[tuple[_click.Parameter, tuple[str, str]]]:
    rows: list[tuple[_click.Parameter, tuple[str, str]]] = []
    for param in page.command.get_params(page.ctx):
        if param.param_type_name != kind:
            continue
        record = help_record(param, page.ctx)
        if record is not None:
            rows.append((param, record))
    if kind == "option":
        # Options sorted by long name, help last; arguments keep their positional order.
        rows.sort(key=lambda row: _option_sort_key(row[0], page.ctx))
    return rows


def _envvars(page: Page) -> list[tuple[str, str]]:
    """The fixed ENVIRONMENT entries plus any other variable an option of this page reads."""
    known = {name.strip() for names, _ in ENVIRONMENT for name in names.split(",")}
    extra: dict[str, str] = {}
    for param, _record in _params(page, "option") + _params(page, "argument"):
        envvar = param.envvar
        names = [envvar] if isinstance(envvar, str) else list(envvar or ())
        opt = max(param.opts, key=len) if param.opts else param.name
        for name in names:
            if name not in known:
                extra.setdefault(name, f"Default for {opt}.")
    return [*ENVIRONMENT, *sorted(extra.items())]


def _see_also(page: Page, parent: Page | None) -> list[str]:
    names = ([parent.name] if parent else []) + [child.name for child in page.children]
    return names or [PROG]


def man_page(page: Page, parent: Page | None) -> str:
    """One man page in click-man's layout."""
    cmd = page.command
    lines = [
        f'.TH "{roff(page.name.upper())}" "1" "" "{roff(f"paimon-cli {__version__}")}" '
        f'"{roff(PROG)} Manual"',
        # Left-aligned and unhyphenated, so option names and paths stay whole.
        ".ad l",
        ".nh",
        ".SH NAME",
        f"{roff(page.name)} \\- {roff(_summary(cmd))}",
        ".SH SYNOPSIS",
        f".B {roff(' '.join(page.path))}",
        roff(" ".join(cmd.collect_usage_pieces(page.ctx))),
        ".SH DESCRIPTION",
        "\n.PP\n".join(_paragraphs(_help_text(cmd))),
    ]
    arguments = _params(page, "argument")
    if arguments:
        lines.append(".SH ARGUMENTS")
        lines += [_help_record_roff(p, r) for p, r in arguments]
    lines.append(".SH OPTIONS")
    # The command's own options, then the shared ones under the panels of --help.
    for name, rows in panels(cmd, page.ctx):
        if name != OWN:
            lines.append(f".SS {roff(name)}")
        rows.sort(key=lambda row: _option_sort_key(row[0], page.ctx))
        lines += [_help_record_roff(p, r) for p, r in rows]
    if parent is not None:
        lines += [
            ".PP",
            "Global options (\\-v, \\-\\-log\\-level, \\-\\-debug, \\-\\-no\\-color) go "
            f"before or after the command name; see {_bold(PROG)}(1).",
        ]
    if page.children:
        lines.append(".SH COMMANDS")
        for child in page.children:
            lines += [
                ".TP",
                _bold(child.path[-1]),
                roff(_summary(child.command)) + ".",
                f"See {_bold(child.name)}(1).",
            ]
    lines.append(".SH EXIT STATUS")
    for code, meaning in EXIT_STATUS:
        lines += [".TP", _bold(code), roff(meaning)]
    lines.append(".SH ENVIRONMENT")
    for names, meaning in _envvars(page):
        lines += [".TP", ", ".join(_bold(n.strip()) for n in names.split(",")), roff(meaning)]
    examples = _page_examples(page)
    if examples:
        lines += [".SH EXAMPLES", ".RS 4", ".nf"]
        lines += "\n.sp\n".join(roff(ex) for ex in examples).split("\n")
        lines += [".fi", ".RE"]
    lines.append(".SH SEE ALSO")
    lines.append(", ".join(f"{_bold(name)}(1)" for name in _see_also(page, parent)))
    return "\n".join(line.rstrip() for line in "\n".join(lines).split("\n")) + "\n"


def man_pages() -> dict[str, str]:
    """`man/<page>.1` -> text, for every page of the command tree."""
    out: dict[str, str] = {}

    def visit(page: Page, parent: Page | None) -> None:
        out[f"{MAN_DIR}/{page.name}.1"] = man_page(page, parent)
        for child in page.children:
            visit(child, page)

    visit(command_tree(), None)
    return out


# -- completions ------------------------------------------------------------------------------
def complete_var(prog: str) -> str:
    """Typer prints the completion script for `_<PROG>_COMPLETE=source_<shell>`."""
    return f"_{prog}_COMPLETE".replace("-", "_").upper()


def completion_script(shell: str, prog: str = PROG) -> str:
    """The completion script the installed program `prog` prints for `shell`."""
    env = {
        k: v
        for k, v in os.environ.items()
        if k != _TYPER_NO_DETECTION and not k.endswith("_COMPLETE")
    }
    env[complete_var(prog)] = f"source_{shell}"
    # Run as `prog` would be: main() names itself after argv[0].
    launch = f"import sys; sys.argv[0] = {prog!r}; from paimon_cli.main import main; main()"
    proc = subprocess.run(
        [sys.executable, "-c", launch],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    if proc.returncode != 0 or not proc.stdout.strip():
        raise RuntimeError(
            f"{complete_var(prog)}=source_{shell} {prog} failed "
            f"(exit {proc.returncode}): {proc.stderr.strip()}"
        )
    # zsh needs `#compdef` on the first line; one final newline keeps whitespace hooks quiet.
    return proc.stdout.strip("\n") + "\n"


def completion_scripts() -> dict[str, str]:
    """`completions/<file>` -> script, for bash, zsh and fish, for both program names."""
    return {
        f"{COMPLETIONS_DIR}/{name}": completion_script(shell, prog)
        for prog, files in COMPLETION_FILES.items()
        for shell, name in files.items()
    }


# -- update and check -------------------------------------------------------------------------
def render() -> dict[str, str]:
    """Every generated file, by path relative to the output root, in sorted order."""
    files = {**man_pages(), **completion_scripts()}
    return dict(sorted(files.items()))


def _owned_files(root: Path) -> dict[str, str]:
    """The generated files present under root (man pages and completion scripts)."""
    found: dict[str, str] = {}
    for path in sorted((root / MAN_DIR).glob(f"{PROG}*.1")):
        found[f"{MAN_DIR}/{path.name}"] = path.read_text(encoding="utf-8")
    for name in (n for files in COMPLETION_FILES.values() for n in files.values()):
        path = root / COMPLETIONS_DIR / name
        if path.is_file():
            found[f"{COMPLETIONS_DIR}/{name}"] = path.read_text(encoding="utf-8")
    return found


def diff(expected: Mapping[str, str], root: Path) -> str:
    """A unified diff turning the files under root into the expected ones ('' when current)."""
    actual = _owned_files(root)
    chunks: list[str] = []
    for rel in sorted(set(expected) | set(actual)):
        old, new = actual.get(rel), expected.get(rel)
        if old == new:
            continue
        chunks.extend(
            difflib.unified_diff(
                (old or "").splitlines(keepends=True),
                (new or "").splitlines(keepends=True),
                fromfile=f"a/{rel}" if old is not None else "/dev/null",
                tofile=f"b/{rel}" if new is not None else "/dev/null",
            )
        )
    return "".join(chunks)


def write(files: Mapping[str, str], root: Path) -> list[str]:
    """Write the files under root and delete stale man pages; return what changed."""
    changed: list[str] = []
    for rel in sorted(set(_owned_files(root)) - set(files)):
        (root / rel).unlink()
        changed.append(rel)
    for rel, text in files.items():
        path = root / rel
        if path.is_file() and path.read_text(encoding="utf-8") == text:
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8", newline="\n")
        changed.append(rel)
    return sorted(changed)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of `python -m paimon_cli.docgen`."""
    parser = argparse.ArgumentParser(
        prog="python -m paimon_cli.docgen", description="Generate man pages and completion scripts."
    )
    mode = parser.add_mutually_exclusive_group(required=True)
    mode.add_argument("--update", action="store_true", help="Rewrite the generated files.")
    mode.add_argument(
        "--check",
        action="store_true",
        help="Exit 1 with a unified diff when a generated file is stale.",
    )
    parser.add_argument(
        "--out",
        type=Path,
        default=REPO_ROOT,
        help="Root to write or check (default: the repository).",
    )
    args = parser.parse_args(argv)
    files = render()
    if args.check:
        stale = diff(files, args.out)
        if stale:
            sys.stdout.write(stale)
            print(
                "generated docs are stale: run `python -m paimon_cli.docgen --update`",
                file=sys.stderr,
            )
            return 1
        return 0
    for rel in write(files, args.out):
        print(f"updated {rel}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
