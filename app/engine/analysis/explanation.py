"""Why a run was faster or slower than plain decoding, computed from its own step events.

Pure Python (no torch), so the GUI may import it. The model, per decode pass that verified
``m`` drafts (Leviathan et al. 2023, in units of one plain one-token target pass):

    α        per-position acceptance: P(draft i accepted | drafts 1..i-1 accepted),
             fitted as accepted / (accepted + first rejections)   (truncated-geometric MLE)
    E(α, m)  expected tokens from the pass = 1 + α + … + α^m = (1 − α^(m+1)) / (1 − α)
    c        cost of drafting one token ÷ plain pass     (all draft time ÷ drafts proposed)
    v(m)     cost of a target pass over m+1 tokens ÷ plain pass
    speed-up = Σ E(α, m_i) / Σ (m_i·c + v(m_i))  over the decode passes (the prefill pass,
             whose cost depends on the prompt, is left out); with one k for every pass this is
             E(α, k) / (k·c + v(k)).

The plain pass cost comes from the baseline run's decode passes, or, without one, from the
run's own passes that verified no draft. The measured speed-up is the ratio of decode-phase
tokens per second (prefill left out on both sides, like the model).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, replace
from typing import Literal

from app.engine.events import EARLIER, RunResult, StepEvent
from app.engine.i18n import QT_TRANSLATE_NOOP

PlainCostSource = Literal["baseline", "own_plain_steps", "unknown"]
Cause = Literal["acceptance", "draft", "verify"]
RunKind = Literal["speculative", "baseline"]
CurveKind = Literal["fixed_k", "this_run"]

WHAT_IF_KS = (1, 2, 4, 8)
WHAT_IF_POINTS = 51  # α = 0, 0.02, …, 1
MEASURED_BASIS = "decode tokens per second"


# --- the data -------------------------------------------------------------------------------


@dataclass(frozen=True)
class PositionAcceptance:
    """Draft position ``position`` (1 = first draft of a pass) over every target pass."""

    position: int
    proposed: int  # passes that proposed a draft here
    reached: int  # … and accepted every draft before it (so this one was judged)
    accepted: int

    @property
    def rate_of_proposed(self) -> float:
        return self.accepted / self.proposed if self.proposed else 0.0

    @property
    def rate_of_reached(self) -> float:
        return self.accepted / self.reached if self.reached else 0.0

    def to_dict(self) -> dict[str, object]:
        return {
            **asdict(self),
            "rate_of_proposed": self.rate_of_proposed,
            "rate_of_reached": self.rate_of_reached,
        }


@dataclass(frozen=True)
class VerifyCost:
    """Decode passes that verified ``drafts`` drafts, i.e. ran over ``drafts + 1`` tokens."""

    drafts: int
    passes: int
    mean_s: float
    ratio: float | None  # v(drafts): mean_s ÷ plain pass; None when the plain cost is unknown

    @property
    def tokens(self) -> int:
        return self.drafts + 1

    def to_dict(self) -> dict[str, object]:
        return {**asdict(self), "tokens": self.tokens}


@dataclass(frozen=True)
class WhatIfCurve:
    """Predicted speed-up against α at the measured costs: "fixed_k", every pass drafting k
    (at c and v(k)); or "this_run", the run's own mix of draft lengths and pass costs (only
    when the lengths varied; else it is the fixed-k curve of ``k_used``)."""

    kind: CurveKind
    k: int  # for "this_run": the k used most
    verify_cost_ratio: float | None  # v(k); None for "this_run"
    estimated: bool  # v(k) interpolated between measured pass sizes, not measured
    alphas: tuple[float, ...]
    speedups: tuple[float, ...]

    def to_dict(self) -> dict[str, object]:
        return asdict(self)


@dataclass(frozen=True)
class PassBar:
    """One target pass on the run's wall-clock axis (each run starts at 0)."""

    run: RunKind
    index: int
    start_s: float
    draft_s: float
    verify_s: float
    tokens: int
    drafts: int

    def to_dict(self) -> dict[str, object]:
        return asdict(self)


