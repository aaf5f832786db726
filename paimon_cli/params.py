"""Shared option aliases (so every command spells them the same) and their parsers."""

from __future__ import annotations

import json
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from paimon_cli.completion import any_branch

if TYPE_CHECKING:
    from core.runtime.plans import Plan


def optional(*param_decls: str, default_text: str | None = None, **attrs: Any) -> Any:
    """A ``typer.Option`` that may be left out; ``default_text`` says what that means where it
    matters, shown as every default is (``[default: 1 day ago]``), never in the help prose."""
    return typer.Option(*param_decls, show_default=default_text or False, **attrs)


def partition_option(help: str) -> Any:
    """``--partition K=V[,K2=V2]``, repeatable: the partitions a command keeps to."""
    return optional("--partition", metavar="K=V[,K2=V2]", help=help)


class Engine(str, Enum):
    local = "local"
    spark = "spark"


TableArg = Annotated[
    str,
    typer.Argument(
        help="Table location (/path, s3://..., oss://..., hdfs://...), DB.TABLE with "
        "--warehouse or --catalog, or a glob such as 'db.*' to handle many tables.",
        show_default=False,
    ),
]
WarehouseOpt = Annotated[
    str | None,
    optional(
        "--warehouse",
        "-w",
        envvar="PAIMON_WAREHOUSE",
        help="Warehouse root for DB.TABLE names and globs.",
    ),
]
CatalogOpt = Annotated[
    str | None,
    optional(
        "--catalog",
        "-c",
        envvar="PAIMON_CATALOG",
        metavar="PAIMON_YAML|NAME",
        help="The catalog that names the tables: a pypaimon paimon.yaml file, or a catalog "
        "defined by name in ~/.paimon-cli.yaml. TABLE is then DB.TABLE or a glob such as "
        "'db.*' or '*.*', resolved by the catalog's own listing.",
    ),
]
BranchOpt = Annotated[
    str, typer.Option("--branch", help="Branch to work on.", autocompletion=any_branch)
]
FsOpt = Annotated[
    list[str] | None,
    optional(
        "--fs-option",
        metavar="KEY=VALUE",
        help="Storage setting passed to fsspec (repeatable), e.g. "
        "endpoint_url=http://127.0.0.1:9000.",
    ),
]
RateOpt = Annotated[
    float | None,
    optional(
        "--max-requests-per-second",
        min=0.1,
        help="Cap storage requests per second (object stores; transient errors "
        "such as 429/503/SlowDown are retried with backoff either way).",
    ),
]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print one JSON document to stdout.")]
QuietOpt = Annotated[bool, typer.Option("--quiet", "-q", help="Print only essential output.")]
LimitOpt = Annotated[
    int | None,
    optional(
        "--limit",
        min=0,
        metavar="N",
        help="Rows a listing shows (a view's rows, a dry run's actions); 0: all. "
        "Default: 40 on a terminal, all in a pipe or a file.",
    ),
]
DryRunOpt = Annotated[bool, typer.Option("--dry-run", help="Print the plan; change nothing.")]
PlanOpt = Annotated[
    Path | None,
    optional(
        "--plan",
        help="Apply a plan saved from --dry-run --json (the document or its plan) instead of "
        "planning: re-checked first, and refused, never re-planned, when the table changed "
        "since.",
        exists=True,
        dir_okay=False,
    ),
]
QuarantineOpt = Annotated[
    bool,
    typer.Option(
        "--quarantine",
        envvar="PAIMON_CLI_QUARANTINE",
        help="Move files into <table>/.paimon-cli/quarantine/<run-id>/ instead of deleting "
        "them (same order); 'paimon restore' undoes the run, 'paimon purge-quarantine' "
        "deletes them for good. Also PAIMON_CLI_QUARANTINE=1.",
    ),
]
AllowUnsafeOpt = Annotated[
    bool,
    typer.Option(
        "--allow-unsafe-commit",
        help="Commit on an object store without atomic create-if-absent (GCS, Azure, OSS, "
        "...). Only safe when no other writer commits meanwhile.",
    ),
]
WaitLeaseOpt = Annotated[
    str | None,
    optional(
        "--wait-lease",
        metavar="DURATION",
        help="When another paimon-cli run holds the table's lease, wait up to this long "
        "(e.g. 15m) for it instead of failing at once (a crashed holder's lease is taken over "
        "when it expires, at once on its own host).",
    ),
]
ParallelismOpt = Annotated[
    int | None,
    optional(
        "--parallelism",
        min=1,
        max=1024,
        help="Concurrent storage operations (on local disk listing and deleting run on one "
        "thread unless this is given).",
        default_text="2 x CPUs, at least 4",
    ),
]
EngineOpt = Annotated[
    Engine,
    typer.Option(
        "--engine",
        help="Where heavy work runs: local threads, or Spark (pip install "
        "'paimon-cli[spark]'; needs Java for local Spark).",
    ),
]
SparkMasterOpt = Annotated[
    str | None,
    optional(
        "--spark-master",
        help="Spark master URL for --engine spark.",
        default_text="local[*]",
    ),
]
SparkRemoteOpt = Annotated[
    str | None,
    optional(
        "--spark-remote",
        help="Spark Connect URL (sc://host:15002) for --engine spark.",
    ),
]
SparkConfOpt = Annotated[
    list[str] | None,
    optional(
        "--spark-conf",
        metavar="KEY=VALUE",
        help="Spark configuration for --engine spark (repeatable).",
    ),
]
TimezoneOpt = Annotated[
    str | None,
    optional(
        "--timezone",
        help="Zone for local date-times.",
        default_text="this machine's",
    ),
]
OptionsOpt = Annotated[
    str | None,
    optional(
        "--options",
        metavar="K=V,...",
        help="Dynamic table options applied before anything else, as in Paimon's procedures.",
    ),
]


def load_saved_plan(path: Path, command: str) -> Plan[Any]:
    """``--plan FILE``: a plan saved from ``--dry-run --json`` (the document or its plan)."""
    from core.errors import CorruptMetadataError
    from core.runtime.plans import Plan

    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise typer.BadParameter(f"cannot read plan: {exc}", param_hint="--plan") from None
    if isinstance(data, dict) and "plan" in data:
        data = data["plan"]
    try:
        plan = Plan.from_json(data, source=str(path))
    except CorruptMetadataError as exc:
        raise typer.BadParameter(exc.message, param_hint="--plan") from None
    if plan.command != command:
        raise typer.BadParameter(f"plan is for {plan.command}", param_hint="--plan")
    return plan
