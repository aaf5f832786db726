"""Commands as declarations: the options every command shares are declared here, once.

A command module declares its own arguments and options and makes one call; the
:func:`command` decorator adds the shared table, storage, engine and output options to
its signature (``__signature__``, which Typer, the man pages and the completions all
read), parses them into a :class:`Common` and hands it to the command. An impossible value
found while the command builds its request (``InvalidOptionError`` from ``core``, naming
the request field) becomes a usage error on the option of that name (exit 2).
"""

from __future__ import annotations

import copy
import datetime as dt
import enum
import inspect
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Any, get_args, get_type_hints

import typer

from core.errors import InvalidOptionError
from paimon_cli.engine import EngineChoice
from paimon_cli.help_panels import OUTPUT, RUN_CONTROL, STORAGE, OldSpelling, PanelCommand
from paimon_cli.help_panels import SPARK as SPARK_PANEL
from paimon_cli.help_panels import TABLE as TABLE_PANEL
from paimon_cli.key_values import parse_fs_options, parse_options_arg
from paimon_cli.output import Mode, Output
from paimon_cli.params import (
    AllowUnsafeOpt,
    BranchOpt,
    CatalogOpt,
    DryRunOpt,
    Engine,
    EngineOpt,
    FsOpt,
    JsonOpt,
    LimitOpt,
    OptionsOpt,
    ParallelismOpt,
    PlanOpt,
    QuarantineOpt,
    QuietOpt,
    RateOpt,
    SparkConfOpt,
    SparkMasterOpt,
    SparkRemoteOpt,
    TableArg,
    TimezoneOpt,
    WaitLeaseOpt,
    WarehouseOpt,
    load_saved_plan,
)
from paimon_cli.state import AppState, state_of

if TYPE_CHECKING:
    from core.catalog.catalog import Catalog
    from core.ops.lifecycle import RunRequest


class Shared(enum.Flag):
    """The shared option groups a command takes besides TABLE, ``--warehouse``,
    ``--catalog``, ``--fs-option``, ``--max-requests-per-second`` and ``--json``, which
    every one has."""

    NONE = 0
    OPTIONS = enum.auto()  # --options k=v,...: dynamic table options
    UNSAFE_COMMIT = enum.auto()  # --allow-unsafe-commit
    DRY_RUN = enum.auto()  # --dry-run
    QUARANTINE = enum.auto()  # --quarantine
    QUIET = enum.auto()  # -q/--quiet
    BRANCH = enum.auto()  # --branch
    PARALLELISM = enum.auto()  # --parallelism (local threads)
    SPARK = enum.auto()  # --engine and --spark-*: with PARALLELISM, where heavy work runs
    TIMEZONE = enum.auto()  # --timezone
    LEASE = enum.auto()  # --wait-lease: every changing command holds the table's lease
    PLAN = enum.auto()  # --plan FILE: apply a saved plan (commands whose plan is file actions)
    LIMIT = enum.auto()  # --limit N: rows a listing shows (DECISIONS D19)
    #: what a changing command that takes no --branch has, at the least (it works on every
    #: branch at once, or names the branch it works on itself)
    UNBRANCHED = DRY_RUN | QUIET | LEASE | LIMIT
    #: what a changing command has, at the least
    CHANGING = UNBRANCHED | BRANCH
    #: what a command that deletes files has: its plan of file actions can be saved and
    #: applied, and the files quarantined instead of deleted
    DELETING = PLAN | QUARANTINE
    ENGINE = PARALLELISM | SPARK


# The groups by bare name as well, as the ``re`` module exports its flags, so that a
# command's declaration reads (and fits) on one line.
OPTIONS = Shared.OPTIONS
UNSAFE_COMMIT = Shared.UNSAFE_COMMIT
DRY_RUN = Shared.DRY_RUN
QUARANTINE = Shared.QUARANTINE
QUIET = Shared.QUIET
BRANCH = Shared.BRANCH
PARALLELISM = Shared.PARALLELISM
SPARK = Shared.SPARK
TIMEZONE = Shared.TIMEZONE
LEASE = Shared.LEASE
PLAN = Shared.PLAN
LIMIT = Shared.LIMIT
UNBRANCHED = Shared.UNBRANCHED
CHANGING = Shared.CHANGING
DELETING = Shared.DELETING
ENGINE = Shared.ENGINE


