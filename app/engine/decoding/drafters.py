"""Drafters: cheap proposers of the next few tokens, behind one small interface.

A drafter sees the whole token sequence so far (prompt + answer) and proposes up to ``k``
tokens. A model drafter also returns its distribution per proposed token (needed by the
standard acceptance rule); prompt lookup has none, so its drafts count as point masses.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Protocol, TypeVar

import torch

from app.engine.decoding.acceptance import Rule
from app.engine.decoding.cost import lookup_key
from app.engine.events import MIXED_SUFFIX, THIS_CONVERSATION, TokenOrigin
from app.engine.runners.kv import CachedModel

T = TypeVar("T")


@dataclass(frozen=True)
class Proposal:
    tokens: list[int]
    q: torch.Tensor | None  # [m, V] draft distribution per proposed token; None = point mass
    p_draft: list[float | None]  # draft probability of each proposed token (for display)
    passes: int  # draft forward passes spent
    ngram: int = 0  # prompt lookup: length of the matched n-gram (the evidence); 0 for a model
    stopped: bool = False  # a draft model's confidence threshold ended the block before k
    fed: int = 0  # tokens a draft model fed in its first pass (its catch-up; 0: none, or drafts made ahead)
    key: str | None = None  # the evidence kind for the k chooser (lookup_key, suffix_key); None: model
    origin: TokenOrigin | None = None  # where the drafts were copied from; None: a draft model

    def first(self, k: int) -> Proposal:
        """Only the first ``k`` drafts."""
        if k >= len(self.tokens):
            return self
        q = self.q[:k] if self.q is not None and k > 0 else None
        return Proposal(
            self.tokens[:k], q, self.p_draft[:k], self.passes, self.ngram, self.stopped, self.fed, self.key, self.origin
        )


class Drafter(Protocol):
    name: str
    cheap: bool  # drafting costs next to nothing: propose the most, let the k chooser cut

    def propose(
        self, tokens: list[int], k: int, rule: Rule, confidence_threshold: float, new_turn: bool = True
    ) -> Proposal:
        """``new_turn``: ``tokens`` is not the previous call's sequence plus appended tokens
        (a new answer), so nothing remembered about it may be trusted."""
        ...

    def unseen(self, tokens: list[int]) -> int:
        """Tokens it would feed to catch up with ``tokens`` (0 for a cheap drafter)."""
        ...

    def reset(self) -> None: ...


class NgramIndex:
    """For each n, the latest start of every n-gram that has at least one token after it:
    ``tables[n][tuple(tokens[s:s+n])] = s`` with ``s + n < len(tokens)``, and the n-grams
    whose occurrences were followed by different tokens (``contested``). Appending a token
    updates one entry per n, so a lookup never scans the sequence."""

    def __init__(self, min_ngram: int, max_ngram: int) -> None:
        self.sizes = range(min_ngram, max_ngram + 1)
        self.tables: dict[int, dict[tuple[int, ...], int]] = {n: {} for n in self.sizes}
        self.contested: dict[int, set[tuple[int, ...]]] = {n: set() for n in self.sizes}
        self.length = 0  # positions of the sequence indexed so far

    def clear(self) -> None:
        self.tables = {n: {} for n in self.sizes}
        self.contested = {n: set() for n in self.sizes}
        self.length = 0

    def update(self, tokens: list[int]) -> None:
        """Index the positions appended since the last update (the sequence only grows)."""
        for i in range(self.length, len(tokens)):
            for n in self.sizes:  # token i continues the n-gram ending just before it
                if i >= n:
                    gram = tuple(tokens[i - n : i])
                    earlier = self.tables[n].get(gram)
                    if earlier is not None and tokens[earlier + n] != tokens[i]:
                        self.contested[n].add(gram)
                    self.tables[n][gram] = i - n
        self.length = len(tokens)

    def continuation(self, tokens: list[int], n: int, k: int) -> list[int]:
        """Up to ``k`` tokens that followed the latest earlier occurrence of the last ``n``."""
        if len(tokens) <= n:
            return []
        start = self.tables[n].get(tuple(tokens[-n:]))
        return [] if start is None else tokens[start + n : start + n + k]

    def is_contested(self, tokens: list[int], n: int) -> bool:
        """Whether the last ``n`` tokens occurred before followed by different next tokens:
        the latest occurrence's continuation is then one guess among several."""
        return len(tokens) > n and tuple(tokens[-n:]) in self.contested[n]


