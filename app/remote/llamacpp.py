"""llama.cpp's ``llama-server``: its extra request fields and what its stream tells.

SpecChat asks llama.cpp's own ``/completion`` (on the prompt ``/apply-template`` renders): its
chat stream sends no token ids for the tokens of a verified block, ``/completion`` with
``return_tokens`` does. Asked with ``timings_per_token``, every chunk carries ``timings`` with
the request's running totals ``draft_n`` / ``draft_n_accepted`` (present once something was
drafted). The totals jump on the first chunk of a pass that verified drafts; that pass then
emits its accepted drafts and its own token, one chunk each, before the next pass runs (seen
on this version: a jump of (2, 2) on a chunk, then two more chunks, then the next pass). So
the chunk where the totals jump by (Δdrafted, Δaccepted) and the ``Δaccepted`` chunks after it
are one pass — ``Δaccepted`` accepted drafts, then the target's token — shown as soon as its
last token has come, and every other chunk is a pass that drafted nothing (the totals did not
move: its token is the target's own). A pass left short mid-answer cannot happen; if it did,
its tokens would be "not known"; at the end it is the last pass, cut by the length limit.

Token probabilities: llama.cpp sends none for the tokens of a verified block (its chat stream,
``logprob`` 0.0): such a token gets no probability (a comparison takes them from the plain run).
``cache_prompt: false`` for a fair comparison; ``ignore_eos`` for a fixed length.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import Any

from app.engine.config import GenerationConfig
from app.engine.events import StepEvent, StopReason
from app.remote.chat import TOP_LOGPROBS, ChatReader, RequestOptions, logprob_tokens
from app.remote.client import ServerClient
from app.remote.errors import ServerResponseError
from app.remote.steps import ServerFigures, ServerToken, accepted_by_position, check_counts, count, seconds

COMPLETION_PATH = "/completion"
TEMPLATE_PATH = "/apply-template"
STOP_TYPES: dict[str, StopReason] = {"eos": "eos", "limit": "max_new_tokens", "word": "stop_string"}


def request(
    client: ServerClient,
    messages: Sequence[Mapping[str, str]],
    config: GenerationConfig,
    model: str,
    options: RequestOptions,
    continue_answer: bool = False,
) -> tuple[str, dict[str, Any]]:
    """llama.cpp's own ``/completion`` on the prompt its ``/apply-template`` renders: its
    chat stream names no token ids while speculating, this one does (``return_tokens``)."""
    rendered = client.post_json(TEMPLATE_PATH, {"model": model, "messages": [dict(m) for m in messages]})
    prompt = rendered.get("prompt") if isinstance(rendered, Mapping) else None
    if not isinstance(prompt, str):
        raise ServerResponseError("llama.cpp's /apply-template answered without a prompt.")
    if continue_answer:
        prompt = _without_end_of_turn(prompt, messages[-1].get("content", ""))
    data: dict[str, Any] = {
        "model": model,
        "prompt": prompt,
        "stream": True,
        "n_predict": config.max_new_tokens,
        "temperature": config.temperature,
        "top_k": config.top_k,  # 0: off, as in GenerationConfig (llama.cpp's default is 40)
        "top_p": config.top_p,
        "min_p": 0.0,
        "seed": config.seed % 2**32,
        "repeat_penalty": config.repetition_penalty,
        "timings_per_token": True,
        "return_tokens": True,
        "cache_prompt": options.prompt_cache,
    }
    if options.logprobs:
        data["n_probs"] = TOP_LOGPROBS
    if config.stop_strings:
        data["stop"] = list(config.stop_strings)
    if options.fixed_length:
        data["ignore_eos"] = True
    return COMPLETION_PATH, data


def _without_end_of_turn(prompt: str, answer: str) -> str:
    """A rendered conversation that ends with the cut answer, minus what closes its turn (the
    template's end-of-turn marker after the answer's text), so generation goes on inside it."""
    at = prompt.rfind(answer) if answer else -1
    return prompt[: at + len(answer)] if at >= 0 else prompt


def completion_tokens(chunk: Mapping[str, Any]) -> list[ServerToken]:
    """A ``/completion`` chunk's tokens: ids from ``tokens``, texts and log probabilities from
    ``completion_probabilities`` when given (not for tokens of a verified block), else the
    chunk's ``content`` on its last token."""
    ids = chunk.get("tokens")
    content = chunk.get("content", "")
    if not isinstance(content, str):
        raise ServerResponseError("llama.cpp streamed content that is not text.")
    if not isinstance(ids, list):
        return [ServerToken(None, content)] if content else []
    ids = [count(i, "a token id") for i in ids]
    probs = chunk.get("completion_probabilities")
    if isinstance(probs, list) and len(probs) == len(ids):
        tokens = logprob_tokens({"logprobs": {"content": probs}}) or []
        if "".join(t.text for t in tokens) == content:
            return [ServerToken(i, t.text, t.logprob, t.second_logprob) for i, t in zip(ids, tokens)]
        # pieces that split a character: the chunk's text stands on its last token
        return [ServerToken(i, "", t.logprob, t.second_logprob) for i, t in zip(ids[:-1], tokens)] + [
            ServerToken(ids[-1], content, tokens[-1].logprob, tokens[-1].second_logprob)
        ]
    if not ids:
        return []
    return [ServerToken(i, "") for i in ids[:-1]] + [ServerToken(ids[-1], content)]


