"""One table of a REST catalog, as its commits see it: the server's latest snapshot, the
commit endpoint, the data token. Carried by the table's environment (``RestEnvironment``),
so it pickles: configuration only, every request opens its own connection."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from core.catalog.rest_http import RestHttp, RestNotFoundError, path_of
from core.table.catalog_env import CatalogEnvironment


@dataclass(frozen=True)
class RestTable:
    http: RestHttp
    prefix: str
    database: str
    table: str
    table_id: str | None  # the server's id of the table: a commit names it (a renamed or
    # re-created table under the same name refuses a commit meant for the old one)

    def path(self, *tail: str, branch: str = "main") -> str:
        # Paimon's Identifier names a branch as ``table$branch_<name>``.
        name = self.table if branch == "main" else f"{self.table}$branch_{branch}"
        return path_of("v1", self.prefix, "databases", self.database, "tables", name, *tail)

    def latest_snapshot(self, branch: str = "main") -> dict[str, Any] | None:
        """The server's latest snapshot (``GET .../snapshot``); None when it has none."""
        try:
            answer = self.http.get(self.path("snapshot", branch=branch))
        except RestNotFoundError:
            return None
        snapshot = (answer or {}).get("snapshot") or {}
        inner = snapshot.get("snapshot")
        return dict(inner) if isinstance(inner, dict) else None

    def commit(
        self,
        snapshot: Mapping[str, Any],
        *,
        branch: str,
        base_snapshot_uuid: str | None,
        statistics: Sequence[Mapping[str, Any]],
    ) -> bool:
        """``POST .../commit`` as Paimon's RESTApi sends it; True when the server took it."""
        body = {
            "tableId": self.table_id,
            "baseSnapshotUuid": base_snapshot_uuid,
            "snapshot": dict(snapshot),
            "statistics": [dict(s) for s in statistics],
        }
        answer = self.http.post(self.path("commit", branch=branch), body)
        return bool((answer or {}).get("success"))

    def rollback(
        self, instant: Mapping[str, Any], *, branch: str, from_snapshot: int | None
    ) -> None:
        """``POST .../rollback`` as Paimon's RESTApi sends it."""
        body = {"instant": dict(instant), "fromSnapshot": from_snapshot}
        self.http.post(self.path("rollback", branch=branch), body)

    def branches(self) -> list[str]:
        answer = self.http.get(self.path("branches")) or {}
        return sorted(str(b) for b in answer.get("branches") or [])

    def create_branch(self, branch: str, from_tag: str | None) -> None:
        self.http.post(self.path("branches"), {"branch": branch, "fromTag": from_tag})

    def drop_branch(self, branch: str) -> None:
        self.http.call("DELETE", self.path("branches", branch))

    def fast_forward(self, branch: str) -> None:
        self.http.post(self.path("branches", branch, "forward"), {})

    def data_token(self) -> tuple[dict[str, str], int]:
        """The table's vended storage settings and their expiry (epoch ms)."""
        answer = self.http.get(self.path("token")) or {}
        token = {str(k): str(v) for k, v in (answer.get("token") or {}).items()}
        # Java's GetTableTokenResponse says expiresAtMillis; the OpenAPI spec, expiresAt.
        expires = answer.get("expiresAtMillis", answer.get("expiresAt"))
        return token, int(expires or 0)


@dataclass(frozen=True)
class RestEnvironment(CatalogEnvironment):
    """A REST catalog's table: the server decides which snapshot is latest, and commits go
    through it (Paimon's version management)."""

    server: RestTable | None = None

    @property
    def version_managed(self) -> bool:
        return self.server is not None

    def _server(self) -> RestTable:
        if self.server is None:
            raise NotImplementedError("no server")
        return self.server

    def commit_snapshot(
        self,
        table_location: str,
        snapshot: Mapping[str, Any],
        *,
        branch: str,
        base_snapshot_uuid: str | None,
        statistics: Sequence[Mapping[str, Any]],
    ) -> bool:
        return self._server().commit(
            snapshot, branch=branch, base_snapshot_uuid=base_snapshot_uuid, statistics=statistics
        )

    def latest_snapshot(self, branch: str) -> Mapping[str, Any] | None:
        return self._server().latest_snapshot(branch)

    def rollback_to(
        self, branch: str, instant: Mapping[str, Any], from_snapshot: int | None
    ) -> None:
        self._server().rollback(instant, branch=branch, from_snapshot=from_snapshot)

    def branches(self) -> list[str]:
        return self._server().branches()

    def create_branch(self, branch: str, from_tag: str | None) -> None:
        self._server().create_branch(branch, from_tag)

    def drop_branch(self, branch: str) -> None:
        self._server().drop_branch(branch)

    def fast_forward(self, branch: str) -> None:
        self._server().fast_forward(branch)