@dataclass(frozen=True)
class Explanation:
    acceptance_rate: float | None  # α; None when no draft was judged
    drafts_accepted_share: float | None  # accepted ÷ proposed (the stats line's "acceptance")
    mean_tokens_per_pass: float  # every target pass, prefill included (as the stats line)
    acceptance_by_position: tuple[PositionAcceptance, ...]
    tokens_per_pass_histogram: tuple[tuple[int, int], ...]  # (tokens from a pass, passes)
    plain_pass_s: float | None
    plain_cost_source: PlainCostSource
    draft_cost_ratio: float | None  # c
    verify_cost_by_tokens: tuple[VerifyCost, ...]
    k_used: int  # drafts verified by most drafting decode passes (0: none drafted)
    verify_cost_ratio: float | None  # v(k_used)
    predicted_speedup: float | None  # Σ E(α, m_i) / Σ (m_i·c + v(m_i))
    formula_speedup: float | None  # E(α, k_used) / (k_used·c + v(k_used)), as if every pass drafted k_used
    measured_speedup: float | None  # decode tokens/s ÷ the baseline's
    measured_speedup_total: float | None  # tokens/s over the whole runs, prefill included
    cause: Cause | None  # what held the speed-up back most (see ``_cause``)
    what_if: tuple[WhatIfCurve, ...]
    timeline: tuple[PassBar, ...]
    has_steps: bool  # False for answers restored from disk (their steps are not saved)
    summary: str = ""
    accepted_drafts: int = 0  # draft tokens the target kept
    accepted_from_earlier: int = 0  # … of them copied from an earlier conversation (the suffix index)

    def to_dict(self) -> dict[str, object]:
        return {
            "acceptance_rate": self.acceptance_rate,
            "drafts_accepted_share": self.drafts_accepted_share,
            "mean_tokens_per_pass": self.mean_tokens_per_pass,
            "draft_cost_ratio": self.draft_cost_ratio,
            "verify_cost_ratio": self.verify_cost_ratio,
            "k_used": self.k_used,
            "predicted_speedup": self.predicted_speedup,
            "formula_speedup": self.formula_speedup,
            "measured_speedup": self.measured_speedup,
            "measured_speedup_total": self.measured_speedup_total,
            "measured_speedup_basis": MEASURED_BASIS,
            "plain_pass_s": self.plain_pass_s,
            "plain_cost_source": self.plain_cost_source,
            "cause": self.cause,
            "summary": self.summary,
            "accepted_drafts": self.accepted_drafts,
            "accepted_from_earlier": self.accepted_from_earlier,
            "acceptance_by_position": [p.to_dict() for p in self.acceptance_by_position],
            "tokens_per_pass_histogram": [
                {"tokens": t, "passes": n} for t, n in self.tokens_per_pass_histogram
            ],
            "verify_cost_by_tokens": [v.to_dict() for v in self.verify_cost_by_tokens],
            "what_if": [w.to_dict() for w in self.what_if],
            "timeline": [b.to_dict() for b in self.timeline],
        }


# --- the maths ------------------------------------------------------------------------------


def expected_tokens(alpha: float, drafts: int) -> float:
    """E(α, m) = 1 + α + … + α^m = (1 − α^(m+1)) / (1 − α): tokens from one pass."""
    if alpha >= 1.0:
        return float(drafts + 1)
    return (1.0 - alpha ** (drafts + 1)) / (1.0 - alpha)


def formula_speedup(alpha: float, k: int, c: float, v: float) -> float:
    """E(α, k) / (k·c + v(k)): speed-up over plain decoding with k drafts every pass."""
    cost = k * c + v
    return expected_tokens(alpha, k) / cost if cost > 0 else 0.0


def _passes(run: RunResult) -> list[StepEvent]:
    """Real target passes (a cancelled run ends with an event that ran none)."""
    return [s for s in run.steps if s.tokens or s.rejected]


def _drafts(step: StepEvent) -> int:
    return len(step.accepted) + len(step.rejected)


def _step_s(step: StepEvent) -> float:
    return step.draft_s + step.verify_s


def _ratio(a: float, b: float) -> float | None:
    return a / b if b > 0 and a >= 0 else None


def fit_acceptance(steps: Sequence[StepEvent]) -> float | None:
    """α = accepted / (accepted + first rejections): each pass tells n successes, then one
    failure if a draft was rejected (drafts after it were never judged)."""
    accepted = sum(len(s.accepted) for s in steps)
    failures = sum(1 for s in steps if s.rejected)
    return accepted / (accepted + failures) if accepted + failures else None


