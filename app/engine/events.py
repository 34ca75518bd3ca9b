"""What the engine reports: one ``StepEvent`` per target forward pass, then a ``RunResult``.

Events carry everything a view needs (ids, text pieces, provenance, probabilities, timings),
so the GUI, the CLI and the tests never look inside the engine.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field, fields
from typing import Any, ClassVar, Literal

# draft: a draft token the target accepted; target: the target's own token; unknown: a token
# from an inference server whose stream did not say which of the two it was (never guessed)
TokenSource = Literal["draft", "target", "unknown"]
UNKNOWN_SOURCE: TokenSource = "unknown"
# prefill: the first token, from the prompt's pass; plain: no drafter ran;
# correction: the target's token at the first rejected draft; bonus: all drafts accepted;
# unknown: tokens from a server that did not say how its passes split them (``StepEvent.unattributed``)
TargetKind = Literal["prefill", "plain", "correction", "bonus", "unknown"]
# where a draft token was copied from: this conversation (prompt lookup, or the suffix index
# matching it) or an earlier one (the suffix index); None: a draft model's guess, or no draft
TokenOrigin = Literal["conversation", "earlier"]
THIS_CONVERSATION: TokenOrigin = "conversation"
EARLIER: TokenOrigin = "earlier"
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
    top_logit: float | None = None  # target's top-1 logit there: sets the dtype's resolution of ``margin``
    origin: TokenOrigin | None = None  # a draft token: where it was copied from (None: a model / not a draft)

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "text": self.text,
            "source": self.source,
            "p_target": _finite(self.p_target),
            "p_draft": _finite(self.p_draft),
            "margin": _finite(self.margin),
            "top_logit": _finite(self.top_logit),
            "origin": self.origin,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> TokenInfo:
        values = _known(cls, data)  # files written before ``origin`` have none: None
        if values.get("origin") not in (None, THIS_CONVERSATION, EARLIER):
            values["origin"] = None
        if values.get("source") not in ("draft", "target", UNKNOWN_SOURCE):
            values["source"] = UNKNOWN_SOURCE  # a source this version does not know is not guessed
        return cls(**values)


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
    def drafts_accepted_share(self) -> float:
        """Drafts accepted ÷ drafts proposed (0 when none was proposed). Not the acceptance α of
        the explanation, which counts only the drafts the target judged."""
        return self.accepted / self.proposed if self.proposed else 0.0

    @property
    def tokens_per_pass(self) -> float:
        """Tokens per target pass: new tokens ÷ target passes, the prompt's pass included."""
        return self.new_tokens / self.target_passes if self.target_passes else 0.0

    @property
    def wall_s(self) -> float:
        """Seconds of the whole run: the prompt's pass and every decoding step."""
        return self.prefill_s + self.decode_s

    @property
    def tokens_per_s(self) -> float:
        return self.new_tokens / self.wall_s if self.wall_s > 0 else 0.0

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
            drafts_accepted_share=self.drafts_accepted_share,
            tokens_per_pass=self.tokens_per_pass,
            tokens_per_s=self.tokens_per_s,
            wall_s=self.wall_s,
        )
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RunStats:
        """The fields of ``to_dict`` (derived values are ignored: they are recomputed)."""
        return cls(**_known(cls, data))


@dataclass(frozen=True)
class ArmConditions:
    """What the machine was doing while one arm of a comparison ran (measured by the service)."""

    plain_pass_s: float | None = None  # a plain pass timed just before the arm (median of a few)
    other_load: float | None = None  # cores other processes kept busy during the arm (OtherLoad)
    threads: int = 1  # torch threads the arm ran on
    cores: int = 0  # the machine's cores (0: unknown)

    def contention(self) -> float | None:
        """Cores short for our threads while the arm ran (0: none)."""
        if self.other_load is None or self.cores <= 0:
            return None
        return max(0.0, self.other_load + self.threads - self.cores)


KReason = Literal["drafting", "gain_below_margin", "probe", "catch_up_not_repaid", "slower_in_answer"]


