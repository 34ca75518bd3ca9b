"""Step events from what a server tells: groups of tokens, each with the drafts its passes
proposed and accepted, and what the server itself measured (``ServerFigures``).

A group is *attributed* when the stream says exactly which of its tokens were accepted drafts:
one pass, ``accepted`` drafts then the target's own token (or, at the very end, a pass cut inside
its accepted drafts). Otherwise its tokens keep the source ``"unknown"`` — never guessed — and
the event stands for as many passes as the group holds own tokens.

Counts: every target pass emits exactly one token of its own after its accepted drafts, so a
run of ``n`` tokens with ``a`` drafts accepted took ``n − a`` target passes, the prompt's
included: tokens per pass and acceptance are exact from the server's counts, with or without
attribution. Times come from the client's clock (``verify_s``: seconds since the previous
event; no pass costs: ``draft_s`` is 0); the server's own clock is in ``ServerFigures``.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from app.engine.events import UNKNOWN_SOURCE, RunStats, StepEvent, StopReason, TargetKind, TokenInfo
from app.remote.errors import ServerResponseError


@dataclass(frozen=True)
class ServerToken:
    """One token as a server sends it: its id (None when it sends none), its text piece, and
    its log probability and the runner-up's (None when not given)."""

    id: int | None
    text: str
    logprob: float | None = None
    second_logprob: float | None = None

    def info(self, source: str, fallback_id: int) -> TokenInfo:
        p = math.exp(self.logprob) if self.logprob is not None else None
        margin = (
            self.logprob - self.second_logprob
            if self.logprob is not None and self.second_logprob is not None
            else None
        )  # log-softmax keeps logit differences: top-1 minus top-2 logit
        return TokenInfo(self.id if self.id is not None else fallback_id, self.text, source, p, None, margin)  # type: ignore[arg-type]


@dataclass(frozen=True)
class ServerFigures:
    """What the server itself reported about one request. ``None``: not reported."""

    server: str  # "llama.cpp" / "vllm" / "openai"
    model: str
    prompt_tokens: int | None = None
    predicted_tokens: int | None = None
    prompt_ms: float | None = None  # the server's clock: prompt processing
    predicted_ms: float | None = None  # the server's clock: generation
    drafted: int | None = None  # drafts proposed (llama.cpp draft_n, vLLM num_draft_tokens)
    accepted: int | None = None  # drafts accepted
    spec_steps: int | None = None  # passes that verified drafts (vLLM num_spec_steps)
    per_step_drafted: tuple[int, ...] = ()  # per speculative step (vLLM; llama.cpp: from its running totals)
    per_step_accepted: tuple[int, ...] = ()
    accepted_by_position: tuple[int, ...] = ()  # drafts accepted at position 1, 2, … (vLLM's histogram shape)
    speculated: bool = False  # the response carried speculation figures
    notes: tuple[str, ...] = ()  # what the server did not say, in words
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def acceptance(self) -> float | None:
        """Drafts accepted ÷ proposed, as the server counted them."""
        return self.accepted / self.drafted if self.drafted and self.accepted is not None else None

    @property
    def decode_tokens_per_s(self) -> float | None:
        """Tokens per second of generation on the server's own clock (``predicted_ms``)."""
        if not self.predicted_ms or not self.predicted_tokens:
            return None
        return self.predicted_tokens / (self.predicted_ms / 1000.0)

    def to_dict(self) -> dict[str, Any]:
        return {
            "server": self.server,
            "model": self.model,
            "prompt_tokens": self.prompt_tokens,
            "predicted_tokens": self.predicted_tokens,
            "prompt_ms": self.prompt_ms,
            "predicted_ms": self.predicted_ms,
            "decode_tokens_per_s": self.decode_tokens_per_s,
            "drafted": self.drafted,
            "accepted": self.accepted,
            "acceptance": self.acceptance,
            "spec_steps": self.spec_steps,
            "per_step_drafted": list(self.per_step_drafted),
            "per_step_accepted": list(self.per_step_accepted),
            "accepted_by_position": list(self.accepted_by_position),
            "speculated": self.speculated,
            "notes": list(self.notes),
        }