def acceptance_by_position(steps: Sequence[StepEvent]) -> tuple[PositionAcceptance, ...]:
    longest = max((_drafts(s) for s in steps), default=0)
    rows = []
    for i in range(1, longest + 1):
        rows.append(
            PositionAcceptance(
                position=i,
                proposed=sum(1 for s in steps if _drafts(s) >= i),
                reached=sum(1 for s in steps if _drafts(s) >= i and len(s.accepted) >= i - 1),
                accepted=sum(1 for s in steps if len(s.accepted) >= i),
            )
        )
    return tuple(rows)


def tokens_histogram(steps: Sequence[StepEvent]) -> tuple[tuple[int, int], ...]:
    counts = Counter(len(s.tokens) for s in steps)
    most = max(counts, default=0)
    return tuple((n, counts.get(n, 0)) for n in range(1, most + 1))


def plain_pass_cost(
    speculative: Sequence[StepEvent], baseline: RunResult | None
) -> tuple[float | None, PlainCostSource]:
    """Seconds of one plain one-token pass: the baseline's decode passes, else the run's own
    decode passes that verified no draft (their verify time only; drafting was overhead)."""
    if baseline is not None:
        decode = [s for s in _passes(baseline) if s.index > 0]
        total = sum(_step_s(s) for s in decode)
        if decode and total > 0:
            return total / len(decode), "baseline"
    own = [s for s in speculative if _drafts(s) == 0]
    total = sum(s.verify_s for s in own)
    if own and total > 0:
        return total / len(own), "own_plain_steps"
    return None, "unknown"


def verify_costs(decode: Sequence[StepEvent], plain_s: float | None) -> tuple[VerifyCost, ...]:
    by_drafts: dict[int, list[float]] = {}
    for s in decode:
        by_drafts.setdefault(_drafts(s), []).append(s.verify_s)
    rows = []
    for m in sorted(by_drafts):
        mean = sum(by_drafts[m]) / len(by_drafts[m])
        rows.append(VerifyCost(m, len(by_drafts[m]), mean, _ratio(mean, plain_s or 0.0)))
    return tuple(rows)


def _k_used(decode: Sequence[StepEvent]) -> int:
    """The number of drafts most drafting decode passes verified (ties: the larger)."""
    counts = Counter(_drafts(s) for s in decode if _drafts(s) > 0)
    return max(counts, key=lambda m: (counts[m], m)) if counts else 0


def _interpolate(v: dict[int, float], k: int) -> float | None:
    """v(k) between measured pass sizes (v(0) = 1 unless measured); never extrapolated."""
    known = {0: 1.0, **v}
    if k in known:
        return known[k]
    below = max((m for m in known if m < k), default=None)
    above = min((m for m in known if m > k), default=None)
    if below is None or above is None:
        return None
    share = (k - below) / (above - below)
    return known[below] + share * (known[above] - known[below])


def run_speedup(alpha: float, drafts: Sequence[int], cost: float) -> float | None:
    """Σ E(α, m_i) / cost: the run's passes (m_i drafts each) at acceptance α, over their
    measured cost in plain passes."""
    return _ratio(sum(expected_tokens(alpha, m) for m in drafts), cost)


def what_if_curves(
    c: float, v: dict[int, float], k_used: int, drafts: Sequence[int], cost: float
) -> tuple[WhatIfCurve, ...]:
    alphas = tuple(i / (WHAT_IF_POINTS - 1) for i in range(WHAT_IF_POINTS))
    curves = []
    if any(m != k_used for m in drafts):
        speedups = tuple(run_speedup(a, drafts, cost) or 0.0 for a in alphas)
        curves.append(WhatIfCurve("this_run", k_used, None, False, alphas, speedups))
    for k in sorted({k_used, *WHAT_IF_KS} - {0}):
        vk = _interpolate(v, k)
        if vk is None:
            continue
        speedups = tuple(formula_speedup(a, k, c, vk) for a in alphas)
        curves.append(WhatIfCurve("fixed_k", k, vk, k not in v, alphas, speedups))
    return tuple(curves)


LOW_ACCEPTANCE = 0.5  # below this α the draft is poorly matched; above it, blame the costs


