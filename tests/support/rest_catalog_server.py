"""A Paimon REST catalog server for the tests, written from Paimon's OpenAPI spec
(``rest-catalog-open-api.yaml``), loopback only.

Like a real server (Alibaba DLF) it keeps in its own store what a REST catalog owns:
databases, tables (id, location, schema, options), each table's latest snapshot and its
partition statistics, both changed only through its commit endpoint (which also writes the
snapshot file and ``LATEST``, as Java's server does through its file catalog); rollback goes
through it too. Tags and branches are read from storage, where Paimon master keeps them.

Data is reached with credentials it vends (``/token``): short-lived keys that the S3 proxy
in front of moto (``CredentialGate``) accepts only until they expire, so a client that does
not refresh them, or uses any other key, is refused (403 ``ExpiredToken``). Requests carry a
bearer token; a wrong one is answered 401, a read-only one 403 on changes.

Tests steer it: ``commit_faults`` (the next commits answer an error, or are applied and then
answered 500 or dropped), ``requests`` (what was asked, for assertions).
"""

from __future__ import annotations

import json
import re
import secrets
import socket
import threading
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

import fsspec

from support.fault_proxy import FaultProxy
from support.local_http import QuietServer, serve, shut

Json = dict[str, Any]
_ACCESS_KEY = re.compile(r"Credential=([A-Z0-9]+)/|X-Amz-Credential=([A-Z0-9]+)")


def now_ms() -> int:
    return int(time.time() * 1000)


@dataclass
class CredentialGate:
    """The keys the server vended, each valid until its expiry (wall clock)."""

    keys: dict[str, int] = field(default_factory=dict)
    refused: list[str] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def issue(self, ttl_ms: int) -> tuple[str, str, str, int]:
        key = "VEND" + secrets.token_hex(8).upper()
        expires = now_ms() + ttl_ms
        with self._lock:
            self.keys[key] = expires
        return key, secrets.token_hex(16), secrets.token_hex(24), expires

    def __call__(self, headers: list[tuple[str, str]], path: str) -> tuple[int, str] | None:
        auth = " ".join(v for k, v in headers if k.lower() == "authorization") + " " + path
        match = _ACCESS_KEY.search(auth)
        key = next((g for g in match.groups() if g), "") if match else ""
        with self._lock:
            expires = self.keys.get(key)
            if expires is not None and expires > now_ms():
                return None
            self.refused.append(key or "<anonymous>")
        return (403, "ExpiredToken") if expires is not None else (403, "InvalidAccessKeyId")


@dataclass
class TableEntry:
    id: str
    database: str
    name: str
    path: str
    schema: Json  # the schema file's JSON (id, fields, keys, options)
    latest: Json | None = None  # the latest snapshot, as committed through the server
    partitions: dict[str, Json] = field(default_factory=dict)  # spec JSON -> statistics
    created_at: int = field(default_factory=now_ms)


class RestError(Exception):
    def __init__(self, code: int, message: str, kind: str = "UNKNOWN", name: str = ""):
        super().__init__(message)
        self.code, self.message, self.kind, self.name = code, message, kind, name


@dataclass
class CommitFault:
    """What the next commit meets: ``error`` (answered ``status``, not applied),
    ``error-after`` (applied, answered 500) or ``drop-after`` (applied, no answer)."""

    action: str
    status: int = 500
    message: str = "injected"


