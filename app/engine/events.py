"""What the engine reports: one ``StepEvent`` per target forward pass, then a ``RunResult``.

Events carry everything a view needs (ids, text pieces, provenance, probabilities, timings),
so the GUI, the CLI and the tests never look inside the engine.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Literal

TokenSource = Literal["draft", "target"]
# prefill: the first token, from the prompt's pass; plain: no drafter ran;
# correction: the target's token at the first rejected draft; bonus: all drafts accepted.
TargetKind = Literal["prefill", "plain", "correction", "bonus"]
StopReason = Literal["eos", "max_new_tokens", "stop_string", "cancelled", "context_full"]


@dataclass(frozen=True)
class TokenInfo:
    """One token. ``text`` is its piece of the answer: pieces concatenate to the answer text
    (a token that ends inside a multi-byte character has an empty piece; the token completing
    it carries the whole character)."""

    id: int
    text: str
    source: TokenSource
    p_target: float | None = None  # target probability of this token at its position
    p_draft: float | None = None  # draft probability (None for prompt lookup / no drafter)
    margin: float | None = None  # target's top-1 minus top-2 logit at this position


@dataclass(frozen=True)
class RunStats:
    """Cumulative statistics. The prefill pass counts as a target pass, so without speculation
    ``target_passes == new_tokens``."""

    new_tokens: int = 0
    target_passes: int = 0
    draft_passes: int = 0
    proposed: int = 0
    accepted: int = 0
    prefill_s: float = 0.0
    decode_s: float = 0.0
    prompt_tokens: int = 0
    reused_prompt_tokens: int = 0  # KV-cache hits from earlier turns

    @property
    def acceptance_rate(self) -> float:
        return self.accepted / self.proposed if self.proposed else 0.0

    @property
    def tokens_per_pass(self) -> float:
        return self.new_tokens / self.target_passes if self.target_passes else 0.0

    @property
    def tokens_per_s(self) -> float:
        total = self.prefill_s + self.decode_s
        return self.new_tokens / total if total > 0 else 0.0

    @property
    def passes_saved(self) -> int:
        return max(0, self.new_tokens - self.target_passes)

    @property
    def time_to_first_token_s(self) -> float:
        """The wait for the first token: the prompt's pass (with any drafting folded into it)."""
        return self.prefill_s

    @property
    def context_tokens(self) -> int:
        """How much of the target's context window the conversation fills after this run."""
        return self.prompt_tokens + self.new_tokens

    def followed_by(self, more: RunStats) -> RunStats:
        """One answer made of this run and its continuation ``more``. The continuation's
        prompt pass counts as decoding time: the answer's first token came from this run."""
        return RunStats(
            new_tokens=self.new_tokens + more.new_tokens,
            target_passes=self.target_passes + more.target_passes,
            draft_passes=self.draft_passes + more.draft_passes,
            proposed=self.proposed + more.proposed,
            accepted=self.accepted + more.accepted,
            prefill_s=self.prefill_s,
            decode_s=self.decode_s + more.prefill_s + more.decode_s,
            prompt_tokens=self.prompt_tokens,
            reused_prompt_tokens=self.reused_prompt_tokens,
        )

    def to_dict(self) -> dict[str, float | int]:
        data: dict[str, float | int] = asdict(self)
        data.update(
            acceptance_rate=self.acceptance_rate,
            tokens_per_pass=self.tokens_per_pass,
            tokens_per_s=self.tokens_per_s,
            wall_s=self.prefill_s + self.decode_s,
        )
        return data


@dataclass(frozen=True)
class StepEvent:
    """One target forward pass and what it decided.

    ``accepted`` are draft tokens the target agreed with, in order; ``target`` is the target's
    own token after them (None when the step stopped inside the accepted block, on EOS,
    max_new_tokens or a stop string); ``rejected`` are the draft tokens proposed after the last
    accepted one and thrown away. ``text`` is the concatenated pieces of accepted + target.
    """

    index: int  # 0 = prefill pass
    accepted: tuple[TokenInfo, ...]
    target: TokenInfo | None
    rejected: tuple[TokenInfo, ...]
    target_kind: TargetKind
    k: int  # drafts requested this step (0 without a drafter)
    draft_s: float
    verify_s: float
    stats: RunStats  # cumulative, including this step
    stop_reason: StopReason | None = None  # set on the last event of a run
    draft_passes: int = 0  # draft-model forward passes spent this step (0 for lookup / no drafter)
    predicted_speedup: float | None = None  # the k chooser's expected gain over a plain step, if it chose

    @property
    def tokens(self) -> tuple[TokenInfo, ...]:
        return self.accepted + ((self.target,) if self.target is not None else ())

    @property
    def text(self) -> str:
        return "".join(t.text for t in self.tokens)


@dataclass(frozen=True)
class RunResult:
    """A finished (or cancelled) run: the answer and how it was made."""

    text: str
    tokens: tuple[TokenInfo, ...]
    steps: tuple[StepEvent, ...]
    stats: RunStats
    stop_reason: StopReason
    speculative: bool
    drafter: str  # "draft model: NAME", "prompt lookup" or "none"
    config: dict[str, object] = field(default_factory=dict)

    @property
    def token_ids(self) -> list[int]:
        return [t.id for t in self.tokens]

    @classmethod
    def from_steps(
        cls, steps: list[StepEvent], speculative: bool, drafter: str, config: dict[str, object]
    ) -> RunResult:
        tokens = tuple(t for s in steps for t in s.tokens)
        last = steps[-1]
        return cls(
            text="".join(t.text for t in tokens),
            tokens=tokens,
            steps=tuple(steps),
            stats=last.stats,
            stop_reason=last.stop_reason or "cancelled",
            speculative=speculative,
            drafter=drafter,
            config=config,
        )
