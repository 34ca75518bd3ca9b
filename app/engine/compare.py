"""Compare two runs of the same conversation: is it the same answer, and how much faster?

Pure Python (no torch), so the GUI may import it directly.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from typing import Literal

from .events import RunResult

Verdict = Literal["identical", "near_tie", "sampling", "divergence"]
DiffKind = Literal["equal", "insert", "delete", "replace"]

# A top-2 logit gap below this is a near-tie: batched verification runs other kernels than
# one-token decoding, so logits differ in the last bits (~1e-5 in fp32, ~1e-2 in bf16) and a
# near-tie can flip.
NEAR_TIE_MARGIN = 0.1


@dataclass(frozen=True)
class FirstDifference:
    token_index: int
    char_index: int
    margin: float | None  # target's top-1 minus top-2 logit at that position


@dataclass(frozen=True)
class DiffOp:
    """A character range of the first text (a) and what became of it in the second (b)."""

    op: DiffKind
    a_start: int
    a_end: int
    b_start: int
    b_end: int


@dataclass(frozen=True)
class Comparison:
    identical: bool
    first_difference: FirstDifference | None
    speedup: float  # baseline wall time / speculative wall time
    diff: tuple[DiffOp, ...]
    verdict: Verdict

    def to_dict(self) -> dict[str, object]:
        first = self.first_difference
        return {
            "identical": self.identical,
            "first_difference": None
            if first is None
            else {"token_index": first.token_index, "char_index": first.char_index, "margin": first.margin},
            "speedup": self.speedup,
            "verdict": self.verdict,
        }


def first_difference(a: RunResult, b: RunResult) -> FirstDifference | None:
    """Where the two token streams first part, or None if they are the same."""
    n = min(len(a.tokens), len(b.tokens))
    index = next((i for i in range(n) if a.tokens[i].id != b.tokens[i].id), n)
    if index == len(a.tokens) == len(b.tokens):
        return None
    char_index = sum(len(t.text) for t in a.tokens[:index])
    margins = [r.tokens[index].margin for r in (a, b) if index < len(r.tokens)]
    known = [m for m in margins if m is not None]
    return FirstDifference(index, char_index, min(known) if known else None)


def char_diff(a: str, b: str) -> tuple[DiffOp, ...]:
    matcher = difflib.SequenceMatcher(None, a, b, autojunk=False)
    return tuple(DiffOp(op, i1, i2, j1, j2) for op, i1, i2, j1, j2 in matcher.get_opcodes())


def _verdict(first: FirstDifference | None, sampled: bool) -> Verdict:
    if first is None:
        return "identical"
    if sampled:
        return "sampling"
    if first.margin is not None and first.margin < NEAR_TIE_MARGIN:
        return "near_tie"
    return "divergence"


def _wall(run: RunResult) -> float:
    return run.stats.prefill_s + run.stats.decode_s


def compare_runs(speculative: RunResult, baseline: RunResult) -> Comparison:
    """Diff a run with speculation against one without, on the same conversation."""
    first = first_difference(speculative, baseline)
    sampled = float(baseline.config.get("temperature", 0.0) or 0.0) > 0 and (
        baseline.config.get("sampling") != "seed-invariant"
    )
    spec_wall = _wall(speculative)
    return Comparison(
        identical=first is None,
        first_difference=first,
        speedup=_wall(baseline) / spec_wall if spec_wall > 0 else 0.0,
        diff=char_diff(speculative.text, baseline.text),
        verdict=_verdict(first, sampled),
    )
