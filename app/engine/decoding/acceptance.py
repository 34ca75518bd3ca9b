"""Verification: given the target's rows for ``[last, d1..dm]``, which drafts survive and
what the target says next.

Row ``j`` of the target's output (``[m+1, V]``) is its distribution for the position of
draft ``d_{j+1}``; row ``m`` is the position after the last draft (the *bonus*).
Each rule returns how many drafts are accepted and the target's own next token: the
correction at the first rejection, or the bonus when every draft passes.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from app.engine.config import GenerationConfig
from app.engine.decoding.sampling import RepetitionPenalty, greedy_token, gumbel_argmax, probabilities, sample


@dataclass(frozen=True)
class Verdict:
    n_accepted: int
    next_token: int


def _first_mismatch(drafts: list[int], choices: list[int]) -> Verdict:
    """Accept the longest prefix where the draft equals the target's own choice."""
    n = 0
    while n < len(drafts) and drafts[n] == choices[n]:
        n += 1
    return Verdict(n, choices[n])


def accept_greedy(target_logits: torch.Tensor, drafts: list[int]) -> Verdict:
    """Greedy: the target's argmax decides (``greedy_token``'s tie rule).  target_logits: [m+1, V]"""
    return _first_mismatch(drafts, greedy_token(target_logits).tolist())


def accept_seed_invariant(
    target_logits: torch.Tensor, drafts: list[int], config: GenerationConfig, first_position: int
) -> Verdict:
    """Gumbel coupling: the target samples each position with noise keyed by (seed, position),
    so its token does not depend on the drafts; a draft survives iff it is that token."""
    return _first_mismatch(drafts, gumbel_argmax(target_logits, config, first_position))


def accept_standard(
    p: torch.Tensor, drafts: list[int], q: torch.Tensor | None, generator: torch.Generator
) -> Verdict:
    """Lossless speculative sampling (Leviathan et al. 2023; Chen et al. 2023).

    p: target probabilities [m+1, V]; q: draft probabilities [m, V], or None for a drafter
    without probabilities (prompt lookup), which is a point mass on its draft.
    """
    p = p.float().cpu()
    q = q.float().cpu() if q is not None else None
    uniforms = torch.rand(len(drafts), generator=generator).tolist()
    for j, token in enumerate(drafts):
        p_tok = float(p[j, token])
        q_tok = float(q[j, token]) if q is not None else 1.0
        if q_tok <= p_tok or uniforms[j] < p_tok / q_tok:  # q <= p: always accept
            continue
        # rejected: sample the residual norm(max(0, p - q)); for a point mass that is p
        # with the draft token removed
        if q is not None:
            residual = (p[j] - q[j]).clamp_(min=0.0)
        else:
            residual = p[j].clone()
            residual[token] = 0.0
        if float(residual.sum()) <= 0.0:  # p == q up to rounding: nothing left to correct
            residual = p[j]
        return Verdict(j, sample(residual / residual.sum(), generator))
    return Verdict(len(drafts), sample(p[len(drafts)], generator))


class Rule:
    """How both models turn logits into tokens under one ``GenerationConfig``: greedy,
    standard speculative sampling, or seed-invariant (Gumbel) sampling.

    Verifying zero drafts is a plain decoding step, so the loop without a drafter is the
    same code path.
    """

    def __init__(self, config: GenerationConfig) -> None:
        self.config = config
        self.generator = torch.Generator().manual_seed(config.seed)
        self.penalty = RepetitionPenalty(config.repetition_penalty)

    def logits(self, raw: torch.Tensor, tokens: list[int], drafts: list[int]) -> torch.Tensor:
        """The logits both models decide from: ``raw`` with the repetition penalty of each row's
        own history applied (row ``j`` of ``R`` follows ``tokens + drafts[: m - R + 1 + j]``).
        Target and draft must pass through here alike, or speculation is not lossless.  [R, V]"""
        return self.penalty(raw, tokens, drafts)

    def probs(self, logits: torch.Tensor) -> torch.Tensor:
        """Distribution per row ``[T, V]``: what is sampled from (or shown, when greedy)."""
        return probabilities(logits, self.config)

    def choose_draft(self, logits: torch.Tensor, q: torch.Tensor, position: int) -> int:
        """The drafter's token for one absolute position.  logits: [V]; q: ``probs(logits)`` [V]"""
        if self.config.greedy:
            return int(greedy_token(logits))
        if self.config.sampling == "seed-invariant":
            return gumbel_argmax(logits[None], self.config, position)[0]
        return sample(q, self.generator)

    def verify(
        self,
        logits: torch.Tensor,
        p: torch.Tensor | None,
        drafts: list[int],
        q: torch.Tensor | None,
        first_position: int,
        argmax: list[int] | None = None,
    ) -> Verdict:
        """logits: target rows [m+1, V]; p: ``self.probs(logits)``, computed once by the caller
        (None: computed here where the rule draws from it; greedy never does);
        q: draft rows [m, V] or None (point mass); argmax: the rows' argmax if the caller
        already has it on the host (greedy then needs no transfer of its own)."""
        if self.config.greedy:
            return _first_mismatch(drafts, argmax) if argmax is not None else accept_greedy(logits, drafts)
        if self.config.sampling == "seed-invariant":
            return accept_seed_invariant(logits, drafts, self.config, first_position)
        return accept_standard(self.probs(logits) if p is None else p, drafts, q, self.generator)