@dataclass(frozen=True)
class _Param:
    name: str
    annotation: Any
    default: Any
    group: Shared
    panel: str  # the --help panel it is listed under (paimon_cli/help_panels.py)


# In the order --help lists them within their panels; names are the run record's option keys.
_SHARED: tuple[_Param, ...] = (
    _Param("dry_run", DryRunOpt, False, Shared.DRY_RUN, RUN_CONTROL),
    _Param("plan_file", PlanOpt, None, Shared.PLAN, RUN_CONTROL),
    _Param("quarantine", QuarantineOpt, False, Shared.QUARANTINE, RUN_CONTROL),
    _Param("wait_lease", WaitLeaseOpt, None, Shared.LEASE, RUN_CONTROL),
    _Param("allow_unsafe_commit", AllowUnsafeOpt, False, Shared.UNSAFE_COMMIT, RUN_CONTROL),
    _Param("timezone", TimezoneOpt, None, Shared.TIMEZONE, RUN_CONTROL),
    _Param("json_out", JsonOpt, False, Shared.NONE, OUTPUT),
    _Param("quiet", QuietOpt, False, Shared.QUIET, OUTPUT),
    _Param("limit", LimitOpt, None, Shared.LIMIT, OUTPUT),
    _Param("warehouse", WarehouseOpt, None, Shared.NONE, TABLE_PANEL),
    _Param("catalog", CatalogOpt, None, Shared.NONE, TABLE_PANEL),
    _Param("branch", BranchOpt, "main", Shared.BRANCH, TABLE_PANEL),
    _Param("options", OptionsOpt, None, Shared.OPTIONS, TABLE_PANEL),
    _Param("fs_option", FsOpt, None, Shared.NONE, STORAGE),
    _Param("max_rps", RateOpt, None, Shared.NONE, STORAGE),
    _Param("parallelism", ParallelismOpt, None, Shared.PARALLELISM, STORAGE),
    _Param("engine", EngineOpt, Engine.local, Shared.SPARK, SPARK_PANEL),
    _Param("spark_master", SparkMasterOpt, None, Shared.SPARK, SPARK_PANEL),
    _Param("spark_remote", SparkRemoteOpt, None, Shared.SPARK, SPARK_PANEL),
    _Param("spark_conf", SparkConfOpt, None, Shared.SPARK, SPARK_PANEL),
)
_DEFAULTS = {p.name: p.default for p in _SHARED}


@dataclass(frozen=True)
class Selection:
    """The table(s) a command line names and how to reach them."""

    spec: str  # a table path or name, or a glob of them
    warehouse: str | None
    branch: str
    fs_options: dict[str, str]
    dynamic_options: dict[str, str]
    max_requests_per_second: float | None = None
    #: --catalog: a paimon.yaml or a configured catalog name (core.catalog.config)
    catalog: str | None = None

    def open_catalog(self) -> Catalog:
        """The run's catalog, chosen once (``core.catalog.factory``); the caller closes it."""
        from core.catalog.factory import open_catalog

        return open_catalog(
            self.catalog,
            spec=self.spec,
            warehouse=self.warehouse,
            fs_options=self.fs_options,
            max_requests_per_second=self.max_requests_per_second,
        )


