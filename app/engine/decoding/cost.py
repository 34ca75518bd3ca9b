"""How many drafts a step should verify: measured costs, estimated acceptance, one choice.

Torch-free on purpose (the explanation in the GUI can reuse the maths). The decode loop asks
``KChooser.choose`` once per step and reports back what the step cost and how many drafts
survived; the chooser lives on the ``Engine``, so what it learned carries over between answers.

With per-draft acceptance ``a`` (drafts accepted one after the other until the first
rejection, each with probability ``a``), verifying ``k`` drafts yields in expectation

    E(k) = 1 + a + ... + a^k = (1 - a^(k+1)) / (1 - a)        tokens per target pass

and costs ``k * d + V(k + 1)`` seconds: ``d`` one draft step, ``V(n)`` a target pass over
``n`` tokens. The chooser takes the ``k`` (0 = a plain step, ``E = 1``, cost ``V(1)``) with
the most tokens per second, and only leaves the plain step when the gain it predicts clears
a small margin, so measurement noise does not make speculation lose.

Lossless by construction: for a draft model ``k`` is fixed before drafting, from past steps
only; for prompt lookup, from the n-gram match length, which does not depend on the target's
distribution at the drafted positions. So which drafts are verified never depends on a sampled
draft token's own probability (the bias a confidence stop on the sampled token has under
standard sampling); the acceptance rule sees an ordinary, shorter block.
"""

from __future__ import annotations

import copy
import statistics
from collections import Counter, deque
from collections.abc import Callable
from dataclasses import dataclass, field, replace

from app.engine.events import KReason

# A multi-token pass costs more than a single one: what is assumed for a size never measured,
# as a fraction of V(1) per extra token (stock CPU linears: ~0.15-0.2; prepacked: ~0.02).
UNMEASURED_EXTRA_PER_TOKEN = 0.15
SAMPLES_PER_SIZE = 7  # running median over the last few passes of each size
MIN_GAIN = 1.03  # leave the plain step only for a predicted gain of at least 3 %
# A pass size not measured for s steps: its median weighs COST_DECAY_PER_STEP ** s against the
# prior (a plain step's cost times 1 + UNMEASURED_EXTRA_PER_TOKEN per extra token), so a slow
# sample (a warm-up on a busy machine) cannot keep the chooser off that size for ever.
COST_DECAY_PER_STEP = 0.97
# After this many steps without verifying a draft, a step whose drafts are at hand verifies one
# anyway (a probe): it re-measures the pass, the draft step and the acceptance the chooser
# stopped seeing. Prompt lookup's drafts are free, so it probes sooner than a draft model.
PROBE_AFTER = {"free": 24, "model": 96}
# A draft model is tried (one draft a step) until this many of its drafts were judged, while
# every draft accepted would pay: its acceptance is not known before that. One rejection weighs
# a lot against a prior of 2 pseudo-trials, and the first draft of an answer is the likeliest to
# miss ("Here's" against "```"): a same-family 0.5B draft that the target agreed with at 87-93 %
# of positions was set aside for the whole answer after missing its first token (real pair,
# 2026-12-05). At a draft step of 0.3 and a pass over 2 tokens of 1.4 plain passes, trying a
# draft that always misses costs 0.7 of a pass a try, 5-6 passes in an engine's life.
EXPLORE_TRIALS = 8
# Another band's ratio V(n)/V(1) stands in for a size this band never measured only while it is
# recent (else this band's own points, interpolated or extrapolated, decide).
CROSS_BAND_FRESH = 48

