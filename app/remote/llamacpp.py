"""llama.cpp's ``llama-server``: its extra request fields and what its stream tells.

Asked with ``timings_per_token`` (and ``return_tokens``), every chunk carries ``timings`` with
the request's running totals ``draft_n`` / ``draft_n_accepted`` (present once something was
drafted). The totals jump on the first chunk of a pass that verified drafts; that pass then
emits its accepted drafts and its own token. So a *group* — a chunk where the totals jump and
the chunks after it up to the next jump — is one pass exactly when it holds
``Δaccepted + 1`` tokens; a group holding more also holds passes that drafted nothing, whose
split the stream does not show: its tokens are "not known". Chunks before the first jump are
passes that drafted nothing, one token each.

Token probabilities: llama.cpp reports ``logprob`` 0.0 with no alternatives for tokens from
a verified block: such a token gets no probability (take them from a plain run).
``cache_prompt: false`` for a fair comparison; ``ignore_eos`` for a fixed length.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from app.engine.config import GenerationConfig
from app.engine.events import StepEvent
from app.remote.chat import ChatReader, RequestOptions, chat_body
from app.remote.errors import ServerResponseError
from app.remote.steps import ServerFigures, ServerToken, check_counts, count, seconds


def body(
    messages: Sequence[Mapping[str, str]],
    config: GenerationConfig,
    model: str,
    options: RequestOptions,
    continue_answer: bool = False,
) -> dict[str, Any]:
    data = chat_body(messages, config, model, options, continue_answer)
    data.update(timings_per_token=True, return_tokens=True, cache_prompt=options.prompt_cache)
    if config.repetition_penalty != 1.0:
        data["repeat_penalty"] = config.repetition_penalty
    if options.fixed_length:
        data["ignore_eos"] = True
    return data


class Reader(ChatReader):
    server = "llama.cpp"

    def __init__(self, model: str, started: float | None = None) -> None:
        super().__init__(model, started)
        self._totals = (0, 0)  # running (draft_n, draft_n_accepted) as last seen
        self._group: list[ServerToken] = []
        self._group_counts = (0, 0)  # drafted, accepted by the group's pass (0, 0: drafted nothing)
        self._drafting_seen = False
        self._steps_drafted: list[int] = []
        self._steps_accepted: list[int] = []
        self.timings: dict[str, Any] = {}

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
            out += self._close_group(now)
            self._group_counts = jump
            self._drafting_seen = True
            self._steps_drafted.append(jump[0])
            self._steps_accepted.append(jump[1])
            self._group = list(tokens)
        elif not self._drafting_seen:  # before any drafting: one plain pass per token
            for token in tokens:
                step = self.builder.group([token], 0, 0, attributed=True, now=now)
                out += [step] if step is not None else []
        else:
            self._group += tokens
        return out

    def _close_group(self, now: float | None) -> list[StepEvent]:
        if not self._group:
            return []
        drafted, accepted = self._group_counts
        tokens, self._group, self._group_counts = self._group, [], (0, 0)
        one_pass = len(tokens) == accepted + 1
        step = self.builder.group(tokens, drafted, accepted, attributed=one_pass, now=now)
        return [step] if step is not None else []

    def _flush(self) -> list[StepEvent]:
        return self._close_group(None)

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
            prompt_tokens=_maybe(t.get("prompt_n"), "timings.prompt_n") or _maybe(usage.get("prompt_tokens"), "usage"),
            predicted_tokens=_maybe(t.get("predicted_n"), "timings.predicted_n"),
            prompt_ms=_ms(t.get("prompt_ms"), "timings.prompt_ms"),
            predicted_ms=_ms(t.get("predicted_ms"), "timings.predicted_ms"),
            drafted=drafted,
            accepted=accepted,
            spec_steps=len(self._steps_drafted) if drafted else None,
            per_step_drafted=tuple(self._steps_drafted),
            per_step_accepted=tuple(self._steps_accepted),
            speculated=bool(drafted),
            notes=notes,
        )


def _maybe(value: Any, what: str) -> int | None:
    return None if value is None else count(value, what)


def _ms(value: Any, what: str) -> float | None:
    return None if value is None else seconds(value, what)
