"""A causal LM plus the KV cache it has built, and the exact token ids that cache holds.

Knowing the ids is what makes rollback and reuse simple: to continue from any sequence,
crop the cache to the longest common prefix and feed the rest. That one move serves a
follow-up chat turn (prefill only the new tokens) and a drafter catching up with the target.
Inside a turn the caller knows how much of the cache is valid, so a step rolls back to that
length and feeds only its new tokens (``feed_at``): nothing per step scans the context.

Sliding-window layers (Mistral, Gemma) keep only the last ``window - 1`` positions. The cache
records the states a step adds until the next crop, so the rejected tail of the latest pass can
still be rolled back once the window is exceeded; every crop trims back to the window.
"""

from __future__ import annotations

import inspect
import time
from contextlib import AbstractContextManager, nullcontext
from typing import TYPE_CHECKING

import torch
from transformers.cache_utils import DynamicCache, DynamicLayer

from app.engine.runners.growing import GrowingLayer
from app.engine.runners.lean import LeanPass

if TYPE_CHECKING:
    from transformers import PreTrainedModel

# A prompt on an empty cache runs transformers' own pass, whose torch ops (norms, activation,
# residual adds) run on torch's OpenMP threads between the kernels' calls: each pool's workers
# spin for the cores the other needs. With every linear SpecChat's kernel, the real 1.5B's
# (Q4_K_M) prompt pass at 2 threads took 0.72-0.80x the time with torch's ops on one thread over
# 16 and 64 tokens, the same over 256, 1.01-1.02x over 512 and 1,024 (its ops are large enough
# there to use both threads), the same bits (Intel Xeon, 2 cores, 2026-12-06).
SPLIT_PROMPT_ROWS = 256


def _cache_kwarg(model: PreTrainedModel) -> str:
    """transformers 5 renamed ``past_key_values`` to ``cache``; accept either."""
    params = inspect.signature(model.forward).parameters
    return "cache" if "cache" in params else "past_key_values"


def _new_cache(model: PreTrainedModel) -> tuple[DynamicCache, int | None]:
    """An empty cache and the smallest sliding window among its layers (None: none slide).
    Full-attention layers grow in place (``GrowingLayer``); sliding ones keep transformers' own."""
    cache = DynamicCache(config=model.config)
    cache.layers = [GrowingLayer() if type(layer) is DynamicLayer else layer for layer in cache.layers]  # type: ignore[no-untyped-call]  # transformers leaves __init__ unannotated
    if cache.layer_class_to_replicate is DynamicLayer:  # a config without layer types: layers made on use
        cache.layer_class_to_replicate = GrowingLayer
    windows = [
        int(getattr(layer, "sliding_window", 0))
        for layer in cache.layers
        if getattr(layer, "is_sliding", False)
    ]
    if not windows:
        return cache, None
    cache.activate_past_recording()  # type: ignore[no-untyped-call]  # transformers leaves it unannotated; keep what a rollback of the latest pass needs, until crop
    return cache, min(windows)