def count(value: Any, what: str) -> int:
    """A count the server sent: a whole number ≥ 0, else ``ServerResponseError``."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ServerResponseError(f"The server sent {what} = {str(value)[:40]!r}, not a count.")
    if value < 0 or value != int(value):
        raise ServerResponseError(f"The server sent {what} = {value!r}, not a count.")
    return int(value)


def seconds(value: Any, what: str) -> float:
    """A duration in ms the server sent: finite and ≥ 0."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
        raise ServerResponseError(f"The server sent {what} = {str(value)[:40]!r}, not a duration.")
    return float(value)


def accepted_by_position(drafted: Sequence[int], accepted: Sequence[int]) -> tuple[int, ...]:
    """Per draft position 1, 2, …: the speculative steps that accepted a draft there."""
    longest = max(drafted, default=0)
    return tuple(sum(1 for a in accepted if a >= i) for i in range(1, longest + 1))


def check_counts(drafted: int, accepted: int, where: str) -> None:
    if accepted > drafted:
        raise ServerResponseError(
            f"The server says {accepted} drafts were accepted of {drafted} proposed ({where}): "
            "that cannot be, so SpecChat shows none of its figures."
        )


class StepBuilder:
    """Turns groups of a server's tokens into ``StepEvent``s with cumulative ``RunStats``."""

    def __init__(self, prompt_tokens: int = 0, started: float | None = None) -> None:
        self.started = time.perf_counter() if started is None else started
        self._last = self.started
        self.stats = RunStats(prompt_tokens=prompt_tokens)
        self.steps: list[StepEvent] = []
        self._fallback_ids = -1  # a server that sends no ids: distinct negative stand-ins, never shown as ids

    def group(
        self, tokens: Sequence[ServerToken], drafted: int, accepted: int, attributed: bool, now: float | None = None
    ) -> StepEvent | None:
        """One group: ``tokens`` emitted by passes that proposed ``drafted`` and accepted
        ``accepted`` drafts; ``attributed``: one pass whose first ``accepted`` tokens are the
        accepted drafts. None for an empty group with no drafts."""
        check_counts(drafted, accepted, "one step")
        if not tokens and not drafted:
            return None
        now = time.perf_counter() if now is None else now
        elapsed, self._last = max(0.0, now - self._last), now
        index = len(self.steps)
        infos = [self._info(t, UNKNOWN_SOURCE) for t in tokens]
        own = len(tokens) - accepted  # each pass emits one own token; a pass cut by the length limit, none
        if attributed and own <= 1:
            drafts = tuple(replace(t, source="draft") for t in infos[: min(accepted, len(infos))])
            target = replace(infos[accepted], source="target") if own == 1 else None
            kind: TargetKind = "prefill" if index == 0 else ("plain" if drafted == 0 else (
                "bonus" if accepted == drafted else "correction"))
            step = StepEvent(index, drafts, target, (), kind, drafted, 0.0, elapsed, self._stats(
                len(tokens), 1, drafted, accepted, elapsed, index), rejected_unseen=drafted - accepted)
        else:
            passes = max(own, 1 if tokens else 0)
            step = StepEvent(index, (), None, (), "unknown", drafted, 0.0, elapsed, self._stats(
                len(tokens), passes, drafted, accepted, elapsed, index), unattributed=tuple(infos))
        self.steps.append(step)
        return step

    def _stats(self, tokens: int, passes: int, drafted: int, accepted: int, elapsed: float, index: int) -> RunStats:
        s = self.stats
        self.stats = replace(
            s,
            new_tokens=s.new_tokens + tokens,
            target_passes=s.target_passes + passes,
            proposed=s.proposed + drafted,
            accepted=s.accepted + accepted,
            prefill_s=s.prefill_s + (elapsed if index == 0 else 0.0),
            decode_s=s.decode_s + (elapsed if index > 0 else 0.0),
        )
        return self.stats

    def _info(self, token: ServerToken, source: str) -> TokenInfo:
        if token.id is None:
            self._fallback_ids -= 1
        return token.info(source, self._fallback_ids)

    def end(self, stop_reason: StopReason, prompt_tokens: int | None = None) -> StepEvent:
        """The run's last event: no tokens, the stop reason, the stats with the prompt's size."""
        if prompt_tokens is not None:
            self.stats = replace(self.stats, prompt_tokens=prompt_tokens)
        step = StepEvent(len(self.steps), (), None, (), "plain", 0, 0.0, 0.0, self.stats, stop_reason=stop_reason)
        self.steps.append(step)
        return step
