"""Renderers: how each operation's outcome is shown (human, ``--json``, ``-q``), one module
per command, kept apart from the command declarations (``paimon_cli/commands``)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from paimon_cli.errors import report_error
from paimon_cli.output import Mode, Output

if TYPE_CHECKING:
    from core.errors import PaimonError
    from core.runtime.operation import Outcome

P = TypeVar("P")
R = TypeVar("R")


@dataclass(frozen=True, slots=True)
class RunView:
    """How the run was asked for, as far as showing it goes."""

    dry_run: bool
    zone: dt.tzinfo


def _deleted_paths(o: Outcome[Any, Any], _view: RunView) -> Iterable[str]:
    """A plan's delete actions, in order (what ``-q`` prints for most dry runs)."""
    return (a.path for phase in o.plan.phases for a in phase.actions if a.op == "delete")


def _failed(o: Outcome[Any, Any], _view: RunView) -> bool:
    return bool(o.failed)


def _no_error(_o: Outcome[Any, Any], _view: RunView) -> PaimonError | None:
    return None


@dataclass(frozen=True)
class Renderer(Generic[P, R]):
    """One command's outcome as a JSON document body, as human output, and as the paths
    ``-q`` prints for a dry run (a real quiet run prints nothing)."""

    command: str
    document: Callable[[Outcome[P, R], RunView], dict[str, Any]]
    human: Callable[[Outcome[P, R], Output, RunView], None]
    quiet: Callable[[Outcome[P, R], RunView], Iterable[str]] = _deleted_paths
    failed: Callable[[Outcome[P, R], RunView], bool] = _failed
    # The error a run that did its work ends with (its document carries it too): shown as
    # an Error line after the output, -q included.
    error: Callable[[Outcome[P, R], RunView], PaimonError | None] = _no_error

    def show(self, o: Outcome[P, R], out: Output, view: RunView) -> None:
        if out.mode is Mode.QUIET:
            if view.dry_run:
                for path in self.quiet(o, view):
                    out.plain(path)
        else:
            self.human(o, out, view)
        error = self.error(o, view)
        if error is not None:
            report_error(error.kind, error.message, error.hint, as_json=False)
