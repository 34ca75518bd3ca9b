"""Compare two runs of the same conversation: is it the same answer, how much faster, and why.

Pure Python (no torch), so the GUI may import it directly. Everything a front shows about a
comparison is computed here, once: the verdict (what a difference means), the outcome (faster
or slower), its cause (acceptance or cost, from the runs' own step events) and the wording.

Wording: every sentence is a ``Phrase`` — an English template and the values it is filled
with. The CLI renders it as is; the GUI renders it through ``tr()`` (``phrase.render(tr)``), so
both fronts say the same thing and the GUI stays translatable.
"""

from __future__ import annotations

import difflib
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from app.engine.analysis.explanation import (
    MeasuredSpeedup,
    explain,
    format_ratio,
    measure_speedup,
)
from app.engine.events import ArmConditions, RunProvenance, RunResult
from app.engine.i18n import QT_TRANSLATE_NOOP

Verdict = Literal["identical", "near_tie", "sampling", "divergence"]
# not_comparable: measured, but under unlike conditions (``MeasuredSpeedup.problem``): not a result
Outcome = Literal["faster", "slower", "same_speed", "unknown", "not_comparable"]
CauseKind = Literal["acceptance", "draft_cost", "verify_cost"]
Tone = Literal["good", "warning", "bad", "neutral"]
DiffKind = Literal["equal", "insert", "delete", "replace"]

# Machine epsilon (the gap between 1 and the next number) per dtype, as torch.finfo(dtype).eps,
# written out so this module needs no torch. The gap at |x| is eps * 2**floor(log2|x|).
DTYPE_EPS = {"float32": 2.0**-23, "bfloat16": 2.0**-7, "float16": 2.0**-10}
# A top-2 gap within this many steps of the dtype at the top logit is a near tie: verifying a
# block runs other kernels than one-token decoding, and the difference grows through the layers.
# Measured in float32 (SmolLM2-135M, docs MEASUREMENTS.md): up to 7.1e-5 per logit at |logit| in
# [16, 32), i.e. ~37 steps; a margin can move by twice that. bfloat16 at [16, 32): 64 x 0.125.
NEAR_TIE_STEPS = 64
UNKNOWN_DTYPE = "float32"  # runs that did not record their dtype (old files): the finest one
# Same speed within this fraction: timing noise, not a result.
SAME_SPEED_BAND = 0.05


@dataclass(frozen=True)
class FirstDifference:
    token_index: int
    char_index: int
    margin: float | None  # target's top-1 minus top-2 logit at that position
    top_logit: float | None = None  # target's top-1 logit there
    near_tie_threshold: float | None = None  # the largest margin numerics can flip, in logits

    def to_dict(self) -> dict[str, Any]:
        return {
            "token_index": self.token_index,
            "char_index": self.char_index,
            "margin": self.margin,
            "top_logit": self.top_logit,
            "near_tie_threshold": self.near_tie_threshold,
        }


@dataclass(frozen=True)
class DiffOp:
    """A character range of the first text (a) and what became of it in the second (b)."""

    op: DiffKind
    a_start: int
    a_end: int
    b_start: int
    b_end: int


@dataclass(frozen=True)
class SpeedCause:
    """Why speculation was slower: the explanation's numbers (``explain``), in plain steps of
    the run without speculation."""

    kind: CauseKind
    drafts_accepted_share: float  # drafts accepted ÷ proposed
    tokens_per_pass: float  # new tokens ÷ target passes
    draft_cost: float  # c: drafting one token ÷ one plain step
    verify_cost: float  # v(k): one pass over [last, d1..dk] ÷ one plain step (fitted)
    draft_overhead: float  # k·c: drafting k tokens ÷ one plain step

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "drafts_accepted_share": self.drafts_accepted_share,
            "tokens_per_pass": self.tokens_per_pass,
            "draft_cost": self.draft_cost,
            "verify_cost": self.verify_cost,
            "draft_overhead": self.draft_overhead,
        }


