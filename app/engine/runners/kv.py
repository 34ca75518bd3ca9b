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

import torch
from transformers import DynamicCache, PreTrainedModel
from transformers.cache_utils import DynamicLayer

from app.engine.runners.lean import LeanPass


def _cache_kwarg(model: PreTrainedModel) -> str:
    """transformers 5 renamed ``past_key_values`` to ``cache``; accept either."""
    params = inspect.signature(model.forward).parameters
    return "cache" if "cache" in params else "past_key_values"


class GrowingLayer(DynamicLayer):  # type: ignore[no-untyped-call]  # transformers leaves __init_subclass__ unannotated
    """A ``DynamicLayer`` whose keys and values live in buffers with room to grow: ``update``
    writes the new positions in place and ``crop`` moves the end back, instead of concatenating
    the whole cache again every pass (``torch.cat`` copies all of it: at 1,000 tokens of context
    4.3 ms of a 35 ms pass of the bundled model, int4). ``keys`` / ``values`` are views of the
    buffers' first positions. A buffer grows to twice the positions it must hold and, when a
    rollback keeps less than half of it (a new conversation after a long one), the kept
    positions move to their own tensors: the cache holds at most twice what it keeps."""

    def lazy_initialization(self, key_states: torch.Tensor, value_states: torch.Tensor) -> None:
        super().lazy_initialization(key_states, value_states)
        self._buffers: tuple[torch.Tensor, torch.Tensor] | None = None
        self._view: torch.Tensor | None = None  # the keys view last handed out

    def _room(self, key_states: torch.Tensor, value_states: torch.Tensor, end: int) -> tuple[torch.Tensor, ...]:
        """Buffers that hold ``end`` positions and the current ones (moved when they must grow)."""
        held = self._buffers
        keys, values = self.keys, self.values
        assert keys is not None and values is not None  # initialized
        fits = (
            held is not None
            and self._view is keys  # nothing replaced the views since (batch_select_indices, …)
            and held[0].shape[-2] >= end
            and held[0].shape[:-2] == key_states.shape[:-2]
            and held[1].shape[-1] == value_states.shape[-1]
        )
        if fits and held is not None:
            return held
        length = keys.shape[-2] if keys.numel() else 0
        capacity = 2 * end
        grown = tuple(
            torch.empty((*new.shape[:-2], capacity, new.shape[-1]), dtype=new.dtype, device=new.device)
            for new in (key_states, value_states)
        )
        if length:
            grown[0][..., :length, :].copy_(keys)
            grown[1][..., :length, :].copy_(values)
        self._buffers = (grown[0], grown[1])
        return grown

    def update(
        self, key_states: torch.Tensor, value_states: torch.Tensor, *args: object, **kwargs: object
    ) -> tuple[torch.Tensor, torch.Tensor]:
        if not self.is_initialized:
            self.lazy_initialization(key_states, value_states)
        start = self.get_seq_length()
        end = start + key_states.shape[-2]
        key_buffer, value_buffer = self._room(key_states, value_states, end)
        key_buffer[..., start:end, :].copy_(key_states)
        value_buffer[..., start:end, :].copy_(value_states)
        self.keys, self.values = key_buffer[..., :end, :], value_buffer[..., :end, :]
        self._view = self.keys
        return self.keys, self.values

    def extend(self, rows: int) -> tuple[torch.Tensor, torch.Tensor, int]:
        """Room for ``rows`` more positions, for a caller that writes them itself (SpecChat's
        ``attend_layer``): the key and value buffers [..., capacity, D] and the first new position.
        ``keys`` / ``values`` already cover the new positions (what ``update`` leaves them as);
        the caller fills them before anything reads them. Only on an initialized layer."""
        assert self.is_initialized and self.keys is not None and self.values is not None
        start = self.get_seq_length()
        end = start + rows
        key_buffer, value_buffer = self._room(self.keys, self.values, end)  # the current views as the shapes' models
        self.keys, self.values = key_buffer[..., :end, :], value_buffer[..., :end, :]
        self._view = self.keys
        return key_buffer, value_buffer, start

    def crop(self, tokens_to_remove: int) -> None:
        super().crop(tokens_to_remove)  # views of the first positions: the buffers stay
        if not (self.is_initialized and self._buffers is not None and tokens_to_remove):
            return
        assert self.keys is not None and self.values is not None
        if self._buffers[0].shape[-2] > 2 * max(self.keys.shape[-2], 1):  # mostly empty now: let it go
            self.keys, self.values = self.keys.clone(), self.values.clone()
            self._buffers = None
        self._view = self.keys

    def reset(self) -> None:
        super().reset()
        self._buffers, self._view = None, None


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