# Prior per-draft acceptance, (rate, weight in pseudo-trials), by what the drafter knew. Prompt
# lookup's are a little under what its drafts measured at every position of the bench prompts'
# answers, up to 4 drafts verified (bundled model, 2026-12-02), by n-gram length matched and by
# whether that n-gram had been followed by different tokens before (``x``, contested):
# 0.54 / 0.79 / 0.89 uncontested, 0.25 / 0.0 (4 trials) / 0.29 contested; all together
# 0.34 / 0.68 / 0.90. Splitting them, in tools/chooser_replay.py's replay of those answers on
# this machine's step costs, raised the geometric mean 1.56 -> 1.66 and the worst round 0.97 ->
# 1.07 (list -> JSON); on a steeper curve (v(2) = 1.37) the worst round fell to 0.86.
PRIORS: dict[str, tuple[float, float]] = {
    "lookup1": (0.45, 2.0),  # a match on the last token only
    "lookup2": (0.7, 2.0),
    "lookup3": (0.85, 2.0),  # three or more tokens matched
    "lookup1x": (0.2, 2.0),  # contested: the n-gram was followed by different tokens before
    "lookup2x": (0.3, 2.0),
    "lookup3x": (0.3, 2.0),
    "model": (0.6, 2.0),
    # a draft model's block drafted before the prompt's pass (the answer's first words): of its own,
    # as the first words miss far more often ("Here's" against "```"; the real pair's 0.5B missed
    # them in every answer of a 5-round bench while the target agreed with it at ~88 % after), and
    # counted with the rest they kept the model's estimate ~25 points low
    "model-first": (0.3, 2.0),
    "suffix4": (0.5, 2.0),  # the suffix index: 4-7 tokens of context matched
    "suffix8": (0.65, 2.0),
    "suffix16": (0.8, 2.0),  # 16-31: the same passage seen before
    "suffix32": (0.9, 2.0),  # 32, the most compared: the same context, as when a question comes back
}
DEFAULT_PRIOR = (0.5, 2.0)
CATCH_UP_FREE = 16  # a draft model this far behind catches up within an ordinary step
# A draft model asked again after plain steps or lookup's blocks first feeds what it missed:
# past this many tokens that pass is a catch-up, not a draft step (not timed as one, and its
# feed weighed as a catch-up: ``KChooser.catch_up_cost``)
CATCH_UP_IN_TURN = 4
# A probe of a draft model (one draft against the odds, to re-measure) that must first catch up
# on the prompt costs that catch-up, not one draft: it is made only while the catch-up is at most
# this share of the answer's plain decoding time (a 45-token prompt's catch-up was 11 % of a
# 96-token answer with a draft as large as the target: every answer paid it, 0.90× plain).
PROBE_CATCH_UP_SHARE = 0.02
# While a draft model's drafts are judged too little to go by (``EXPLORE_TRIALS``), its catch-up is
# weighed against what drafting could save, and paid only up to this share of the answer's plain
# decoding time: the price of learning what it drafts, once per pair (the evidence is kept).
EXPLORE_CATCH_UP_SHARE = 0.25
DECAY_PER_STEP = 0.99  # evidence older by s steps weighs DECAY_PER_STEP ** s: drifts back to the prior
# A free drafter's acceptance varies more between answers than within one: prompt lookup copies
# the prompt's words into an edit of code ("Add type hints") and mostly misses in a summary or a
# poem that paraphrase, whatever the n-gram matched. Each step of an answer weighs that answer's own
# evidence of a free drafter's key against the engine-wide estimate counted as ANSWER_WEIGHT
# trials (``AcceptanceModel.within_answer``), so a few misses in an answer that copies little stop
# its lookup drafts within a few steps, where the evidence of answers that copied kept them going
# until the answer's ledger caught them (``AnswerLedger``). Not a draft model's: its drafts are
# judged only when verified, and an answer's first words are its likeliest to miss, so stopping
# there would leave its later, mostly accepted drafts unseen (tried, 2026-12-06: the kept estimate
# sank and ``bench --peer``'s type hints fell from 1.50x to 0.98-1.11x); a set-aside lookup draft
# is judged for free by the target's next token, so this answer's evidence keeps coming.
ANSWER_WEIGHT = 2.0


# --- the one model of acceptance and costs (the chooser here, the Why panel in
# ``analysis/explanation.py``: both use these three, so the panel explains the chooser's maths)


def expected_tokens(alpha: float, k: int) -> float:
    """E(k) = (1 - a^(k+1)) / (1 - a): tokens one target pass yields verifying ``k`` drafts."""
    if alpha >= 1.0:
        return float(k + 1)
    return (1.0 - alpha ** (k + 1)) / (1.0 - alpha)


def break_even_alpha(k: int, c: float, v: float) -> float | None:
    """The per-draft acceptance at which ``k`` drafts a pass, each costing ``c`` plain passes,
    verified in a pass costing ``v``, are as fast as plain decoding: E(α, k) = k·c + v. 0 when even
    no acceptance loses nothing; None when not even every draft accepted (E = k + 1) would pay."""
    cost = k * c + v
    if k <= 0 or cost > k + 1:
        return None
    if cost <= 1.0:
        return 0.0
    low, high = 0.0, 1.0  # E is increasing in α
    for _ in range(40):
        mid = (low + high) / 2
        low, high = (mid, high) if expected_tokens(mid, k) < cost else (low, mid)
    return high


def acceptance_evidence(proposed: int, accepted: int) -> tuple[int, int]:
    """(successes, trials) that one verified block tells about the per-draft acceptance a:
    drafts are judged in order until the first rejection, so ``accepted`` successes and,
    unless every draft passed, one failure (the drafts after it were never judged). Summed
    over blocks, successes ÷ trials is the maximum-likelihood a (truncated geometric)."""
    if proposed <= 0:
        return 0, 0
    return accepted, accepted + (1 if accepted < proposed else 0)


def monotone_fit(points: dict[int, tuple[float, float]], floor: float) -> dict[int, float]:
    """Pass costs by size from (measured cost, weight) per size: the weighted least-squares fit
    that never decreases with the size (pool adjacent violators), raised to at least ``floor``
    (a plain pass: a pass over more tokens does all of its work). Clipping the isotonic fit
    to the bound is the bounded isotonic fit."""
    blocks: list[list[float]] = []  # [weighted sum, weight, count of points]
    for size in sorted(points):
        cost, weight = points[size]
        w = max(weight, 1.0)
        blocks.append([cost * w, w, 1.0])
        while len(blocks) > 1 and blocks[-2][0] / blocks[-2][1] > blocks[-1][0] / blocks[-1][1]:
            total, weight_sum, count = blocks.pop()
            blocks[-1] = [blocks[-1][0] + total, blocks[-1][1] + weight_sum, blocks[-1][2] + count]
    values = [max(floor, total / weight) for total, weight, count in blocks for _ in range(int(count))]
    return dict(zip(sorted(points), values))


