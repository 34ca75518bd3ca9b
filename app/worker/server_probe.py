"""Ask a server what it is and which models it serves, off the GUI thread.

The settings dialog's "List models" calls ``request``; one short-lived thread per question
does the HTTP (through ``app.remote``), and ``probed`` brings the answer back to the GUI
thread. The engine thread is not used: a server can be listed while an answer streams.
"""

from __future__ import annotations

import itertools
import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from PySide6.QtCore import QObject, Signal

log = logging.getLogger(__name__)

Detect = Callable[[str, str | None], Any]  # (url, api key or None) -> a ServerListing


@dataclass(frozen=True)
class ServerListing:
    """What a server said of itself: "llama.cpp b6550 at http://…" and the models it serves."""

    description: str
    models: tuple[str, ...]


class ServerProbe(QObject):
    probed = Signal(int, object, str)  # probe id, what the server is (or None), readable error or ""

    def __init__(self, detect: Detect | None = None, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._detect = detect or _detect
        self._ids = itertools.count(1)

    def request(self, url: str, api_key_env: str = "") -> int:
        """Start one question; ``probed`` answers it with the id returned here."""
        probe_id = next(self._ids)
        threading.Thread(
            target=self._run, args=(probe_id, url, api_key_env.strip()), name="specchat-server-probe", daemon=True
        ).start()
        return probe_id

    def _run(self, probe_id: int, url: str, api_key_env: str) -> None:
        try:
            info = self._detect(url, _api_key(api_key_env))  # the key goes to the client only
        except Exception as e:  # noqa: BLE001 - every failure must reach the person
            self.probed.emit(probe_id, None, _describe(e))
            return
        self.probed.emit(probe_id, info, "")


def _api_key(env_name: str) -> str | None:
    from app.remote.urls import api_key_from_env

    return api_key_from_env(env_name or None)


def _detect(url: str, key: str | None) -> ServerListing:
    from app.remote.client import ServerClient  # httpx is imported here, on the probe's thread
    from app.remote.detect import detect
    from app.remote.urls import server_url

    with ServerClient(server_url(url), key) as client:
        info = detect(client)
    return ServerListing(info.describe(), tuple(info.models))


def _describe(error: Exception) -> str:
    from app.engine.errors import SpecChatError

    if isinstance(error, SpecChatError):
        return str(error)
    log.warning("server probe failed: %s", type(error).__name__)  # the message may hold the URL only
    return f"{type(error).__name__}: {error}"
