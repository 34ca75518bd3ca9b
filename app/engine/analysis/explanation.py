"""Why a run was faster or slower than plain decoding, computed from its own step events.

Pure Python (no torch), so the GUI may import it. The model, per decode pass that verified
``m`` drafts (Leviathan et al. 2023, in units of one plain one-token target pass):

    α        acceptance α, per position: P(draft i accepted | drafts 1..i-1 accepted),
             fitted as accepted / (accepted + passes with a rejection)   (truncated-geometric MLE)
    E(α, m)  expected tokens from the pass = 1 + α + … + α^m = (1 − α^(m+1)) / (1 − α)
    c        cost of drafting one token ÷ plain pass     (all drafting time ÷ drafts)
    v(m)     cost of a target pass over m+1 tokens ÷ plain pass, fitted so that v(0) = 1 and
             v never decreases with m (a pass over more tokens does not cost less)
    predicted decode speed-up = Σ E(α, m_i) / Σ (m_i·c + v(m_i))  over the decode passes (the
             prefill pass, whose cost depends on the prompt, is left out); with one k for every
             pass this is E(α, k) / (k·c + v(k)).

Every pass is timed the same way, plain or not: its target time is ``verify_s`` (the target's
pass and what decides it), its drafting time ``draft_s``. The plain pass (the unit) is the
mean target time of one-token decode passes: the run's own passes that verified no draft when
it has a few (same run, same load), else the baseline's; v(m) is the mean target time of passes
with m drafts over it. Means, like the measured speed-up (a ratio of total times); the run's
own unit, because on a busy machine load drifting between two runs would otherwise make a
bigger pass look cheaper than a plain one.

Physics the curves obey (``what_if_curves``; tests hold them): with v ≥ 1 and c ≥ 0 no curve
beats 1× at α = 0, and a curve of k drafts never beats (k + 1) ÷ v(k).

The decode speed-up (``decode_speedup``) is the measured ratio of decode tokens per second
(prefill left out on both sides, like the model); the whole-run speed-up
(``whole_run_speedup``) includes the prompt's pass. Both are defined once, here, and checked
once (``measure_speedup``): above the run's ceiling (decode tokens ÷ decode passes) or across a
change of the machine's load between the arms, a measured figure is not presented as a result.

One model with the chooser: E(α, m), the acceptance evidence of a block and the fit of v(m)
are ``decoding/cost.py``'s (``expected_tokens``, ``acceptance_evidence``, ``monotone_fit``), so
the panel explains the decisions auto k took with the maths it took them with.
"""

from __future__ import annotations

import math
import statistics
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, replace
from typing import Literal

from app.engine.decoding.cost import acceptance_evidence, break_even_alpha, expected_tokens, monotone_fit
from app.engine.events import EARLIER, ArmConditions, RunResult, StepEvent
from app.engine.i18n import QT_TRANSLATE_NOOP

# E(α, m), the acceptance evidence and the fit of v(m) are the chooser's (decoding/cost.py), not copies

# server: an inference server ran the passes and does not report what each cost
PlainCostSource = Literal["baseline", "own_plain_steps", "unknown", "server"]
Cause = Literal["acceptance", "draft", "verify"]
RunKind = Literal["speculative", "baseline"]
CurveKind = Literal["fixed_k", "this_run"]
MeasuredOn = Literal["these_runs", "reruns"]

WHAT_IF_KS = (1, 2, 4, 8)
WHAT_IF_POINTS = 51  # α = 0, 0.02, …, 1
DECODE_SPEEDUP_BASIS = "decode tokens per second (prefill pass left out), with ÷ without speculation"
WHOLE_RUN_SPEEDUP_BASIS = "tokens per second over the whole run (prefill pass included), with ÷ without"


# --- the data -------------------------------------------------------------------------------


@dataclass(frozen=True)
class PositionAcceptance:
    """Draft position ``position`` (1 = first draft of a pass) over every target pass."""

    position: int
    proposed: int  # passes that proposed a draft here
    reached: int  # … and accepted every draft before it (so this one was judged)
    accepted: int

    @property
    def rate_of_proposed(self) -> float | None:
        """Drafts accepted here ÷ drafts proposed here (None: none was). Over all positions,
        Σ accepted ÷ Σ proposed is the run's ``drafts_accepted_share``."""
        return self.accepted / self.proposed if self.proposed else None

    @property
    def rate_of_reached(self) -> float | None:
        """Drafts accepted here ÷ drafts judged here (None: no pass got this far, which is not
        a rejection: the position was never used)."""
        return self.accepted / self.reached if self.reached else None

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
    mean_s: float  # their mean target time (verify_s)
    ratio: float | None  # measured: mean_s ÷ plain pass; None when the plain cost is unknown
    fitted: float | None = None  # v(drafts): the monotone fit (≥ 1, never decreasing with drafts)

    @property
    def tokens(self) -> int:
        return self.drafts + 1

    def to_dict(self) -> dict[str, object]:
        return {**asdict(self), "tokens": self.tokens}