@dataclass
class RestCatalogServer:
    warehouse: str  # the catalog's name, as clients give it in ``warehouse``
    root: str  # where its tables live: s3://bucket/prefix or a local directory
    storage_options: Mapping[str, str]  # the server's own storage access (fsspec)
    data_endpoint: str = ""  # S3 endpoint vended to clients (the gate); "" for local roots
    token: str = field(default_factory=lambda: secrets.token_hex(12))
    read_only_tokens: tuple[str, ...] = ()
    token_ttl_ms: int = 3_600_000
    prefix: str = "paimon"
    databases: dict[str, Json] = field(default_factory=dict)
    tables: dict[tuple[str, str], TableEntry] = field(default_factory=dict)
    commit_faults: list[CommitFault] = field(default_factory=list)
    requests: list[tuple[str, str, int]] = field(default_factory=list)
    tokens_vended: int = 0
    gate: CredentialGate = field(default_factory=CredentialGate)
    data_proxy: FaultProxy | None = None  # in front of the data (S3): the gate, and faults
    uri: str = ""
    _lock: threading.RLock = field(default_factory=threading.RLock)
    _server: QuietServer | None = None
    _fs: Any = None

    # -- lifecycle -------------------------------------------------------------------------
    def start(self) -> RestCatalogServer:
        owner = self

        class Handler(_Handler):
            server_state = owner

        self._server, self.uri = serve(Handler)
        return self

    def stop(self) -> None:
        shut(self._server)

    def catalog_options(self, **extra: str) -> dict[str, str]:
        """What pypaimon's RESTCatalog (and a paimon.yaml) needs to reach this server."""
        return {
            "metastore": "rest",
            "uri": self.uri,
            "warehouse": self.warehouse,
            "token.provider": "bear",
            "token": self.token,
            **extra,
        }

    # -- storage, with the server's own access ---------------------------------------------
    def fs(self) -> Any:
        if self._fs is None:
            protocol = self.root.split("://")[0] if "://" in self.root else "file"
            extra: dict[str, Any] = {}
            if protocol != "file":
                extra = {"use_listings_cache": False, "skip_instance_cache": True}
            self._fs = fsspec.filesystem(protocol, **extra, **self.storage_options)
        return self._fs

    def write(self, path: str, data: bytes, *, if_absent: bool = False) -> bool:
        fs = self.fs()
        if if_absent and fs.exists(path):
            return False
        if "://" not in path:
            fs.makedirs(path.rsplit("/", 1)[0], exist_ok=True)
        fs.pipe_file(path, data)
        return True

    def read_json(self, path: str) -> Json | None:
        try:
            data: Json = json.loads(self.fs().cat_file(path))
        except FileNotFoundError:
            return None
        return data

    def table(self, database: str, name: str) -> TableEntry:
        entry = self.tables.get((database, name.split("$")[0]))
        if entry is None:
            raise RestError(404, f"Table {database}.{name} does not exist", "TABLE", name)
        return entry

    # -- vended credentials -----------------------------------------------------------------
    def data_token(self) -> Json:
        self.tokens_vended += 1
        key, secret, session, expires = self.gate.issue(self.token_ttl_ms)
        token = {
            "fs.s3.accessKeyId": key,
            "fs.s3.accessKeySecret": secret,
            "fs.s3.securityToken": session,
            "fs.s3.endpoint": self.data_endpoint,
            "fs.s3.region": "us-east-1",
            "fs.s3.path-style-access": "true",
        }
        # The spec names it expiresAt; Java's GetTableTokenResponse (what clients read) does not.
        return {"token": token, "expiresAtMillis": expires}


def _spec_key(spec: Mapping[str, Any]) -> str:
    return json.dumps({str(k): str(v) for k, v in spec.items()}, sort_keys=True)


def _highest_field_id(fields: list[Json]) -> int:
    highest = -1
    for f in fields:
        highest = max(highest, int(f.get("id", -1)))
        kind = f.get("type")
        if isinstance(kind, dict) and isinstance(kind.get("fields"), list):
            highest = max(highest, _highest_field_id(kind["fields"]))
    return highest


