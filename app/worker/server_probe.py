"""Ask a server what it is and which models it serves, off the GUI thread.

The settings dialog's "List models" calls ``request``; one short-lived thread per question
does the HTTP (through ``app.remote``), and ``probed`` brings the answer back to the GUI
thread. The engine thread is not used: a server can be listed while an answer streams.
"""

from __future__ import annotations

import itertools
import logging
import os
import threading
from collections.abc import Callable
from typing import Any

from PySide6.QtCore import QObject, Signal

log = logging.getLogger(__name__)

Detect = Callable[[str, str | None], Any]  # (url, api key or None) -> what the server is


def api_key_from(env_name: str) -> str | None:
    """The key in the environment variable the person named (None: none named, or unset). It
    is passed to the client only; nothing here writes or logs it."""
    name = env_name.strip()
    return (os.environ.get(name) or None) if name else None


class ServerProbe(QObject):
    probed = Signal(int, object, str)  # probe id, what the server is (or None), readable error or ""

    def __init__(self, detect: Detect | None = None, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._detect = detect or _detect
        self._ids = itertools.count(1)

    def request(self, url: str, api_key_env: str = "") -> int:
        """Start one question; ``probed`` answers it with the id returned here."""
        probe_id = next(self._ids)
        key = api_key_from(api_key_env)
        threading.Thread(
            target=self._run, args=(probe_id, url, key), name="specchat-server-probe", daemon=True
        ).start()
        return probe_id

    def _run(self, probe_id: int, url: str, key: str | None) -> None:
        try:
            info = self._detect(url, key)
        except Exception as e:  # noqa: BLE001 - every failure must reach the person
            self.probed.emit(probe_id, None, _describe(e))
            return
        self.probed.emit(probe_id, info, "")


def _detect(url: str, key: str | None) -> Any:
    from app.remote import detect_server  # httpx is imported here, on the probe's thread

    return detect_server(url, api_key=key)


def _describe(error: Exception) -> str:
    from app.engine.errors import SpecChatError

    if isinstance(error, SpecChatError):
        return str(error)
    log.warning("server probe failed: %s", type(error).__name__)  # the message may hold the URL only
    return f"{type(error).__name__}: {error}"