@dataclass(frozen=True)
class WhatIfCurve:
    """Predicted decode speed-up against α at the fitted costs: "fixed_k", every pass drafting
    k (at c and v(k)); or "this_run", the run's own mix of draft lengths (only when the lengths
    varied; else it is the fixed-k curve of ``k_used``)."""

    kind: CurveKind
    k: int  # for "this_run": the k used most
    verify_cost_ratio: float | None  # v(k); None for "this_run"
    estimated: bool  # v(k) interpolated between measured pass sizes, not measured
    alphas: tuple[float, ...]
    speedups: tuple[float, ...]
    ceiling: float  # the most it can reach: (k + 1) ÷ v(k) ("this_run": Σ (m_i + 1) ÷ Σ v(m_i))

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
    alpha: float | None  # acceptance α, per position; None when no draft was judged
    drafts_accepted_share: float  # RunStats.drafts_accepted_share: drafts accepted ÷ proposed (0: none)
    tokens_per_pass: float  # RunStats.tokens_per_pass: new tokens ÷ target passes, prefill included
    acceptance_by_position: tuple[PositionAcceptance, ...]
    tokens_per_pass_histogram: tuple[tuple[int, int], ...]  # (tokens from a pass, passes)
    plain_pass_s: float | None
    plain_cost_source: PlainCostSource
    draft_cost_ratio: float | None  # c
    verify_cost_by_tokens: tuple[VerifyCost, ...]
    k_used: int  # drafts verified by most drafting decode passes (0: none drafted)
    verify_cost_ratio: float | None  # fitted v(k_used)
    predicted_decode_speedup: float | None  # Σ E(α, m_i) / Σ (m_i·c + v(m_i)), fitted costs
    formula_speedup: float | None  # E(α, k_used) / (k_used·c + v(k_used)), as if every pass drafted k_used
    decode_speedup: float | None  # measured: decode tokens/s ÷ the baseline's
    whole_run_speedup: float | None  # measured: tokens/s over the whole runs, prefill included
    cause: Cause | None  # what held the speed-up back most (see ``_cause``)
    what_if: tuple[WhatIfCurve, ...]
    timeline: tuple[PassBar, ...]
    has_steps: bool  # False for a run without its passes (an answer saved before they were kept)
    summary: str = ""
    accepted_drafts: int = 0  # draft tokens the target kept
    accepted_from_earlier: int = 0  # … of them copied from an earlier conversation (the suffix index)
    not_drafted: NotDrafted | None = None  # decode passes where auto k chose to verify no draft, and why
    server_drafts: tuple[int, int] | None = None  # a server's run: (drafts accepted, proposed), its counts
    measured: MeasuredSpeedup | None = None  # the measured speed-ups and whether they can be presented
    # which runs ``decode_speedup`` divides: "these_runs" (this run ÷ the baseline), or "reruns"
    # (a comparison's fresh reruns of this answer, with ÷ without speculation)
    measured_on: MeasuredOn = "these_runs"
    chooser_predicted: float | None = None  # auto k's own predicted gain, mean over the passes it chose
    # the acceptance α at which k_used drafts at this run's c and v(k_used) would only break even
    break_even_alpha: float | None = None
    # of the decode passes that verified a draft model's drafts, the share whose drafts were made
    # while the target verified the block before (their cost overlapped; None: no draft model drafted)
    drafted_ahead_share: float | None = None
    # the answer's drafting measured slower than plain steps, so it took plain steps for a while (``cost.AnswerLedger``)
    fell_back: FellBack | None = None
    # a draft model's pass ÷ a plain pass (``draft_pass_cost``); c is per draft verified, lookup's free ones included
    draft_pass_ratio: float | None = None

    def to_dict(self) -> dict[str, object]:
        return {
            "alpha": self.alpha,
            "drafts_accepted_share": self.drafts_accepted_share,
            "tokens_per_pass": self.tokens_per_pass,
            "draft_cost_ratio": self.draft_cost_ratio,
            "draft_pass_ratio": self.draft_pass_ratio,
            "verify_cost_ratio": self.verify_cost_ratio,
            "k_used": self.k_used,
            "predicted_decode_speedup": self.predicted_decode_speedup,
            "formula_speedup": self.formula_speedup,
            "decode_speedup": self.decode_speedup,
            "decode_speedup_basis": DECODE_SPEEDUP_BASIS,
            "decode_speedup_problem": None if self.measured is None else self.measured.problem,
            "speedup_ceiling": None if self.measured is None else self.measured.ceiling,
            "measured_on": self.measured_on,
            "chooser_predicted": self.chooser_predicted,
            "break_even_alpha": self.break_even_alpha,
            "drafted_ahead_share": self.drafted_ahead_share,
            "whole_run_speedup": self.whole_run_speedup,
            "whole_run_speedup_basis": WHOLE_RUN_SPEEDUP_BASIS,
            "plain_pass_s": self.plain_pass_s,
            "plain_cost_source": self.plain_cost_source,
            "cause": self.cause,
            "summary": self.summary,
            "accepted_drafts": self.accepted_drafts,
            "accepted_from_earlier": self.accepted_from_earlier,
            "not_drafted": None if self.not_drafted is None else asdict(self.not_drafted),
            "fell_back": None if self.fell_back is None else asdict(self.fell_back),
            "acceptance_by_position": [p.to_dict() for p in self.acceptance_by_position],
            "tokens_per_pass_histogram": [
                {"tokens": t, "passes": n} for t, n in self.tokens_per_pass_histogram
            ],
            "verify_cost_by_tokens": [v.to_dict() for v in self.verify_cost_by_tokens],
            "what_if": [w.to_dict() for w in self.what_if],
            "timeline": [b.to_dict() for b in self.timeline],
        }


# --- the maths ------------------------------------------------------------------------------


def formula_speedup(alpha: float, k: int, c: float, v: float) -> float:
    """E(α, k) / (k·c + v(k)): speed-up over plain decoding with k drafts every pass."""
    cost = k * c + v
    return expected_tokens(alpha, k) / cost if cost > 0 else 0.0


def _passes(run: RunResult) -> list[StepEvent]:
    """Real target passes (a cancelled run ends with an event that ran none)."""
    return [s for s in run.steps if s.tokens or s.rejected]


def _is_decode(step: StepEvent) -> bool:
    """A decode pass: not the prompt's (nor, in an answer continued after a stop, the
    continuation's own prompt pass)."""
    return step.index > 0 and step.target_kind != "prefill"


def _decode(run: RunResult) -> list[StepEvent]:
    """The decode passes: every real pass but the prompt's."""
    return [s for s in _passes(run) if _is_decode(s)]


def _drafts(step: StepEvent) -> int:
    return step.drafted  # a server's rejected drafts count without their ids


def _judged(steps: Sequence[StepEvent]) -> list[StepEvent]:
    """Passes whose drafts are known: not a server's tokens of unknown source."""
    return [s for s in steps if s.target_kind != "unknown"]


