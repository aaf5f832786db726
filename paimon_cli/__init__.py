"""paimon-cli: the command-line shell around `core`."""

import sys

import core


def _engine_or_exit() -> str:
    """paimon-cli's engine is the top-level package ``core``; when another distribution's
    ``core`` shadows it, say so and exit 1 instead of failing later with a traceback
    (docs/DECISIONS.md D9)."""
    if getattr(core, "PAIMON_CLI_ENGINE", False) is True:
        return str(core.__version__)
    where = getattr(core, "__file__", None) or ", ".join(getattr(core, "__path__", [])) or "?"
    sys.stderr.write(
        f"error: the Python package 'core' found at {where} is not paimon-cli's engine "
        "(another package of that name shadows it)\n"
        "hint: install paimon-cli in an environment of its own: pipx install paimon-cli, "
        "or a fresh venv\n"
    )
    raise SystemExit(1)


__version__ = _engine_or_exit()

__all__ = ["__version__"]
