"""Logits to tokens: the pieces both models share, so both paths sample alike.

All functions take logits rows ``[T, V]`` (one row per position) and work on any device;
random draws come from a CPU ``torch.Generator`` so a seed means the same thing everywhere.
"""

from __future__ import annotations

import functools

import torch

from .config import GenerationConfig

NEG_INF = float("-inf")


def filter_logits(logits: torch.Tensor, config: GenerationConfig) -> torch.Tensor:
    """Temperature, then top-k, then top-p (nucleus); filtered entries become -inf.  [T, V]"""
    logits = logits.float() / config.temperature
    if config.top_k and config.top_k < logits.shape[-1]:
        kth = torch.topk(logits, config.top_k, dim=-1).values[..., -1:]  # [T, 1]
        logits = logits.masked_fill(logits < kth, NEG_INF)
    if config.top_p < 1.0:
        sorted_logits, order = torch.sort(logits, dim=-1, descending=True)
        cumulative = sorted_logits.softmax(dim=-1).cumsum(dim=-1)
        # drop a token when the mass before it already reaches top_p (the top token always stays)
        drop_sorted = (cumulative - sorted_logits.softmax(dim=-1)) >= config.top_p
        drop = drop_sorted.scatter(-1, order, drop_sorted)
        logits = logits.masked_fill(drop, NEG_INF)
    return logits


def probabilities(logits: torch.Tensor, config: GenerationConfig) -> torch.Tensor:
    """The distribution a token is drawn from: filtered softmax when sampling, the model's
    plain softmax when greedy (only used to show probabilities then).  [T, V] float32"""
    if config.greedy:
        return logits.float().softmax(dim=-1)
    return filter_logits(logits, config).softmax(dim=-1)


def sample(probs: torch.Tensor, generator: torch.Generator) -> int:
    """One draw from a probability row ``[V]``."""
    return int(torch.multinomial(probs.float().cpu(), 1, generator=generator))


@functools.lru_cache(maxsize=32)
def gumbel_noise(seed: int, position: int, vocab_size: int) -> torch.Tensor:
    """Gumbel(0, 1) noise for one absolute position, derived from (seed, position) only.  [V]

    Keying the noise by position (not by draw order) is what makes seed-invariant sampling
    independent of the drafter: the target's token at a position is the same whoever asks.
    Cached (a few recent positions): the drafter and the target ask for the same positions
    within a step or two, and a full-vocabulary draw costs more than the lookup. Callers must
    not modify the returned tensor.
    """
    generator = torch.Generator().manual_seed((seed * 1_000_003 + position) % (2**63))
    uniform = torch.rand(vocab_size, generator=generator).clamp_(1e-20, 1.0 - 1e-7)
    return -torch.log(-torch.log(uniform))


def gumbel_argmax(logits: torch.Tensor, config: GenerationConfig, first_position: int) -> list[int]:
    """Seed-invariant sample per row: argmax(filtered logits + noise of that row's position).
    Row ``j`` draws the token at absolute position ``first_position + j``."""
    filtered = filter_logits(logits, config).cpu()  # [T, V]
    vocab = filtered.shape[-1]
    noise = torch.stack([gumbel_noise(config.seed, first_position + j, vocab) for j in range(len(filtered))])
    return (filtered + noise).argmax(dim=-1).tolist()


def top2_margin(logits: torch.Tensor) -> list[float]:
    """Top-1 minus top-2 raw logit per row: how close the target was to choosing otherwise."""
    top = torch.topk(logits.float(), 2, dim=-1).values  # [T, 2]
    return (top[:, 0] - top[:, 1]).tolist()