class PromptLookupDrafter:
    """n-gram lookup (Saxena 2023; llama.cpp's and HF's prompt lookup): find the latest
    earlier occurrence of the sequence's last n tokens and propose what followed it. Shines
    when the answer quotes the prompt (editing, summarising, code)."""

    name = "prompt lookup"
    cheap = True

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
        self.index = NgramIndex(min_ngram, max_ngram)

    def propose(
        self, tokens: list[int], k: int, rule: Rule, confidence_threshold: float, new_turn: bool = True
    ) -> Proposal:
        if new_turn or len(tokens) < self.index.length:
            self.index.clear()
        self.index.update(tokens)
        for n in range(self.max_ngram, self.min_ngram - 1, -1):
            limit = min(k, self.single_token_match_drafts) if n == 1 else k
            continuation = _until_eos(self.index.continuation(tokens, n, limit), self.eos_ids)
            if continuation:
                key = lookup_key(n, self.index.is_contested(tokens, n))
                return Proposal(
                    continuation, None, [None] * len(continuation), passes=0, ngram=n, key=key,
                    origin=THIS_CONVERSATION,
                )
        return Proposal([], None, [], passes=0)

    def unseen(self, tokens: list[int]) -> int:
        return 0  # indexing costs next to nothing

    def reset(self) -> None:
        self.index.clear()


def _until_eos(drafts: list[int], eos_ids: frozenset[int]) -> list[int]:
    """Nothing follows an end of sequence: drafting past one is wasted verification."""
    for i, token in enumerate(drafts):
        if token in eos_ids:
            return drafts[: i + 1]
    return drafts


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

    cheap = False

    def __init__(self, runner: CachedModel, name: str, eos_ids: frozenset[int] = frozenset()) -> None:
        self.runner = runner
        self.name = f"draft model: {name}"
        self.eos_ids = eos_ids
        self._seen = 0  # length of the sequence at the previous call of this turn
        self._executor: ThreadPoolExecutor | None = None  # drafting ahead (``propose_ahead``)
        # draft the next block while the target verifies this one (``decode``); the engine sets
        # it where a core is free for the drafter's thread
        self.ahead = False

    def propose(
        self, tokens: list[int], k: int, rule: Rule, confidence_threshold: float, new_turn: bool = True
    ) -> Proposal:
        # catches up on what it missed; inside a turn only the positions since the previous
        # call are compared (the sequence only grew)
        trusted = 0 if new_turn else self._seen
        # what its first pass feeds: the tokens since its cache last agreed (a new turn: all it
        # does not hold of the conversation, its catch-up)
        fed = len(tokens) - min(self.runner.common_prefix(tokens, trusted), len(tokens) - 1)
        self._seen = len(tokens)
        raw = self.runner.continue_from(tokens, trusted=trusted)  # [1, V]
        passes = 1
        drafts: list[int] = []
        rows: list[torch.Tensor] = []
        stopped = False
        for i in range(k):
            logits = rule.logits(raw, tokens, drafts)  # [1, V], after tokens + drafts
            q = rule.probs(logits)[0]  # [V]
            if confidence_threshold and float(q.max()) < confidence_threshold:
                stopped = True  # not sure enough: let the target decide from here (decided before drawing)
                break
            token = rule.choose_draft(logits[0], q, len(tokens) + i)
            drafts.append(token)
            rows.append(q)
            if token in self.eos_ids:
                break  # nothing follows an end of sequence
            if i + 1 < k:
                raw = self.runner.forward([token], keep=1)
                passes += 1
        q_all = torch.stack(rows) if rows else None
        return Proposal(
            drafts, q_all, [float(r[t]) for r, t in zip(rows, drafts)], passes, stopped=stopped, fed=fed
        )

    def propose_ahead(
        self, tokens: list[int], k: int, rule: Rule, confidence_threshold: float, verified: int, new_turn: bool
    ) -> Future[Proposal]:
        """``propose(tokens, k, ...)`` on the drafter's own thread, while the target verifies:
        ``tokens`` ends in the drafts being verified, as if all pass, so the first draft is this
        model's guess for the target's next token. Only the first ``verified`` tokens are known to
        be right, and later calls trust no more than those (``new_turn``: as ``propose``'s, the
        drafter's first ask of an answer trusts nothing). Nothing else may use the runner until
        the future is done (``decode`` waits for it before the next step or at the end)."""

        def run() -> Proposal:
            proposal = self.propose(tokens, k, rule, confidence_threshold, new_turn=new_turn)
            self._seen = verified
            return proposal

        return self.on_own_thread(run)

    def on_own_thread(self, work: Callable[[], T]) -> Future[T]:
        """``work`` on the drafter's own thread (one torch thread: the core the target's threads
        leave free), where it drafts ahead; nothing else may use the runner until it is done."""
        if self._executor is None:
            self._executor = ThreadPoolExecutor(1, "specchat-draft", initializer=torch.set_num_threads, initargs=(1,))
        return self._executor.submit(work)

    def unseen(self, tokens: list[int]) -> int:
        """Tokens of ``tokens`` its cache does not hold yet (what catching up would feed)."""
        return len(tokens) - self.runner.common_prefix(tokens)

    def behind(self, tokens: list[int]) -> int:
        """``unseen`` after its first ask of a turn, comparing only the positions since its
        previous ask (as ``propose`` does: the sequence only grew), not the whole conversation
        on every step."""
        return len(tokens) - self.runner.common_prefix(tokens, self._seen)

    def keep_head(self, head: list[int]) -> None:
        """Read ``head`` (the chat template's part of every conversation) into the cache and keep it
        across ``reset`` (``CachedModel.keep_head``): a new conversation's catch-up feeds only what
        follows it. A draft's cache never changes the answer; its drafts are the same too."""
        self.runner.keep_head(head)

    def reset(self) -> None:
        """Forget every turn: back to the kept head (``keep_head``)."""
        self.runner.reset_to_head()