@dataclass(frozen=True)
class Choice:
    k: int  # drafts to verify (0: a plain step)
    predicted_speedup: float  # tokens per second of this choice / of a plain step
    alpha: float  # the acceptance it assumed
    # why: "drafting" (the best k pays), "gain_below_margin" (no k > 0 clears MIN_GAIN),
    # "probe" (k = 1 to re-measure, see PROBE_AFTER), "catch_up_not_repaid" and
    # "slower_in_answer" (set by decode: ``AnswerLedger``)
    reason: KReason = "drafting"
    best_k: int = 0  # the best k > 0 considered (0: none could be)
    best_gain: float = 1.0  # its predicted tokens per second over a plain step
    draft_cost: float = 0.0  # one draft step ÷ one plain pass (0: drafts already made)
    pass_cost: float = 1.0  # a pass verifying best_k drafts ÷ a plain pass
    realized: float | None = None  # slower_in_answer: ``AnswerLedger.realized`` when it fell back


# An answer's drafting passes, on its own clock, judged against plain steps once there are this
# many of them: fewer is one unlucky block, not a measurement
FALL_BACK_AFTER = 4
# plain steps an answer takes after its drafting measured slower, before it may draft again (and
# be judged afresh): a later stretch the drafter copies well (a quoted passage) is not lost for good.
# tools/chooser_replay.py on the bench prompts, 8 noisy replays (±10 %, ±20 %): the worst round
# 0.837 -> 0.863 on average at the same geometric mean (1.195 / 1.194); resting 16 or 32 steps, or
# judging after 6 passes, gave up more of the mean or none of the worst (docs/performance.md)
REST_STEPS = 8


@dataclass
class AnswerLedger:
    """What one answer's drafting passes bought, on the answer's own clock: the chooser's model
    (acceptance by evidence, a pass's cost by size) predicts each pass, and this checks the
    answer itself. ``realized`` is the plain steps their tokens would have taken (``plain``: a
    plain pass's measured seconds) ÷ the seconds they took, drafting included; once it is under
    1 over at least ``FALL_BACK_AFTER`` drafting passes, speculation measured slower than plain
    decoding in this very answer, and the answer takes plain steps (``decode`` asks
    ``falls_back`` before each step): ``REST_STEPS`` of them, then its drafting is judged afresh.
    Lossless: the choice rests on passes already made, never on the drafts a step would verify.
    The chooser's own evidence carries to the next answer."""

    passes: int = 0  # passes that verified at least one draft (the prompt's pass not counted)
    tokens: int = 0  # the tokens those passes gave: drafts kept and the target's own
    seconds: float = 0.0  # what those passes took, drafting and verifying
    judged: tuple[int, int] = (0, 0)  # their drafts' acceptance evidence (``acceptance_evidence``)
    fell_back: Choice | None = None  # the decision that stopped drafting, while it holds
    resting: int = 0  # plain steps left before drafting is judged afresh

    def observe(self, proposed: int, accepted: int, seconds: float) -> None:
        """A pass verified ``proposed`` drafts, kept ``accepted`` and added its own token, in ``seconds``."""
        self.passes += 1
        self.tokens += accepted + 1
        self.seconds += seconds
        successes, trials = acceptance_evidence(proposed, accepted)
        self.judged = (self.judged[0] + successes, self.judged[1] + trials)

    @property
    def judging(self) -> bool:
        """Whether the next ``falls_back`` weighs the passes (and so needs a plain pass's cost)."""
        return self.fell_back is None and self.passes >= FALL_BACK_AFTER

    def realized(self, plain: float | None) -> float | None:
        """Those passes' speed ÷ plain decoding's (None: nothing to judge yet, or no plain pass
        measured)."""
        if self.passes == 0 or plain is None or plain <= 0.0 or self.seconds <= 0.0:
            return None
        return self.tokens * plain / self.seconds

    def falls_back(self, plain: float | None) -> Choice | None:
        """This step's plain-step decision while this answer's drafting has measured slower (its
        ``alpha``: the acceptance those passes measured), else None. Asked once per step."""
        if self.fell_back is not None:
            if self.resting > 0:
                self.resting -= 1
                return self.fell_back
            self.passes, self.tokens, self.seconds, self.judged, self.fell_back = 0, 0, 0.0, (0, 0), None
        if self.judging:
            realized = self.realized(plain)
            successes, trials = self.judged
            if realized is not None and realized < 1.0:
                alpha = successes / trials if trials else 0.0
                self.fell_back = Choice(0, 1.0, alpha, "slower_in_answer", realized=realized)
                self.resting = REST_STEPS - 1  # this step is the first
        return self.fell_back


def step_cost(alpha: float, k: int, draft: float, verify: float, ahead: bool) -> float:
    """Expected seconds of a step verifying ``k`` drafts that cost ``draft`` each, in a pass of
    ``verify``. In turn: k·d + V. Drafted ahead (during the previous verification), the drafts
    are on the clock only when that block was dropped — some draft rejected, or the target's
    own next token not the drafter's guess, together about 1 − α^(k+1) — and otherwise only for
    what they take beyond the verification they overlapped: V + k·d·(1 − h) + h·max(0, k·d − V),
    h = α^(k+1)."""
    drafting = k * draft
    if not ahead:
        return drafting + verify
    hit = alpha ** (k + 1)
    return verify + drafting * (1.0 - hit) + hit * max(0.0, drafting - verify)


