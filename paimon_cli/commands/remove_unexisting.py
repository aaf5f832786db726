"""paimon remove-unexisting-files: mark missing data files of the latest snapshot DELETE."""

from __future__ import annotations

from typing import Annotated

from paimon_cli.params import partition_option
from paimon_cli.render.remove_unexisting import RENDERER
from paimon_cli.selection import run_operation
from paimon_cli.shared import CHANGING, PARALLELISM, PLAN, UNSAFE_COMMIT, Common, command

EPILOG = """Examples:

  paimon inspect /wh/db.db/orders --check

  paimon remove-unexisting-files /wh/db.db/orders --dry-run

  paimon remove-unexisting-files /wh/db.db/orders --partition dt=2024-07-01 \\
    --json
"""


@command("remove-unexisting-files", EPILOG, CHANGING | PLAN | PARALLELISM | UNSAFE_COMMIT)
def remove_unexisting_files(
    common: Common,
    partition: Annotated[
        list[str] | None,
        partition_option("Only this partition (repeatable: any of them)."),
    ] = None,
) -> None:
    """Commit one snapshot marking the latest snapshot's missing data files DELETE (Paimon's
    remove_unexisting_files): readers work again; the rows those files held are gone."""
    from core.ops.undo.remove_unexisting import RemoveUnexistingFiles

    op = RemoveUnexistingFiles.of(partition, allow_unsafe=common.allow_unsafe_commit)
    run_operation(common, lambda _ex: op, RENDERER)