class Reader(ChatReader):
    server = "llama.cpp"

    def __init__(self, model: str, started: float | None = None) -> None:
        super().__init__(model, started)
        self._totals = (0, 0)  # running (draft_n, draft_n_accepted) as last seen
        self._pass: list[ServerToken] | None = None  # the tokens so far of a pass that verified drafts
        self._pass_counts = (0, 0)  # its drafted, accepted
        self._steps_drafted: list[int] = []
        self._steps_accepted: list[int] = []
        self.timings: dict[str, Any] = {}

    def _parse(self, chunk: Mapping[str, Any]) -> list[StepEvent]:
        """One ``/completion`` chunk."""
        stop_type = chunk.get("stop_type")
        if chunk.get("stop") is True:  # the last chunk: /completion sends no [DONE] after it
            self.finished = True
            if isinstance(stop_type, str):
                self.stop_reason = STOP_TYPES.get(stop_type, "eos")
        for key in ("tokens_evaluated",):
            if key in chunk:
                self.usage["prompt_tokens"] = chunk[key]
        return self._take(chunk, completion_tokens(chunk), time.perf_counter())

    def _take(self, chunk: Mapping[str, Any], tokens: list[ServerToken], now: float) -> list[StepEvent]:
        timings = chunk.get("timings")
        totals = self._totals
        if isinstance(timings, Mapping):
            self.timings = dict(timings)
            drafted = count(timings.get("draft_n", totals[0]), "timings.draft_n")
            accepted = count(timings.get("draft_n_accepted", totals[1]), "timings.draft_n_accepted")
            check_counts(drafted, accepted, "its running totals")
            if drafted < totals[0] or accepted < totals[1]:
                raise ServerResponseError(
                    f"The server's draft counts went down during one answer ({totals[0]} → {drafted} "
                    f"proposed, {totals[1]} → {accepted} accepted): SpecChat shows none of its figures."
                )
            totals = (drafted, accepted)
        if not tokens:
            self._totals = totals  # a last chunk with only the timings adds no pass
            return []
        out: list[StepEvent] = []
        jump = (totals[0] - self._totals[0], totals[1] - self._totals[1])
        self._totals = totals
        if jump[0] > 0:  # a pass that verified drafts starts with these tokens
            out += self._close_pass(now, cut=False)
            self._pass_counts = jump
            self._steps_drafted.append(jump[0])
            self._steps_accepted.append(jump[1])
            self._pass = []
        for token in tokens:
            if self._pass is not None:
                self._pass.append(token)
                if len(self._pass) == self._pass_counts[1] + 1:  # its drafts and its own token: complete
                    out += self._close_pass(now, cut=False)
            else:  # the totals did not move: a pass that drafted nothing, one token
                out += _some(self.builder.group([token], 0, 0, attributed=True, now=now))
        return out

    def _close_pass(self, now: float | None, cut: bool) -> list[StepEvent]:
        """The pass being read, once complete; one left short is the answer's last pass cut by
        the length limit (``cut``), or — mid-answer, where it cannot be — tokens of unknown source."""
        if self._pass is None:
            return []
        drafted, accepted = self._pass_counts
        tokens, self._pass, self._pass_counts = self._pass, None, (0, 0)
        complete = len(tokens) == accepted + 1
        return _some(self.builder.group(tokens, drafted, accepted, attributed=complete or cut, now=now))

    def _flush(self) -> list[StepEvent]:
        return self._close_pass(None, cut=True)

    def _figures(self) -> ServerFigures:
        t = self.timings
        usage = self.usage
        drafted = count(t["draft_n"], "timings.draft_n") if "draft_n" in t else None
        accepted = count(t["draft_n_accepted"], "timings.draft_n_accepted") if "draft_n_accepted" in t else None
        if drafted is not None and accepted is not None:
            check_counts(drafted, accepted, "its final timings")
        if (drafted, accepted) != (None, None) and (drafted or 0, accepted or 0) != self._totals:
            raise ServerResponseError(
                "The server's final draft counts disagree with the ones it streamed: SpecChat shows none of them."
            )
        notes = () if drafted else ("llama.cpp drafted nothing for this answer (its timings carry no draft_n).",)
        return ServerFigures(
            self.server,
            self.model,
            prompt_tokens=_prompt_tokens(t) or _maybe(usage.get("prompt_tokens"), "usage"),
            predicted_tokens=_maybe(t.get("predicted_n"), "timings.predicted_n"),
            prompt_ms=_ms(t.get("prompt_ms"), "timings.prompt_ms"),
            predicted_ms=_ms(t.get("predicted_ms"), "timings.predicted_ms"),
            drafted=drafted,
            accepted=accepted,
            spec_steps=len(self._steps_drafted) if drafted else None,
            per_step_drafted=tuple(self._steps_drafted),
            per_step_accepted=tuple(self._steps_accepted),
            accepted_by_position=accepted_by_position(self._steps_drafted, self._steps_accepted),
            speculated=bool(drafted),
            notes=notes,
        )


def _some(step: StepEvent | None) -> list[StepEvent]:
    return [step] if step is not None else []


def _prompt_tokens(timings: Mapping[str, Any]) -> int | None:
    """The prompt's size: the tokens evaluated (``prompt_n``) and those taken from the cache."""
    evaluated = _maybe(timings.get("prompt_n"), "timings.prompt_n")
    cached = _maybe(timings.get("cache_n"), "timings.cache_n") or 0
    return None if evaluated is None else evaluated + cached


def _maybe(value: Any, what: str) -> int | None:
    return None if value is None else count(value, what)


def _ms(value: Any, what: str) -> float | None:
    return None if value is None else seconds(value, what)