def best_k(
    alpha: float,
    draft_cost: float,
    verify_cost: Callable[[int], float],
    k_max: int,
    min_gain: float = MIN_GAIN,
    ahead: bool = False,
    catch_up: float = 0.0,
) -> Choice:
    """The k in 0..k_max with the most expected tokens per second.

    ``draft_cost``: seconds per draft (0 when the drafts are already made); ``verify_cost(n)``:
    seconds of a target pass over ``n`` tokens. ``ahead``: the drafter drafts the next block
    while the target verifies this one (``step_cost``). ``catch_up``: seconds any drafting step
    pays first (a draft model feeding the tokens it missed).
    """
    plain = verify_cost(1)
    plain_rate = 1.0 / plain
    best, best_rate = 0, 0.0
    for k in range(1, k_max + 1):
        cost = catch_up + step_cost(alpha, k, draft_cost, verify_cost(k + 1), ahead)
        rate = expected_tokens(alpha, k) / cost
        if rate > best_rate:
            best, best_rate = k, rate
    gain = best_rate / plain_rate if best else 1.0
    pass_cost = verify_cost(best + 1) / plain if best else 1.0
    if best == 0 or gain < min_gain:
        return Choice(0, 1.0, alpha, "gain_below_margin", best, gain, draft_cost / plain, pass_cost)
    return Choice(best, gain, alpha, "drafting", best, gain, draft_cost / plain, pass_cost)


def context_bucket(context: int) -> int:
    """Passes are measured per power-of-two band of context length: attention over a 4k-token
    cache makes a multi-token pass dearer than over 200 tokens (row-wise: one call per row)."""
    return max(context, 1).bit_length()