def _step_s(step: StepEvent) -> float:
    return step.draft_s + step.verify_s


def _ratio(a: float, b: float) -> float | None:
    return a / b if b > 0 and a >= 0 else None


# --- the measured speed-ups: one definition each, for every front ------------------------------


def decode_tokens_per_s(run: RunResult) -> float | None:
    """Decode-phase tokens per second: the tokens of the decode passes over their time (the
    prompt's pass, its tokens and its time, left out). None without passes."""
    decode = _decode(run)
    seconds = sum(_step_s(s) for s in decode)
    return _ratio(sum(len(s.tokens) for s in decode), seconds) if decode else None


def decode_speedup(speculative: RunResult, baseline: RunResult) -> float | None:
    """The decode speed-up: decode tokens per second with speculation ÷ without. None when
    either is unknown (no decode passes)."""
    spec, base = decode_tokens_per_s(speculative), decode_tokens_per_s(baseline)
    return _ratio(spec, base) if spec is not None and base is not None else None


SpeedProblem = Literal["above_ceiling", "load_changed"]
# A plain pass timed before each arm: a ratio outside [1/PLAIN_DRIFT, PLAIN_DRIFT] means the
# machine ran the arms under different load (on a busy 2-core machine the same pass measured
# 0.92x to 1.16x of itself from one minute to the next).
PLAIN_DRIFT = 1.15
LOAD_CHANGE_CORES = 0.5  # other processes' busy cores beyond ours, changed by this much


@dataclass(frozen=True)
class MeasuredSpeedup:
    """The decode speed-up measured by running one conversation with and without speculation:
    the one figure Compare's headline, its table and both Why panels show for that pair of
    runs. ``problem``: why it is not presented as a result (then the fronts say why instead)."""

    value: float | None  # decode tokens/s with ÷ without speculation (``decode_speedup``)
    whole_run: float | None  # tokens/s over the whole runs, prefill included
    ceiling: float | None  # the speculative run's decode tokens ÷ decode passes (see ``speedup_ceiling``)
    plain_drift: float | None  # plain pass before the speculative arm ÷ before the plain arm (1: same load)
    load: tuple[float | None, float | None] = (None, None)  # other processes' busy cores, per arm
    problem: SpeedProblem | None = None
    # the speculative run's own one-token passes ÷ the plain run's (the plain step measured
    # inside both runs; None when the speculative run has too few)
    own_plain_drift: float | None = None

    @property
    def shown(self) -> float | None:
        """The figure to present: None when it is unknown or not comparable."""
        return self.value if self.problem is None else None

    def to_dict(self) -> dict[str, object]:
        return {**asdict(self), "load": list(self.load), "shown": self.shown}


def speedup_ceiling(run: RunResult) -> float | None:
    """The most a decode speed-up of ``run`` can measure: its decode tokens ÷ its decode passes.
    A pass costs at least a plain one (v ≥ 1, c ≥ 0) and a plain pass yields one token, so under
    like conditions the ratio cannot exceed the tokens each pass yielded."""
    decode = _decode(run)
    return _ratio(sum(len(s.tokens) for s in decode), len(decode)) if decode else None


def measure_speedup(
    speculative: RunResult,
    baseline: RunResult,
    conditions: tuple[ArmConditions, ArmConditions] | None = None,
) -> MeasuredSpeedup:
    """The measured decode speed-up of a pair of runs, checked against physics and against the
    conditions each arm ran under (``conditions``: speculative, baseline). It is not presented
    (``problem``) when it exceeds ``speedup_ceiling`` (the runs cannot have run under like
    conditions), or when a plain pass timed before each arm, or the load of other processes,
    says the machine changed between the arms."""
    value, ceiling = decode_speedup(speculative, baseline), speedup_ceiling(speculative)
    spec, base = conditions or (ArmConditions(), ArmConditions())
    drift = _ratio(spec.plain_pass_s or 0.0, base.plain_pass_s or 0.0) if spec.plain_pass_s else None
    own = _own_plain_drift(speculative, baseline)
    problem: SpeedProblem | None = None
    busy = (spec.contention(), base.contention())
    if any(d is not None and not 1 / PLAIN_DRIFT <= d <= PLAIN_DRIFT for d in (drift, own)):
        problem = "load_changed"
    elif busy[0] is not None and busy[1] is not None and abs(busy[0] - busy[1]) >= LOAD_CHANGE_CORES:
        problem = "load_changed"
    elif value is not None and ceiling is not None and value > ceiling * (1 + 1e-9):
        problem = "above_ceiling"
    return MeasuredSpeedup(
        value,
        whole_run_speedup(speculative, baseline),
        ceiling,
        drift,
        (spec.other_load, base.other_load),
        problem,
        own,
    )


def _own_plain_drift(speculative: RunResult, baseline: RunResult) -> float | None:
    """Mean one-token decode pass of the speculative run ÷ of the plain run: the same step,
    timed inside both runs (None unless the speculative run has ``MIN_OWN_PLAIN_PASSES``)."""
    own = [s.verify_s for s in _decode(speculative) if _drafts(s) == 0 and s.verify_s > 0]
    theirs = [s.verify_s for s in _decode(baseline) if s.verify_s > 0]
    if len(own) < MIN_OWN_PLAIN_PASSES or not theirs:
        return None
    return _ratio(statistics.fmean(own), statistics.fmean(theirs))


def whole_run_speedup(speculative: RunResult, baseline: RunResult) -> float | None:
    """The whole-run speed-up: tokens per second over the whole run (the prompt's pass
    included) with speculation ÷ without. None when either is unknown."""
    spec, base = speculative.stats.tokens_per_s, baseline.stats.tokens_per_s
    return _ratio(spec, base) if spec > 0 else None


# --- acceptance -------------------------------------------------------------------------------