@dataclass(frozen=True)
class Common:
    """The shared options of one command line, parsed; and what follows from them."""

    selection: Selection  # the table(s), their branch, storage settings, dynamic options
    dry_run: bool
    quarantine: bool
    allow_unsafe_commit: bool
    wait_lease_ms: int  # --wait-lease: how long to wait for another run's table lease
    engine: EngineChoice
    zone: dt.tzinfo
    now_ms: int  # times given on the command line are read against this instant
    output: Output
    state: AppState
    #: every option of the command line by name (storage and Spark settings are masked
    #: when a run record keeps them)
    params: Mapping[str, Any]
    saved_plan: Any = None  # --plan FILE, read (a Plan): the lifecycle applies it

    @property
    def json(self) -> bool:
        return self.output.mode is Mode.JSON

    @property
    def debug(self) -> bool:
        return self.state.debug

    def instant(self, param: str, text: str | None) -> int | None:
        """A point in time given on the command line to option ``param`` (DECISIONS D4), in
        epoch milliseconds, read against this run's clock and zone; None stays."""
        from core.runtime.requests import instant

        return instant(param, text, now_ms=self.now_ms, zone=self.zone)

    def cutoff(self, param: str, text: str | None) -> int | None:
        """As :meth:`instant`, for a cut-off (``--older-than``): one in the future is a usage
        error."""
        from core.runtime.requests import cutoff

        return cutoff(param, text, now_ms=self.now_ms, zone=self.zone)

    def run_request(self) -> RunRequest:
        """The lifecycle switches: dry run, a saved plan, quarantine, the recorded options."""
        from core.ops.lifecycle import RunRequest

        return RunRequest(
            dry_run=self.dry_run,
            saved_plan=self.saved_plan,
            quarantine=self.quarantine,
            options=self.params,
            wait_lease_ms=self.wait_lease_ms,
        )


def _common(ctx: typer.Context, shared: Shared, values: Mapping[str, Any]) -> Common:
    """The shared options parsed (those a command does not take at their defaults)."""
    from core.runtime.clock import SystemClock
    from core.runtime.requests import duration, parsed
    from core.runtime.timeparse import resolve_zone

    v = {**_DEFAULTS, **values}
    state = state_of(ctx)
    mode = Mode.of(v["json_out"], v["quiet"])
    with usage_errors(ctx):
        zone = parsed("timezone", lambda: resolve_zone(v["timezone"]))
        wait_lease_ms = duration("wait_lease", v["wait_lease"]) or 0
    # Commands without --parallelism run on one local thread.
    parallelism = v["parallelism"] if Shared.PARALLELISM in shared else 1
    output = Output(mode, no_color=state.no_color, limit=v["limit"])
    dynamic = parse_options_arg(v["options"])
    _warn_unknown_options(dynamic, output)
    return Common(
        selection=Selection(
            v["table"],
            v["warehouse"],
            v["branch"],
            parse_fs_options(v["fs_option"]),
            dynamic,
            max_requests_per_second=v["max_rps"],
            catalog=v["catalog"],
        ),
        dry_run=v["dry_run"],
        quarantine=bool(v["quarantine"]),
        allow_unsafe_commit=v["allow_unsafe_commit"],
        wait_lease_ms=wait_lease_ms,
        engine=EngineChoice.of(
            v["engine"], parallelism, v["spark_master"], v["spark_remote"], v["spark_conf"]
        ),
        zone=zone,
        now_ms=SystemClock().now_ms(),
        output=output,
        state=state,
        # as Click parsed them (the run record keeps these); how many rows were shown is
        # no part of what was run
        params={k: v for k, v in ctx.params.items() if k != "limit"},
        saved_plan=load_saved_plan(v["plan_file"], ctx.command.name or "")
        if v["plan_file"]
        else None,
    )


def _warn_unknown_options(dynamic: Mapping[str, str], output: Output) -> None:
    """A key of --options that Apache Paimon does not define is most likely a typo: say so,
    with the closest key, and pass it on anyway (a newer Paimon may define it)."""
    from core.format.options import unknown_options

    for unknown in unknown_options(list(dynamic)):
        guess = f"; did you mean {unknown.closest!r}?" if unknown.closest else ""
        output.warn(
            f"--options: {unknown.key!r} is not a table option Apache Paimon defines{guess} "
            "(passed on as given)"
        )