@dataclass(frozen=True)
class Comparison:
    identical: bool
    first_difference: FirstDifference | None
    decode_speedup: float  # the headline: decode tokens/s with ÷ without speculation; 0 when unknown
    diff: tuple[DiffOp, ...]
    verdict: Verdict
    outcome: Outcome = "unknown"
    cause: SpeedCause | None = None  # set when speculation was slower
    dtype: str = UNKNOWN_DTYPE  # the target's dtype, which sets the near-tie threshold
    whole_run_speedup: float = 0.0  # tokens/s over the whole runs (prefill included); 0 when unknown
    measured: MeasuredSpeedup | None = None  # the speed-ups and whether they can be presented
    exact: bool = False  # greedy runs on exact kernels: any divergence is a defect, never a near tie

    def to_dict(self) -> dict[str, Any]:
        first = self.first_difference
        return {
            "identical": self.identical,
            "first_difference": None if first is None else first.to_dict(),
            "decode_speedup": self.decode_speedup,
            "whole_run_speedup": self.whole_run_speedup,
            "verdict": self.verdict,
            "outcome": self.outcome,
            "cause": None if self.cause is None else self.cause.to_dict(),
            "dtype": self.dtype,
            "exact": self.exact,
            "measured": None if self.measured is None else self.measured.to_dict(),
            "headline": headline(self).render(),
            "verdict_text": " ".join(p.render() for p in verdict_reasons(self)),
        }


# --- numbers ---------------------------------------------------------------------------------


def resolution(dtype: str, value: float) -> float:
    """The gap between ``value`` and the next number of ``dtype``: eps * 2**floor(log2|value|)."""
    eps = DTYPE_EPS.get(dtype, DTYPE_EPS[UNKNOWN_DTYPE])
    magnitude = abs(value)
    if not math.isfinite(magnitude) or magnitude == 0.0:
        return eps
    return eps * 2.0 ** math.floor(math.log2(magnitude))


def near_tie_threshold(dtype: str, top_logit: float | None) -> float:
    """The largest top-2 margin that rounding in ``dtype`` can plausibly flip, in logits."""
    return NEAR_TIE_STEPS * resolution(dtype, 1.0 if top_logit is None else top_logit)


def first_difference(a: RunResult, b: RunResult, dtype: str = UNKNOWN_DTYPE) -> FirstDifference | None:
    """Where the two token streams first part, or None if they are the same. The margin is the
    smaller of the two runs' there (the closer call)."""
    n = min(len(a.tokens), len(b.tokens))
    index = next((i for i in range(n) if a.tokens[i].id != b.tokens[i].id), n)
    if index == len(a.tokens) == len(b.tokens):
        return None
    char_index = sum(len(t.text) for t in a.tokens[:index])
    there = [r.tokens[index] for r in (a, b) if index < len(r.tokens) and r.tokens[index].margin is not None]
    if not there:
        return FirstDifference(index, char_index, None)
    closest = min(there, key=lambda t: t.margin or 0.0)
    top = (
        closest.top_logit
        if closest.top_logit is not None
        else next((t.top_logit for t in there if t.top_logit is not None), None)
    )
    return FirstDifference(index, char_index, closest.margin, top, near_tie_threshold(dtype, top))


def char_diff(a: str, b: str) -> tuple[DiffOp, ...]:
    matcher = difflib.SequenceMatcher(None, a, b, autojunk=False)
    return tuple(DiffOp(op, i1, i2, j1, j2) for op, i1, i2, j1, j2 in matcher.get_opcodes())


def _verdict(first: FirstDifference | None, sampled: bool, exact: bool = False) -> Verdict:
    """``exact``: both runs verified on exact kernels (a block's logits are one-token
    decoding's bit for bit), so greedy runs cannot part at a near tie: any difference is a defect."""
    if first is None:
        return "identical"
    if sampled:
        return "sampling"
    if not exact and (
        first.margin is not None
        and first.near_tie_threshold is not None
        and first.margin <= first.near_tie_threshold
    ):
        return "near_tie"
    return "divergence"