def fit_acceptance(steps: Sequence[StepEvent]) -> float | None:
    """α = accepted / (accepted + first rejections), the chooser's own estimator without its
    prior (``acceptance_evidence``): each pass tells n successes, then one failure if a draft
    was rejected (drafts after it were never judged)."""
    evidence = [acceptance_evidence(_drafts(s), len(s.accepted)) for s in steps]
    successes, trials = sum(e[0] for e in evidence), sum(e[1] for e in evidence)
    return successes / trials if trials else None


def alpha_of(run: RunResult) -> float | None:
    """The run's acceptance α (``fit_acceptance`` over its passes)."""
    return fit_acceptance(_judged(_passes(run)))


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


# --- costs ------------------------------------------------------------------------------------


MIN_OWN_PLAIN_PASSES = 3  # the run's own plain passes that make a unit without the baseline's


def plain_pass_cost(
    speculative: Sequence[StepEvent], baseline: RunResult | None
) -> tuple[float | None, PlainCostSource]:
    """Seconds of one plain one-token pass, measured like every other pass: the mean target
    time (``verify_s``) of one-token decode passes. From the run's own passes that verified no
    draft when it has ``MIN_OWN_PLAIN_PASSES`` of them — timed under the same load as the passes
    they are the unit of (a comparison's plain arm runs later; on a busy machine the same
    one-token pass measured 0.92× to 1.16× of it) — else from the baseline's decode passes.
    ``speculative``: the run's decode passes."""
    own = [s.verify_s for s in speculative if _drafts(s) == 0 and s.verify_s > 0]
    theirs = [s.verify_s for s in _decode(baseline) if s.verify_s > 0] if baseline is not None else []
    if len(own) >= MIN_OWN_PLAIN_PASSES or (own and not theirs):
        return statistics.fmean(own), "own_plain_steps"
    if theirs:
        return statistics.fmean(theirs), "baseline"
    return None, "unknown"


def verify_costs(decode: Sequence[StepEvent], plain_s: float | None) -> tuple[VerifyCost, ...]:
    """Per pass size: the mean target time, its ratio to a plain pass, and the fitted v."""
    by_drafts: dict[int, list[float]] = {}
    for s in decode:
        by_drafts.setdefault(_drafts(s), []).append(s.verify_s)
    measured = {
        m: (statistics.fmean(times), len(times)) for m, times in sorted(by_drafts.items())
    }
    ratios = {m: _ratio(mean, plain_s or 0.0) for m, (mean, _n) in measured.items()}
    fitted = monotone_fit(
        {m: (r, float(measured[m][1])) for m, r in ratios.items() if m > 0 and r is not None}, floor=1.0
    )
    if plain_s is not None and 0 in measured:
        fitted[0] = 1.0
    return tuple(
        VerifyCost(m, n, mean, ratios[m], fitted.get(m)) for m, (mean, n) in measured.items()
    )


def draft_cost(decode: Sequence[StepEvent], plain_s: float | None) -> float | None:
    """c: all drafting time of the decode passes ÷ the drafts they verified ÷ a plain pass."""
    drafted = sum(_drafts(s) for s in decode)
    if not drafted or plain_s is None:
        return None
    return _ratio(max(0.0, sum(s.draft_s for s in decode if _drafts(s) > 0)) / drafted, plain_s)


def draft_pass_cost(decode: Sequence[StepEvent], plain_s: float | None) -> float | None:
    """A draft model's pass ÷ a plain pass: the median, over the decode passes that verified drafts
    a draft model made in turn, of their drafting seconds ÷ their draft passes (a step's first pass
    feeds what the model has not seen of the last block: the target's token, or a kept draft and
    it). Not the steps that caught up first (``StepEvent.draft_caught_up``: the prompt, or what it
    missed; counted, a short answer's two model steps, one of them its catch-up on the prompt, had
    put a pass at 0.94 of a plain one on the real pair), nor drafts made ahead (``draft_s`` the wait
    for them). Unlike c (``draft_cost``), a free drafter's drafts (lookup, the suffix index) do not
    enter it: beside a draft model's blocks, c is the cost of a draft verified, below the model's
    pass wherever lookup's blocks were taken. None when no such pass, or no plain pass measured."""
    per_pass = [
        s.draft_s / s.draft_passes
        for s in decode
        if s.draft_passes > 0 and not s.drafted_ahead and not s.draft_caught_up and _drafts(s)
    ]
    if not per_pass or plain_s is None:
        return None
    return _ratio(statistics.median(per_pass), plain_s)


def _k_used(decode: Sequence[StepEvent]) -> int:
    """The number of drafts most drafting decode passes verified (ties: the larger)."""
    counts = Counter(_drafts(s) for s in decode if _drafts(s) > 0)
    return max(counts, key=lambda m: (counts[m], m)) if counts else 0


def _interpolate(v: dict[int, float], k: int) -> float | None:
    """v(k) between fitted pass sizes (v(0) = 1); never extrapolated. Between points of a
    non-decreasing fit the line does not decrease either."""
    known = {**v, 0: 1.0}
    if k in known:
        return known[k]
    below = max((m for m in known if m < k), default=None)
    above = min((m for m in known if m > k), default=None)
    if below is None or above is None:
        return None
    share = (k - below) / (above - below)
    return known[below] + share * (known[above] - known[below])


def pass_cost(drafts: int, c: float, v: dict[int, float]) -> float:
    """What one pass verifying ``drafts`` drafts costs in plain passes: m·c + v(m)."""
    return drafts * c + (_interpolate(v, drafts) or 1.0)


def run_speedup(alpha: float, drafts: Sequence[int], cost: float) -> float | None:
    """Σ E(α, m_i) / cost: the run's passes (m_i drafts each) at acceptance α, over their cost
    in plain passes."""
    return _ratio(sum(expected_tokens(alpha, m) for m in drafts), cost)


