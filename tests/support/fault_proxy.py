"""A fault-injecting HTTP proxy in front of the moto S3 server (loopback only).

Every request is forwarded to moto unless a rule says otherwise. A rule matches a method
and a regular expression searched in the path with its query (``/lake/wh/t/snapshot/snapshot-7``,
``/lake?delete``, ``/lake?list-type=2&continuation-token=...``) and fires ``times`` times:

- ``error``: answer ``status``/``code`` without forwarding (503 SlowDown, 403 AccessDenied);
- ``error-after``: forward (the store applies it), then answer ``status``/``code`` (500);
- ``drop-after``: forward, then close the connection without an answer;
- ``refuse-keys``: for DeleteObjects, keys matching ``keys`` are not forwarded and come
  back as per-key ``<Error>`` elements with ``code`` inside a 200 answer (what S3 does
  under a bucket policy denying ``s3:DeleteObject``; moto has no bucket policies);
- ``garbage``: answer 200 with a body no S3 client can parse;
- ``call``: run ``callback`` with the client's address and the proxy's port (e.g. to kill
  the process that sent the request: :func:`pid_of_client`), then forward;
- ``drop``: close the connection without forwarding (the store never saw it);
- ``delay``: wait ``delay`` seconds, then forward (a slow request, still in flight).

- ``script``: the answers to one request and its retries (``answers``, one per try, each
  one of ``ANSWERS``): the first request it fires on binds it to that path, and every
  later try of the same method and path takes the next answer.

``skip`` lets a rule pass over that many matching requests before it fires (the n-th
write of a run). ``delay`` also holds back ``call``'s forward after its callback.

``log`` keeps ``(method, path, status)`` of every request (status 0: dropped).

``gate``, when set, sees every request's headers first and may refuse it with an S3 error
``(status, code)`` (the REST catalog server's check of the credentials it vended).
"""

from __future__ import annotations

import base64
import hashlib
import http.client
import os
import re
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from email.utils import formatdate
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit
from xml.sax.saxutils import escape

from support.local_http import serve, shut

ACTIONS = (
    "error",
    "error-after",
    "drop-after",
    "drop",
    "delay",
    "refuse-keys",
    "garbage",
    "call",
    "script",
)
# script answers: stored (forwarded) or lost (never forwarded), and what the client hears
ANSWERS = {
    "ok": (True, None),
    "stored-500": (True, 500),
    "stored-drop": (True, 0),
    "lost-500": (False, 500),
    "lost-503": (False, 503),
    "lost-drop": (False, 0),
    "lost-412": (False, 412),  # a lie: "exists" about a key the store never had
    "delay": (True, None),  # forwarded after ``delay`` seconds
}
_HOP_HEADERS = frozenset({"connection", "keep-alive", "transfer-encoding", "content-length"})


@dataclass
class Rule:
    method: str  # PUT, GET, HEAD, POST, DELETE or * for any
    path: str  # regex searched in the request path with its query
    action: str
    status: int = 500
    code: str = "InternalError"
    times: int = 1
    keys: str = ""  # refuse-keys: regex searched in each key
    callback: Callable[[tuple[Any, ...]], None] | None = None
    hits: int = 0
    skip: int = 0  # matching requests to let through before firing
    delay: float = 0.0  # delay, call, script: seconds before forwarding
    answers: tuple[str, ...] = ()  # script: one per try
    seen: int = 0
    bound: str | None = None  # script: the path it answers for once it fired

    def __post_init__(self) -> None:
        if self.action not in ACTIONS:
            raise ValueError(f"unknown action {self.action!r}")
        if self.action == "script":
            unknown = [a for a in self.answers if a not in ANSWERS]
            if unknown or not self.answers:
                raise ValueError(f"bad script answers {self.answers!r}")
            self.times = len(self.answers)

    def matches(self, method: str, path: str) -> bool:
        if not (
            self.hits < self.times
            and self.method in ("*", method)
            and re.search(self.path, path) is not None
        ):
            return False
        if self.bound is not None:
            return path == self.bound  # the retries of the request it answered first
        self.seen += 1  # counted under the proxy's lock (take)
        if self.seen <= self.skip:
            return False
        if self.action == "script":
            self.bound = path
        return True

    def answer(self) -> tuple[bool, int | None]:
        """script: (forward to the store, status heard: None as the store answers, 0 a
        dropped connection) for the try just taken."""
        return ANSWERS[self.answers[self.hits - 1]]


@dataclass
class Response:
    status: int
    headers: list[tuple[str, str]]
    body: bytes
    length: int | None = None  # the upstream Content-Length (HEAD)


