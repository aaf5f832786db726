"""HTTP to a Paimon REST catalog server, on the standard library (a plain install needs no
HTTP package): JSON in and out, the bearer token, and what each failure means.

Reads are retried on connection failures and 5xx answers. A change (POST, DELETE) is sent
once: a 5xx answer or a lost connection leaves it applied or not, which only the caller can
settle by reading the server's state back (``CatalogOutcomeUnknownError``).
"""

from __future__ import annotations

import http.client
import json
import socket
import time
import urllib.error
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote, urlencode

from core.errors import (
    CatalogAuthError,
    CatalogOutcomeUnknownError,
    CatalogRefusedError,
    CatalogUnreachableError,
)

READ_ATTEMPTS = 4


class RestNotFoundError(CatalogRefusedError):
    """HTTP 404: the resource (database, table, snapshot) does not exist."""

    kind = "catalog_not_found"


def path_of(*parts: str) -> str:
    """``/v1/<prefix>/databases/<db>``: each part URL-encoded, empty parts (no prefix) left
    out, as Paimon's ResourcePaths builds them."""
    return "/" + "/".join(quote(p, safe="") for p in parts if p)


@dataclass
class RestHttp:
    uri: str  # http(s)://host:port, as the catalog configuration gives it
    token: str | None = None
    headers: Mapping[str, str] = field(default_factory=dict)
    timeout_s: float = 30.0

    def get(self, path: str, query: Mapping[str, str] | None = None) -> Any:
        return self.call("GET", path, query=query)

    def post(self, path: str, body: Any) -> Any:
        return self.call("POST", path, body=body)

    def call(
        self,
        method: str,
        path: str,
        *,
        query: Mapping[str, str] | None = None,
        body: Any = None,
    ) -> Any:
        url = self.uri.rstrip("/") + path + (f"?{urlencode(query)}" if query else "")
        data = None if body is None else json.dumps(body).encode("utf-8")
        attempts = READ_ATTEMPTS if method == "GET" else 1
        for attempt in range(1, attempts + 1):
            try:
                return self._once(method, url, data)
            except _Transient as exc:
                if method != "GET":
                    raise CatalogOutcomeUnknownError(
                        f"{method} {url}: {exc.reason}; the catalog may or may not have applied it"
                    ) from None
                if attempt == attempts:
                    raise CatalogUnreachableError(
                        f"the REST catalog at {self.uri} did not answer {method} {path}: "
                        f"{exc.reason}",
                        hint="check the catalog's uri and that its server is running",
                    ) from None
                time.sleep(0.2 * 2**attempt)
        raise AssertionError("unreachable")

    def _once(self, method: str, url: str, data: bytes | None) -> Any:
        request = urllib.request.Request(url, data=data, method=method)
        request.add_header("Content-Type", "application/json")
        for name, value in self.headers.items():
            request.add_header(name, value)
        if self.token:
            request.add_header("Authorization", f"Bearer {self.token}")
        try:
            with urllib.request.urlopen(request, timeout=self.timeout_s) as answer:
                raw = answer.read()
        except urllib.error.HTTPError as exc:
            raise self._error(exc, method, url) from None
        except (urllib.error.URLError, http.client.HTTPException, OSError) as exc:
            reason = getattr(exc, "reason", None) or exc
            if isinstance(reason, (ConnectionRefusedError, socket.gaierror)):
                # Nothing reached the server: a change was not applied either.
                raise CatalogUnreachableError(
                    f"cannot reach the REST catalog at {self.uri}: {reason}",
                    hint="check the catalog's uri and that its server is running",
                ) from None
            raise _Transient(str(reason) or type(exc).__name__) from None
        if not raw:
            return None
        try:
            return json.loads(raw)
        except ValueError:
            raise CatalogUnreachableError(
                f"the REST catalog at {self.uri} answered {method} with something not JSON",
                hint="check that the uri names a Paimon REST catalog server",
            ) from None

    def _error(self, exc: urllib.error.HTTPError, method: str, url: str) -> Exception:
        message = _message(exc)
        where = f"the REST catalog at {self.uri}"
        if exc.code >= 500:
            return _Transient(f"HTTP {exc.code}: {message}")
        if exc.code == 401:
            return CatalogAuthError(
                f"{where} refused the token (401): {message}",
                hint="check `token` (and `token.provider: bear`) in the catalog configuration",
            )
        if exc.code == 403:
            return CatalogAuthError(
                f"{where} forbids {method} {url.split('?')[0]} (403): {message}",
                hint="the token lacks the permission; ask the catalog's administrator",
            )
        if exc.code == 404:
            return RestNotFoundError(f"{where}: {message}")
        return CatalogRefusedError(f"{where} refused {method} (HTTP {exc.code}): {message}")


class _Transient(Exception):
    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def _message(exc: urllib.error.HTTPError) -> str:
    try:
        body = json.loads(exc.read() or b"{}")
    except (ValueError, OSError):
        return exc.reason if isinstance(exc.reason, str) else str(exc.code)
    if isinstance(body, dict) and body.get("message"):
        return str(body["message"])
    return str(exc.reason)