def _cause(alpha: float, share: float | None, k: int, c: float, v: float) -> Cause:
    """What held the speed-up back most. Low acceptance when it is low (α, or the share of all
    drafts accepted, below ``LOW_ACCEPTANCE``); otherwise the cost whose shortfall, halved,
    gains most: drafting c or the verify overhead v − 1 (86 % acceptance is never "low")."""
    if alpha < LOW_ACCEPTANCE or (share is not None and share < LOW_ACCEPTANCE):
        return "acceptance"
    draft = formula_speedup(alpha, k, c / 2, v)
    verify = formula_speedup(alpha, k, c, 1 + (v - 1) / 2 if v > 1 else v)
    return "draft" if draft >= verify else "verify"


def timeline(run: RunResult, kind: RunKind) -> tuple[PassBar, ...]:
    bars, start = [], 0.0
    for s in _passes(run):
        bars.append(PassBar(kind, s.index, start, s.draft_s, s.verify_s, len(s.tokens), _drafts(s)))
        start += _step_s(s)
    return tuple(bars)


def _decode_rate(run: RunResult) -> float | None:
    """Decode-phase tokens per second (tokens of the prefill pass and its time left out)."""
    decode = [s for s in _passes(run) if s.index > 0]
    seconds = sum(_step_s(s) for s in decode)
    return _ratio(sum(len(s.tokens) for s in decode), seconds) if decode else None


def measured_speedups(
    speculative: RunResult, baseline: RunResult | None
) -> tuple[float | None, float | None]:
    if baseline is None:
        return None, None
    spec, base = _decode_rate(speculative), _decode_rate(baseline)
    decode = _ratio(spec, base) if spec is not None and base is not None else None
    spec_total, base_total = speculative.stats.tokens_per_s, baseline.stats.tokens_per_s
    total = _ratio(spec_total, base_total) if spec_total > 0 else None
    return decode, total


def explain(speculative: RunResult, baseline: RunResult | None = None) -> Explanation:
    """Explain ``speculative`` (any run, even one without drafts), against ``baseline`` (the
    same conversation without speculation) when there is one."""
    passes = _passes(speculative)
    decode = [s for s in passes if s.index > 0]
    alpha = fit_acceptance(passes)
    proposed = sum(_drafts(s) for s in passes)
    plain_s, source = plain_pass_cost(decode, baseline)
    costs = verify_costs(decode, plain_s)
    v = {row.drafts: row.ratio for row in costs if row.ratio is not None}
    k = _k_used(decode)
    drafted = sum(_drafts(s) for s in decode)
    c = _ratio(sum(s.draft_s for s in decode) / drafted, plain_s or 0.0) if drafted else None

    share = sum(len(s.accepted) for s in passes) / proposed if proposed else None
    predicted = formula = None
    cause: Cause | None = None
    cost = 0.0
    if plain_s is not None and decode:
        a = alpha if alpha is not None else 0.0
        cost = sum(_step_s(s) for s in decode) / plain_s  # = Σ (m_i·c + v(m_i))
        predicted = run_speedup(a, [_drafts(s) for s in decode], cost)
        if k > 0 and c is not None and k in v:
            formula = formula_speedup(a, k, c, v[k])
            cause = _cause(a, share, k, c, v[k])
    measured, measured_total = measured_speedups(speculative, baseline)
    result = Explanation(
        acceptance_rate=alpha,
        drafts_accepted_share=share,
        mean_tokens_per_pass=sum(len(s.tokens) for s in passes) / len(passes) if passes else 0.0,
        acceptance_by_position=acceptance_by_position(passes),
        tokens_per_pass_histogram=tokens_histogram(passes),
        plain_pass_s=plain_s,
        plain_cost_source=source,
        draft_cost_ratio=c,
        verify_cost_by_tokens=costs,
        k_used=k,
        verify_cost_ratio=v.get(k) if k else None,
        predicted_speedup=predicted,
        formula_speedup=formula,
        measured_speedup=measured,
        measured_speedup_total=measured_total,
        cause=cause,
        what_if=what_if_curves(c, v, k, [_drafts(s) for s in decode], cost)
        if c is not None and cost > 0
        else (),
        timeline=timeline(speculative, "speculative") + (timeline(baseline, "baseline") if baseline else ()),
        has_steps=bool(passes),
        accepted_drafts=sum(t.source == "draft" for t in speculative.tokens),
        accepted_from_earlier=sum(t.source == "draft" and t.origin == EARLIER for t in speculative.tokens),
    )
    return replace(result, summary=summary_sentence(result))