@dataclass(frozen=True)
class KDecision:
    """Why auto k verified ``k`` drafts this step (data for the Why panel; costs in units of
    one plain target pass). ``reason``: ``drafting`` (the best k pays), ``gain_below_margin``
    (no k > 0 was predicted to gain the chooser's margin: ``best_gain`` < 1.03),
    ``probe`` (one draft verified against the odds, to re-measure stale evidence),
    ``catch_up_not_repaid`` (a draft model would first have had to prefill the prompt),
    ``slower_in_answer`` (this answer's own drafting passes had measured slower than plain steps:
    ``realized``; plain steps for the rest of the answer)."""

    k: int
    reason: KReason
    alpha: float  # the per-draft acceptance it assumed
    best_k: int  # the best k > 0 it considered
    best_gain: float  # that k's predicted tokens per second over a plain step
    draft_cost: float  # one draft step ÷ a plain pass (0: the drafts were already made)
    pass_cost: float  # a pass verifying best_k drafts ÷ a plain pass
    # slower_in_answer: the answer's drafting passes until then, the plain steps their tokens would
    # have taken ÷ the time they took (``cost.AnswerLedger``; < 1: slower than plain decoding)
    realized: float | None = None

    def to_dict(self) -> dict[str, Any]:
        return {k: (_finite(v) if isinstance(v, float) else v) for k, v in asdict(self).items()}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> KDecision:
        return cls(**_known(cls, data))