@dataclass
class CostModel:
    """Measured seconds of a target pass per number of tokens fed (per band of context length),
    and of one draft step. Set ``context`` to the cache length before observing or asking, and
    ``tick()`` once per decoding step: a size's samples age with the steps that did not
    measure it and weigh less and less against the prior (see ``COST_DECAY_PER_STEP``)."""

    buckets: dict[int, dict[int, deque[float]]] = field(default_factory=dict)  # band -> size -> s
    # band -> size (> 1) -> seconds ÷ the band's plain pass when measured (``plain_now``): the
    # machine's speed drifts by ±10-20 % within minutes, and a multi-token pass is measured far
    # more rarely than a plain one, so its seconds alone, set against today's plain pass, would
    # make the ratio the chooser weighs swing with the drift
    ratios: dict[int, dict[int, deque[float]]] = field(default_factory=dict)
    draft: deque[float] = field(default_factory=lambda: deque(maxlen=SAMPLES_PER_SIZE))
    draft_catch_up: deque[float] = field(default_factory=lambda: deque(maxlen=SAMPLES_PER_SIZE))  # s/token
    context: int = 0  # tokens in the target's cache for the pass at hand
    step: int = 0  # decoding steps seen (the clock samples age by)
    last_seen: dict[int, dict[int, int]] = field(default_factory=dict)  # band -> size -> step
    # this machine's pass per size as a ratio to a plain pass, from the warm-up (``keep_shape``):
    # what a size not measured lately ages toward (empty: 1 + UNMEASURED_EXTRA_PER_TOKEN per token)
    shape: dict[int, float] = field(default_factory=dict)

    def tick(self) -> None:
        self.step += 1

    def keep_shape(self) -> None:
        """The current band's measured passes (fitted, as ratios to its plain pass) become the
        prior every band ages toward (the warm-up's, on a short context). A constant prior (15 %
        a token) is far from a CPU where passes grow with their rows: on an AVX2-only EPYC a
        4-token pass of the real 1.5B costs 3.7 plain ones, and once the warm-up's figures aged
        out the chooser weighed it as 1.45 and verified drafts at a loss."""
        measured = self.verify
        if 1 not in measured or len(measured) < 2:
            return
        curve = self.curve(max(measured))
        if curve is not None:
            self.shape = {n: curve[n - 1] / curve[0] for n in range(2, len(curve) + 1)}

    def prior_ratio(self, tokens: int) -> float:
        """A pass over ``tokens`` tokens ÷ a plain pass, as the prior says: the kept shape
        (interpolated; beyond its largest size, that size's cost per token goes on), else the
        constant."""
        if tokens <= 1:
            return 1.0
        if not self.shape:
            return 1.0 + (tokens - 1) * UNMEASURED_EXTRA_PER_TOKEN
        if tokens in self.shape:
            return self.shape[tokens]
        known = {1: 1.0, **self.shape}
        lo = max(n for n in known if n < tokens)
        above = [n for n in known if n > tokens]
        if above:
            hi = min(above)
            return known[lo] + (tokens - lo) / (hi - lo) * (known[hi] - known[lo])
        per_token = max(0.0, (known[lo] - 1.0) / (lo - 1))
        return known[lo] + (tokens - lo) * per_token

    def _band(self) -> int:
        """The current context band if it has samples, else the nearest band that has any."""
        band = context_bucket(self.context)
        if band in self.buckets or not self.buckets:
            return band
        return min(self.buckets, key=lambda b: (abs(b - band), b))

    @property
    def verify(self) -> dict[int, deque[float]]:
        """The samples of the current context band, else of the nearest band that has any."""
        return self.buckets.get(self._band(), {})

    def observe_verify(self, tokens: int, seconds: float) -> None:
        if tokens >= 1 and seconds > 0.0:
            band = context_bucket(self.context)
            plain = self.plain_now(band)
            self.buckets.setdefault(band, {}).setdefault(tokens, deque(maxlen=SAMPLES_PER_SIZE)).append(seconds)
            self.last_seen.setdefault(band, {})[tokens] = self.step
            if tokens > 1 and plain is not None:
                ratios = self.ratios.setdefault(band, {})
                ratios.setdefault(tokens, deque(maxlen=SAMPLES_PER_SIZE)).append(seconds / plain)

    def plain_now(self, band: int) -> float | None:
        """Seconds of a plain pass in ``band`` now: the median of its last few (None: none yet)."""
        plain = self.buckets.get(band, {}).get(1)
        return statistics.median(plain) if plain else None

    def observe_draft(self, passes: int, seconds: float) -> None:
        if passes >= 1 and seconds > 0.0:
            self.draft.append(seconds / passes)

    def observe_draft_catch_up(self, tokens: int, seconds: float, passes: int = 1) -> None:
        """A draft model's ask that first fed ``tokens`` it had not seen (the prompt, or what it
        missed), in ``seconds`` with its ``passes``: the passes after the first are draft steps,
        not the catch-up, and are taken off at the measured draft step's cost."""
        drafting = (passes - 1) * (self.draft_cost() or 0.0)
        if tokens > CATCH_UP_FREE and seconds > drafting:
            self.draft_catch_up.append((seconds - drafting) / tokens)

    def draft_cost(self) -> float | None:
        return statistics.median(self.draft) if self.draft else None

    def draft_catch_up_cost(self) -> float | None:
        """Seconds per prompt token the draft model feeds to catch up."""
        return statistics.median(self.draft_catch_up) if self.draft_catch_up else None

    def measured(self) -> dict[int, float]:
        """Median seconds per measured size, by size (raw: no ageing)."""
        return {n: statistics.median(s) for n, s in sorted(self.verify.items())}

    def age(self, tokens: int, band: int | None = None) -> int | None:
        """Steps since a pass over ``tokens`` tokens was last measured in ``band`` (default:
        the current band)."""
        seen = self.last_seen.get(self._band() if band is None else band, {}).get(tokens)
        return None if seen is None else self.step - seen

    def _estimates(self, band: int | None = None) -> dict[int, float]:
        """Per measured size, its cost now aged toward the prior: w·cost + (1 − w)·prior with
        w = COST_DECAY_PER_STEP ** age. A size measured beside a plain pass costs the plain pass
        now times the median of its ratios to it (else its median seconds). The plain pass
        (size 1) is the prior's unit and is measured on every plain step, so it is taken as
        measured."""
        band = self._band() if band is None else band
        points = {n: statistics.median(s) for n, s in sorted(self.buckets.get(band, {}).items())}
        base = points.get(1)
        if base is None:
            if not points:
                return points
            base = points[1] = self._plain_from_other_band(band, points)
        for n, ratios in self.ratios.get(band, {}).items():
            points[n] = base * statistics.median(ratios)
        aged = {}
        for n, seconds in points.items():
            age = self.age(n, band) or 0
            weight = COST_DECAY_PER_STEP**age if n > 1 else 1.0
            prior = base * self.prior_ratio(n)
            aged[n] = weight * seconds + (1.0 - weight) * prior
        return aged

    def _plain_from_other_band(self, band: int, points: dict[int, float]) -> float:
        """A plain pass in ``band``, which measured only bigger passes (an answer whose every step
        verified drafts moves into bands where no plain pass is made): each of its sizes divided
        by that size's ratio to a plain pass in the nearest band that measured both (their
        median); where no band did, by the prior's ratio. Taking the smallest size measured for
        the plain pass instead makes every bigger pass look free: a 6-token pass of a
        compute-bound CPU's 1.5B, 4x a plain one, was weighed as 1.0x, and auto k verified 5
        drafts every step."""
        others = [b for b in self.buckets if b != band and 1 in self.buckets[b]]
        for other in sorted(others, key=lambda b: (abs(b - band), b)):
            shape = self._estimates(other)
            plains = [seconds * shape[1] / shape[n] for n, seconds in points.items() if n in shape and shape[n] > 0]
            if plains:
                return statistics.median(plains)
        return statistics.median(s / self.prior_ratio(n) for n, s in points.items())

    def verify_cost(self, tokens: int) -> float | None:
        """Seconds of a target pass over ``tokens`` tokens in the current context band."""
        curve = self.curve(tokens)
        return None if curve is None else curve[-1]

    def curve(self, up_to: int) -> list[float] | None:
        """Seconds per pass over 1..up_to tokens: each size measured (aged toward the prior
        when stale); else this band's one-token pass times the ratio the nearest band measured
        for that size; else interpolated between the nearest measured sizes, else extrapolated
        from the largest one. Then ``monotone_fit`` (the Why panel's fit of v(m) too): never
        decreasing with the size and never below a plain pass (a pass that feeds more tokens
        does all the work of a smaller one)."""
        points = self._estimates()
        if not points:
            return None
        if 1 in points:  # sizes another band measured, scaled to this band's plain pass
            for n in range(2, up_to + 1):
                scaled = self._scaled_from_other_band(n, points) if n not in points else None
                if scaled is not None:
                    points[n] = scaled
        raw = {n: self._raw(n, points) for n in range(1, up_to + 1)}
        weights = self._weights()
        plain = raw[1]
        fitted = monotone_fit({n: (cost, weights.get(n, 1.0)) for n, cost in raw.items()}, plain)
        return [fitted[n] for n in range(1, up_to + 1)]

    def _weights(self) -> dict[int, float]:
        """Samples per measured size of the current band: how much each weighs in the fit."""
        return {n: float(len(samples)) for n, samples in self.verify.items()}

    def _raw(self, tokens: int, points: dict[int, float]) -> float:
        if tokens in points:
            return points[tokens]
        below = [n for n in points if n < tokens]
        above = [n for n in points if n > tokens]
        if below and above:
            lo, hi = max(below), min(above)
            share = (tokens - lo) / (hi - lo)
            return points[lo] + share * (points[hi] - points[lo])
        if above:  # smaller than anything measured: a smaller pass is not dearer
            return points[min(above)]
        lo = max(below)
        base = points.get(1, points[min(points)])
        return points[lo] + base * (self.prior_ratio(tokens) - self.prior_ratio(lo))

    def _scaled_from_other_band(self, tokens: int, points: dict[int, float]) -> float | None:
        if 1 not in points:
            return None
        band = context_bucket(self.context)
        others = [
            b
            for b, sizes in self.buckets.items()
            if b != band and tokens in sizes and 1 in sizes and (self.age(tokens, b) or 0) <= CROSS_BAND_FRESH
        ]
        if not others:
            return None
        nearest = self._estimates(min(others, key=lambda b: (abs(b - band), b)))
        return points[1] * nearest[tokens] / nearest[1]