# --- the sentence ---------------------------------------------------------------------------

# Formats shared with the GUI, so a number reads the same in the sentence and in the panel.


def format_percent(value: float) -> str:
    return f"{value:.0%}"


def format_ratio(value: float) -> str:
    return f"{value:.2f}×"


def format_tokens(value: float) -> str:
    return f"{value:.2f}"


NO_STEPS = QT_TRANSLATE_NOOP(
    "Explanation",
    "This answer's passes were not kept (it was restored from disk): run a comparison to explain it.",
)
NO_DRAFTS = QT_TRANSLATE_NOOP(
    "Explanation",
    "No draft was checked in this run, so every target pass produced one token and speculation could not help.",
)
AGREED = QT_TRANSLATE_NOOP(
    "Explanation",
    "The target agreed with the draft at {alpha} of the positions it checked ({tokens} tokens per pass)",
)
COSTS = QT_TRANSLATE_NOOP(
    "Explanation", "a pass checking {k} drafts cost {verify} a plain step, and drafting them {draft}"
)
COSTS_ONE = QT_TRANSLATE_NOOP(
    "Explanation", "a pass checking one draft cost {verify} a plain step, and drafting it {draft}"
)
UNKNOWN_COST = QT_TRANSLATE_NOOP("Explanation", "run a comparison to measure what a plain step costs")
OUTCOMES = {
    (True, True): QT_TRANSLATE_NOOP("Explanation", "so speculation gained {percent}"),
    (True, False): QT_TRANSLATE_NOOP("Explanation", "so speculation lost {percent}"),
    (False, True): QT_TRANSLATE_NOOP("Explanation", "so speculation should gain {percent}"),
    (False, False): QT_TRANSLATE_NOOP("Explanation", "so speculation should lose {percent}"),
}
CAUSES = {
    "acceptance": QT_TRANSLATE_NOOP("Explanation", "held back most by low acceptance"),
    "draft": QT_TRANSLATE_NOOP("Explanation", "held back most by the cost of drafting"),
    "verify": QT_TRANSLATE_NOOP(
        "Explanation", "held back most by the cost of verifying several tokens at once"
    ),
}


FROM_EARLIER = QT_TRANSLATE_NOOP(
    "Explanation", "{count} of the {total} accepted drafts came from an earlier conversation."
)


def _identity(text: str) -> str:
    return text


def summary_sentence(e: Explanation, translate: Callable[[str], str] = _identity) -> str:
    """One plain sentence: what the draft achieved, what it cost, what came of it, and why;
    then, when some drafts were copied from an earlier conversation, how many.
    ``translate`` maps each English template (marked above) to the reader's language."""
    sentence = _main_sentence(e, translate)
    if e.accepted_from_earlier:
        earlier = translate(FROM_EARLIER).format(count=e.accepted_from_earlier, total=e.accepted_drafts)
        sentence = f"{sentence} {earlier}"
    return sentence


def _main_sentence(e: Explanation, translate: Callable[[str], str]) -> str:
    if not e.has_steps:
        return translate(NO_STEPS)
    if e.acceptance_rate is None:
        return translate(NO_DRAFTS)
    agreed = translate(AGREED).format(
        alpha=format_percent(e.acceptance_rate), tokens=format_tokens(e.mean_tokens_per_pass)
    )
    speedup = e.measured_speedup if e.measured_speedup is not None else e.predicted_speedup
    if e.verify_cost_ratio is None or e.draft_cost_ratio is None or speedup is None:
        return f"{agreed}; {translate(UNKNOWN_COST)}."
    costs = translate(COSTS_ONE if e.k_used == 1 else COSTS).format(
        k=e.k_used,
        verify=format_ratio(e.verify_cost_ratio),
        draft=format_ratio(e.k_used * e.draft_cost_ratio),
    )
    outcome = translate(OUTCOMES[(e.measured_speedup is not None, speedup >= 1.0)]).format(
        percent=format_percent(abs(speedup - 1.0))
    )
    cause = f", {translate(CAUSES[e.cause])}" if e.cause is not None else ""
    return f"{agreed}; {costs}, {outcome}{cause}."
