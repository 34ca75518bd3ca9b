"""vLLM's OpenAI server: its extra request fields and what its stream tells.

With ``return_token_ids`` each streamed chunk names its token ids and is, as a rule, one engine
step; a step that verified drafts emits its accepted drafts and its own token, so a chunk of
``n > 1`` tokens is ``n − 1`` accepted drafts then the target's token — checked against the
per-step figures, since vLLM may also merge steps into one chunk (seen on a plain server). Started with
``--per-request-spec-decode-metrics detailed``, the last chunk carries
``metrics.speculative_decoding`` (``num_draft_tokens``, ``num_accepted_draft_tokens``,
``per_step_drafted`` / ``per_step_accepted`` for the steps that drafted, an acceptance
histogram). A one-token chunk is a step that drafted nothing or one whose drafts were all
rejected: where the per-step lists cannot tell which, its token is "not known"; so are all the
tokens when the chunks do not match the lists, and every token of a server that sends no
figures (``"metrics": null``: a plain server, or one started without the detailed metrics).

The steps are matched against the per-step lists once the last chunk has come: vLLM's events
arrive together at the end of its answer.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from app.engine.config import GenerationConfig
from app.engine.events import StepEvent
from app.remote.chat import CHAT_PATH, ChatReader, RequestOptions, chat_body
from app.remote.errors import ServerResponseError
from app.remote.steps import ServerFigures, ServerToken, accepted_by_position, check_counts, count

DETAILED_METRICS_FLAG = "--per-request-spec-decode-metrics detailed"


def request(
    client: Any,
    messages: Sequence[Mapping[str, str]],
    config: GenerationConfig,
    model: str,
    options: RequestOptions,
    continue_answer: bool = False,
) -> tuple[str, dict[str, Any]]:
    """A streamed chat request with vLLM's extra fields."""
    data = chat_body(messages, config, model, options, continue_answer)
    data["return_token_ids"] = True
    if config.repetition_penalty != 1.0:
        data["repetition_penalty"] = config.repetition_penalty
    if options.fixed_length:
        data["ignore_eos"] = True
    if continue_answer:
        data.update(add_generation_prompt=False, continue_final_message=True)
    return CHAT_PATH, data


class Reader(ChatReader):
    server = "vllm"

    def __init__(self, model: str, started: float | None = None) -> None:
        super().__init__(model, started)
        self._chunks: list[tuple[list[ServerToken], float]] = []  # one engine step each
        self.metrics: Mapping[str, Any] | None = None
        self.fingerprint: str | None = None
        self.unplaced = False  # the chunks did not match the per-step figures

    def _tokens(self, chunk: Mapping[str, Any], choice: Mapping[str, Any]) -> list[ServerToken]:
        tokens = super()._tokens(chunk, choice)
        ids = choice.get("token_ids")
        if isinstance(ids, list) and ids:
            ids = [count(i, "a token id") for i in ids]
            if len(tokens) == len(ids):
                tokens = [ServerToken(i, t.text, t.logprob, t.second_logprob) for i, t in zip(ids, tokens)]
            elif len(tokens) <= 1:  # no log probabilities: the text is the chunk's, on its last token
                text = tokens[0].text if tokens else ""
                tokens = [ServerToken(i, "") for i in ids[:-1]] + [ServerToken(ids[-1], text)]
            else:
                raise ServerResponseError("The server sent a chunk whose token ids and tokens disagree in number.")
        return tokens

    def _take(self, chunk: Mapping[str, Any], tokens: list[ServerToken], now: float) -> list[StepEvent]:
        if isinstance(chunk.get("system_fingerprint"), str):
            self.fingerprint = chunk["system_fingerprint"]
        metrics = chunk.get("metrics")
        if isinstance(metrics, Mapping) and metrics.get("speculative_decoding") is not None:
            self.metrics = _spec_metrics(metrics["speculative_decoding"])
        if tokens:
            self._chunks.append((tokens, now))
        return []

    def _flush(self) -> list[StepEvent]:
        """Every step, matched with the per-step lists (see the module's docstring)."""
        chunks = self._chunks
        if not chunks:
            return []
        first, first_at = chunks[0]
        plan: list[Group] = [(first[:1], 0, 0, True, first_at)]
        rest = ([(first[1:], first_at)] if len(first) > 1 else []) + chunks[1:]
        m = self.metrics
        if m is None:  # no figures: a plain server, or one that does not say; chunks may merge steps
            plan += [(tokens, 0, 0, False, at) for tokens, at in rest]
        else:
            try:
                plan += _match(rest, list(m["per_step_drafted"]), list(m["per_step_accepted"]))
            except _Mismatch:  # steps merged into one chunk: the counts stand, the tokens are not placed
                self.unplaced = True
                tokens = [t for group, _at in rest for t in group]
                plan.append((tokens, m["num_draft_tokens"], m["num_accepted_draft_tokens"], False, rest[-1][1]))
        out: list[StepEvent] = []
        for tokens, drafted, accepted, attributed, at in plan:
            out += _some(self.builder.group(tokens, drafted, accepted, attributed=attributed, now=at))
        return out

    def _figures(self) -> ServerFigures:
        usage, m = self.usage, self.metrics
        prompt = usage.get("prompt_tokens")
        predicted = usage.get("completion_tokens")
        common: dict[str, Any] = {
            "prompt_tokens": None if prompt is None else count(prompt, "usage.prompt_tokens"),
            "predicted_tokens": None if predicted is None else count(predicted, "usage.completion_tokens"),
        }
        if m is None:
            return ServerFigures(self.server, self.model, **common, notes=(
                "vLLM sent no speculation figures (\"metrics\": null): a plain server, or one started "
                f"without {DETAILED_METRICS_FLAG}.",
            ))
        return ServerFigures(
            self.server,
            self.model,
            **common,
            drafted=m["num_draft_tokens"],
            accepted=m["num_accepted_draft_tokens"],
            spec_steps=m["num_spec_steps"],
            per_step_drafted=tuple(m["per_step_drafted"]),
            per_step_accepted=tuple(m["per_step_accepted"]),
            accepted_by_position=tuple(m["accepted_by_position"]),
            speculated=m["num_draft_tokens"] > 0,
            notes=("vLLM does not report its own generation time per request: the speeds are the client's clock.",)
            + (("vLLM merged steps into one chunk here: its counts are shown, its tokens not attributed.",)
               if self.unplaced else ()),
        )