def what_if_curves(c: float, v: dict[int, float], k_used: int, drafts: Sequence[int]) -> tuple[WhatIfCurve, ...]:
    """The predicted decode speed-up against α, at the fitted costs (v ≥ 1, non-decreasing):
    so every curve is ≤ 1× at α = 0 and ≤ (k + 1) ÷ v(k) at α = 1."""
    alphas = tuple(i / (WHAT_IF_POINTS - 1) for i in range(WHAT_IF_POINTS))
    curves = []
    if any(m != k_used for m in drafts):
        cost = sum(pass_cost(m, c, v) for m in drafts)
        speedups = tuple(run_speedup(a, drafts, cost) or 0.0 for a in alphas)
        ceiling = sum(m + 1 for m in drafts) / sum(_interpolate(v, m) or 1.0 for m in drafts)
        curves.append(WhatIfCurve("this_run", k_used, None, False, alphas, speedups, ceiling))
    for k in sorted({k_used, *WHAT_IF_KS} - {0}):
        vk = _interpolate(v, k)
        if vk is None:
            continue
        speedups = tuple(formula_speedup(a, k, c, vk) for a in alphas)
        curves.append(WhatIfCurve("fixed_k", k, vk, k not in v, alphas, speedups, (k + 1) / vk))
    return tuple(curves)


NOTABLE_LOSS = math.log(1.05)  # a factor that costs under 5 % holds nothing back


def _cause(alpha: float, k: int, c: float, v: float) -> Cause | None:
    """What held the speed-up back most: of the ideal k + 1 tokens per plain step's time, the
    speed-up E(α, k) / (k·c + v) loses log((k + 1) / E) to rejected drafts, log v to the
    verify pass and log(1 + k·c / v) to drafting; the largest loss is named (a cost measured at
    0.00× is never it), none when every factor costs under 5 %."""
    losses: dict[Cause, float] = {
        "acceptance": math.log((k + 1) / expected_tokens(alpha, k)),
        "verify": math.log(max(v, 1.0)),
        "draft": math.log(1.0 + k * c / max(v, 1.0)),
    }
    cause = max(losses, key=lambda name: losses[name])
    return cause if losses[cause] >= NOTABLE_LOSS else None


def timeline(run: RunResult, kind: RunKind) -> tuple[PassBar, ...]:
    bars, start = [], 0.0
    for s in _passes(run):
        bars.append(PassBar(kind, s.index, start, s.draft_s, s.verify_s, len(s.tokens), _drafts(s)))
        start += _step_s(s)
    return tuple(bars)


def explain(
    speculative: RunResult,
    baseline: RunResult | None = None,
    measured: MeasuredSpeedup | None = None,
    measured_on: MeasuredOn = "these_runs",
) -> Explanation:
    """Explain ``speculative`` (any run, even one without drafts), against ``baseline`` (the
    same conversation without speculation) when there is one. ``measured``: the comparison's
    measured speed-up (default: ``measure_speedup(speculative, baseline)``); ``measured_on``:
    "reruns" when that comparison's runs were fresh reruns of ``speculative`` (an answer's Why
    shows its comparison's figure, never one dividing the answer by a later rerun)."""
    reruns = measured is not None and measured_on == "reruns"
    if measured is None and baseline is not None:
        measured = measure_speedup(speculative, baseline)
    passes = _passes(speculative)
    decode = [s for s in passes if _is_decode(s)]
    alpha = fit_acceptance(_judged(passes))
    from_server = speculative.made_by is not None and speculative.made_by.server is not None
    # a server's figures hold no pass costs: none are fitted from the client's clock
    plain_s, source = (None, "server") if from_server else plain_pass_cost(decode, baseline)
    costs = verify_costs(decode, plain_s)
    v = {row.drafts: row.fitted for row in costs if row.fitted is not None and row.drafts > 0}
    k = _k_used(decode)
    c = draft_cost(decode, plain_s)
    share = speculative.stats.drafts_accepted_share  # the run's own number (0 when none proposed)
    predicted = formula = None
    cause: Cause | None = None
    drafts = [_drafts(s) for s in decode]
    if plain_s is not None and decode:
        a = alpha if alpha is not None else 0.0
        cost = sum(pass_cost(m, c or 0.0, v) for m in drafts)  # = Σ (m_i·c + v(m_i)), fitted
        predicted = run_speedup(a, drafts, cost)
        if k > 0 and c is not None and k in v:
            formula = formula_speedup(a, k, c, v[k])
            cause = _cause(a, k, c, v[k])
    result = Explanation(
        alpha=alpha,
        drafts_accepted_share=share,
        tokens_per_pass=speculative.stats.tokens_per_pass,
        acceptance_by_position=acceptance_by_position(_judged(passes)),
        tokens_per_pass_histogram=tokens_histogram(_judged(passes)),
        plain_pass_s=plain_s,
        plain_cost_source=source,
        draft_cost_ratio=c,
        verify_cost_by_tokens=costs,
        k_used=k,
        verify_cost_ratio=v.get(k) if k else None,
        predicted_decode_speedup=predicted,
        formula_speedup=formula,
        decode_speedup=measured.value if measured is not None else None,
        whole_run_speedup=measured.whole_run if measured is not None else None,
        measured=measured,
        measured_on="reruns" if reruns else "these_runs",
        chooser_predicted=chooser_prediction(decode),
        cause=cause,
        what_if=what_if_curves(c, v, k, drafts) if c is not None and decode else (),
        timeline=timeline(speculative, "speculative") + (timeline(baseline, "baseline") if baseline else ()),
        has_steps=bool(passes),
        accepted_drafts=sum(t.source == "draft" for t in speculative.tokens),
        accepted_from_earlier=sum(t.source == "draft" and t.origin == EARLIER for t in speculative.tokens),
        not_drafted=not_drafted(decode),
        server_drafts=(speculative.stats.accepted, speculative.stats.proposed) if from_server else None,
        break_even_alpha=break_even_alpha(k, c, v[k]) if k > 0 and c is not None and k in v else None,
        drafted_ahead_share=drafted_ahead_share(decode),
        fell_back=fell_back(decode),
        draft_pass_ratio=draft_pass_cost(decode, plain_s),
    )
    return replace(result, summary=summary_sentence(result))


