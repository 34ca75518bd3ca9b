"""The worker's side of a server back-end: connecting to the endpoints the settings name, on the
engine thread, and what the window shows of them. The HTTP, the detection and the comparison
are ``app.remote``'s; this module only chooses which session answers and keeps the plain
endpoint Compare measures against (connected on first use, reused while its address holds).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from app.engine.backend import Conversation
from app.engine.config import GenerationConfig

if TYPE_CHECKING:  # httpx is imported on the engine thread, when a server is first asked for
    import threading

    from app.remote.comparison import ServerComparisonReport
    from app.remote.session import ServerSession


@dataclass(frozen=True)
class ServerTarget:
    """An endpoint as the settings name it: its URL, its model ("": the server's only one) and
    the NAME of the environment variable holding its API key ("": none)."""

    url: str
    model: str = ""
    api_key_env: str = ""


@dataclass(frozen=True)
class ServerPath:
    """What the status bar says of the server answering (readable without httpx)."""

    description: str  # "llama.cpp b6550 at http://127.0.0.1:8080", "vLLM 0.32.0 at http://…"
    kind: str  # "llama.cpp", "vllm", "openai"
    version: str | None
    url: str
    model: str
    speculates: bool | None  # what the server says of itself; None: it does not say


def connect(target: ServerTarget) -> ServerSession:
    """A ``ServerSession`` on ``target`` (``ServerError``: one sentence for what failed)."""
    from app.remote.session import ServerSession  # httpx is imported here, on the engine thread

    return ServerSession.connect(target.url, target.model or None, api_key_env=target.api_key_env or None)


def server_path(session: ServerSession) -> ServerPath:
    info = session.info
    return ServerPath(info.describe(), info.kind, info.version, info.url, session.model, info.speculates)


class PlainEndpoint:
    """Compare's plain endpoint: connected when first asked for, kept while it is the same."""

    def __init__(self) -> None:
        self._target: ServerTarget | None = None
        self._session: ServerSession | None = None

    def session(self, target: ServerTarget) -> ServerSession:
        if self._session is None or target != self._target:
            self.close()
            self._session, self._target = connect(target), target
        return self._session

    def close(self) -> None:
        if self._session is not None:
            self._session.close()
        self._session = self._target = None


def compare_on_servers(
    speculative: ServerSession,
    plain: ServerSession,
    conversation: Conversation,
    config: GenerationConfig,
    cancel: threading.Event | None,
) -> ServerComparisonReport:
    """Both endpoints, fairly (``app.remote.comparison``): a ``ServerComparisonReport``."""
    from app.remote.comparison import run_server_comparison

    return run_server_comparison(speculative, plain, conversation, config, cancel=cancel)