class MixedDrafter:
    """The draft model and a free drafter together (prompt lookup and the suffix index: drafts
    copied from this conversation or an earlier one, at no pass's cost). With auto k, each step
    the chooser rates both on what it measured (the free block's acceptance by its evidence, on
    drafts already at hand; the model's, on what its drafts cost) and the step verifies the block
    it rates faster (``decode._propose_mixed``). With a fixed k nothing measured chooses between
    them: the model drafts alone (``propose`` is the model's).

    Each part keeps its own turn: the model's first ask of an answer trusts nothing of its cache
    even when the free part was asked before it (``asks_first``)."""

    cheap = False

    def __init__(self, model: ModelDrafter, free: Drafter) -> None:
        self.model = model
        self.free = free
        self.name = f"{model.name}{MIXED_SUFFIX}"
        self._asked: set[str] = set()  # the parts asked in this answer

    def asks_first(self, part: str, new_turn: bool) -> bool:
        """Whether this ask of ``part`` ("model" or "free") is its first of the answer
        (``new_turn``: the mixed drafter's own first ask of it)."""
        if new_turn:
            self._asked.clear()
        first = part not in self._asked
        self._asked.add(part)
        return first

    def asked(self, part: str) -> bool:
        """Whether ``part`` was asked already in this answer (once this answer's first ask cleared
        the last one's)."""
        return part in self._asked

    def behind(self, tokens: list[int]) -> int:
        """What the model has not seen of ``tokens``, once asked in this answer (0 before: its
        catch-up on the prompt is weighed for the answer, ``decode._drafter_for_answer``)."""
        return self.model.behind(tokens) if self.asked("model") else 0

    def propose_free(
        self, tokens: list[int], k: int, rule: Rule, confidence_threshold: float, new_turn: bool = True
    ) -> Proposal:
        first = self.asks_first("free", new_turn)
        return self.free.propose(tokens, k, rule, confidence_threshold, first)

    def propose_model(
        self, tokens: list[int], k: int, rule: Rule, confidence_threshold: float, new_turn: bool = True
    ) -> Proposal:
        first = self.asks_first("model", new_turn)
        return self.model.propose(tokens, k, rule, confidence_threshold, first)

    def propose(
        self, tokens: list[int], k: int, rule: Rule, confidence_threshold: float, new_turn: bool = True
    ) -> Proposal:
        return self.propose_model(tokens, k, rule, confidence_threshold, new_turn)

    def unseen(self, tokens: list[int]) -> int:
        return self.model.unseen(tokens)

    def reset(self) -> None:
        self.model.reset()
        self.free.reset()




def model_of(drafter: Drafter | None) -> ModelDrafter | None:
    """The draft model a drafter runs (itself, or a mixed drafter's), None for a free one."""
    if isinstance(drafter, MixedDrafter):
        return drafter.model
    return drafter if isinstance(drafter, ModelDrafter) else None
