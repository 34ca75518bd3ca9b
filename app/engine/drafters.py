"""Drafters: cheap proposers of the next few tokens, behind one small interface.

A drafter sees the whole token sequence so far (prompt + answer) and proposes up to ``k``
tokens. A model drafter also returns its distribution per proposed token (needed by the
standard acceptance rule); prompt lookup has none, so its drafts count as point masses.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import torch

from .acceptance import Rule
from .kv import CachedModel


@dataclass(frozen=True)
class Proposal:
    tokens: list[int]
    q: torch.Tensor | None  # [m, V] draft distribution per proposed token; None = point mass
    p_draft: list[float | None]  # draft probability of each proposed token (for display)
    passes: int  # draft forward passes spent


class Drafter(Protocol):
    name: str

    def propose(self, tokens: list[int], k: int, rule: Rule, confidence_threshold: float) -> Proposal: ...

    def reset(self) -> None: ...


class PromptLookupDrafter:
    """n-gram lookup (Saxena 2023; llama.cpp's and HF's prompt lookup): find the latest
    earlier occurrence of the sequence's last n tokens and propose what followed it. Shines
    when the answer quotes the prompt (editing, summarising, code)."""

    name = "prompt lookup"

    def __init__(
        self,
        eos_ids: frozenset[int] = frozenset(),
        max_ngram: int = 3,
        min_ngram: int = 1,
        single_token_match_drafts: int = 2,
    ) -> None:
        self.eos_ids = eos_ids
        self.max_ngram = max_ngram
        self.min_ngram = min_ngram
        # A match on the last token alone is a weak signal: propose fewer tokens after it.
        # On 2 CPU cores verifying 6 tokens costs 1.7x verifying one, and capping these
        # proposals at 2 raised tokens per unit of verify cost by 8% on the bench prompts.
        self.single_token_match_drafts = single_token_match_drafts

    def propose(self, tokens: list[int], k: int, rule: Rule, confidence_threshold: float) -> Proposal:
        for n in range(self.max_ngram, self.min_ngram - 1, -1):
            limit = min(k, self.single_token_match_drafts) if n == 1 else k
            continuation = _until_eos(_latest_continuation(tokens, n, limit), self.eos_ids)
            if continuation:
                return Proposal(continuation, None, [None] * len(continuation), passes=0)
        return Proposal([], None, [], passes=0)

    def reset(self) -> None:
        pass


def _until_eos(drafts: list[int], eos_ids: frozenset[int]) -> list[int]:
    """Nothing follows an end of sequence: drafting past one is wasted verification."""
    for i, token in enumerate(drafts):
        if token in eos_ids:
            return drafts[: i + 1]
    return drafts


def _latest_continuation(tokens: list[int], n: int, k: int) -> list[int]:
    """Up to ``k`` tokens that followed the latest earlier occurrence of the last ``n`` tokens."""
    if len(tokens) <= n:
        return []
    tail = tokens[-n:]
    first = tail[0]
    for start in range(len(tokens) - n - 1, -1, -1):
        if tokens[start] == first and tokens[start : start + n] == tail:
            return tokens[start + n : start + n + k]
    return []


class ModelDrafter:
    """A small causal LM with its own KV cache, drafting one token per forward pass.

    The confidence threshold ``t`` is decided on the draft distribution *before* drawing from
    it: drafting stops when the most likely token has ``max q < t``. That keeps standard
    sampling exact. At each position either a draft ``d ~ q`` is verified (accepted with
    ``min(1, p/q)``, else replaced by a draw from ``norm(max(0, p - q))``: output ``p``) or the
    target draws from ``p`` itself; both give ``p``, so any choice between them made before
    ``d`` is drawn keeps the output ``p``. Stopping *after* the draw, on ``q(d) < t``, would
    propose from ``q`` restricted to ``{q ≥ t}`` while the rule divides by the whole ``q``:
    for ``q = (.9, .1)``, ``p = (.5, .5)``, ``t = .5`` that gives ``P(a) = .9·(.5/.9) + .1·.5
    = .55``. Greedily the two coincide (the draft is the argmax, ``q(d) = max q``).
    """

    def __init__(self, runner: CachedModel, name: str, eos_ids: frozenset[int] = frozenset()) -> None:
        self.runner = runner
        self.name = f"draft model: {name}"
        self.eos_ids = eos_ids

    def propose(self, tokens: list[int], k: int, rule: Rule, confidence_threshold: float) -> Proposal:
        raw = self.runner.continue_from(tokens)  # [1, V]; catches up on what it missed
        passes = 1
        drafts: list[int] = []
        rows: list[torch.Tensor] = []
        for i in range(k):
            logits = rule.logits(raw, tokens, drafts)  # [1, V], after tokens + drafts
            q = rule.probs(logits)[0]  # [V]
            if confidence_threshold and float(q.max()) < confidence_threshold:
                break  # not sure enough: let the target decide from here (decided before drawing)
            token = rule.choose_draft(logits[0], q, len(tokens) + i)
            drafts.append(token)
            rows.append(q)
            if token in self.eos_ids:
                break  # nothing follows an end of sequence
            if i + 1 < k:
                raw = self.runner.forward([token], keep=1)
                passes += 1
        q_all = torch.stack(rows) if rows else None
        return Proposal(drafts, q_all, [float(r[t]) for r, t in zip(rows, drafts)], passes)

    def reset(self) -> None:
        self.runner.reset()
