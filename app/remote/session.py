"""``ServerSession``: a model on an inference server, the server ``Backend`` (``app.engine.backend``:
``stream`` / ``generate`` yielding ``StepEvent`` / ``RunResult``, the contract's ``generate``), so
the fronts do not care which ran. What a server cannot tell is left unknown: its pass costs
(``draft_s`` 0, no cost in Why), and which tokens were drafts where its stream does not say
(source ``"unknown"``). The server's own figures of the latest answer: ``last_figures``.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import replace
from typing import Any

from app.engine.backend import NEW_ANSWER, AnswerOptions, Backend, Conversation
from app.engine.config import GenerationConfig
from app.engine.errors import InvalidSettingError, PromptError
from app.engine.events import RunProvenance, StepEvent
from app.remote import chat
from app.remote.chat import ChatReader, RequestOptions
from app.remote.client import READ_TIMEOUT_S, ServerClient
from app.remote.detect import ServerInfo, choose_model, detect
from app.remote.errors import ServerError
from app.remote.steps import ServerFigures
from app.remote.urls import api_key_from_env, server_url

SERVER_DRAFTER = "server"  # RunResult.drafter of an answer the server drafted for
UNKNOWN_DTYPE = "unknown"  # a server does not say in what form it computes


def _dialect(kind: str) -> Any:
    """The module that knows this server's extra fields (``body`` and ``Reader``)."""
    if kind == "llama.cpp":
        from app.remote import llamacpp

        return llamacpp
    if kind == "vllm":
        from app.remote import vllm

        return vllm
    return None


