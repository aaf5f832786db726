"""Build the executor a command asked for (--engine local|spark)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import typer

if TYPE_CHECKING:
    from core.runtime.executors.base import Executor
from paimon_cli.key_values import parse_fs_options
from paimon_cli.params import Engine


@dataclass(frozen=True)
class EngineChoice:
    engine: Engine
    parallelism: int | None
    spark_master: str | None
    spark_remote: str | None
    spark_conf: dict[str, str]

    @classmethod
    def of(
        cls,
        engine: Engine,
        parallelism: int | None,
        master: str | None,
        remote: str | None,
        conf: list[str] | None,
    ) -> EngineChoice:
        if engine is Engine.local and (master or remote or conf):
            raise typer.BadParameter(
                "--spark-master, --spark-remote and --spark-conf need --engine spark"
            )
        if master and remote:
            raise typer.BadParameter("give --spark-master or --spark-remote, not both")
        # KEY=VALUE parsing is the same as for --fs-option.
        try:
            parsed = parse_fs_options(conf)
        except typer.BadParameter:
            raise typer.BadParameter("expected KEY=VALUE", param_hint="--spark-conf") from None
        return cls(engine, parallelism, master, remote, parsed)

    @property
    def spark(self) -> bool:
        return self.engine is Engine.spark

    def create(self) -> Executor:
        """Start the executor (Spark starts here, lazily imported; errors are engine errors)."""
        if self.engine is Engine.local:
            # Imported here: it loads multiprocessing, which `--help` does not need.
            from core.runtime.executors.local import LocalExecutor

            return LocalExecutor(self.parallelism)
        from core.runtime.executors.spark import SparkExecutor

        return SparkExecutor.start(
            master=self.spark_master,
            remote=self.spark_remote,
            conf=self.spark_conf,
            parallelism=self.parallelism,
        )


class ExecutorHolder:
    """Creates the executor on first use (inside the error guard), closes it at the end."""

    def __init__(self, choice: EngineChoice) -> None:
        self.choice = choice
        self._executor: Executor | None = None

    def get(self) -> Executor:
        if self._executor is None:
            self._executor = self.choice.create()
        return self._executor

    def close(self) -> None:
        if self._executor is not None:
            self._executor.close()
            self._executor = None
