"""Publishing a snapshot through a catalog that keeps them (Paimon's REST catalog: version
management), instead of creating its file on storage.

The server takes the snapshot only on top of the base snapshot we built on (its uuid) and
writes the snapshot file itself. A refusal (4xx) changed nothing. An answer that may or may
not have been applied (5xx, a dropped connection) is settled as on S3: the server's latest
snapshot is read back, and it is ours when it carries our uuid.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from core.errors import CatalogOutcomeUnknownError, PaimonError
from core.format.model import Snapshot
from core.table.table import PaimonTable
from core.write.publication import CommitOutcomeUnknownError, Publication, PublishState


def publish_through_catalog(
    table: PaimonTable,
    raw: dict[str, Any],
    publication: Publication,
    *,
    base: Snapshot,
    statistics: Sequence[Mapping[str, Any]],
) -> Snapshot | None:
    """Commit ``raw`` through the table's catalog; None when another commit took the id."""
    env = table.catalog
    publication.state = PublishState.PUBLISHING
    try:
        taken = env.commit_snapshot(
            table.location,
            raw,
            branch=table.branch,
            base_snapshot_uuid=base.raw.get("uuid"),
            statistics=statistics,
        )
    except CatalogOutcomeUnknownError as exc:
        return _settle(table, raw, publication, exc)
    except BaseException:
        publication.state = PublishState.OPEN  # refused: the server applied nothing
        raise
    if not taken:
        publication.state = PublishState.OPEN  # another writer's commit is the base now
        return None
    publication.state = PublishState.PUBLISHED
    return Snapshot.from_json(raw, table.snapshots.path(raw["id"]))


def _settle(
    table: PaimonTable, raw: dict[str, Any], publication: Publication, exc: PaimonError
) -> Snapshot | None:
    env = table.catalog
    try:
        theirs = env.latest_snapshot(table.branch)
    except PaimonError as read_error:
        raise CommitOutcomeUnknownError(
            f"committing snapshot {raw['id']} through catalog {env.catalog} got no answer "
            f"({exc.message}) and its latest snapshot could not be read back "
            f"({read_error.message}): it may or may not be committed; the files it "
            "references were kept",
            hint="run `paimon inspect TABLE snapshots`: if it is not there, the kept files are "
            "orphans for delete-orphan-files",
        ) from exc
    if theirs is not None and theirs.get("uuid") == raw["uuid"]:
        publication.state = PublishState.PUBLISHED
        return Snapshot.from_json(raw, table.snapshots.path(raw["id"]))
    if theirs is not None and int(theirs.get("id", 0)) >= int(raw["id"]):
        publication.state = PublishState.OPEN  # another writer's commit has the id
        return None
    raise CommitOutcomeUnknownError(
        f"committing snapshot {raw['id']} through catalog {env.catalog} got no answer "
        f"({exc.message}) and the catalog does not hold it now, but the request may still "
        "be applied: the files it references were kept",
        hint="rerun the command; files of a commit that did not land are orphans for "
        "delete-orphan-files",
    ) from exc
