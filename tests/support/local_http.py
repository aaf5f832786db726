"""The tests' own HTTP servers (REST catalog, fault proxy) on a free local port, each served
from a daemon thread."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class QuietServer(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: object, client_address: object) -> None:
        pass  # a dropped answer or a client killed mid-request is a test's doing, no error


def serve(handler: type[BaseHTTPRequestHandler]) -> tuple[QuietServer, str]:
    """``handler`` served on 127.0.0.1 at a free port; the server and its ``http://`` base."""
    server = QuietServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}"


def shut(server: ThreadingHTTPServer | None) -> None:
    if server is not None:
        server.shutdown()
        server.server_close()
