"""The OpenAI chat-completions stream every dialect shares: the request body, and a reader
of its chunks (text deltas, per-token log probabilities, the finish reason, usage). Each
server's module adds its own fields (``llamacpp``, ``vllm``).
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from app.engine.config import GenerationConfig
from app.engine.events import StepEvent, StopReason
from app.remote.errors import ServerError, ServerResponseError
from app.remote.steps import ServerFigures, ServerToken, StepBuilder, count

CHAT_PATH = "/v1/chat/completions"
TOP_LOGPROBS = 2  # the runner-up's log probability gives the margin (top-1 minus top-2 logit)
FINISH_REASONS: dict[str, StopReason] = {"stop": "eos", "length": "max_new_tokens", "eos": "eos"}


@dataclass(frozen=True)
class RequestOptions:
    """How a request is made beyond the generation settings. ``fixed_length``: always
    ``max_new_tokens`` tokens (``ignore_eos`` where offered), for a fair comparison;
    ``prompt_cache``: let the server reuse a cached prompt (llama.cpp ``cache_prompt``)."""

    fixed_length: bool = False
    prompt_cache: bool = True
    logprobs: bool = True


def request(
    client: Any,
    messages: Sequence[Mapping[str, str]],
    config: GenerationConfig,
    model: str,
    options: RequestOptions,
    continue_answer: bool = False,
) -> tuple[str, dict[str, Any]]:
    """The path and body of a streamed chat request (a server with no dialect of its own)."""
    return CHAT_PATH, chat_body(messages, config, model, options, continue_answer)


def chat_body(
    messages: Sequence[Mapping[str, str]],
    config: GenerationConfig,
    model: str,
    options: RequestOptions,
    continue_answer: bool = False,
) -> dict[str, Any]:
    """The standard fields of a streamed chat request for ``config``."""
    body: dict[str, Any] = {
        "model": model,
        "messages": [dict(m) for m in messages],
        "stream": True,
        "stream_options": {"include_usage": True},
        "max_tokens": config.max_new_tokens,
        "temperature": config.temperature,
        "top_p": config.top_p,
        "seed": config.seed % 2**31,  # servers take a 32-bit seed
    }
    if config.top_k:
        body["top_k"] = config.top_k
    if config.stop_strings:
        body["stop"] = list(config.stop_strings)
    if options.logprobs:
        body["logprobs"] = True
        body["top_logprobs"] = TOP_LOGPROBS
    return body


def logprob_tokens(choice: Mapping[str, Any]) -> list[ServerToken] | None:
    """The tokens of a chunk from its ``logprobs.content`` entries (None: the chunk has none).
    An entry with no alternatives (llama.cpp's tokens from a verified block: ``logprob`` 0.0,
    empty ``top_logprobs``) gives no probability rather than a false 1.0."""
    logprobs = choice.get("logprobs")
    content = logprobs.get("content") if isinstance(logprobs, Mapping) else None
    if not isinstance(content, list):
        return None
    tokens = []
    for entry in content:
        if not isinstance(entry, Mapping):
            raise ServerResponseError("The server sent a log-probability entry that is not an object.")
        text = entry.get("token")
        if not isinstance(text, str):
            raise ServerResponseError("The server sent a token without its text.")
        raw = entry.get("bytes")
        if isinstance(raw, list) and all(isinstance(b, int) and 0 <= b < 256 for b in raw):
            text = bytes(raw).decode("utf-8", "replace")  # a byte of a split character decodes to U+FFFD
        token_id = entry.get("id")
        top = entry.get("top_logprobs")
        given = [t.get("logprob") for t in top if isinstance(t, Mapping)] if isinstance(top, list) else []
        alternatives = [float(v) for v in given if isinstance(v, (int, float)) and not isinstance(v, bool)]
        logprob = entry.get("logprob")
        known = alternatives and isinstance(logprob, (int, float)) and not isinstance(logprob, bool)
        ranked = sorted(alternatives, reverse=True)
        tokens.append(
            ServerToken(
                count(token_id, "a token id") if token_id is not None else None,
                text,
                float(logprob) if known else None,  # type: ignore[arg-type]
                ranked[1] if known and len(ranked) > 1 else None,
            )
        )
    return tokens


class ChatReader:
    """Reads one streamed chat answer. Subclasses say how chunks group into passes
    (``_take``) and what the server measured (``_figures``)."""

    server = "openai"

    def __init__(self, model: str, started: float | None = None) -> None:
        self.model = model
        self.builder = StepBuilder(started=started)
        self.stop_reason: StopReason = "cancelled"
        self.usage: dict[str, Any] = {}
        self.chunks = 0
        self.finished = False  # the answer's last chunk has come: nothing more is read

    def feed(self, chunk: Mapping[str, Any]) -> list[StepEvent]:
        """The steps one chunk completes (often none until the next chunk shows the group's end)."""
        error = chunk.get("error")
        if error is not None:
            from app.remote.client import server_message

            raise ServerError(f"The server stopped the answer: {server_message(chunk) or 'an error'}")
        self.chunks += 1
        return self._parse(chunk)

    def _parse(self, chunk: Mapping[str, Any]) -> list[StepEvent]:
        """One chunk of an OpenAI chat stream."""
        usage = chunk.get("usage")
        if isinstance(usage, Mapping):
            self.usage = dict(usage)
        choices = chunk.get("choices")
        if not isinstance(choices, list):
            raise ServerResponseError("The server streamed a chunk without its choices.")
        if not choices:
            return self._take(chunk, [], time.perf_counter())
        choice = choices[0]
        if not isinstance(choice, Mapping):
            raise ServerResponseError("The server streamed a choice that is not an object.")
        tokens = self._tokens(chunk, choice)
        finish = choice.get("finish_reason")
        if isinstance(finish, str):
            self.stop_reason = FINISH_REASONS.get(finish, "eos")
        return self._take(chunk, tokens, time.perf_counter())

    def _tokens(self, chunk: Mapping[str, Any], choice: Mapping[str, Any]) -> list[ServerToken]:
        """The chunk's tokens: from its log probabilities, else its text as one piece."""
        tokens = logprob_tokens(choice)
        if tokens is not None:
            return tokens
        delta = choice.get("delta")
        text = delta.get("content") if isinstance(delta, Mapping) else None
        return [ServerToken(None, text)] if isinstance(text, str) and text else []

    def _take(self, chunk: Mapping[str, Any], tokens: list[ServerToken], now: float) -> list[StepEvent]:
        """A server that tells nothing of its passes: each chunk's tokens are "not known"."""
        step = self.builder.group(tokens, 0, 0, attributed=False, now=now)
        return [step] if step is not None else []

    def close(self) -> tuple[list[StepEvent], ServerFigures]:
        """The steps still held, the final (token-less) one with the stop reason, and the figures."""
        steps = self._flush()
        figures = self._figures()
        prompt = figures.prompt_tokens
        end = self.builder.end(self.stop_reason, prompt)
        return steps + [end], figures

    def _flush(self) -> list[StepEvent]:
        return []

    def _figures(self) -> ServerFigures:
        usage = self.usage
        return ServerFigures(
            self.server,
            self.model,
            prompt_tokens=_optional_count(usage.get("prompt_tokens"), "usage.prompt_tokens"),
            predicted_tokens=_optional_count(usage.get("completion_tokens"), "usage.completion_tokens"),
            notes=("This server reports no speculation figures.",),
        )


def _optional_count(value: Any, what: str) -> int | None:
    return None if value is None else count(value, what)
