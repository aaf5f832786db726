"""KEY=VALUE settings given on the command line (``--fs-option``, ``--options``), parsed;
a malformed one is a usage error on its option."""

from __future__ import annotations

import typer

from core.errors import InvalidOptionError
from core.format.options import parse_dynamic_options


def parse_fs_options(values: list[str] | None) -> dict[str, str]:
    out: dict[str, str] = {}
    for item in values or []:
        if "=" not in item:
            raise typer.BadParameter(f"{item!r} is not KEY=VALUE", param_hint="--fs-option")
        key, value = item.split("=", 1)
        out[key.strip()] = value.strip()
    return out


def parse_options_arg(text: str | None) -> dict[str, str]:
    if not text:
        return {}
    try:
        return parse_dynamic_options(text)
    except InvalidOptionError as exc:
        raise typer.BadParameter(exc.message, param_hint="--options") from None