@dataclass
class FaultProxy:
    upstream: str  # http://127.0.0.1:<moto port>
    rules: list[Rule] = field(default_factory=list)
    log: list[tuple[str, str, int]] = field(default_factory=list)
    endpoint: str = ""
    _lock: threading.Lock = field(default_factory=threading.Lock)
    gate: Callable[[list[tuple[str, str]], str], tuple[int, str] | None] | None = None
    _server: ThreadingHTTPServer | None = None

    def add(self, rule: Rule) -> Rule:
        with self._lock:
            self.rules.append(rule)
        return rule

    def clear(self) -> None:
        with self._lock:
            self.rules.clear()
            self.log.clear()

    def take(self, method: str, path: str) -> Rule | None:
        """The first rule matching the request, counted as fired."""
        with self._lock:
            for rule in self.rules:
                if rule.matches(method, path):
                    rule.hits += 1
                    return rule
        return None

    def record(self, method: str, path: str, status: int) -> None:
        with self._lock:
            self.log.append((method, path, status))

    def start(self) -> FaultProxy:
        proxy = self

        class Handler(_Handler):
            owner = proxy

        self._server, self.endpoint = serve(Handler)
        return self

    def stop(self) -> None:
        shut(self._server)

    def forward(
        self, method: str, path: str, headers: list[tuple[str, str]], body: bytes
    ) -> Response:
        url = urlsplit(self.upstream)
        conn = http.client.HTTPConnection(url.hostname or "127.0.0.1", url.port, timeout=60)
        try:
            conn.putrequest(method, path, skip_host=True, skip_accept_encoding=True)
            for name, value in headers:
                if name.lower() not in _HOP_HEADERS:
                    conn.putheader(name, value)
            conn.putheader("Content-Length", str(len(body)))
            conn.endheaders(body)
            answer = conn.getresponse()
            data = answer.read()
            kept = [(k, v) for k, v in answer.getheaders() if k.lower() not in _HOP_HEADERS]
            length = answer.getheader("Content-Length")
            return Response(answer.status, kept, data, int(length) if length else None)
        finally:
            conn.close()


def s3_error(status: int, code: str, resource: str) -> Response:
    body = (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        f"<Error><Code>{code}</Code><Message>injected {code}</Message>"
        f"<Resource>{escape(resource)}</Resource><RequestId>fault-proxy</RequestId></Error>"
    ).encode()
    headers = [("Content-Type", "application/xml"), ("Date", formatdate(usegmt=True))]
    return Response(status, headers, body)


_KEY = re.compile(rb"<Object>\s*<Key>(.*?)</Key>.*?</Object>", re.S)


def split_delete(body: bytes, refused: str) -> tuple[bytes, list[str]]:
    """A DeleteObjects request without the keys matching ``refused``; those keys."""
    denied: list[str] = []

    def keep(match: re.Match[bytes]) -> bytes:
        key = match.group(1).decode()
        if re.search(refused, key):
            denied.append(key)
            return b""
        return match.group(0)

    return _KEY.sub(keep, body), denied


def with_key_errors(result: bytes, keys: list[str], code: str) -> bytes:
    """A DeleteResult with one ``<Error>`` per key added."""
    errors = "".join(
        f"<Error><Key>{escape(k)}</Key><Code>{code}</Code><Message>injected {code}</Message>"
        "</Error>"
        for k in keys
    ).encode()
    if b"</DeleteResult>" in result:
        return result.replace(b"</DeleteResult>", errors + b"</DeleteResult>")
    return (
        b'<?xml version="1.0" encoding="UTF-8"?>\n'
        b'<DeleteResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/">'
        + errors
        + b"</DeleteResult>"
    )