class ServerSession(Backend):
    def __init__(
        self, client: ServerClient, info: ServerInfo, model: str, options: RequestOptions | None = None
    ) -> None:
        self.client = client
        self.info = info
        self.model = model
        self.options = options or RequestOptions()
        self.last_figures: ServerFigures | None = None
        self._dialect = _dialect(info.kind)
        self._speculated: bool | None = info.speculates  # learnt from each answer's figures

    @classmethod
    def connect(
        cls,
        url: str,
        model: str | None = None,
        *,
        api_key_env: str | None = None,
        read_timeout_s: float = READ_TIMEOUT_S,
        options: RequestOptions | None = None,
    ) -> ServerSession:
        """Check the URL, read the key from ``api_key_env``, ask the server what it is and
        which model to use (``ServerError`` with one sentence for each failure)."""
        client = ServerClient(server_url(url), api_key_from_env(api_key_env), read_timeout_s=read_timeout_s)
        try:
            info = detect(client)
            return cls(client, info, choose_model(info, model), options)
        except BaseException:
            client.close()
            raise

    def close(self) -> None:
        self.client.close()

    # ---- what the fronts ask --------------------------------------------------------------
    @property
    def target_name(self) -> str:
        """The model's name as the server lists it (a file path shortened to its file name)."""
        return self.model.rstrip("/").rsplit("/", 1)[-1] or self.model

    @property
    def drafter_name(self) -> str:
        """"server" once it is known to draft (its /props, or an answer's figures), else "none"."""
        return SERVER_DRAFTER if self._speculated else "none"

    @property
    def drafter_choices(self) -> list[str]:
        return []  # the server chooses its drafter; SpecChat cannot switch it

    @property
    def context_length(self) -> int:
        return self.info.context_length or 0

    @property
    def server_name(self) -> str:
        """ "llama.cpp b6550 at http://127.0.0.1:8080" """
        return self.info.describe()

    @property
    def timed_arms(self) -> None:
        """None: neither llama.cpp nor vLLM turns speculation off for one request, so a
        comparison names a second, plain endpoint (``app.remote.comparison``)."""
        return None

    def answered_by(self, config: GenerationConfig, drafter_choice: str | None = None) -> RunProvenance:
        """The model, the server that ran it and the settings; drafted as the latest answer's
        figures say (no figures: not drafted, as far as SpecChat can tell)."""
        figures = self.last_figures
        drafted = figures.speculated if figures is not None else False
        return RunProvenance(
            target=self.target_name,
            drafter=SERVER_DRAFTER if drafted else "none",
            dtype=str(self.info.extra.get("form") or UNKNOWN_DTYPE),  # llama.cpp: the GGUF's form (Q4_1)
            device="server",
            config=config.to_dict(),
            server=self.server_name,
        )

    def answer_ids_problem(self, answer_ids: Sequence[int] | None, made_by: str | None = None) -> str:
        """Nothing to tell: a server's chat endpoint takes no ids, so Continue always goes on
        from the answer's text there."""
        return ""

    def reset(self) -> None:
        """Nothing is cached on this side (the server keeps its own prompt cache)."""

    def warm_up(self) -> None:
        """One short answer, so a first request does not pay the server's start-up."""
        config = GenerationConfig(max_new_tokens=2, speculative=False)
        for _ in self.stream("Hello", config):
            pass

    # ---- the suffix drafter's memory: a server keeps none ---------------------------------
    def remember(self, owner: str, conversation: Conversation) -> None:
        """Nothing: a server drafts from what it holds itself."""

    def forget(self, owner: str) -> None:
        """Nothing was indexed on this side."""

    def set_remembering(self, on: bool) -> None:
        """Nothing is indexed on this side, whichever way."""

    # ---- answering ----------------------------------------------------------------------
    def stream(
        self,
        conversation: Conversation,
        config: GenerationConfig,
        cancel: threading.Event | None = None,
        options: AnswerOptions = NEW_ANSWER,
    ) -> Iterator[StepEvent]:
        """The answer, one event per group of tokens the stream lets SpecChat tell apart; the
        last event has no tokens and carries the stop reason. Of ``options``: a cut answer goes
        on from its text (a chat endpoint takes no ids); a rerun asks the server not to reuse a
        cached prompt; nothing is indexed (a server keeps no index of conversations here)."""
        if options.drafter_choice is not None:
            raise InvalidSettingError("A server chooses its own drafter: SpecChat cannot pick one there.")
        continue_answer = options.continue_answer
        asked = replace(self.options, prompt_cache=False) if options.rerun else self.options
        messages = _messages(conversation, continue_answer)
        dialect = self._dialect or chat
        path, body = dialect.request(self.client, messages, config, self.model, asked, continue_answer)
        reader: ChatReader = self._dialect.Reader(self.model) if self._dialect else ChatReader(self.model)
        self.last_figures = None
        chunks = self.client.stream(path, body, cancel)
        try:
            for chunk in chunks:
                yield from reader.feed(chunk)
                if reader.finished:
                    break
        finally:
            chunks.close()  # the connection closes: a server still generating stops
        if cancel is not None and cancel.is_set():
            reader.stop_reason = "cancelled"
        elif reader.chunks == 0:
            raise ServerError(f"The server at {self.client.base_url} ended the stream without an answer.")
        steps, figures = reader.close()
        self.last_figures = figures
        self._speculated = figures.speculated or bool(self.info.speculates)
        yield from steps

    def with_options(self, options: RequestOptions) -> ServerSession:
        """The same server and model, asked with other request options (shares the client)."""
        other = ServerSession(self.client, self.info, self.model, options)
        other._speculated = self._speculated
        return other


def _messages(conversation: Conversation, continue_answer: bool) -> list[dict[str, str]]:
    messages = [{"role": "user", "content": conversation}] if isinstance(conversation, str) else [
        dict(m) for m in conversation
    ]
    last_user = next((m.get("content", "") for m in reversed(messages) if m.get("role") == "user"), "")
    if not isinstance(last_user, str) or not last_user.strip():
        raise PromptError("The prompt is empty: write something to send.")
    if continue_answer and (messages[-1].get("role") != "assistant" or not messages[-1].get("content", "").strip()):
        raise PromptError("There is no answer to continue: the last message is not a partial answer.")
    return [replace_surrogates(m) for m in messages]


def replace_surrogates(message: Mapping[str, str]) -> dict[str, str]:
    """A lone surrogate cannot go out as UTF-8 JSON: it becomes U+FFFD, as locally."""
    out = {}
    for key, value in message.items():
        if not isinstance(value, str):
            raise PromptError(f"A message must be text, not {type(value).__name__}.")
        out[key] = value.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
    return out


__all__ = ["SERVER_DRAFTER", "ServerSession"]
