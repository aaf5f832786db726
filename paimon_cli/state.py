"""AppState: diagnostics chosen on the root command, shared through ctx.obj."""

from __future__ import annotations

from dataclasses import dataclass

import typer


@dataclass(frozen=True, slots=True)
class AppState:
    verbosity: int = 0
    debug: bool = False
    no_color: bool = False


def state_of(ctx: typer.Context) -> AppState:
    obj = ctx.find_root().obj
    return obj if isinstance(obj, AppState) else AppState()