@dataclass(frozen=True)
class StepEvent:
    """One target forward pass and what it decided.

    ``accepted`` are draft tokens the target agreed with, in order; ``target`` is the target's
    own token after them (None when the step stopped inside the accepted block, on EOS,
    max_new_tokens or a stop string); ``rejected`` are the draft tokens proposed after the last
    accepted one and thrown away. ``text`` is the concatenated pieces of accepted + target.

    From an inference server (``app.remote``): ``rejected_unseen`` counts rejected drafts the
    server counted but did not name (it never sends their ids); ``unattributed`` are tokens
    the server emitted without saying which were drafts (source ``"unknown"``, kind
    ``"unknown"``, possibly several passes: such an event is not one pass). A local run has
    neither.
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
    decision: KDecision | None = None  # why auto k chose ``k`` (None: k was fixed, or nothing to choose)
    rejected_unseen: int = 0  # rejected drafts a server counted without naming them
    unattributed: tuple[TokenInfo, ...] = ()  # a server's tokens of unknown source, after ``target``
    # the drafts were made while the target verified the previous block (their passes were not
    # on this step's clock: ``draft_s`` is only the wait for them)
    drafted_ahead: bool = False
    # the draft model's first pass this step fed what it had not seen beyond a block's leftovers (the
    # prompt, or tokens it missed while lookup drafted or plain steps ran): ``draft_s`` is mostly that
    # catch-up, not drafting (``decode.StepRecord.caught_up``)
    draft_caught_up: bool = False
    # on an answer's first event: the plan by which the loaded draft model sat the answer out
    # (auto k: it would not pay, or not repay reading the prompt) while lookup drafted alone
    model_sat_out: KDecision | None = None

    @property
    def tokens(self) -> tuple[TokenInfo, ...]:
        return self.accepted + ((self.target,) if self.target is not None else ()) + self.unattributed

    @property
    def drafted(self) -> int:
        """Drafts this pass verified: accepted, rejected and rejected without a name."""
        return len(self.accepted) + len(self.rejected) + self.rejected_unseen

    @property
    def any_rejected(self) -> bool:
        return bool(self.rejected) or self.rejected_unseen > 0

    @property
    def text(self) -> str:
        return "".join(t.text for t in self.tokens)

    def to_dict(self) -> dict[str, Any]:
        """Ids for the tokens (their details are in the run's token list), the rejected drafts
        in full (they appear nowhere else)."""
        return {
            "index": self.index,
            "accepted": [t.id for t in self.accepted],
            "rejected": [t.id for t in self.rejected],
            "rejected_tokens": [t.to_dict() for t in self.rejected],
            "target": None if self.target is None else self.target.id,
            "kind": self.target_kind,
            "k": self.k,
            "draft_passes": self.draft_passes,
            "drafted_ahead": self.drafted_ahead,
            "draft_caught_up": self.draft_caught_up,
            "draft_s": self.draft_s,
            "verify_s": self.verify_s,
            "predicted_speedup": _finite(self.predicted_speedup),
            "decision": None if self.decision is None else self.decision.to_dict(),
            "model_sat_out": None if self.model_sat_out is None else self.model_sat_out.to_dict(),
            "rejected_unseen": self.rejected_unseen,
            "unattributed": [t.id for t in self.unattributed],
            "stop_reason": self.stop_reason,
            "text": self.text,
            "stats": self.stats.to_dict(),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any], tokens: list[TokenInfo]) -> StepEvent:
        """``tokens``: this step's accepted tokens, its own token, then its unattributed ones,
        from the run's list."""
        n = len(data["accepted"])
        own = n + (data["target"] is not None)
        return cls(
            index=int(data["index"]),
            accepted=tuple(tokens[:n]),
            target=tokens[n] if data["target"] is not None else None,
            rejected=tuple(TokenInfo.from_dict(t) for t in data.get("rejected_tokens", [])),
            target_kind=data["kind"],
            k=int(data["k"]),
            draft_s=float(data["draft_s"]),
            verify_s=float(data["verify_s"]),
            stats=RunStats.from_dict(data["stats"]),
            stop_reason=data.get("stop_reason"),
            draft_passes=int(data.get("draft_passes", 0)),
            predicted_speedup=data.get("predicted_speedup"),
            decision=KDecision.from_dict(data["decision"]) if data.get("decision") else None,
            rejected_unseen=int(data.get("rejected_unseen", 0)),
            unattributed=tuple(tokens[own:]),
            drafted_ahead=bool(data.get("drafted_ahead", False)),
            draft_caught_up=bool(data.get("draft_caught_up", False)),
            model_sat_out=KDecision.from_dict(data["model_sat_out"]) if data.get("model_sat_out") else None,
        )


MIXED_SUFFIX = " + lookup"  # the draft model and lookup together: "draft model: NAME + lookup"


def _model_field(made_by: RunProvenance, name: str) -> object:
    value = getattr(made_by, name)
    return value.removesuffix(MIXED_SUFFIX) if name == "drafter" else value


@dataclass(frozen=True)
class RunProvenance:
    """What made a run: the models, how they were loaded, and the settings. Recorded with every
    run so that two runs are only compared as "the same models" when they were."""

    target: str  # the target's name
    drafter: str  # "draft model: NAME", "prompt lookup", "suffix index" or "none" (this run drafted nothing)
    dtype: str  # the target's weights form in dtype words: "float32", "bfloat16", "float16", "int8", "int4"
    device: str  # "cpu", "cuda:0", "mps"
    draft_dtype: str | None = None  # the draft model's, likewise; None without a draft model
    config: dict[str, Any] = field(default_factory=dict)  # GenerationConfig.to_dict()
    # an inference server that made the run: "llama.cpp b6550 at http://127.0.0.1:8080" (None: this computer)
    server: str | None = None
    # the longest context at which the target's verified block gives one-token decoding's
    # logits bit for bit (CpuKernels.exact_up_to): 0 none; None not recorded (older files)
    exact_context: int | None = None
    weights: str = ""  # the target's form as a label: "int4 (quantized by SpecChat) from bf16 · 0.1 GB"
    draft_weights: str | None = None  # the draft model's form as a label; None without a draft model
    # CPU threads the run computed on, all told (None: not recorded, or not the CPU), and whether
    # the draft model drafted ahead on one of them, the target verifying on the rest
    cpu_threads: int | None = None
    draft_on_own_thread: bool = False

    def exact_at(self, context: int) -> bool:
        """Whether a verified block was exact at ``context`` tokens: then greedy speculation
        cannot differ from target-only decoding, not even at a near tie."""
        return self.exact_context is not None and 0 < context <= self.exact_context

    # What must agree for two runs to come from the same models (the settings are the
    # caller's: a comparison reruns with the stored answer's own settings).
    MODEL_FIELDS: ClassVar[tuple[str, ...]] = ("target", "dtype", "device", "server")
    DRAFTER_FIELDS: ClassVar[tuple[str, ...]] = ("drafter", "draft_dtype")

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RunProvenance:
        values = _known(cls, data)
        values["config"] = dict(values.get("config") or {})
        return cls(**values)

    def differences(self, other: RunProvenance) -> tuple[str, ...]:
        """The fields (target, dtype, device, and for a run a draft model drafted, drafter and
        draft_dtype) in which ``other`` names different models than this one. A drafter is
        compared by its model: the draft model alone and with lookup beside it are one model;
        lookup alone (no draft model) is none."""
        names = self.MODEL_FIELDS + (self.DRAFTER_FIELDS if self.draft_dtype is not None else ())
        return tuple(n for n in names if _model_field(self, n) != _model_field(other, n))

    def describe(self) -> str:
        """ "SmolLM2 (int4 (quantized by SpecChat) from GGUF · 0.1 GB, cpu) + draft model: tiny (int8 …)";
        from a server: "SmolLM2 on llama.cpp b6550 at http://127.0.0.1:8080, drafting"."""
        if self.server:
            return f"{self.target} on {self.server}" + (", drafting" if self.drafter != "none" else "")
        made = f"{self.target} ({self.weights or self.dtype}, {self.device})"
        if self.drafter == "none":
            return made
        draft = self.draft_weights or self.draft_dtype
        return made + f" + {self.drafter}" + (f" ({draft})" if draft else "")


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
    made_by: RunProvenance | None = None  # None: not recorded (a run rebuilt from an old file)

    @property
    def token_ids(self) -> list[int]:
        return [t.id for t in self.tokens]

    def to_dict(self) -> dict[str, Any]:
        """The run as JSON (the CLI's output, a saved run): lossless through ``from_dict``."""
        return {
            "text": self.text,
            "tokens": [t.to_dict() for t in self.tokens],
            "steps": [s.to_dict() for s in self.steps],
            "stats": self.stats.to_dict(),
            "stop_reason": self.stop_reason,
            "speculative": self.speculative,
            "drafter": self.drafter,
            "target": None if self.made_by is None else self.made_by.target,
            "config": dict(self.config),
            "made_by": None if self.made_by is None else self.made_by.to_dict(),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RunResult:
        tokens = [TokenInfo.from_dict(t) for t in data["tokens"]]
        steps, used = [], 0
        for step in data["steps"]:
            n = len(step["accepted"]) + (step["target"] is not None) + len(step.get("unattributed", ()))
            steps.append(StepEvent.from_dict(step, tokens[used : used + n]))
            used += n
        made_by = data.get("made_by")
        return cls(
            text=data["text"],
            tokens=tuple(tokens),
            steps=tuple(steps),
            stats=RunStats.from_dict(data["stats"]),
            stop_reason=data["stop_reason"],
            speculative=bool(data["speculative"]),
            drafter=data["drafter"],
            config=dict(data.get("config") or {}),
            made_by=None if made_by is None else RunProvenance.from_dict(made_by),
        )

    @classmethod
    def from_steps(
        cls,
        steps: list[StepEvent],
        speculative: bool,
        drafter: str,
        config: dict[str, object],
        made_by: RunProvenance | None = None,
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
            made_by=made_by,
        )


def _finite(value: float | None) -> float | None:
    """JSON has no NaN or infinity: such a number is written as null."""
    return value if value is None or math.isfinite(value) else None


def _known(cls: type, data: dict[str, Any]) -> dict[str, Any]:
    names = {f.name for f in fields(cls)}
    return {k: v for k, v in data.items() if k in names}