class _Handler(BaseHTTPRequestHandler):
    owner: FaultProxy
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - stdlib name
        pass  # quiet: the proxy keeps its own log

    def _body(self) -> bytes:
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            out = b""
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    return out
                out += self.rfile.read(size)
                self.rfile.readline()
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length else b""

    def _handle(self) -> None:
        method, path = self.command, self.path
        body = self._body()
        headers = list(self.headers.items())
        refused = self.owner.gate(headers, path) if self.owner.gate is not None else None
        if refused is not None:
            return self._answer(method, path, s3_error(refused[0], refused[1], path))
        rule = self.owner.take(method, path)
        action = rule.action if rule is not None else None
        if rule is not None and action == "call" and rule.callback is not None:
            # the client's address and this proxy's port: the connection, not just a port
            rule.callback((*self.client_address, self.server.server_address[1]))
        if rule is not None and action in ("call", "delay") and rule.delay:
            time.sleep(rule.delay)
        if rule is not None and action == "script":
            return self._script(rule, method, path, headers, body)
        if rule is not None and action == "drop":
            return self._drop(method, path)
        if rule is not None and action == "error":
            return self._answer(method, path, s3_error(rule.status, rule.code, path))
        if rule is not None and action == "garbage":
            junk = [("Content-Type", "application/xml")]
            return self._answer(method, path, Response(200, junk, b"<<<not xml"))
        if rule is not None and action == "refuse-keys":
            return self._answer(method, path, self._refuse_keys(rule, path, headers, body))
        response = self.owner.forward(method, path, headers, body)
        if rule is not None and action == "drop-after":
            return self._drop(method, path)
        if rule is not None and action == "error-after":
            response = s3_error(rule.status, rule.code, path)
        return self._answer(method, path, response)

    def _drop(self, method: str, path: str) -> None:
        self.owner.record(method, path, 0)
        self.close_connection = True
        self.connection.shutdown(socket.SHUT_RDWR)

    def _script(
        self, rule: Rule, method: str, path: str, headers: list[tuple[str, str]], body: bytes
    ) -> None:
        stored, heard = rule.answer()
        if rule.answers[rule.hits - 1] == "delay":
            time.sleep(rule.delay or 0.2)
        response = self.owner.forward(method, path, headers, body) if stored else None
        if heard == 0:
            return self._drop(method, path)
        if heard is not None:
            code = {412: "PreconditionFailed", 503: "SlowDown"}.get(heard, "InternalError")
            return self._answer(method, path, s3_error(heard, code, path))
        assert response is not None
        return self._answer(method, path, response)

    def _refuse_keys(
        self, rule: Rule, path: str, headers: list[tuple[str, str]], body: bytes
    ) -> Response:
        kept, denied = split_delete(body, rule.keys)
        if not denied:
            return self.owner.forward(self.command, path, headers, body)
        if _KEY.search(kept):
            md5 = base64.b64encode(hashlib.md5(kept).digest()).decode()
            plain = [
                (k, v)
                for k, v in headers
                if k.lower() != "content-md5"
                and not k.lower().startswith("x-amz-checksum-")
                and k.lower() != "x-amz-sdk-checksum-algorithm"
            ]
            answer = self.owner.forward(self.command, path, [*plain, ("Content-MD5", md5)], kept)
            if answer.status != 200:
                return answer
            result = answer.body
        else:
            result = b""
        xml = [("Content-Type", "application/xml"), ("Date", formatdate(usegmt=True))]
        return Response(200, xml, with_key_errors(result, denied, rule.code))

    def _answer(self, method: str, path: str, response: Response) -> None:
        self.owner.record(method, path, response.status)
        self.send_response_only(response.status)
        names = {k.lower() for k, _ in response.headers}
        if "date" not in names:
            self.send_header("Date", self.date_time_string())
        for name, value in response.headers:
            self.send_header(name, value)
        # A HEAD answer carries the object's length, not its (empty) body's.
        length = response.length if method == "HEAD" else None
        self.send_header("Content-Length", str(len(response.body) if length is None else length))
        self.end_headers()
        if method != "HEAD":
            self.wfile.write(response.body)

    do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = _handle  # noqa: N815 - stdlib names


def pid_of_client(address: tuple[Any, ...]) -> int | None:
    """The local process owning the client end of a loopback connection (Linux /proc):
    ``(host, client port)``, or ``(host, client port, server port)`` to tell it from
    another connection that happens to use the same local port number."""
    port = f"{address[1]:04X}"
    server = f"{address[2]:04X}" if len(address) > 2 else None
    inode = None
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(table) as fh:
                rows = fh.read().splitlines()[1:]
        except OSError:
            continue
        for row in rows:
            fields = row.split()
            remote_port = fields[2].rsplit(":", 1)[1]
            if fields[1].rsplit(":", 1)[1] == port and server in (None, remote_port):
                inode = fields[9]
                break
        if inode is not None:
            break
    if inode is None:
        return None
    target = f"socket:[{inode}]"
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            fds = os.listdir(f"/proc/{pid}/fd")
        except OSError:
            continue
        for fd in fds:
            try:
                if os.readlink(f"/proc/{pid}/fd/{fd}") == target:
                    return int(pid)
            except OSError:
                continue
    return None


def parent_pid(pid: int) -> int | None:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return int(fh.read().rsplit(")", 1)[1].split()[1])
    except (OSError, ValueError, IndexError):
        return None


def command_of(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            return fh.read().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""
