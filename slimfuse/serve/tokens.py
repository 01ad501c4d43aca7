"""Bearer tokens: made here, shown once, stored only as their sha256."""
from __future__ import annotations

import hashlib
import re
import secrets
import sqlite3

from starlette.requests import HTTPConnection

from slimfuse.errors import UsageError
from slimfuse.serve.settings import ServeSettings
from slimfuse.serve.store import JobStore

LOCAL_USER = "local"

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


def connection_user(request: HTTPConnection, store: JobStore, settings: ServeSettings) -> str | None:
    """The user a request speaks for: a token's name; with no token created and a loopback bind, the one local
    user; else None."""
    header = request.headers.get("authorization", "")
    token = header[7:].strip() if header.lower().startswith("bearer ") else request.query_params.get("token")
    any_token, user = user_of(store, token)
    if not any_token:
        return LOCAL_USER if settings.loopback else None
    return user