class CachedModel:
    def __init__(
        self, model: PreTrainedModel, vocab_size: int, isolate_first_token: bool = False, lean: bool = True
    ) -> None:
        self.model = model
        # passes on a cache (decoding, verification, a follow-up prompt) skip transformers' generic model code,
        # bit-identical to it (runners/lean.py); None: every pass is ``model(...)``
        self.lean = LeanPass.of(model) if lean else None
        self.head: list[int] = []  # what ``reset_to_head`` keeps of the cache (``keep_head``)
        # Dynamic int8 scales activations per tensor, and the first token of a sequence (the
        # attention sink) has outlier activations: prefilled together with the prompt it
        # crushes the precision of every other position. Fed alone first, the int8 draft's
        # agreement with the target on a bench prompt rose from 66% to 77%.
        self.isolate_first_token = isolate_first_token
        self.vocab_size = vocab_size  # logits beyond the tokenizer (padding rows) are dropped
        self.device = model.device
        self.tokens: list[int] = []
        self._cache: DynamicCache | None = None
        self._window: int | None = None  # smallest sliding window, if any layer slides
        self._fed_since_trim = 0  # positions a sliding cache can still roll back
        self._cache_kwarg = _cache_kwarg(model)
        # accounting, read by tests and the bench: positions fed, seconds inside the model
        self.fed_tokens = 0
        self.forward_s = 0.0

    def reset(self) -> None:
        self.tokens = []
        self._cache = None
        self._fed_since_trim = 0

    def keep_head(self, head: list[int]) -> None:
        """Read ``head`` into an empty cache and keep it across ``reset_to_head``: the chat template's
        part of every conversation (Qwen2.5's default system prompt and the user's header: 24
        tokens), read once when the engine warms up instead of at every new conversation (the
        first question after a load then feeds only what follows it: 12 of the 36 tokens of "What
        is the capital of France?" on Qwen2.5). On a CPU a row's bits do not depend on the rows
        fed beside it (row-wise attention, batch-invariant linears: tests/test_lean.py), so the
        logits after the head are those a pass over the whole prompt gives."""
        self.reset()
        if head:
            self.forward(list(head), keep=1)
        self.head = list(head)

    def reset_to_head(self) -> None:
        """Forget every turn: back to the kept head (``keep_head``) where the cache still begins
        with it and can roll back to it, else empty."""
        n = len(self.head)
        if n and self.tokens[:n] == self.head:
            self.truncate(n)  # empties the cache where it cannot roll back
            if len(self.tokens) == n:
                return
        self.reset()

    def _can_roll_back(self, drop: int) -> bool:
        if self._cache is None or not self._cache.is_croppable:
            return False
        if self._window is None or len(self.tokens) < self._window:
            return True  # every position is still held
        return drop <= self._fed_since_trim

    def truncate(self, length: int) -> None:
        """Keep the first ``length`` cached positions; forget the rest exactly."""
        drop = len(self.tokens) - length
        if drop < 0 or (drop == 0 and (self._window is None or not self.tokens)):
            return
        if not self._can_roll_back(drop):  # rebuild on next use
            self.reset()
            return
        assert self._cache is not None
        self._cache.crop(-drop)  # on sliding layers also trims the recorded states to the window
        self._fed_since_trim = 0
        del self.tokens[length:]

    def common_prefix(self, ids: list[int], trusted: int = 0) -> int:
        """Length of the common prefix of the cached ids and ``ids``, given that the first
        ``trusted`` positions are known to agree (only the rest is compared)."""
        n = min(len(self.tokens), len(ids))
        i = min(trusted, n)
        while i < n and self.tokens[i] == ids[i]:
            i += 1
        return i

    @torch.inference_mode()
    def forward(self, ids: list[int], keep: int = 0) -> torch.Tensor:
        """Feed ``ids`` after the cached positions; logits of the last ``keep`` fed positions
        (0: all of them).  [keep or T, V]"""
        if self._cache is None:
            self._cache, self._window = _new_cache(self.model)
        if self.isolate_first_token and not self.tokens and len(ids) > 1:
            first = self.forward(ids[:1], keep=1)  # [1, V]
            rest = self.forward(ids[1:], keep=min(keep, len(ids) - 1))
            return torch.cat([first, rest]) if keep in (0, len(ids)) else rest
        started = time.perf_counter()
        if self.lean is not None and self.lean.takes(self._cache, len(ids)):
            rows = self.lean(ids, self._cache, keep)
        else:
            with self._first_pass_threads(len(ids)):
                out = self.model(
                    input_ids=torch.tensor([ids], dtype=torch.long, device=self.device),
                    use_cache=True,
                    logits_to_keep=keep,  # the LM head over a long prompt would cost more than the layers
                    **{self._cache_kwarg: self._cache},
                )
            rows = out.logits
        self.forward_s += time.perf_counter() - started
        self.fed_tokens += len(ids)
        self._fed_since_trim += len(ids)
        self.tokens.extend(ids)
        logits: torch.Tensor = rows[0, :, : self.vocab_size]
        return logits

    def _first_pass_threads(self, rows: int) -> AbstractContextManager[None]:
        """How a pass through ``model(...)`` (a prompt on an empty cache) uses the threads: up to
        ``SPLIT_PROMPT_ROWS`` rows as a lean pass does (``LeanPass.split_threads``: torch's own ops on
        one thread, the linears split among the kernels' pool), else as torch's thread count says."""
        if self.lean is None or rows > SPLIT_PROMPT_ROWS:
            return nullcontext()
        return self.lean.split_threads()

    def continue_from(self, sequence: list[int], rows: int = 1, trusted: int = 0) -> torch.Tensor:
        """Make the cache hold ``sequence``; return the logits of its last ``rows`` positions.

        Rolls back to the common prefix and feeds the rest (always at least ``rows`` tokens,
        so every returned row is fresh). ``trusted``: a prefix length the caller knows the
        cache agrees with (a new turn passes 0: full comparison).  [rows, V]
        """
        start = max(0, min(self.common_prefix(sequence, trusted), len(sequence) - rows))
        self.truncate(start)
        if len(self.tokens) != start:  # rollback was not possible: start over
            start = 0
        return self.forward(sequence[start:], keep=rows)

    def feed_at(self, position: int, ids: list[int]) -> torch.Tensor | None:
        """Roll back to ``position`` cached positions (which the caller knows are right) and
        feed ``ids``: logits of every fed position, or None when the cache no longer holds
        ``position`` positions (the caller then uses ``continue_from``).  [len(ids), V]"""
        if len(self.tokens) < position:
            return None
        self.truncate(position)
        if len(self.tokens) != position:
            return None
        return self.forward(ids, keep=len(ids))