def _hint(ctx: typer.Context, name: str | None) -> str | None:
    """How a usage error names the parameter ``name``: its longest option, or its metavar."""
    for param in ctx.command.params:
        if param.name == name:
            if param.param_type_name == "argument":
                return param.metavar or name.upper()
            return max(param.opts, key=len)
    return None


@contextmanager
def usage_errors(ctx: typer.Context) -> Iterator[None]:
    """An impossible value found while building a request is a usage error (exit 2) on
    the option it names."""
    try:
        yield
    except InvalidOptionError as exc:
        raise typer.BadParameter(exc.message, ctx=ctx, param_hint=_hint(ctx, exc.param)) from None


Body = Callable[..., None]


def _own_parameters(body: Body) -> list[inspect.Parameter]:
    """The command's own arguments and options: its parameters after ``common``."""
    hints = get_type_hints(body, include_extras=True)
    params = list(inspect.signature(body).parameters.values())
    if not params or params[0].name != "common":
        raise TypeError(f"{body.__name__}: the first parameter must be 'common: Common'")
    return [
        p.replace(annotation=hints[p.name], kind=inspect.Parameter.KEYWORD_ONLY) for p in params[1:]
    ]


def _keyword(name: str, annotation: Any, default: Any = inspect.Parameter.empty) -> Any:
    return inspect.Parameter(
        name, inspect.Parameter.KEYWORD_ONLY, annotation=annotation, default=default
    )


def _in_panel(param: _Param) -> Any:
    """The shared option's annotation, its Typer option listed under ``param.panel``."""
    kind, info, *rest = get_args(param.annotation)
    info = copy.copy(info)
    info.rich_help_panel = param.panel
    return Annotated[(kind, info, *rest)]


def command(
    name: str, epilog: str, shared: Shared, *, old_spelling: OldSpelling | None = None
) -> Callable[[Body], Callable[..., None]]:
    """Declare a command with its --help epilog: ``body(common, **own)`` gets the shared
    options of ``shared`` parsed into ``common``; its own parameters follow TABLE in the usage
    line and in --help, the shared ones in their panels after them. ``old_spelling`` names
    the new spelling of an option value the command no longer takes (a usage error)."""

    def declare(body: Body) -> Callable[..., None]:
        own = _own_parameters(body)
        taken = [p for p in _SHARED if p.group in shared or p.group is Shared.NONE]
        if Shared.SPARK in shared and Shared.PARALLELISM not in shared:
            raise TypeError(f"{name}: SPARK needs PARALLELISM")
        clash = {p.name for p in own} & {p.name for p in _SHARED}
        if clash:
            raise TypeError(f"{name}: {sorted(clash)} are shared options")
        signature = inspect.Signature(
            [
                _keyword("ctx", typer.Context),
                _keyword("table", TableArg),
                *own,
                *(_keyword(p.name, _in_panel(p), p.default) for p in taken),
            ]
        )
        shared_names = frozenset({"table", *(p.name for p in taken)})

        def callback(ctx: typer.Context, **values: Any) -> None:
            common = _common(ctx, shared, {k: values.pop(k) for k in shared_names})
            with usage_errors(ctx):
                body(common, **values)

        callback.__signature__ = signature  # type: ignore[attr-defined]
        callback.__annotations__ = {p.name: p.annotation for p in signature.parameters.values()}
        callback.__doc__ = body.__doc__
        callback.__name__ = body.__name__
        callback.__qualname__ = body.__qualname__
        callback.__module__ = body.__module__
        setattr(callback, "command_name", name)  # noqa: B010
        setattr(callback, "epilog", epilog)  # noqa: B010
        setattr(callback, "old_spelling", old_spelling)  # noqa: B010 - read by PanelCommand
        return callback

    return declare


def register(app: typer.Typer, *commands: Callable[..., None]) -> None:
    """Add declared commands to the app, in the order --help lists them."""
    for cmd in commands:
        name, epilog = getattr(cmd, "command_name"), getattr(cmd, "epilog")  # noqa: B009
        app.command(name, epilog=epilog, cls=PanelCommand)(cmd)
