"""An inference server as a back-end (``app.engine.backend.Backend``, docs/DESIGN.md).

``ServerSession`` answers a conversation on an OpenAI-compatible server (llama.cpp's
``llama-server``, vLLM) and yields the same ``StepEvent`` / ``RunResult`` as ``app.engine.Engine``,
through the same ``generate``, so the fronts (window, CLI, Compare, Why) do not care which ran;
``run_server_comparison`` is the with/without comparison against two endpoints. Torch-free and Qt-free::

    session = ServerSession.connect("http://127.0.0.1:8080", model=None)
    for step in session.stream(messages, GenerationConfig(max_new_tokens=64)):
        ...

Parts, lowest first: ``errors``; ``urls`` (what may be contacted, the API key) and ``client``
(HTTP and server-sent events over httpx and httpx-sse, every failure one ``ServerError``);
``detect`` (which server, its version, its models) and ``steps`` (events built from a
server's counts, ``ServerFigures``); ``chat`` (the OpenAI stream every server shares);
``llamacpp`` / ``vllm`` (each server's extra fields and what its stream tells); ``session``;
``comparison``. What a server cannot tell stays unknown: its pass costs, and which tokens were
drafts where its stream does not say (``TokenInfo.source == "unknown"``).
"""

from __future__ import annotations

from app.remote.errors import ServerError, ServerResponseError

__all__ = ["ServerError", "ServerResponseError"]
