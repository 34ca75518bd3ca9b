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

import statistics
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

# A multi-token pass costs more than a single one: what is assumed for a size never measured,
# as a fraction of V(1) per extra token (stock CPU linears: ~0.15-0.2; prepacked: ~0.02).
UNMEASURED_EXTRA_PER_TOKEN = 0.15
SAMPLES_PER_SIZE = 7  # running median over the last few passes of each size
MIN_GAIN = 1.03  # leave the plain step only for a predicted gain of at least 3 %

# Prior per-draft acceptance, (rate, weight in pseudo-trials), by what the drafter knew.
PRIORS: dict[str, tuple[float, float]] = {
    "lookup1": (0.3, 2.0),  # a match on the last token only
    "lookup2": (0.45, 2.0),
    "lookup3": (0.6, 2.0),  # three or more tokens matched
    "model": (0.6, 2.0),
    "suffix4": (0.5, 2.0),  # the suffix index: 4-7 tokens of context matched
    "suffix8": (0.65, 2.0),
    "suffix16": (0.8, 2.0),  # 16-31: the same passage seen before
    "suffix32": (0.9, 2.0),  # 32, the most compared: the same context, as when a question comes back
}
DEFAULT_PRIOR = (0.5, 2.0)
CATCH_UP_FREE = 16  # a draft model this far behind catches up within an ordinary step
DECAY_PER_STEP = 0.99  # evidence older by s steps weighs DECAY_PER_STEP ** s: drifts back to the prior


def expected_tokens(alpha: float, k: int) -> float:
    """E(k) = (1 - a^(k+1)) / (1 - a): tokens one target pass yields verifying ``k`` drafts."""
    if alpha >= 1.0:
        return float(k + 1)
    return (1.0 - alpha ** (k + 1)) / (1.0 - alpha)


@dataclass(frozen=True)
class Choice:
    k: int  # drafts to verify (0: a plain step)
    predicted_speedup: float  # tokens per second of this choice / of a plain step
    alpha: float  # the acceptance it assumed


def best_k(
    alpha: float,
    draft_cost: float,
    verify_cost: Callable[[int], float],
    k_max: int,
    min_gain: float = MIN_GAIN,
) -> Choice:
    """The k in 0..k_max with the most expected tokens per second.

    ``draft_cost``: seconds per draft (0 when the drafts are already made); ``verify_cost(n)``:
    seconds of a target pass over ``n`` tokens.
    """
    plain_rate = 1.0 / verify_cost(1)
    best, best_rate = 0, plain_rate
    for k in range(1, k_max + 1):
        rate = expected_tokens(alpha, k) / (k * draft_cost + verify_cost(k + 1))
        if rate > best_rate:
            best, best_rate = k, rate
    if best_rate < plain_rate * min_gain:
        return Choice(0, 1.0, alpha)
    return Choice(best, best_rate / plain_rate, alpha)


def context_bucket(context: int) -> int:
    """Passes are measured per power-of-two band of context length: attention over a 4k-token
    cache makes a multi-token pass dearer than over 200 tokens (row-wise: one call per row)."""
    return max(context, 1).bit_length()


@dataclass
class CostModel:
    """Measured seconds of a target pass per number of tokens fed (per band of context length),
    and of one draft step. Set ``context`` to the cache length before observing or asking."""

    buckets: dict[int, dict[int, deque[float]]] = field(default_factory=dict)  # band -> size -> s
    draft: deque[float] = field(default_factory=lambda: deque(maxlen=SAMPLES_PER_SIZE))
    draft_catch_up: deque[float] = field(default_factory=lambda: deque(maxlen=SAMPLES_PER_SIZE))  # s/token
    context: int = 0  # tokens in the target's cache for the pass at hand

    @property
    def verify(self) -> dict[int, deque[float]]:
        """The samples of the current context band, else of the nearest band that has any."""
        band = context_bucket(self.context)
        if band in self.buckets or not self.buckets:
            return self.buckets.get(band, {})
        return self.buckets[min(self.buckets, key=lambda b: (abs(b - band), b))]

    def observe_verify(self, tokens: int, seconds: float) -> None:
        if tokens >= 1 and seconds > 0.0:
            band = self.buckets.setdefault(context_bucket(self.context), {})
            band.setdefault(tokens, deque(maxlen=SAMPLES_PER_SIZE)).append(seconds)

    def observe_draft(self, passes: int, seconds: float) -> None:
        if passes >= 1 and seconds > 0.0:
            self.draft.append(seconds / passes)

    def observe_draft_catch_up(self, tokens: int, seconds: float) -> None:
        """A draft model's first pass of an answer: it feeds the prompt it has not seen."""
        if tokens > CATCH_UP_FREE and seconds > 0.0:
            self.draft_catch_up.append(seconds / tokens)

    def draft_cost(self) -> float | None:
        return statistics.median(self.draft) if self.draft else None

    def draft_catch_up_cost(self) -> float | None:
        """Seconds per prompt token the draft model feeds to catch up."""
        return statistics.median(self.draft_catch_up) if self.draft_catch_up else None

    def measured(self) -> dict[int, float]:
        """Median seconds per measured size, by size."""
        return {n: statistics.median(s) for n, s in sorted(self.verify.items())}

    def verify_cost(self, tokens: int) -> float | None:
        """Seconds of a target pass over ``tokens`` tokens in the current context band: measured;
        else this band's one-token pass times the ratio another band measured for that size
        (the nearest band); else interpolated between the nearest measured sizes, else
        extrapolated from the largest one (never cheaper)."""
        points = self.measured()
        if not points:
            return None
        if tokens in points:
            return points[tokens]
        scaled = self._scaled_from_other_band(tokens, points)
        if scaled is not None:
            return scaled
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
        return points[lo] + (tokens - lo) * UNMEASURED_EXTRA_PER_TOKEN * base

    def _scaled_from_other_band(self, tokens: int, points: dict[int, float]) -> float | None:
        if 1 not in points:
            return None
        band = context_bucket(self.context)
        others = [b for b, sizes in self.buckets.items() if b != band and tokens in sizes and 1 in sizes]
        if not others:
            return None
        nearest = self.buckets[min(others, key=lambda b: (abs(b - band), b))]
        ratio = statistics.median(nearest[tokens]) / statistics.median(nearest[1])
        return points[1] * ratio

    def curve(self, up_to: int) -> list[float] | None:
        """Seconds per pass over 1..up_to tokens (for reports)."""
        if not self.verify:
            return None
        return [self.verify_cost(n) or 0.0 for n in range(1, up_to + 1)]


