"""delete-orphan-files: the local or the Spark implementation of Paimon's OrphanFilesClean,
chosen by the executor the run uses (Paimon's LOCAL and DISTRIBUTED modes)."""

from __future__ import annotations

from core.ops.orphans.orphan_files import LocalOrphanFiles, OrphanPlan, OrphanRequest
from core.ops.orphans.orphan_files_spark import SparkOrphanFiles
from core.runtime.executors.base import Executor
from core.runtime.executors.spark import SparkExecutor
from core.runtime.operation import Operation


def delete_orphan_files(request: OrphanRequest, executor: Executor) -> Operation[OrphanPlan, None]:
    """The operation for ``executor``: Spark plans and deletes on the cluster."""
    if isinstance(executor, SparkExecutor):
        return SparkOrphanFiles(request)
    return LocalOrphanFiles(request)
