"""Bearer tokens: made here, shown once, stored only as their sha256; read from the Authorization header or from
the HttpOnly, same-site cookie the page sets from it (never from a URL, where they end up in logs and history).
And who may speak to the server at all: a request from another site (its Origin) never, and in the open mode
(no token, loopback) only one addressed to a loopback name (its Host), so a page elsewhere cannot reach the
server through the browser, by DNS rebinding or otherwise."""
from __future__ import annotations

import hashlib
import re
import secrets
import sqlite3
from urllib.parse import urlsplit

from starlette.requests import HTTPConnection

from slimfuse.errors import UsageError
from slimfuse.serve.settings import ServeSettings
from slimfuse.serve.store import JobStore

LOCAL_USER = "local"
COOKIE = "slimfuse_token"
"""The page's cookie: HttpOnly (no script reads it), SameSite=Strict (no other site's page sends it)."""
LOOPBACK_NAMES = frozenset({"127.0.0.1", "localhost", "::1"})

_NAME = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")


def digest(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def create_token(store: JobStore, name: str) -> str:
    """A new token for user `name` (letters, digits, '_', '.', '-'); raises UsageError when the name is taken."""
    if not _NAME.match(name):
        raise UsageError(detail=f"token name {name!r}: use 1-64 letters, digits, '_', '.' or '-'")
    token = "sf_" + secrets.token_urlsafe(32)
    try:
        store.add_token(name, digest(token))
    except sqlite3.IntegrityError:
        raise UsageError(detail=f"a token named {name!r} exists already") from None
    return token


def user_of(store: JobStore, token: str | None) -> tuple[bool, str | None]:
    """(whether any token exists, the user `token` names or None)."""
    return store.token_user(None if not token else digest(token))


def request_token(request: HTTPConnection) -> str | None:
    """The token a request carries: `Authorization: Bearer TOKEN`, else the page's cookie."""
    header = request.headers.get("authorization", "")
    if header.lower().startswith("bearer "):
        return header[7:].strip()
    return request.cookies.get(COOKIE)


def connection_user(request: HTTPConnection, store: JobStore, settings: ServeSettings) -> str | None:
    """The user a request speaks for: a token's name; with no token created and a loopback bind, the one local
    user; else None."""
    any_token, user = user_of(store, request_token(request))
    if not any_token:
        return LOCAL_USER if settings.loopback else None
    return user


def refusal(request: HTTPConnection) -> str:
    """Why a request without a user was refused: no token, or one that is not valid."""
    if request_token(request):
        return "the token is not valid (it may have been removed): ask the server's operator for a new one"
    return "a valid bearer token is needed (Authorization: Bearer TOKEN)"


def foreign(request: HTTPConnection, settings: ServeSettings, any_token: bool) -> str | None:
    """Why a request may not speak to this server (None: it may): it comes from a page of another site, or, in
    the open mode, it is addressed to a name that is not this machine's loopback."""
    host = request.headers.get("host", "")
    origin = request.headers.get("origin")
    if origin is not None and urlsplit(origin).netloc != host:
        return f"requests from {origin} are not accepted: only this server's own pages may call it"
    if not any_token and urlsplit(f"//{host}").hostname not in LOOPBACK_NAMES:
        return (f"Host {host!r} is not this machine's loopback address; without tokens the server answers only "
                "requests to 127.0.0.1, [::1] or localhost")
    return None