def drafted_ahead_share(decode: Sequence[StepEvent]) -> float | None:
    """Of the decode passes verifying a draft model's drafts, the share drafted ahead."""
    modelled = [s for s in decode if s.draft_passes > 0 and _drafts(s) > 0]
    return sum(s.drafted_ahead for s in modelled) / len(modelled) if modelled else None


def chooser_prediction(decode: Sequence[StepEvent]) -> float | None:
    """Auto k's own predicted decode speed-up: the mean of the gains it predicted for the
    passes it chose (its acceptance estimate, its measured costs, the same E(α, k) and fit of
    v(m) as this panel). None when k was fixed."""
    predicted = [s.predicted_speedup for s in decode if s.decision is not None and s.predicted_speedup is not None]
    return statistics.fmean(predicted) if predicted else None


@dataclass(frozen=True)
class NotDrafted:
    """Decode passes where auto k chose k = 0, and the reason most of them had: ``gain_below_margin``
    (no k > 0 was predicted to pay: ``best_gain`` is the median of the best predicted gains,
    at the median acceptance ``alpha`` it assumed) or ``catch_up_not_repaid``."""

    passes: int
    of: int  # decode passes with a recorded decision
    reason: str
    best_gain: float
    alpha: float
    best_k: int = 0  # the best k > 0 it considered (the most common)
    pass_cost: float = 1.0  # the chooser's measured v of that pass (median), × a plain pass


def not_drafted(decode: Sequence[StepEvent]) -> NotDrafted | None:
    """None when auto k made no decision (a fixed k) or drafted on every pass it decided."""
    decided = [s.decision for s in decode if s.decision is not None]
    plain = [d for d in decided if d.k == 0 and d.reason in ("gain_below_margin", "catch_up_not_repaid")]
    if not plain:
        return None
    reasons = [d.reason for d in plain]
    reason = max(set(reasons), key=lambda r: (reasons.count(r), r))
    return NotDrafted(
        len(plain),
        len(decided),
        reason,
        statistics.median(d.best_gain for d in plain),
        statistics.median(d.alpha for d in plain),
        max({d.best_k for d in plain}, key=lambda k: ([d.best_k for d in plain].count(k), k)),
        statistics.median(d.pass_cost for d in plain),
    )


@dataclass(frozen=True)
class FellBack:
    """An answer whose own drafting passes measured slower than plain steps, so that auto k took
    plain steps for a while (``cost.AnswerLedger``): what the drafting passes had measured when it
    first did, and how many passes were plain steps for it."""

    drafted: int  # decode passes that verified drafts before it first fell back
    passes: int  # decode passes it made plain steps
    of: int  # decode passes in all
    realized: float  # the drafting passes' speed ÷ plain decoding's, when it first fell back (< 1)
    alpha: float  # their drafts' acceptance α


def fell_back(decode: Sequence[StepEvent]) -> FellBack | None:
    """None unless auto k took plain steps in the answer because its drafting had measured slower."""
    stops = [i for i, s in enumerate(decode) if s.decision is not None and s.decision.reason == "slower_in_answer"]
    if not stops:
        return None
    decision = decode[stops[0]].decision
    assert decision is not None and decision.realized is not None  # decode sets both
    drafted = sum(1 for s in decode[: stops[0]] if _drafts(s) > 0)
    return FellBack(drafted, len(stops), len(decode), decision.realized, decision.alpha)


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
    "This answer was saved without its passes (by an older version): run a comparison to explain it.",
)
NO_DRAFTS = QT_TRANSLATE_NOOP(
    "Explanation",
    "No draft was checked in this run, so every target pass produced one token and speculation could not help.",
)
AGREED = QT_TRANSLATE_NOOP(
    "Explanation",
    "The target agreed with the draft at {alpha} of the positions it checked (acceptance α; "
    "{tokens} tokens per target pass)",
)
COSTS = QT_TRANSLATE_NOOP(
    "Explanation", "a pass checking {k} drafts cost {verify} a plain step, and drafting them {draft}"
)
COSTS_ONE = QT_TRANSLATE_NOOP(
    "Explanation", "a pass checking one draft cost {verify} a plain step, and drafting it {draft}"
)
UNKNOWN_COST = QT_TRANSLATE_NOOP("Explanation", "run a comparison to measure what a plain step costs")
SERVER_COST = QT_TRANSLATE_NOOP(
    "Explanation", "the server does not report what its passes cost, so no cost or predicted speed-up is shown"
)
SERVER_DRAFTS = QT_TRANSLATE_NOOP(
    "Explanation",
    "The server accepted {accepted} of the {proposed} drafts it proposed ({share}; {tokens} tokens per "
    "target pass); its stream did not say at which positions, so no acceptance α is shown",
)
OUTCOMES = {
    (True, True): QT_TRANSLATE_NOOP("Explanation", "so the measured decode speed-up was {ratio}"),
    (True, False): QT_TRANSLATE_NOOP("Explanation", "so the measured decode speed-up was only {ratio}"),
    (False, True): QT_TRANSLATE_NOOP("Explanation", "so the predicted decode speed-up is {ratio}"),
    (False, False): QT_TRANSLATE_NOOP("Explanation", "so the predicted decode speed-up is only {ratio}"),
}
RERUN_OUTCOMES = {  # the measured figure of a comparison that reran this answer (Why on an answer)
    True: QT_TRANSLATE_NOOP("Explanation", "so the decode speed-up Compare measured on fresh reruns was {ratio}"),
    False: QT_TRANSLATE_NOOP(
        "Explanation", "so the decode speed-up Compare measured on fresh reruns was only {ratio}"
    ),
}
CAUSES = {
    "acceptance": QT_TRANSLATE_NOOP("Explanation", "held back most by the drafts the target rejected"),
    "draft": QT_TRANSLATE_NOOP("Explanation", "held back most by the cost of drafting"),
    "verify": QT_TRANSLATE_NOOP(
        "Explanation", "held back most by the cost of verifying several tokens at once"
    ),
}


