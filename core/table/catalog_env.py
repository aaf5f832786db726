"""What a table knows of the catalog it was loaded from (Paimon Java's CatalogEnvironment).

A table opened by location or under ``--warehouse`` belongs to no catalog beyond its
directory: its commits are files created on storage, with no lock. A catalog
(``core.catalog``) hands its tables an environment of its own: the name a user gave it, the
table's identifier in it, and the lock every commit takes (Paimon's JDBC distributed lock
when ``lock.enabled`` is set). A catalog that keeps the snapshots itself (REST: version
management) also commits them (``commit_snapshot``); the write layer asks, per commit.

Environments travel with tables to Spark executors: they must pickle, and open any
connection lazily (executors never commit).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any


class CommitLock:
    """A lock held around the creation of a snapshot (Java's ``Lock``): none by default."""

    #: what the lock is, for messages and ``inspect`` ("jdbc lock prod.db.orders")
    description: str = "none"

    @contextmanager
    def hold(self) -> Iterator[None]:
        yield


NO_LOCK = CommitLock()


class MetastorePartitions:
    """The partitions a metastore mirrors for one table (Hive's
    ``metastore.partitioned-table``): each partition's values in the order of the table's
    partition keys, as strings (nulls as the table's default partition name). Opens its
    connection per call: environments pickle."""

    #: what holds them, for messages ("Hive Metastore thrift://h:9083, table db.t")
    description: str = "none"

    def held(self) -> list[tuple[str, ...]]:
        """Every partition the metastore holds for the table."""
        raise NotImplementedError

    def drop(self, partitions: Sequence[tuple[str, ...]]) -> list[tuple[str, ...]]:
        """Drop the partitions' entries (never data); the ones that were there. Stops at
        the first refusal, raising it: what was dropped before stays dropped."""
        raise NotImplementedError


@dataclass(frozen=True)
class CatalogEnvironment:
    """The catalog a table came from. The default is a table addressed by its location."""

    #: the catalog as the user named it: a paimon.yaml path, a name from ~/.paimon-cli.yaml,
    #: "--warehouse <root>", or "path" for a table given by its location
    catalog: str = "path"
    #: filesystem (also a bare path), jdbc or rest
    kind: str = "filesystem"
    #: ``db.table`` in the catalog; None for a table given by its location
    identifier: str | None = None
    #: where the catalog keeps its entries (a warehouse root, a JDBC uri, a REST endpoint)
    where: str | None = None
    lock: CommitLock = NO_LOCK
    #: the metastore's copy of the table's partitions (Hive); None: the catalog keeps none
    partitions: MetastorePartitions | None = None

    @property
    def version_managed(self) -> bool:
        """True when the catalog, not a file on storage, decides which snapshot is latest:
        commits then go through :meth:`commit_snapshot` (Paimon's REST catalog)."""
        return False

    def commit_snapshot(
        self,
        table_location: str,
        snapshot: Mapping[str, Any],
        *,
        branch: str,
        base_snapshot_uuid: str | None,
        statistics: Sequence[Mapping[str, Any]],
    ) -> bool:
        """Commit ``snapshot`` through the catalog: True when it took it, False when another
        commit took the id. Only for version-managed catalogs."""
        raise NotImplementedError(f"the {self.kind} catalog {self.catalog} does not commit")

    def latest_snapshot(self, branch: str) -> Mapping[str, Any] | None:
        """The catalog's latest snapshot of ``branch`` (None: it has none); read back to
        settle a commit whose answer was lost. Only for version-managed catalogs."""
        raise NotImplementedError(f"the {self.kind} catalog {self.catalog} keeps no snapshots")

    def rollback_to(
        self, branch: str, instant: Mapping[str, Any], from_snapshot: int | None
    ) -> None:
        """Roll the table back through the catalog (Paimon's ``rollbackTo``): the catalog
        removes what follows ``instant``. Only for version-managed catalogs."""
        raise NotImplementedError(f"the {self.kind} catalog {self.catalog} does not roll back")

    def branches(self) -> list[str]:
        """The table's branches as the catalog lists them. Only for version-managed ones."""
        raise NotImplementedError(f"the {self.kind} catalog {self.catalog} keeps no branches")

    def create_branch(self, branch: str, from_tag: str | None) -> None:
        """Create ``branch`` through the catalog (Paimon's CatalogBranchManager)."""
        raise NotImplementedError(f"the {self.kind} catalog {self.catalog} keeps no branches")

    def drop_branch(self, branch: str) -> None:
        """Drop ``branch`` through the catalog (Paimon's CatalogBranchManager)."""
        raise NotImplementedError(f"the {self.kind} catalog {self.catalog} keeps no branches")

    def fast_forward(self, branch: str) -> None:
        """Fast-forward the main branch to ``branch`` through the catalog."""
        raise NotImplementedError(f"the {self.kind} catalog {self.catalog} keeps no branches")

    def describe(self) -> dict[str, Any]:
        """What ``inspect`` shows: which catalog, the identifier, where it lives, the lock."""
        return {
            "catalog": self.catalog,
            "kind": self.kind,
            "identifier": self.identifier,
            "where": self.where,
            "lock": self.lock.description,
            **({"partitions": self.partitions.description} if self.partitions else {}),
        }


PATH = CatalogEnvironment()
