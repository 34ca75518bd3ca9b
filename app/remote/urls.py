"""What SpecChat may contact, and the API key: safe by default.

Only ``http://`` and ``https://`` URLs the person typed are contacted (no redirects followed, no
proxy taken from the environment: ``client``). An API key is read from an environment
variable the person names, at the moment it is needed; it is never stored or logged.
"""

from __future__ import annotations

import os
import re
from urllib.parse import urlsplit, urlunsplit

from app.remote.errors import ServerError, UnsafeURLError

SCHEMES = ("http", "https")
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def server_url(text: str) -> str:
    """The base URL of the server ``text`` names, without a trailing ``/`` or ``/v1`` (the
    client adds the paths). Raises ``UnsafeURLError`` for anything but http(s) with a host."""
    raw = (text or "").strip()
    shown = raw if len(raw) <= 80 else raw[:79] + "…"
    parts = urlsplit(raw)
    if parts.scheme.lower() not in SCHEMES:
        raise UnsafeURLError(f"SpecChat only talks to http:// or https:// servers (got {shown!r}).")
    if not parts.hostname:
        raise UnsafeURLError(f"The server URL {shown!r} has no host name.")
    if parts.username or parts.password:
        raise UnsafeURLError(
            "Put no user name or password in the server URL: name an environment variable that "
            "holds the API key instead (--api-key-env)."
        )
    if parts.query or parts.fragment:
        raise UnsafeURLError(f"The server URL {shown!r} must not carry a query or a fragment.")
    try:
        parts.port  # noqa: B018 - raises ValueError for a port out of range
    except ValueError:
        raise UnsafeURLError(f"The server URL {shown!r} has an invalid port.") from None
    path = parts.path.rstrip("/")
    if path.endswith("/v1"):
        path = path[: -len("/v1")]
    return urlunsplit((parts.scheme.lower(), parts.netloc, path, "", ""))


def api_key_from_env(name: str | None) -> str | None:
    """The API key held by the environment variable ``name`` (None: no key is sent)."""
    if not name:
        return None
    if not _ENV_NAME.fullmatch(name):
        raise ServerError(f"{name!r} is not an environment variable name (letters, digits and _).")
    value = os.environ.get(name)
    if not value:
        raise ServerError(f"The environment variable {name} that should hold the API key is not set.")
    return value.strip()