NOT_PRESENTED = {
    "load_changed": QT_TRANSLATE_NOOP(
        "Explanation",
        "The measured decode speed-up ({ratio}) is not a result: the machine's load changed between the "
        "runs with and without speculation.",
    ),
    "above_ceiling": QT_TRANSLATE_NOOP(
        "Explanation",
        "The measured decode speed-up ({ratio}) is not a result: it is above the {ceiling} these passes "
        "allow (tokens per pass, each pass costing at least a plain one), so the runs did not run under "
        "like conditions.",
    ),
}

NOT_DRAFTED = {
    "gain_below_margin": QT_TRANSLATE_NOOP(
        "Explanation",
        "Auto k chose not to draft in {count} of {total} passes: no number of drafts was predicted "
        "to gain 3 % (the best: {gain} with {k} drafts, at an assumed acceptance of {alpha} and a pass "
        "over them measured at {v} a plain step).",
    ),
    "catch_up_not_repaid": QT_TRANSLATE_NOOP(
        "Explanation",
        "Auto k chose not to draft in {count} of {total} passes: the draft model would first have had "
        "to read the whole prompt, which the rest of this answer could not repay.",
    ),
}

FELL_BACK = QT_TRANSLATE_NOOP(
    "Explanation",
    "Drafting measured slower than plain steps in this answer: its first {drafted} passes with drafts ran "
    "at {realized} their speed (acceptance {alpha}), so {count} of its {total} passes were plain steps.",
)

FROM_EARLIER = QT_TRANSLATE_NOOP(
    "Explanation", "{count} of the {total} accepted drafts came from an earlier conversation."
)


def _identity(text: str) -> str:
    return text


DRAFT_COST = QT_TRANSLATE_NOOP(
    "Explanation",
    "Drafting cost {c} of a plain target pass a draft verified, on the answer's clock (a draft model's "
    "pass: {pass_cost}; {ahead} of the drafting passes drafted while the target verified the block "
    "before); at that cost {k} drafts a pass break even at an acceptance of {alpha}.",
)
DRAFT_COST_UNREPAID = QT_TRANSLATE_NOOP(
    "Explanation",
    "Drafting cost {c} of a plain target pass a draft verified, on the answer's clock (a draft model's "
    "pass: {pass_cost}; {ahead} of the drafting passes drafted while the target verified the block "
    "before); at that cost {k} drafts a pass cannot break even, whatever the acceptance.",
)
NO_DRAFTS_USED = {
    "gain_below_margin": QT_TRANSLATE_NOOP(
        "Explanation",
        "No drafts used: plain steps only, because auto k predicted no gain from drafting (the best: "
        "{gain} with {k} drafts, at an assumed acceptance of {alpha}, a draft step costing {c} of a plain pass).",
    ),
    "catch_up_not_repaid": QT_TRANSLATE_NOOP(
        "Explanation",
        "No drafts used: plain steps only, because the draft model would first have had to read the whole "
        "prompt, which this answer could not repay.",
    ),
    "nothing_to_propose": QT_TRANSLATE_NOOP(
        "Explanation",
        "No drafts used: plain steps only, because the drafter found nothing in the conversation to propose.",
    ),
}


MODEL_SAT_OUT = {
    "catch_up_not_repaid": QT_TRANSLATE_NOOP(
        "Explanation",
        "The draft model sat this answer out: it would first have had to read the whole prompt, which "
        "this answer could not repay. Lookup drafted alone.",
    ),
    "unrepaid": QT_TRANSLATE_NOOP(
        "Explanation",
        "The draft model sat this answer out: by this machine's recent steps a draft step would cost {c} "
        "of a plain target pass and a pass checking {n} tokens {v} plain passes, so no acceptance would "
        "repay it. Lookup drafted alone.",
    ),
    "below_break_even": QT_TRANSLATE_NOOP(
        "Explanation",
        "The draft model sat this answer out: by this machine's recent steps a draft step would cost {c} "
        "of a plain target pass and a pass checking {n} tokens {v} plain passes, so it would need {needed} "
        "of its drafts accepted to break even, and {alpha} are expected. Lookup drafted alone.",
    ),
}


def sat_out_note(run: RunResult, translate: Callable[[str], str] = _identity) -> str:
    """For an answer whose loaded draft model sat out (auto k chose lookup alone for it): the
    sentence saying so and why, from the plan that decided it ("" otherwise). Shown where the
    no-drafts note is."""
    plan = run.steps[0].model_sat_out if run.steps else None
    if plan is None:
        return ""
    if plan.reason == "catch_up_not_repaid":
        return translate(MODEL_SAT_OUT["catch_up_not_repaid"])
    if plan.best_k <= 0:
        return ""
    needed = break_even_alpha(plan.best_k, plan.draft_cost, plan.pass_cost)
    key = "unrepaid" if needed is None else "below_break_even"
    return translate(MODEL_SAT_OUT[key]).format(
        c=format_ratio(plan.draft_cost),
        n=plan.best_k + 1,  # the best k's drafts and the target's own token: never "1 drafts"
        v=format_ratio(plan.pass_cost),
        needed=format_percent(needed or 0.0),
        alpha=format_percent(plan.alpha),
    )


def no_drafts_note(run: RunResult, translate: Callable[[str], str] = _identity) -> str:
    """For an answer asked to speculate that verified no draft: the sentence saying so and why
    ("" otherwise, or when the run does not record why: a server's run, an answer from an old file).
    The CLI prints it under the answer's figures, the window under the answer."""
    if not run.config.get("speculative") or run.stats.proposed or (run.made_by and run.made_by.server):
        return ""
    decided = [s.decision for s in _passes(run) if s.decision is not None and s.decision.k == 0]
    if decided:
        reasons = [d.reason for d in decided]
        reason = max(set(reasons), key=lambda r: (reasons.count(r), r))
        if reason not in NO_DRAFTS_USED:
            return ""
        plain = [d for d in decided if d.reason == reason]
        return translate(NO_DRAFTS_USED[reason]).format(
            gain=format_ratio(statistics.median(d.best_gain for d in plain)),
            k=max({d.best_k for d in plain}, key=lambda k: ([d.best_k for d in plain].count(k), k)),
            alpha=format_percent(statistics.median(d.alpha for d in plain)),
            c=format_ratio(statistics.median(d.draft_cost for d in plain)),
        )
    if run.drafter != "none" and _passes(run):
        return translate(NO_DRAFTS_USED["nothing_to_propose"])
    return ""


