"""A small HTTP file server on 127.0.0.1 for the download tests: it serves a dict of path -> bytes, honours
Range requests (to test resumed downloads) and records the Range header of every request."""
from __future__ import annotations

import http.server
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field


@dataclass
class Served:
    base: str
    """http://127.0.0.1:PORT"""
    files: dict[str, bytes] = field(default_factory=dict)
    ranges: list[str] = field(default_factory=list)


@contextmanager
def file_server() -> Iterator[Served]:
    served = Served(base="")

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - the http.server interface
            body = served.files.get(self.path)
            header = self.headers.get("Range")
            served.ranges.append(header or "")
            if body is None:
                self.send_response(404)
                self.end_headers()
                return
            start = int(header.removeprefix("bytes=").split("-")[0]) if header else 0
            if header:
                self.send_response(206)
                self.send_header("Content-Range", f"bytes {start}-{len(body) - 1}/{len(body)}")
            else:
                self.send_response(200)
            self.send_header("Content-Length", str(len(body) - start))
            self.end_headers()
            self.wfile.write(body[start:])

        def log_message(self, *args: object) -> None:
            pass

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    served.base = f"http://127.0.0.1:{httpd.server_address[1]}"
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield served
    finally:
        httpd.shutdown()