@dataclass
class AcceptanceModel:
    """Per-draft acceptance by evidence key (``lookup1``.., ``model``), a Beta-like estimate
    whose evidence decays with age so an unused key drifts back to its prior and is retried."""

    step: int = 0
    evidence: dict[str, tuple[float, float, int]] = field(default_factory=dict)  # key -> (hits, trials, step)

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

    def observe(self, key: str, proposed: int, accepted: int) -> None:
        """Drafts are tried in order until the first rejection: ``accepted`` successes and,
        unless every draft passed, one failure."""
        if proposed <= 0:
            return
        hits, trials = self._decayed(key)
        failures = 1 if accepted < proposed else 0
        self.evidence[key] = (hits + accepted, trials + accepted + failures, self.step)


def lookup_key(ngram: int) -> str:
    return f"lookup{min(max(ngram, 1), 3)}"


def suffix_key(matched: int) -> str:
    """The suffix index's evidence: how much context matched (bands 4-7, 8-15, 16-31, 32+)."""
    for band in (32, 16, 8):
        if matched >= band:
            return f"suffix{band}"
    return "suffix4"


MODEL_KEY = "model"


@dataclass
class KChooser:
    """Measured costs + estimated acceptance → the number of drafts each step verifies."""

    costs: CostModel = field(default_factory=CostModel)
    acceptance: AcceptanceModel = field(default_factory=AcceptanceModel)

    def verify_cost(self, tokens: int) -> float:
        """Seconds (or, before any measurement, units of one plain step)."""
        measured = self.costs.verify_cost(tokens)
        if measured is not None:
            return measured
        return 1.0 + (tokens - 1) * UNMEASURED_EXTRA_PER_TOKEN

    def choose(self, key: str, k_max: int, drafts_ready: bool, prefill: bool = False) -> Choice:
        """``drafts_ready``: the drafts already exist (prompt lookup), their cost is spent.
        ``prefill``: the drafts ride along with the prompt's pass, which costs about the same
        whatever a few more rows."""
        if k_max <= 0:
            return Choice(0, 1.0, self.acceptance.alpha(key))
        alpha = self.acceptance.alpha(key)
        draft = 0.0 if drafts_ready else self._draft_cost()
        if prefill:
            flat = self.verify_cost(k_max + 1)
            return best_k(alpha, draft, lambda n: flat, k_max)
        return best_k(alpha, draft, self.verify_cost, k_max)

    def _draft_cost(self) -> float:
        measured = self.costs.draft_cost()
        if measured is not None and self.costs.verify:  # both in seconds
            return measured
        # never measured: assume drafting is free, so the drafter runs once and gets measured
        # (a cautious guess would never draft, and so never learn)
        return 0.0

    def worth_catching_up(self, unseen: int, remaining: int, choice: Choice) -> bool:
        """Is a draft model's catch-up on ``unseen`` tokens (its own prefill of a long prompt)
        repaid by the time the chosen drafting saves over the ``remaining`` tokens?"""
        per_token = self.costs.draft_catch_up_cost()
        if unseen <= CATCH_UP_FREE or per_token is None or choice.predicted_speedup <= 1.0:
            return choice.k > 0  # unmeasured: try once, to measure
        saved = remaining * self.verify_cost(1) * (1.0 - 1.0 / choice.predicted_speedup)
        return saved > unseen * per_token

    def observe_step(self, key: str, proposed: int, accepted: int) -> None:
        self.acceptance.tick()
        self.acceptance.observe(key, proposed, accepted)
