"""vLLM's OpenAI server: its extra request fields and what its stream tells.

With ``return_token_ids`` each streamed chunk is one engine step and names its token ids; a
step that verified drafts emits its accepted drafts and its own token, so a chunk of ``n > 1``
tokens is ``n − 1`` accepted drafts then the target's token. Started with
``--per-request-spec-decode-metrics detailed``, the last chunk carries
``metrics.speculative_decoding`` (``num_draft_tokens``, ``num_accepted_draft_tokens``,
``per_step_drafted`` / ``per_step_accepted`` for the steps that drafted, an acceptance
histogram). A one-token chunk is a step that drafted nothing or one whose drafts were all
rejected: where the per-step lists cannot tell which, its token is "not known". A plain server
(or one started without the detailed metrics) sends ``"metrics": null``.

The steps are matched against the per-step lists once the last chunk has come, so vLLM's
events arrive at the end of the answer (its text streams as it comes in ``stream``'s caller
only through those events).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from app.engine.config import GenerationConfig
from app.engine.events import StepEvent
from app.remote.chat import CHAT_PATH, ChatReader, RequestOptions, chat_body
from app.remote.errors import ServerResponseError
from app.remote.steps import ServerFigures, ServerToken, check_counts, count

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
        out: list[StepEvent] = []
        chunks = self._chunks
        if not chunks:
            return out
        first, first_at = chunks[0]
        out += _some(self.builder.group(first[:1], 0, 0, attributed=True, now=first_at))
        rest = [(first[1:], first_at)] if len(first) > 1 else []
        rest += chunks[1:]
        m = self.metrics
        if m is None:  # no figures: multi-token chunks still show their drafts
            for tokens, at in rest:
                known = len(tokens) > 1
                out += _some(self.builder.group(tokens, len(tokens) - 1 if known else 0, len(tokens) - 1,
                                                attributed=known, now=at))
            return out
        drafted, accepted = list(m["per_step_drafted"]), list(m["per_step_accepted"])
        singles: list[tuple[list[ServerToken], float]] = []
        j = 0
        for n, (tokens, at) in enumerate(rest):
            last = n == len(rest) - 1
            if len(tokens) == 1 and not (last and j < len(accepted) and accepted[-1] > 0):
                singles.append((tokens, at))
                continue
            # a multi-token step (or the last step, cut by the length limit): the next per-step
            # entry that accepted len - 1 (cut: at least len - 1); the zeros before it belong to
            # the one-token chunks since the previous such step
            k = j
            while k < len(accepted) and not _fits(accepted[k], len(tokens), last):
                if accepted[k] != 0:
                    raise ServerResponseError("The server's per-step figures do not match its stream.")
                k += 1
            if k == len(accepted):
                raise ServerResponseError("The server's per-step figures do not match its stream.")
            out += self._singles(singles, drafted[j:k])
            singles = []
            out += _some(self.builder.group(tokens, drafted[k], accepted[k], attributed=True, now=at))
            j = k + 1
        out += self._singles(singles, drafted[j:])
        return out

    def _singles(self, singles: list[tuple[list[ServerToken], float]], zero_steps: list[int]) -> list[StepEvent]:
        """One-token steps and the all-rejected drafting steps among them (``zero_steps``: their
        drafts). Known when every one drafted (or none did); otherwise "not known" together."""
        if not singles and not zero_steps:
            return []
        if len(zero_steps) > len(singles):
            raise ServerResponseError("The server's per-step figures do not match its stream.")
        if not zero_steps or len(zero_steps) == len(singles):
            out: list[StepEvent] = []
            for i, (tokens, at) in enumerate(singles):
                out += _some(self.builder.group(tokens, zero_steps[i] if zero_steps else 0, 0, attributed=True, now=at))
            return out
        tokens = [t for group, _at in singles for t in group]
        return _some(self.builder.group(tokens, sum(zero_steps), 0, attributed=False, now=singles[-1][1]))

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
            notes=("vLLM does not report its own generation time per request: the speeds are the client's clock.",),
        )


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
    longest = max(per_drafted, default=0)
    by_position = [sum(1 for a in per_accepted if a >= i) for i in range(1, longest + 1)]
    return {
        "num_draft_tokens": drafted,
        "num_accepted_draft_tokens": accepted,
        "num_spec_steps": steps,
        "per_step_drafted": per_drafted,
        "per_step_accepted": per_accepted,
        "accepted_by_position": by_position,
    }
