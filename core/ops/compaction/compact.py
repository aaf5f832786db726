"""The compact command as an operation: plan which files Paimon would merge, rewrite them
(locally or on Spark), then one COMPACT commit. The compactor itself is ``core.compaction``."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import partial
from typing import ClassVar

from core.compaction.compact import (
    STRATEGIES,
    CompactFlags,
    CompactPlan,
    CompactResult,
    apply_compact,
    parse_partition_filter,
    plan_compact,
)
from core.format.options import parse_memory_size
from core.runtime.operation import Env, Operation
from core.runtime.requests import one_of, parsed, refuse
from core.table.table import PaimonTable
from core.write.publication import refuse_non_avro_manifests


@dataclass(frozen=True, slots=True)
class CompactRequest:
    """What compact was asked for, validated; None falls back to table options, then
    Paimon's defaults (checked where they are resolved, ``compact_config``)."""

    partitions: tuple[Mapping[str, str], ...] = ()
    strategy: str | None = None  # the --compact-strategy option
    target_file_size: str | None = None
    allow_unsafe_commit: bool = False
    max_bytes: int | None = None  # at most this many input bytes per run (whole tasks)

    def __post_init__(self) -> None:
        one_of("compact_strategy", self.strategy, STRATEGIES, "strategy")
        if self.max_bytes is not None and self.max_bytes <= 0:
            raise refuse("compact_max_bytes", "must be positive")
        if self.target_file_size is not None:
            text = self.target_file_size
            if parsed("target_file_size", lambda: parse_memory_size(text)) <= 0:
                raise refuse("target_file_size", "must be positive")

    @classmethod
    def of(
        cls,
        partitions: list[str] | None,
        strategy: str | None,
        target_file_size: str | None,
        *,
        allow_unsafe_commit: bool = False,
    ) -> CompactRequest:
        """From the command line's text: ``--partition k=v[,k2=v2]`` values."""
        specs = tuple(
            parsed("partition", partial(parse_partition_filter, p)) for p in partitions or ()
        )
        return cls(specs, strategy, target_file_size, allow_unsafe_commit)

    @property
    def flags(self) -> CompactFlags:
        return CompactFlags(
            self.partitions, self.strategy, self.target_file_size, max_bytes=self.max_bytes
        )


@dataclass(frozen=True)
class Compact(Operation[CompactPlan, CompactResult]):
    """Paimon's compaction of the latest snapshot, committed once (COMPACT)."""

    command: ClassVar[str] = "compact"

    request: CompactRequest = CompactRequest()

    def plan(self, table: PaimonTable, env: Env) -> CompactPlan:
        # Before anything is read or rewritten: the commit would refuse it anyway (D12).
        refuse_non_avro_manifests(table)
        return plan_compact(table, self.request.flags, now_ms=env.now_ms)

    def apply(self, table: PaimonTable, plan: CompactPlan, env: Env) -> CompactResult | None:
        if not plan.work:
            return None
        allow_unsafe = self.request.allow_unsafe_commit
        return apply_compact(
            table, plan, executor=env.executor, allow_unsafe=allow_unsafe, run=env.run
        )