def outcome(ratio: float, measured: MeasuredSpeedup | None = None) -> Outcome:
    if measured is not None and measured.problem is not None:
        return "not_comparable"
    if ratio <= 0:
        return "unknown"
    if abs(ratio - 1.0) < SAME_SPEED_BAND:
        return "same_speed"
    return "faster" if ratio > 1.0 else "slower"


CAUSE_KINDS: dict[str, CauseKind] = {"acceptance": "acceptance", "draft": "draft_cost", "verify": "verify_cost"}


def speed_cause(
    speculative: RunResult, baseline: RunResult, measured: MeasuredSpeedup | None = None
) -> SpeedCause | None:
    """What held a slower run back, with the explanation's numbers (one truth: the Compare view
    and its Why? panel name the same cause and the same c and v). None without the step events
    that measure them (a run rebuilt from an old file, a run that drafted nothing)."""
    e = explain(speculative, baseline, measured)
    if e.cause is None or e.draft_cost_ratio is None or e.verify_cost_ratio is None:
        return None
    return SpeedCause(
        kind=CAUSE_KINDS[e.cause],
        drafts_accepted_share=speculative.stats.drafts_accepted_share,
        tokens_per_pass=speculative.stats.tokens_per_pass,
        draft_cost=e.draft_cost_ratio,
        verify_cost=e.verify_cost_ratio,
        draft_overhead=e.k_used * e.draft_cost_ratio,
    )


def _dtype_of(run: RunResult) -> str:
    return run.made_by.dtype if run.made_by is not None else UNKNOWN_DTYPE


def _exact(run: RunResult) -> bool:
    """The run was verified on exact kernels over all of its context."""
    return run.made_by is not None and run.made_by.exact_at(run.stats.context_tokens)


def compare_runs(
    speculative: RunResult,
    baseline: RunResult,
    dtype: str | None = None,
    conditions: tuple[ArmConditions, ArmConditions] | None = None,
) -> Comparison:
    """Diff a run with speculation against one without, on the same conversation. ``dtype``:
    the target's (default: what the speculative run recorded); ``conditions``: what the machine
    did while each arm ran (speculative, baseline), which decides whether the measured
    speed-up is a result (``measure_speedup``)."""
    dtype = dtype or _dtype_of(speculative)
    first = first_difference(speculative, baseline, dtype)
    sampled = float(baseline.config.get("temperature", 0.0) or 0.0) > 0 and (  # type: ignore[arg-type]
        baseline.config.get("sampling") != "seed-invariant"
    )
    exact = not sampled and _exact(speculative) and _exact(baseline)
    measured = measure_speedup(speculative, baseline, conditions)
    ratio = measured.value or 0.0
    result = outcome(ratio, measured)
    return Comparison(
        identical=first is None,
        first_difference=first,
        decode_speedup=ratio,
        whole_run_speedup=measured.whole_run or 0.0,
        diff=char_diff(speculative.text, baseline.text),
        verdict=_verdict(first, sampled, exact),
        outcome=result,
        cause=speed_cause(speculative, baseline, measured) if result == "slower" else None,
        dtype=dtype,
        measured=measured,
        exact=exact,
    )


# --- the report of a comparison service run ---------------------------------------------------


@dataclass(frozen=True)
class StoredAnswerCheck:
    """What a comparison found about the stored answer it was asked about."""

    made_by: RunProvenance | None  # None: the answer did not record it (an old file)
    differences: tuple[str, ...]  # provenance fields that differ from the models used now
    reproduced: bool | None  # the rerun with speculation gave the stored tokens; None: not checked
    first_mismatch: int | None = None  # first token where the rerun left the stored answer
    sampled: bool = False  # not checked: its sampling does not promise the same answer again

    @property
    def same_models(self) -> bool:
        return self.made_by is not None and not self.differences

    def to_dict(self) -> dict[str, Any]:
        return {
            "made_by": None if self.made_by is None else self.made_by.to_dict(),
            "same_models": self.same_models,
            "differences": list(self.differences),
            "reproduced": self.reproduced,
            "first_mismatch": self.first_mismatch,
            "sampled": self.sampled,
        }