@dataclass
class AcceptanceModel:
    """Per-draft acceptance by evidence key (``lookup1``.., ``model``), a Beta-like estimate
    whose evidence decays with age so an unused key drifts back to its prior and is retried."""

    step: int = 0
    evidence: dict[str, tuple[float, float, int]] = field(default_factory=dict)  # key -> (hits, trials, step)
    judged: Counter[str] = field(default_factory=Counter)  # key -> drafts judged ever (not decayed)
    answer: dict[str, tuple[int, int]] = field(default_factory=dict)  # key -> this answer's (hits, trials)

    def tick(self) -> None:
        self.step += 1

    def _decayed(self, key: str) -> tuple[float, float]:
        hits, trials, at = self.evidence.get(key, (0.0, 0.0, self.step))
        weight = DECAY_PER_STEP ** (self.step - at)
        return hits * weight, trials * weight

    def alpha(self, key: str) -> float:
        prior, weight = PRIORS.get(key, DEFAULT_PRIOR)
        hits, trials = self._decayed(key)
        return (hits + prior * weight) / (trials + weight)

    def within_answer(self, key: str) -> float:
        """``key``'s acceptance for this answer's next step: of a free drafter (not ``MODEL_KEYS``),
        this answer's own evidence with ``alpha`` counted as ``ANSWER_WEIGHT`` trials; of a draft
        model, ``alpha``."""
        alpha = self.alpha(key)
        if key in MODEL_KEYS:
            return alpha
        hits, trials = self.answer.get(key, (0, 0))
        return (hits + ANSWER_WEIGHT * alpha) / (trials + ANSWER_WEIGHT)

    def new_answer(self) -> None:
        """An answer starts: the last one's own evidence no longer weighs apart (it stays in ``alpha``)."""
        self.answer.clear()

    def observe(self, key: str, proposed: int, accepted: int) -> None:
        """One verified block's evidence (``acceptance_evidence``), added to the decayed rest and,
        of a free drafter's key, to this answer's."""
        if proposed <= 0:
            return
        hits, trials = self._decayed(key)
        successes, tried = acceptance_evidence(proposed, accepted)
        self.evidence[key] = (hits + successes, trials + tried, self.step)
        self.judged[key] += tried
        if key not in MODEL_KEYS:
            in_answer = self.answer.get(key, (0, 0))
            self.answer[key] = (in_answer[0] + successes, in_answer[1] + tried)

    def kept(self, key: str) -> tuple[float, float]:
        """``key``'s evidence now (hits, trials, decayed): what an engine keeps for the next one."""
        return self._decayed(key)

    def adopt(self, key: str, hits: float, trials: float) -> None:
        """Evidence an earlier engine kept for ``key`` (the same models), as if judged now."""
        if 0.0 <= hits <= trials:
            self.evidence[key] = (hits, trials, self.step)
            self.judged[key] += round(trials)


def lookup_key(ngram: int, contested: bool = False) -> str:
    """Prompt lookup's evidence: the n-gram length matched (1, 2, 3+), and whether that n-gram
    was followed by different tokens before (``x``: its continuation is one guess of several)."""
    return f"lookup{min(max(ngram, 1), 3)}{'x' if contested else ''}"


def suffix_key(matched: int) -> str:
    """The suffix index's evidence: how much context matched (bands 4-7, 8-15, 16-31, 32+)."""
    for band in (32, 16, 8):
        if matched >= band:
            return f"suffix{band}"
    return "suffix4"


MODEL_KEY = "model"
FIRST_MODEL_KEY = "model-first"  # a draft model's block folded into the prompt's pass
MODEL_KEYS = (MODEL_KEY, FIRST_MODEL_KEY)


def _kind(key: str) -> str:
    """The probe clock (``PROBE_AFTER``) an evidence key's drafts keep: a draft model's or a free drafter's."""
    return "model" if key in MODEL_KEYS else "free"


@dataclass(frozen=True)
class Split:
    """How an answer uses ``threads`` CPU threads (``draft_threads``): a draft model drafting in
    turn on all of them, or ahead on one of its own beside the target on the rest. Each way keeps
    its own measured costs (``KChooser.use``)."""

    threads: int
    ahead: bool = False

    @property
    def target_threads(self) -> int:
        """The target's threads (at least one: ahead on a budget of one, the tests, adds one)."""
        return max(1, self.threads - 1) if self.ahead else self.threads