Chunk = tuple[list[ServerToken], float]  # a chunk's tokens, when it came
Group = tuple[list[ServerToken], int, int, bool, float]  # tokens, drafted, accepted, attributed, when


class _Mismatch(Exception):
    """The chunks cannot be the steps the per-step lists describe (vLLM merged some)."""


def _match(rest: list[Chunk], drafted: list[int], accepted: list[int]) -> list[Group]:
    """The chunks after the first token, each placed against the per-step lists: a chunk of
    ``n > 1`` tokens is the next step that accepted ``n − 1`` (the last may be cut short); the
    steps that accepted nothing between two such chunks are among the one-token chunks there."""
    plan: list[Group] = []
    singles: list[Chunk] = []
    j = 0
    for n, (tokens, at) in enumerate(rest):
        last = n == len(rest) - 1
        if len(tokens) == 1 and not (last and j < len(accepted) and accepted[-1] > 0):
            singles.append((tokens, at))
            continue
        k = j
        while k < len(accepted) and not _fits(accepted[k], len(tokens), last):
            if accepted[k] != 0:
                raise _Mismatch
            k += 1
        if k == len(accepted):
            raise _Mismatch
        plan += _singles(singles, drafted[j:k])
        singles = []
        plan.append((tokens, drafted[k], accepted[k], True, at))
        j = k + 1
    return plan + _singles(singles, drafted[j:])


def _singles(singles: list[Chunk], zero_steps: list[int]) -> list[Group]:
    """One-token chunks and the drafting steps among them that accepted nothing (``zero_steps``:
    their drafts). Known when every one of them drafted, or none did; else "not known" together."""
    if len(zero_steps) > len(singles):
        raise _Mismatch
    if not zero_steps or len(zero_steps) == len(singles):
        return [(tokens, zero_steps[i] if zero_steps else 0, 0, True, at) for i, (tokens, at) in enumerate(singles)]
    tokens = [t for group, _at in singles for t in group]
    return [(tokens, sum(zero_steps), 0, False, singles[-1][1])]


def _fits(accepted: int, tokens: int, last: bool) -> bool:
    """A step that accepted ``accepted`` drafts emitted ``tokens`` (the last one may be cut short)."""
    return accepted == tokens - 1 or (last and accepted >= tokens)


def _some(step: StepEvent | None) -> list[StepEvent]:
    return [step] if step is not None else []


def _spec_metrics(data: Any) -> dict[str, Any]:
    """vLLM's per-request speculation figures, checked against each other."""
    if not isinstance(data, Mapping):
        raise ServerResponseError("The server's metrics.speculative_decoding is not an object.")
    drafted = count(data.get("num_draft_tokens"), "num_draft_tokens")
    accepted = count(data.get("num_accepted_draft_tokens"), "num_accepted_draft_tokens")
    check_counts(drafted, accepted, "metrics.speculative_decoding")
    steps = count(data.get("num_spec_steps", 0), "num_spec_steps")
    per_drafted = [count(v, "per_step_drafted") for v in data.get("per_step_drafted") or []]
    per_accepted = [count(v, "per_step_accepted") for v in data.get("per_step_accepted") or []]
    if len(per_drafted) != len(per_accepted):
        raise ServerResponseError("The server's per-step draft lists differ in length.")
    for d, a in zip(per_drafted, per_accepted):
        check_counts(d, a, "one step of metrics.speculative_decoding")
    if per_drafted and (sum(per_drafted) != drafted or sum(per_accepted) != accepted):
        raise ServerResponseError("The server's per-step draft counts do not add up to its totals.")
    by_position = list(accepted_by_position(per_drafted, per_accepted))
    return {
        "num_draft_tokens": drafted,
        "num_accepted_draft_tokens": accepted,
        "num_spec_steps": steps,
        "per_step_drafted": per_drafted,
        "per_step_accepted": per_accepted,
        "accepted_by_position": by_position,
    }
