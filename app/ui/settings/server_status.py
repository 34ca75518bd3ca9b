"""The server settings as the worker takes them, and the server answering in words (status
bar, answer headers)."""

from __future__ import annotations

from PySide6.QtCore import QCoreApplication

from app.ui.common.engine_words import server_words
from app.ui.settings.store import AppSettings
from app.worker.server_backend import ServerPath, ServerTarget

SERVER_DRAFTER = "server"  # app/remote/session.py: the drafter of an answer a server drafted for


def server_target(settings: AppSettings) -> ServerTarget | None:
    """The endpoint that answers the chat, or None: the models on this computer do."""
    server = settings.server
    if not server.on_server:
        return None
    return ServerTarget(server.url, server.model, server.api_key_env)


def plain_target(settings: AppSettings) -> ServerTarget | None:
    """Compare's endpoint without speculation: its own URL or the same one (a llama.cpp router)
    with the plain model. None: not on a server, or nothing names a second endpoint."""
    server = settings.server
    if not server.on_server or not (server.plain_url or server.plain_model):
        return None
    return ServerTarget(server.compare_url, server.plain_model, server.api_key_env)


def server_label(path: ServerPath, drafter: str) -> str:
    """ "Server: llama.cpp b6550 at http://127.0.0.1:8080 · model smol · it drafts" for the status bar."""
    text = QCoreApplication.translate("ServerStatus", "Server: {0} · model {1}").format(
        server_words(path.description), model_name(path.model)
    )
    if drafter == SERVER_DRAFTER or path.speculates:
        return text + " · " + QCoreApplication.translate("ServerStatus", "speculative decoding on the server")
    if path.speculates is False:
        return text + " · " + QCoreApplication.translate("ServerStatus", "no speculation on the server")
    return text + " · " + QCoreApplication.translate(
        "ServerStatus", "whether it speculates shows with the first answer"
    )



def model_name(model: str) -> str:
    """The model's id as the server gives it; llama.cpp's is the file's path: its name is enough
    (the whole id is in the status bar's tooltip)."""
    return model.rstrip("/").rsplit("/", 1)[-1] or model