@dataclass(frozen=True)
class ComparisonReport:
    """Both arms of a comparison, run fresh by the same service, and what they show."""

    speculative: RunResult
    baseline: RunResult
    comparison: Comparison
    order: tuple[str, str]  # which arm ran first: ("speculative", "baseline")
    cache_policy: str  # how the arms were made comparable, in words
    stored: StoredAnswerCheck | None = None  # set when a stored answer was compared

    def to_dict(self) -> dict[str, Any]:
        return {
            "speculative": self.speculative.to_dict(),
            "baseline": self.baseline.to_dict(),
            **self.comparison.to_dict(),
            "order": list(self.order),
            "cache_policy": self.cache_policy,
            "stored": None if self.stored is None else self.stored.to_dict(),
            "notes": [p.render() for p in stored_notes(self)],
            "explanation": explain(self.speculative, self.baseline, self.comparison.measured).to_dict(),
        }


# --- wording -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Phrase:
    """An English template and its values; nested phrases are rendered first."""

    template: str
    values: tuple[tuple[str, Any], ...] = ()

    def render(self, translate: Callable[[str], str] = lambda text: text) -> str:
        values = {k: v.render(translate) if hasattr(v, "render") else v for k, v in self.values}
        return translate(self.template).format(**values)


def _phrase(template: str, **values: Any) -> Phrase:
    return Phrase(template, tuple(values.items()))