def fell_back_sentence(fell: FellBack, translate: Callable[[str], str] = _identity) -> str:
    return translate(FELL_BACK).format(
        drafted=fell.drafted,
        realized=format_ratio(fell.realized),
        alpha=format_percent(fell.alpha),
        count=fell.passes,
        total=fell.of,
    )


def fell_back_note(run: RunResult, translate: Callable[[str], str] = _identity) -> str:
    """For an answer whose own drafting measured slower than plain steps, so that it took plain
    steps for a while: the sentence saying so ("" otherwise)."""
    fell = fell_back(_decode(run))
    return "" if fell is None else fell_back_sentence(fell, translate)


def drafting_notes(run: RunResult, translate: Callable[[str], str] = _identity) -> list[str]:
    """The sentences saying that no draft was used, that the draft model sat out, or that drafting
    stopped part-way because it measured slower, and why (``no_drafts_note``, ``sat_out_note``,
    ``fell_back_note``; none when none applies): what the CLI, the bench and the window print
    under an answer."""
    notes = (no_drafts_note(run, translate), sat_out_note(run, translate), fell_back_note(run, translate))
    return [note for note in notes if note]


def summary_sentence(e: Explanation, translate: Callable[[str], str] = _identity) -> str:
    """One plain sentence: what the draft achieved, what it cost, what came of it, and why;
    then, when some drafts were copied from an earlier conversation, how many.
    ``translate`` maps each English template (marked above) to the reader's language."""
    sentence = _main_sentence(e, translate)
    if e.not_drafted is not None:
        nd = e.not_drafted
        why = translate(NOT_DRAFTED[nd.reason]).format(
            count=nd.passes,
            total=nd.of,
            gain=format_ratio(nd.best_gain),
            alpha=format_percent(nd.alpha),
            k=nd.best_k,
            v=format_ratio(nd.pass_cost),
        )
        sentence = f"{sentence} {why}"
    if e.fell_back is not None:
        sentence = f"{sentence} {fell_back_sentence(e.fell_back, translate)}"
    if e.drafted_ahead_share is not None and e.draft_cost_ratio is not None and e.k_used:
        template = DRAFT_COST if e.break_even_alpha is not None else DRAFT_COST_UNREPAID
        cost = translate(template).format(
            c=format_ratio(e.draft_cost_ratio),
            pass_cost=format_ratio(e.draft_pass_ratio) if e.draft_pass_ratio is not None else "—",
            ahead=format_percent(e.drafted_ahead_share),
            k=e.k_used,
            alpha=format_percent(e.break_even_alpha or 0.0),
        )
        sentence = f"{sentence} {cost}"
    if e.accepted_from_earlier:
        earlier = translate(FROM_EARLIER).format(count=e.accepted_from_earlier, total=e.accepted_drafts)
        sentence = f"{sentence} {earlier}"
    return sentence


def _main_sentence(e: Explanation, translate: Callable[[str], str]) -> str:
    if not e.has_steps:
        return translate(NO_STEPS)
    if e.server_drafts is not None:
        return _server_sentence(e, translate)
    if e.alpha is None:
        return translate(NO_DRAFTS)
    agreed = translate(AGREED).format(alpha=format_percent(e.alpha), tokens=format_tokens(e.tokens_per_pass))
    shown = e.measured.shown if e.measured is not None else None
    measured = shown is not None
    speedup = shown if shown is not None else e.predicted_decode_speedup
    if e.verify_cost_ratio is None or e.draft_cost_ratio is None or speedup is None:
        unknown = SERVER_COST if e.plain_cost_source == "server" else UNKNOWN_COST
        return f"{agreed}; {translate(unknown)}."
    costs = translate(COSTS_ONE if e.k_used == 1 else COSTS).format(
        k=e.k_used,
        verify=format_ratio(e.verify_cost_ratio),
        draft=format_ratio(e.k_used * e.draft_cost_ratio),
    )
    reruns = measured and e.measured_on == "reruns"
    template = RERUN_OUTCOMES[speedup >= 1.0] if reruns else OUTCOMES[(measured, speedup >= 1.0)]
    outcome = translate(template).format(ratio=format_ratio(speedup))
    cause = f", {translate(CAUSES[e.cause])}" if e.cause is not None else ""
    sentence = f"{agreed}; {costs}, {outcome}{cause}."
    m = e.measured
    if m is not None and m.problem is not None and m.value is not None:
        note = translate(NOT_PRESENTED[m.problem]).format(
            ratio=format_ratio(m.value), ceiling=format_ratio(m.ceiling or 0.0)
        )
        sentence = f"{sentence} {note}"
    return sentence


def _server_sentence(e: Explanation, translate: Callable[[str], str]) -> str:
    """A server's run: its own counts (α where its stream said which tokens were drafts), no
    pass costs (it reports none), and the measured speed-up when there is a plain run."""
    accepted, proposed = e.server_drafts or (0, 0)
    if e.alpha is not None:
        said = translate(AGREED).format(alpha=format_percent(e.alpha), tokens=format_tokens(e.tokens_per_pass))
    elif proposed:
        said = translate(SERVER_DRAFTS).format(
            accepted=accepted, proposed=proposed, share=format_percent(e.drafts_accepted_share),
            tokens=format_tokens(e.tokens_per_pass),
        )
    else:
        return translate(NO_DRAFTS)
    if e.decode_speedup is None:
        return f"{said}; {translate(SERVER_COST)}."
    outcome = translate(OUTCOMES[(True, e.decode_speedup >= 1.0)]).format(ratio=format_ratio(e.decode_speedup))
    return f"{said}; {translate(SERVER_COST)}; {outcome}."