class _Handler(BaseHTTPRequestHandler):
    server_state: RestCatalogServer
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - stdlib name
        pass

    # -- plumbing ---------------------------------------------------------------------------
    def _handle(self) -> None:
        state = self.server_state
        url = urlsplit(self.path)
        length = int(self.headers.get("Content-Length") or 0)
        body = json.loads(self.rfile.read(length) or b"null") if length else None
        parts = [unquote(p) for p in url.path.strip("/").split("/")]
        try:
            self._authorize()
            with state._lock:
                status, answer = self._route(parts, parse_qs(url.query), body)
        except RestError as exc:
            status = exc.code
            answer = {
                "message": exc.message,
                "resourceType": exc.kind,
                "resourceName": exc.name,
                "code": exc.code,
            }
        except (KeyError, TypeError, ValueError) as exc:  # a malformed request: 400
            status, answer = 400, {"message": f"bad request: {exc!r}", "code": 400}
        except _Drop:
            state.requests.append((self.command, url.path, 0))
            self.close_connection = True
            self.connection.shutdown(socket.SHUT_RDWR)
            return
        state.requests.append((self.command, url.path, status))
        data = b"" if answer is None else json.dumps(answer).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    do_GET = do_POST = do_DELETE = do_HEAD = _handle  # noqa: N815 - stdlib names

    def _authorize(self) -> None:
        state = self.server_state
        auth = self.headers.get("Authorization") or ""
        given = auth.removeprefix("Bearer ").strip() if auth.startswith("Bearer ") else ""
        if given == state.token:
            return
        if given in state.read_only_tokens:
            if self.command == "GET":
                return
            raise RestError(403, "this token may only read")
        raise RestError(401, "Not authorized: missing or wrong bearer token")

    def _route(
        self, parts: list[str], query: dict[str, list[str]], body: Any
    ) -> tuple[int, Json | None]:
        state = self.server_state
        method = self.command
        if parts == ["v1", "config"]:
            if (query.get("warehouse") or [""])[0] != state.warehouse:
                raise RestError(404, f"no warehouse {query.get('warehouse')}", "UNKNOWN")
            defaults = {"prefix": state.prefix}
            return 200, {"defaults": defaults, "overrides": {"data-token.enabled": "true"}}
        if len(parts) < 3 or parts[:2] != ["v1", state.prefix]:
            raise RestError(404, f"no resource {'/'.join(parts)}")
        rest = parts[2:]
        if rest == ["databases"]:
            return self._databases(method, body)
        if rest[0] == "databases" and len(rest) == 2:
            return self._database(method, rest[1])
        if rest[0] == "databases" and len(rest) == 3 and rest[2] == "tables":
            return self._tables(method, rest[1], body)
        if rest[0] == "databases" and len(rest) >= 4 and rest[2] == "tables":
            return self._table_route(method, rest[1], rest[3], rest[4:], body)
        raise RestError(404, f"no resource {'/'.join(parts)}")

    # -- databases and tables ---------------------------------------------------------------
    def _databases(self, method: str, body: Any) -> tuple[int, Json | None]:
        state = self.server_state
        if method == "GET":
            return 200, {"databases": sorted(state.databases), "nextPageToken": None}
        name = body["name"]
        if name in state.databases:
            raise RestError(409, f"Database {name} already exists", "DATABASE", name)
        state.databases[name] = dict(body.get("options") or {})
        return 200, None

    def _database(self, method: str, name: str) -> tuple[int, Json | None]:
        state = self.server_state
        if name not in state.databases:
            raise RestError(404, f"Database {name} does not exist", "DATABASE", name)
        if method == "DELETE":
            del state.databases[name]
            return 200, None
        location = f"{state.root.rstrip('/')}/{name}.db"
        return 200, {"id": name, "name": name, "location": location, "options": {}}

    def _tables(self, method: str, database: str, body: Any) -> tuple[int, Json | None]:
        state = self.server_state
        if database not in state.databases:
            raise RestError(404, f"Database {database} does not exist", "DATABASE", database)
        if method == "GET":
            names = sorted(n for (db, n) in state.tables if db == database)
            return 200, {"tables": names, "nextPageToken": None}
        ident, schema = body["identifier"], body["schema"]
        name = ident.get("object") or ident.get("table")
        if (database, name) in state.tables:
            raise RestError(409, f"Table {database}.{name} already exists", "TABLE", name)
        path = f"{state.root.rstrip('/')}/{database}.db/{name}"
        fields = list(schema.get("fields") or [])
        file_schema = {
            "version": 3,
            "id": 0,
            "fields": fields,
            "highestFieldId": _highest_field_id(fields),
            "partitionKeys": list(schema.get("partitionKeys") or []),
            "primaryKeys": list(schema.get("primaryKeys") or []),
            "options": dict(schema.get("options") or {}),
            "comment": schema.get("comment"),
            "timeMillis": now_ms(),
        }
        state.write(f"{path}/schema/schema-0", json.dumps(file_schema, indent=2).encode())
        state.tables[(database, name)] = TableEntry(
            str(uuid.uuid4()), database, name, path, file_schema
        )
        return 200, None

    def _table_route(
        self, method: str, database: str, name: str, tail: list[str], body: Any
    ) -> tuple[int, Json | None]:
        state = self.server_state
        entry = state.table(database, name)
        if not tail:
            if method == "DELETE":
                del state.tables[(entry.database, entry.name)]
                return 200, None
            return 200, self._table_json(entry)
        what = tail[0]
        if what == "token":
            return 200, state.data_token()
        if what == "snapshot" and "$branch_" in name:
            stats = _totals([])  # this server keeps statistics for main only
            return 200, {"snapshot": {"snapshot": self._branch_latest(entry, name), **stats}}
        if what == "snapshot":
            if entry.latest is None:
                raise RestError(404, f"{database}.{name} has no snapshot", "SNAPSHOT", name)
            stats = _totals(entry.partitions.values())
            return 200, {"snapshot": {"snapshot": entry.latest, **stats}}
        if what == "commit":
            return self._commit(entry, name, body)
        if what == "rollback":
            return self._rollback(entry, body)
        if what == "partitions":
            if tail[1:] == ["drop"]:
                for spec in body.get("partitionSpecs") or []:
                    entry.partitions.pop(_spec_key(spec), None)
                return 200, None
            return 200, {"partitions": list(entry.partitions.values()), "nextPageToken": None}
        if what == "tags" and method == "GET" and len(tail) == 1:
            return 200, {"tags": self._listed(f"{entry.path}/tag", "tag-"), "nextPageToken": None}
        if what == "branches" and method == "GET" and len(tail) == 1:
            return 200, {"branches": self._listed(f"{entry.path}/branch", "branch-")}
        if what == "branches" and method == "POST" and len(tail) == 1:
            return self._create_branch(entry, body["branch"], body.get("fromTag"))
        if what == "branches" and method == "DELETE" and len(tail) == 2:
            return self._drop_branch(entry, tail[1])
        if what == "branches" and method == "POST" and tail[2:] == ["forward"]:
            return self._fast_forward(entry, tail[1])
        raise RestError(501, f"{method} {'/'.join(tail)} is not offered by this server")

    def _table_json(self, entry: TableEntry) -> Json:
        schema = entry.schema
        return {
            "id": entry.id,
            "database": entry.database,
            "name": entry.name,
            "path": entry.path,
            "isExternal": False,
            "schemaId": schema["id"],
            "schema": {
                "fields": schema["fields"],
                "partitionKeys": schema["partitionKeys"],
                "primaryKeys": schema["primaryKeys"],
                "options": schema["options"],
                "comment": schema.get("comment"),
            },
            "owner": "tests",
            "createdAt": entry.created_at,
            "createdBy": "tests",
            "updatedAt": entry.created_at,
            "updatedBy": "tests",
        }

    def _create_branch(
        self, entry: TableEntry, branch: str, tag: str | None
    ) -> tuple[int, Json | None]:
        """The branch's schemas and, from a tag, the tag and its snapshot (Paimon's
        BranchManager, done by the server)."""
        state = self.server_state
        fs = state.fs()
        root = f"{entry.path}/branch/branch-{branch}"
        if branch in self._listed(f"{entry.path}/branch", "branch-"):
            raise RestError(409, f"branch {branch} already exists", "BRANCH", branch)
        tagged = None
        if tag is not None:
            tagged = state.read_json(f"{entry.path}/tag/tag-{tag}")
            if tagged is None:
                raise RestError(404, f"tag {tag} does not exist", "TAG", tag)
        for path in fs.ls(f"{entry.path}/schema"):
            name = path.rstrip("/").rsplit("/", 1)[-1]
            state.write(f"{root}/schema/{name}", fs.cat_file(path))
        if tagged is not None:
            data = json.dumps(tagged).encode()
            state.write(f"{root}/tag/tag-{tag}", data)
            state.write(f"{root}/snapshot/snapshot-{tagged['id']}", data)
            state.write(f"{root}/snapshot/EARLIEST", str(tagged["id"]).encode())
            state.write(f"{root}/snapshot/LATEST", str(tagged["id"]).encode())
        return 200, None

    def _branch_latest(self, entry: TableEntry, name: str) -> Json:
        """A branch's latest snapshot, from its files (this server versions main only)."""
        state = self.server_state
        root = f"{entry.path}/branch/branch-{name.split('$branch_', 1)[1]}/snapshot"
        try:
            latest = int(state.fs().cat_file(f"{root}/LATEST"))
        except FileNotFoundError:
            raise RestError(404, f"{name} has no snapshot", "SNAPSHOT", name) from None
        snapshot = state.read_json(f"{root}/snapshot-{latest}")
        if snapshot is None:
            raise RestError(404, f"{name} has no snapshot {latest}", "SNAPSHOT", name)
        return snapshot

    def _fast_forward(self, entry: TableEntry, branch: str) -> tuple[int, Json | None]:
        """Main's snapshots and tags from the branch's earliest snapshot on are replaced by
        the branch's (Paimon's fastForward, done by the server)."""
        state = self.server_state
        fs = state.fs()
        root = f"{entry.path}/branch/branch-{branch}"
        listed = self._listed(f"{root}/snapshot", "snapshot-")
        ids = sorted(int(n) for n in listed if n.isdigit())
        if not ids:
            raise RestError(404, f"branch {branch} has no snapshot", "BRANCH", branch)
        latest_id = int(entry.latest["id"]) if entry.latest else 0
        for sid in range(ids[0], latest_id + 1):
            path = f"{entry.path}/snapshot/snapshot-{sid}"
            if fs.exists(path):
                fs.rm_file(path)
        for tag in self._listed(f"{entry.path}/tag", "tag-"):
            found = state.read_json(f"{entry.path}/tag/tag-{tag}")
            if found is not None and int(found["id"]) >= ids[0]:
                fs.rm_file(f"{entry.path}/tag/tag-{tag}")
        for sid in ids:
            state.write(
                f"{entry.path}/snapshot/snapshot-{sid}",
                fs.cat_file(f"{root}/snapshot/snapshot-{sid}"),
            )
        for tag in self._listed(f"{root}/tag", "tag-"):
            state.write(f"{entry.path}/tag/tag-{tag}", fs.cat_file(f"{root}/tag/tag-{tag}"))
        state.write(f"{entry.path}/snapshot/LATEST", str(ids[-1]).encode())
        entry.latest = state.read_json(f"{entry.path}/snapshot/snapshot-{ids[-1]}")
        entry.partitions.clear()  # unknown after a fast-forward, as after a rollback
        return 200, None

    def _drop_branch(self, entry: TableEntry, branch: str) -> tuple[int, Json | None]:
        if branch not in self._listed(f"{entry.path}/branch", "branch-"):
            raise RestError(404, f"branch {branch} does not exist", "BRANCH", branch)
        self.server_state.fs().rm(f"{entry.path}/branch/branch-{branch}", recursive=True)
        return 200, None

    def _listed(self, directory: str, prefix: str) -> list[str]:
        try:
            names = [p.rstrip("/").rsplit("/", 1)[-1] for p in self.server_state.fs().ls(directory)]
        except FileNotFoundError:
            return []
        return sorted(n[len(prefix) :] for n in names if n.startswith(prefix))

    # -- commits ----------------------------------------------------------------------------
    def _commit(self, entry: TableEntry, name: str, body: Any) -> tuple[int, Json | None]:
        state = self.server_state
        fault = state.commit_faults.pop(0) if state.commit_faults else None
        if fault is not None and fault.action == "error":
            raise RestError(fault.status, fault.message)
        if body.get("tableId") not in (None, entry.id):
            raise RestError(404, f"table id {body.get('tableId')} is not {entry.id}", "TABLE", name)
        if "$" in name:
            raise RestError(400, "commits on branches are not offered by this server")
        snapshot = body["snapshot"]
        latest = entry.latest
        base = body.get("baseSnapshotUuid")
        expected_id = 1 if latest is None else int(latest["id"]) + 1
        if base != (latest.get("uuid") if latest else None) or int(snapshot["id"]) != expected_id:
            return 200, {"success": False}
        path = f"{entry.path}/snapshot/snapshot-{snapshot['id']}"
        if not state.write(path, json.dumps(snapshot, indent=2).encode(), if_absent=True):
            return 200, {"success": False}
        state.write(f"{entry.path}/snapshot/LATEST", str(snapshot["id"]).encode())
        entry.latest = snapshot
        for stats in body.get("statistics") or []:
            _add_statistics(entry.partitions, stats)
        if fault is not None and fault.action == "error-after":
            raise RestError(500, fault.message)
        if fault is not None and fault.action == "drop-after":
            raise _Drop()
        return 200, {"success": True}

    def _rollback(self, entry: TableEntry, body: Any) -> tuple[int, Json | None]:
        state = self.server_state
        instant = body.get("instant") or {}
        if instant.get("type") == "tag":
            tag = state.read_json(f"{entry.path}/tag/tag-{instant['tagName']}")
            if tag is None:
                raise RestError(404, f"tag {instant['tagName']} does not exist", "TAG")
            target = tag
        else:
            target_id = int(instant["snapshotId"])
            found = state.read_json(f"{entry.path}/snapshot/snapshot-{target_id}")
            if found is None:
                raise RestError(404, f"snapshot {target_id} does not exist", "SNAPSHOT")
            target = found
        latest_id = int(entry.latest["id"]) if entry.latest else 0
        if body.get("fromSnapshot") not in (None, latest_id):
            raise RestError(409, f"latest snapshot is {latest_id}, not {body['fromSnapshot']}")
        fs = state.fs()
        for sid in range(int(target["id"]) + 1, latest_id + 1):
            path = f"{entry.path}/snapshot/snapshot-{sid}"
            if fs.exists(path):
                fs.rm_file(path)
        for tag in self._listed(f"{entry.path}/tag", "tag-"):  # tags after the target go too
            found = state.read_json(f"{entry.path}/tag/tag-{tag}")
            if found is not None and int(found["id"]) > int(target["id"]):
                fs.rm_file(f"{entry.path}/tag/tag-{tag}")
        if instant.get("type") == "tag":
            state.write(
                f"{entry.path}/snapshot/snapshot-{target['id']}", json.dumps(target).encode()
            )
        state.write(f"{entry.path}/snapshot/LATEST", str(target["id"]).encode())
        entry.latest = dict(target)
        entry.partitions.clear()  # unknown after a rollback, as on a real server until analyzed
        return 200, None