SPEED = {
    "faster": QT_TRANSLATE_NOOP(
        "CompareDialog",
        "{ratio} faster decoding",
    ),
    "slower": QT_TRANSLATE_NOOP(
        "CompareDialog",
        "slower decoding: {ratio} the plain speed",
    ),
    "same_speed": QT_TRANSLATE_NOOP(
        "CompareDialog",
        "decoding about as fast ({ratio})",
    ),
    "unknown": QT_TRANSLATE_NOOP(
        "CompareDialog",
        "speed unknown",
    ),
    "not_comparable": QT_TRANSLATE_NOOP(
        "CompareDialog",
        "speed not comparable",
    ),
}
NOT_COMPARABLE = {
    "load_changed": QT_TRANSLATE_NOOP(
        "CompareDialog",
        "The decode speed-up measured {ratio}, which is not shown as a result: the machine's load changed "
        "between the run with speculation and the run without ({evidence}). Compare again on a quieter machine.",
    ),
    "above_ceiling": QT_TRANSLATE_NOOP(
        "CompareDialog",
        "The decode speed-up measured {ratio}, above the {ceiling} these passes allow (tokens per pass, "
        "each pass costing at least a plain one): the runs did not run under like conditions, so it is "
        "not shown as a result. Compare again.",
    ),
}
LOAD_EVIDENCE = {
    "probe": QT_TRANSLATE_NOOP("CompareDialog", "a plain pass timed before each run: {value} of the other"),
    "own": QT_TRANSLATE_NOOP("CompareDialog", "the same one-token pass inside each run: {value} of the other"),
    "others": QT_TRANSLATE_NOOP("CompareDialog", "other processes: {before} then {after} busy cores"),
}
FRESH_RERUNS = QT_TRANSLATE_NOOP(
    "CompareDialog",
    "Both columns are fresh reruns of this answer (their speeds and drafts can differ from the answer's "
    "own stats line); the speed-ups divide the first column by the second.",
)
HEADLINES = {
    "identical": QT_TRANSLATE_NOOP(
        "CompareDialog",
        "Identical answer · {speed}",
    ),
    "sampling": QT_TRANSLATE_NOOP(
        "CompareDialog",
        "Different sample · {speed}",
    ),
    "near_tie": QT_TRANSLATE_NOOP(
        "CompareDialog",
        "Answers differ from token {token} · {speed}",
    ),
    "divergence": QT_TRANSLATE_NOOP(
        "CompareDialog",
        "Answers differ from token {token} · {speed}",
    ),
}
WHERE = QT_TRANSLATE_NOOP(
    "CompareDialog",
    "They first differ at token {token} (character {char})",
)
MEANINGS = {
    "identical": QT_TRANSLATE_NOOP(
        "CompareDialog",
        "Both runs produced exactly the same tokens: speculation changed the speed, not the answer.",
    ),
    "near_tie": QT_TRANSLATE_NOOP(
        "CompareDialog",
        "{where}, where the target's two best tokens were only {margin} logits apart, within "
        "{threshold} ({steps} steps of {dtype} at a logit of {top}): a near tie resolved differently by "
        "batched arithmetic — numerics, not a bug.",
    ),
    "sampling": QT_TRANSLATE_NOOP(
        "CompareDialog",
        "{where}. These answers were sampled without seed-invariant mode, so different text "
        "is expected; the distribution is the same.",
    ),
    "divergence": QT_TRANSLATE_NOOP(
        "CompareDialog",
        "{where}, where the target was confident: its two best tokens were {margin} logits "
        "apart, more than {dtype} rounding can flip ({threshold}). Greedy decoding should never diverge "
        "like this: this looks like a bug, please report it.",
    ),
    "exact_divergence": QT_TRANSLATE_NOOP(
        "CompareDialog",
        "{where} (the target's two best tokens {margin} logits apart). Both runs verified on exact "
        "kernels, where a checked block gives the very logits of one-token decoding, so greedy answers "
        "cannot differ, not even at a near tie: this is a defect, please report it.",
    ),
}
CAUSES = {
    "acceptance": QT_TRANSLATE_NOOP(
        "CompareDialog",
        "Speculation was slower here: only {acceptance} of the drafts were accepted "
        "({per_pass} tokens per target pass), too few to pay for drafting and verifying them.",
    ),
    "draft_cost": QT_TRANSLATE_NOOP(
        "CompareDialog",
        "Speculation was slower here although {acceptance} of the drafts were accepted: "
        "each step spent as long drafting as {overhead} plain target steps ({c} per draft), which "
        "ate the gain of {per_pass} tokens per target pass.",
    ),
    "verify_cost": QT_TRANSLATE_NOOP(
        "CompareDialog",
        "Speculation was slower here although {acceptance} of the drafts were accepted: "
        "one verify pass over the drafts cost {v} plain target steps, which ate the gain of {per_pass} "
        "tokens per target pass.",
    ),
}
STORED_NOTES = {
    "unknown": QT_TRANSLATE_NOOP(
        "CompareDialog",
        "This answer was saved without a record of the models that made it, so both runs "
        "were made again with the models loaded now ({now}).",
    ),
    "different": QT_TRANSLATE_NOOP(
        "CompareDialog",
        "This answer was made by {then}; the models loaded now are {now}. Both runs were "
        "made again with the loaded models: this compares them, not the stored answer.",
    ),
    "not_reproduced": QT_TRANSLATE_NOOP(
        "CompareDialog",
        "The run with speculation differs from the stored answer from token {token}, "
        "although the same models and settings made both.",
    ),
    "sampled": QT_TRANSLATE_NOOP(
        "CompareDialog",
        "This answer was sampled with automatic k, which does not repeat an answer from its seed "
        "(the draws depend on how many drafts each step verified): the runs are new samples, "
        "not a check of the stored answer.",
    ),
}


def speed_phrase(ratio: float, measured: MeasuredSpeedup | None = None) -> Phrase:
    """The decode speed-up in words, its number formatted as the Why panel shows it."""
    return _phrase(SPEED[outcome(ratio, measured)], ratio=format_ratio(ratio))


@dataclass(frozen=True)
class _Joined:
    """Phrases rendered one after the other, separated by "; " (the evidence of a load change)."""

    parts: tuple[Phrase, ...]

    def render(self, translate: Callable[[str], str] = lambda text: text) -> str:
        return "; ".join(p.render(translate) for p in self.parts)


