"""Serving recorded server answers (tests/data/servers, tools/record_server_responses.py)
through ``httpx.MockTransport``, and altering them to make a server misbehave."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx

from app.remote.client import ServerClient
from app.remote.detect import choose_model, detect
from app.remote.session import ServerSession

DATA = Path(__file__).resolve().parent / "data" / "servers"
URL = "http://server"


def recording(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((DATA / f"{name}.json").read_text(encoding="utf-8"))
    return data


def sse_chunks(text: str) -> list[str]:
    """The data lines of a recorded stream, in order ("[DONE]" included)."""
    return [line[len("data: "):] for line in text.splitlines() if line.startswith("data: ")]


def as_sse(chunks: list[str]) -> str:
    return "".join(f"data: {c}\n\n" for c in chunks)


Edit = Callable[[list[str]], list[str]]


def replay_transport(name: str, edit_stream: Edit | None = None,
                     handler: Callable[[httpx.Request], httpx.Response | None] | None = None
                     ) -> httpx.MockTransport:  # fmt: skip
    """The recording's answers by method and path; ``edit_stream`` rewrites the streamed
    chunks (as JSON texts) before they are served."""
    exchanges = recording(name)["exchanges"]

    def serve(request: httpx.Request) -> httpx.Response:
        if handler is not None:
            answer = handler(request)
            if answer is not None:
                return answer
        for e in exchanges:
            if e["method"] == request.method and e["path"] == request.url.path:
                text = e["text"]
                if e["content_type"].startswith("text/event-stream") and edit_stream is not None:
                    text = as_sse(edit_stream(sse_chunks(text)))
                return httpx.Response(e["status"], headers={"content-type": e["content_type"]}, text=text)
        return httpx.Response(404, json={"error": {"message": "not found"}})

    return httpx.MockTransport(serve)


def replay_session(name: str, edit_stream: Edit | None = None, url: str = URL, **kwargs: Any) -> ServerSession:
    client = ServerClient(url, transport=replay_transport(name, edit_stream, **kwargs))
    info = detect(client)
    return ServerSession(client, info, choose_model(info, None))


def edit_json(chunks: list[str], index: int, change: Callable[[dict[str, Any]], None]) -> list[str]:
    """Chunk ``index`` (counted among the JSON ones) changed by ``change``."""
    out, seen = [], 0
    for c in chunks:
        if c != "[DONE]":
            if seen == index:
                data = json.loads(c)
                change(data)
                c = json.dumps(data)
            seen += 1
        out.append(c)
    return out
