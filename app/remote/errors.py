"""What can go wrong with a server, as one sentence each (``SpecChatError``: the fronts show it)."""

from __future__ import annotations

from app.engine.errors import SpecChatError


class ServerError(SpecChatError):
    """The server could not be reached, refused the request, or stopped answering."""


class ServerResponseError(ServerError):
    """The server answered something SpecChat will not show as a figure: malformed JSON, a
    line too long, a number that is not finite, counts that contradict each other."""


class UnsafeURLError(ServerError):
    """A URL SpecChat will not contact (not http:// or https://, no host, credentials in it)."""