def _load_evidence(measured: MeasuredSpeedup) -> _Joined:
    """What was measured of the machine's load, as far as it is known."""
    parts = []
    if measured.plain_drift is not None:
        parts.append(_phrase(LOAD_EVIDENCE["probe"], value=format_ratio(measured.plain_drift)))
    if measured.own_plain_drift is not None:
        parts.append(_phrase(LOAD_EVIDENCE["own"], value=format_ratio(measured.own_plain_drift)))
    before, after = measured.load
    if before is not None and after is not None:
        parts.append(_phrase(LOAD_EVIDENCE["others"], before=f"{before:.1f}", after=f"{after:.1f}"))
    return _Joined(tuple(parts))


def not_comparable_phrase(measured: MeasuredSpeedup) -> Phrase | None:
    """Why a measured speed-up is not presented, with the figures that say so (None: it is)."""
    if measured.problem is None or measured.value is None:
        return None
    return _phrase(
        NOT_COMPARABLE[measured.problem],
        ratio=format_ratio(measured.value),
        ceiling=format_ratio(measured.ceiling or 0.0),
        evidence=_load_evidence(measured),
    )


def headline(comparison: Comparison) -> Phrase:
    """The big line: "Identical answer · 1.80× faster decoding" (the decode speed-up)."""
    first = comparison.first_difference
    token = first.token_index if first is not None else 0
    speed = speed_phrase(comparison.decode_speedup, comparison.measured)
    return _phrase(HEADLINES[comparison.verdict], speed=speed, token=token)


def headline_tone(comparison: Comparison) -> Tone:
    """By outcome: a slower or numerically different result is never "good"."""
    if comparison.verdict == "divergence":
        return "bad"
    if comparison.outcome in ("slower", "not_comparable") or comparison.verdict == "near_tie":
        return "warning"
    if comparison.outcome == "faster":
        return "good"
    return "neutral"


def _number(value: float | None, spec: str) -> str:
    return "unknown" if value is None else format(value, spec)


def meaning(comparison: Comparison) -> Phrase:
    """What the verdict means, in plain words."""
    first = comparison.first_difference
    if first is None:
        return _phrase(MEANINGS["identical"])
    where = _phrase(WHERE, token=first.token_index, char=first.char_index)
    exact = comparison.exact and comparison.verdict == "divergence"
    return _phrase(
        MEANINGS["exact_divergence" if exact else comparison.verdict],
        where=where,
        margin=_number(first.margin, ".4g"),
        threshold=_number(first.near_tie_threshold, ".2g"),
        steps=NEAR_TIE_STEPS,
        dtype=comparison.dtype,
        top=_number(first.top_logit, ".3g"),
    )


def cause_phrase(cause: SpeedCause) -> Phrase:
    return _phrase(
        CAUSES[cause.kind],
        acceptance=f"{cause.drafts_accepted_share:.0%}",
        per_pass=f"{cause.tokens_per_pass:.2f}",
        overhead=f"{cause.draft_overhead:.2f}",
        c=f"{cause.draft_cost:.2f}",
        v=f"{cause.verify_cost:.2f}",
    )


def verdict_reasons(comparison: Comparison) -> tuple[Phrase, ...]:
    """The verdict's meaning, then (when slower) why."""
    phrases = [meaning(comparison)]
    unlike = not_comparable_phrase(comparison.measured) if comparison.measured is not None else None
    if unlike is not None:
        phrases.append(unlike)
    if comparison.cause is not None:
        phrases.append(cause_phrase(comparison.cause))
    return tuple(phrases)


def stored_notes(report: ComparisonReport) -> tuple[Phrase, ...]:
    """What to say about the stored answer the comparison was asked about, if anything."""
    check = report.stored
    if check is None:
        return ()
    now = report.speculative.made_by.describe() if report.speculative.made_by is not None else "unknown"
    if check.made_by is None:
        return (_phrase(STORED_NOTES["unknown"], now=now),)
    if check.differences:
        return (_phrase(STORED_NOTES["different"], then=check.made_by.describe(), now=now),)
    if check.reproduced is False:
        return (_phrase(STORED_NOTES["not_reproduced"], token=check.first_mismatch),)
    if check.sampled:
        return (_phrase(STORED_NOTES["sampled"]),)
    return ()