class _Drop(Exception):
    """Close the connection without an answer (after the change was applied)."""


def _add_statistics(partitions: dict[str, Json], delta: Mapping[str, Any]) -> None:
    key = _spec_key(delta.get("spec") or {})
    current = partitions.get(key) or {
        "spec": json.loads(key),
        "recordCount": 0,
        "fileSizeInBytes": 0,
        "fileCount": 0,
        "lastFileCreationTime": 0,
        "totalBuckets": 0,
        "done": False,
    }
    for counter in ("recordCount", "fileSizeInBytes", "fileCount"):
        current[counter] = int(current[counter]) + int(delta.get(counter) or 0)
    current["lastFileCreationTime"] = max(
        int(current["lastFileCreationTime"]), int(delta.get("lastFileCreationTime") or 0)
    )
    current["totalBuckets"] = int(delta.get("totalBuckets") or current["totalBuckets"])
    if int(current["fileCount"]) <= 0:
        partitions.pop(key, None)  # its last file went: the partition is gone
    else:
        partitions[key] = current


def _totals(partitions: Any) -> Json:
    rows = list(partitions)
    return {
        "recordCount": sum(int(p["recordCount"]) for p in rows),
        "fileSizeInBytes": sum(int(p["fileSizeInBytes"]) for p in rows),
        "fileCount": sum(int(p["fileCount"]) for p in rows),
        "lastFileCreationTime": max((int(p["lastFileCreationTime"]) for p in rows), default=0),
    }


def start_s3_catalog(
    *, moto_endpoint: str, bucket: str, prefix: str, token_ttl_ms: int = 3_600_000
) -> tuple[RestCatalogServer, FaultProxy]:
    """A server whose tables live in ``s3://bucket/prefix`` on moto, with its data reached
    only through a credential-checking proxy (also a fault proxy for the test)."""
    server = RestCatalogServer(
        warehouse="lake_catalog",
        root=f"s3://{bucket}/{prefix}",
        storage_options={"endpoint_url": moto_endpoint, "key": "testing", "secret": "testing"},
        token_ttl_ms=token_ttl_ms,
    )
    proxy = FaultProxy(moto_endpoint, gate=server.gate).start()
    server.data_endpoint = proxy.endpoint
    server.data_proxy = proxy
    return server.start(), proxy