@dataclass
class KChooser:
    """Measured costs + estimated acceptance → the number of drafts each step verifies.

    Kept on the ``Engine`` across answers: the pass costs (per context band, aged toward the
    prior while a size goes unmeasured), the draft step's cost, the catch-up cost and the
    acceptance per kind of evidence (decaying toward its prior). ``since_draft`` counts the
    steps since a draft of each kind ("free", "model") was verified; past ``PROBE_AFTER`` a step
    probes with one draft of that kind."""

    costs: CostModel = field(default_factory=CostModel)
    acceptance: AcceptanceModel = field(default_factory=AcceptanceModel)
    since_draft: Counter[str] = field(default_factory=Counter)
    # this answer's draft model drafts ahead (``decode`` says so per answer): ``step_cost``
    ahead: bool = False
    # the costs measured each way of sharing the CPU threads (``Split``); ``costs`` is the one in use
    ways: dict[Split, CostModel] = field(default_factory=dict)

    def use(self, split: Split) -> CostModel:
        """Weigh the costs measured ``split``'s way from now on. The first way taken adopts the
        costs at hand; a way never taken since (``auto`` threads moved to another budget) starts
        from a copy of the nearest budget's measured the same way, which ages toward its own."""
        if split not in self.ways:
            if not self.ways:
                self.ways[split] = self.costs
            else:
                same_way = [s for s in self.ways if s.ahead == split.ahead]
                nearest = min(same_way, key=lambda s: (abs(s.threads - split.threads), s.threads), default=None)
                self.ways[split] = copy.deepcopy(self.ways[nearest]) if nearest is not None else CostModel()
        self.costs = self.ways[split]
        return self.costs

    def verify_cost(self, tokens: int) -> float:
        """Seconds (or, before any measurement, units of one plain step)."""
        measured = self.costs.verify_cost(tokens)
        if measured is not None:
            return measured
        return self.costs.prior_ratio(tokens)

    def _verify_curve(self, up_to: int) -> Callable[[int], float]:
        curve = self.costs.curve(up_to)
        if curve is None:
            return self.costs.prior_ratio
        return lambda n: curve[n - 1]

    def choose(
        self, key: str, k_max: int, drafts_ready: bool, prefill: bool = False, probe: bool = True, behind: int = 0
    ) -> Choice:
        """``drafts_ready``: the drafts already exist (prompt lookup), their cost is spent.
        ``prefill``: the drafts ride along with the prompt's pass; each row they add costs what a
        step's extra rows cost (``verify``'s curve, no probe): folding them in pays only where the
        tokens they are expected to save outweigh those rows. A CPU's pass over a prompt is
        compute-bound, so its rows are not free (weighed as free, lookup's 2 to 3 drafts rode
        along with the 36-token prompt "What is the capital of France?" at 2 threads and were
        accepted 0 times of 7: +0.16 s on a 0.62 s pass, real pair). ``probe``: a step may verify
        one draft against the odds to re-measure what the chooser has stopped seeing (see
        ``PROBE_AFTER``). ``behind``: tokens a draft model must feed before its first draft
        (``catch_up_cost``), on the step's clock."""
        alpha = self.acceptance.within_answer(key)
        if k_max <= 0:
            return Choice(0, 1.0, alpha, "gain_below_margin")
        draft = 0.0 if drafts_ready else self._draft_cost()
        verify = self._verify_curve(k_max + 1)
        catch_up = 0.0 if drafts_ready else self.catch_up_cost(behind)
        if prefill:
            return best_k(alpha, draft, verify, k_max, catch_up=catch_up)
        choice = best_k(alpha, draft, verify, k_max, ahead=self.ahead and not drafts_ready, catch_up=catch_up)
        since = self.since_draft[_kind(key)]  # steps since such drafts were verified
        due = PROBE_AFTER["free" if drafts_ready else "model"]  # drafts at hand cost no pass: probed sooner
        # too little evidence yet (``EXPLORE_TRIALS``): try it to learn, if perfect acceptance
        # could pay at these costs. Not for drafts already made: one set aside is judged for free
        # by the target's next token (the shadow evidence ``decode._learn`` records), which is
        # what a probe would learn
        untried = not drafts_ready and self._judged_too_little(key) and self._every_draft_accepted(k_max).k > 0
        if choice.k == 0 and probe and (untried or since >= due):
            return replace(choice, k=1, reason="probe")
        return choice

    def catch_up_cost(self, behind: int) -> float:
        """Seconds a draft model ``behind`` tokens behind spends feeding them before it drafts,
        beyond a draft step: none within ``CATCH_UP_IN_TURN`` tokens (a draft step's own feed,
        in its measured cost) or before any catch-up was measured; else ``behind`` × the
        measured seconds a token. Weighed against a free block at hand, a mixed drafter's model
        behind lookup's accepted tokens had been rated as if it held them: on the real pair's
        paragraph it outrated 2-draft lookup blocks (1.42x against 1.38x predicted) and its steps
        then fed the 6 tokens lookup had drafted, 168 ms for 6 tokens against 60 ms for 3."""
        if behind <= CATCH_UP_IN_TURN:  # every ordinary step: no median taken
            return 0.0
        per_token = self.costs.draft_catch_up_cost()
        return 0.0 if per_token is None else behind * per_token

    def _judged_too_little(self, key: str) -> bool:
        """Too few drafts of ``key`` judged yet to go by their acceptance (``EXPLORE_TRIALS``)."""
        return self.acceptance.judged[key] < EXPLORE_TRIALS

    def _every_draft_accepted(self, k_max: int) -> Choice:
        """A draft model's best plan were every draft accepted: what trying it could at most give."""
        return best_k(1.0, self._draft_cost(), self._verify_curve(k_max + 1), k_max, ahead=self.ahead)

    def _draft_cost(self) -> float:
        measured = self.costs.draft_cost()
        if measured is not None and self.costs.verify:  # both in seconds
            return measured
        # never measured: assume drafting is free, so the drafter runs once and gets measured
        # (a cautious guess would never draft, and so never learn)
        return 0.0

    def worth_catching_up(self, unseen: int, remaining: int, choice: Choice, k_max: int) -> bool:
        """Is a draft model's catch-up on ``unseen`` tokens (its own prefill of a long prompt)
        repaid by the time the chosen drafting saves over the ``remaining`` tokens? While its
        drafts are judged too little to go by (``EXPLORE_TRIALS``), by what drafting would save
        were every draft of up to ``k_max`` accepted, up to ``EXPLORE_CATCH_UP_SHARE``: a first
        answer of 8 tokens had judged 3 drafts, put its acceptance at 0.68 against the 0.9 the
        pair measures, and from then on no answer caught up, so none drafted, and the estimate
        never moved (real pair, 1 thread)."""
        per_token = self.costs.draft_catch_up_cost()
        if unseen <= CATCH_UP_FREE or per_token is None:
            return choice.k > 0  # unmeasured: try once, to measure
        plain, catch_up = self.verify_cost(1), unseen * per_token
        cheap = choice.k > 0 and catch_up <= PROBE_CATCH_UP_SHARE * remaining * plain  # a look, taken

        def repaid(speedup: float) -> bool:
            return speedup > 1.0 and remaining * plain * (1.0 - 1.0 / speedup) > catch_up

        if self._judged_too_little(MODEL_KEY):  # what it could save, at a bounded price
            if catch_up > EXPLORE_CATCH_UP_SHARE * remaining * plain:
                return False
            return cheap or repaid(self._every_draft_accepted(k_max).best_gain)
        if choice.reason == "probe":  # no gain expected: only a cheap look
            return cheap
        if choice.predicted_speedup <= 1.0:
            return choice.k > 0
        return repaid(choice.predicted_speedup)

    def observe_step(self, key: str, proposed: int, accepted: int) -> None:
        """A step that verified ``proposed`` drafts (0: a plain step) of evidence ``key``."""
        self.tick()
        self.acceptance.observe(key, proposed, accepted)
        for kind in PROBE_AFTER:
            self.since_draft[kind] += 1
        if proposed > 0:
            self.since_draft[_kind(key)] = 0

    def tick(self) -> None:
        """One decoding step passed (costs and acceptance age by steps)."""
        self.acceptance.tick()
        self.costs.tick()


