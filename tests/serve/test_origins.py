"""Who may speak to the server, read from a connection's headers: the page's socket is checked as every request is."""
from __future__ import annotations

from pathlib import Path

from starlette.requests import HTTPConnection

from slimfuse.serve.settings import ServeSettings
from slimfuse.serve.tokens import foreign


def _socket(host: str, origin: str | None = None) -> HTTPConnection:
    headers = [(b"host", host.encode())] + ([(b"origin", origin.encode())] if origin else [])
    return HTTPConnection({"type": "websocket", "path": "/v1/live", "headers": headers, "query_string": b""})


def test_a_socket_from_another_sites_page_is_refused_in_every_mode(tmp_path: Path) -> None:
    settings = ServeSettings(data_dir=tmp_path)
    assert foreign(_socket("127.0.0.1:7860", "http://127.0.0.1:7860"), settings, any_token=False) is None
    assert foreign(_socket("[::1]:7860"), settings, any_token=False) is None
    for any_token in (False, True):
        assert "not accepted" in str(foreign(_socket("127.0.0.1:7860", "https://evil.example"), settings, any_token))
    assert "loopback" in str(foreign(_socket("evil.example:7860"), settings, any_token=False))
    assert foreign(_socket("faces.example.org"), settings, any_token=True) is None  # tokens: any name it is served at