# --- in turn or ahead: a thread budget shared by the target and a draft model (``draft_threads``)


def drafting_rate(costs: CostModel, alpha: float, k_max: int, ahead: bool, fixed_k: int | None = None) -> float | None:
    """Expected tokens per second of a draft model's answer on ``costs`` (one way of sharing the
    threads: its target passes and draft steps as measured that way): the best k's with auto k
    (0 included: a plain step), else ``fixed_k``'s. None when ``costs`` lack a plain pass or a
    draft step."""
    plain, draft = costs.verify_cost(1), costs.draft_cost()
    curve = costs.curve(k_max + 1)
    if plain is None or draft is None or curve is None:
        return None
    if fixed_k is None:
        return best_k(alpha, draft, lambda n: curve[n - 1], k_max, ahead=ahead).predicted_speedup / plain
    k = min(fixed_k, k_max)
    return expected_tokens(alpha, k) / step_cost(alpha, k, draft, curve[k], ahead)


def ahead_is_faster(
    in_turn: CostModel,
    ahead: CostModel,
    alpha: float,
    k_max: int,
    fixed_k: int | None = None,
    free_share: float = 0.0,
) -> bool | None:
    """Whether drafting ahead (the target on one thread fewer, the draft model on its own) is
    expected to give more tokens per second than drafting in turn on every thread, by at least
    ``MIN_GAIN`` (in turn never competes with itself for a core, so a tie stays in turn). None when
    either way's costs are not measured.

    ``free_share``: the share of an answer's decoding time a free drafter's blocks take (a mixed
    drafter: lookup, the suffix index). Those steps gain nothing from the model's own thread and
    verify on one thread fewer, each at ahead's plain pass ÷ in turn's; the rest of the time goes
    at the model's drafting rate each way. Weighed as the model's alone, ahead was taken for the
    real pair's paragraph and JSON answers at 2 threads (ahead's rate 1.03x in turn's at the
    acceptance learnt, a plain pass 86 against 50 ms) and they ran at 1.01-1.03x target-only
    against 1.28-1.42x in turn."""
    turn = drafting_rate(in_turn, alpha, k_max, ahead=False, fixed_k=fixed_k)
    beside = drafting_rate(ahead, alpha, k_max, ahead=True, fixed_k=fixed_k)
    plain_turn, plain_ahead = in_turn.verify_cost(1), ahead.verify_cost(1)
    if turn is None or beside is None or plain_turn is None or plain_ahead is None:
        return None
    share = min(max(free_share, 0.0), 1.0)
    ahead_time = (1.0 - share) * turn / beside + share * plain_ahead / plain_turn  # in turn's time: 1
    return ahead_time * MIN_GAIN < 1.0
