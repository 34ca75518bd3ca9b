"""Logits to tokens: the pieces both models share, so both paths sample alike.

All functions take logits rows ``[T, V]`` (one row per position) and work on any device;
random draws come from a CPU ``torch.Generator`` so a seed means the same thing everywhere.
"""

from __future__ import annotations

import functools

import torch

from app.engine.config import GenerationConfig
from app.engine.runners import native
from app.engine.runners.native import calls

NEG_INF = float("-inf")


def scale_by_temperature(logits: torch.Tensor, temperature: float) -> torch.Tensor:
    """``logits / temperature``, finite for any temperature > 0.  [T, V] float32

    Shifted so each row's maximum is 0 first (softmax, top-k and top-p do not change): then
    ``s / T`` is 0 for the top token and ``-inf`` at worst for the others, never ``inf - inf``.
    A temperature below float32's range (1e-300 is 0.0 there) would still give ``0 / 0`` at
    the top, so that is set to 0 outright: the limit T → 0 of sampling is greedy (ties share)."""
    shifted = logits.float() - logits.float().amax(dim=-1, keepdim=True)
    scaled = shifted / temperature
    return scaled.masked_fill_(shifted == 0.0, 0.0)


def filter_logits(logits: torch.Tensor, config: GenerationConfig) -> torch.Tensor:
    """Temperature, then top-k, then top-p (nucleus); filtered entries become -inf.  [T, V]"""
    logits = scale_by_temperature(logits, config.temperature)
    if config.top_k and config.top_k < logits.shape[-1]:
        kth = torch.topk(logits, config.top_k, dim=-1).values[..., -1:]  # [T, 1]
        logits = logits.masked_fill(logits < kth, NEG_INF)
    if config.top_p < 1.0:
        sorted_logits, order = torch.sort(logits, dim=-1, descending=True)
        sorted_probs = sorted_logits.softmax(dim=-1)
        # drop a token when the mass before it already reaches top_p; the top token always
        # stays (a top_p below float32's range, e.g. 1e-300, would otherwise drop it too)
        drop_sorted = (sorted_probs.cumsum(dim=-1) - sorted_probs) >= config.top_p
        drop_sorted[..., 0] = False
        drop = drop_sorted.scatter(-1, order, drop_sorted)
        logits = logits.masked_fill(drop, NEG_INF)
    return logits


def probabilities(logits: torch.Tensor, config: GenerationConfig) -> torch.Tensor:
    """The distribution a token is drawn from: filtered softmax when sampling, the model's
    plain softmax when greedy (only used to show probabilities then).  [T, V] float32"""
    if config.greedy:
        return logits.float().softmax(dim=-1)
    return filter_logits(logits, config).softmax(dim=-1)


def greedy_token(logits: torch.Tensor) -> torch.Tensor:
    """The greedy choice per row: the highest logit, and among ties the LOWEST id.  [..., V] → [...]

    The one tie rule for every greedy decision (the target's token, the draft's, acceptance,
    seed-invariant sampling's argmax): it is ``torch.argmax``'s documented rule, which Hugging
    Face ``generate`` uses. ``torch.topk``'s indices are NOT this rule (on a large vocabulary it
    can return a later id among equal values), and bf16 logits tie often, so a greedy token must
    never be read from ``topk``.

    Half-precision rows are upcast first (exactly: the same values, the same order, the same
    ties): ATen's CPU argmax over a 49,152-token bf16 row takes ~180 µs, over fp32 ~55 (+10 for
    the cast). On the CPU with SpecChat's kernels, ``calls.row_stats`` answers by the same rule
    (~25 µs a row of 151,936 logits against ATen's ~210); a row holding a NaN is left to ATen."""
    fast = _native_greedy(logits)
    if fast is not None:
        return fast
    rows = logits.float() if logits.dtype in (torch.bfloat16, torch.float16) else logits
    return rows.argmax(dim=-1)


def _native_greedy(logits: torch.Tensor) -> torch.Tensor | None:
    """``greedy_token`` by SpecChat's kernels (None: not here, or not such a tensor)."""
    if logits.ndim not in (1, 2) or not logits.is_cpu or logits.dtype not in (torch.bfloat16, torch.float32):
        return None
    if native.kernels() is None or logits.numel() == 0:
        return None
    stats = calls.row_stats(logits.reshape(-1, logits.shape[-1]).contiguous(), sums=False)
    if stats is None:  # a NaN: ATen's rule for it
        return None
    ids = torch.tensor(stats.ids, dtype=torch.long)
    return ids if logits.ndim == 2 else ids[0]


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
    return greedy_token(filtered + noise).tolist()


def top2_margin(logits: torch.Tensor) -> list[float]:
    """Top-1 minus top-2 raw logit per row: how close the target was to choosing otherwise."""
    top = torch.topk(logits.float(), 2, dim=-1).values  # [T, 2]
    return (top[:, 0] - top[:, 1]).tolist()


class RepetitionPenalty:
    """Hugging Face's repetition penalty (CTRL, Keskar et al. 2019): for every token already in
    the context, a positive logit is divided by ``penalty`` and a negative one multiplied.

    Both models apply it to raw logits with the same history, before temperature and top-k/p,
    so the rules compare like with like and greedy speculation stays exact. The context's
    distinct ids (and a presence mask ``[V]`` to keep them distinct) are kept per device and
    extended with only the tokens added since the last call (one answer's history only grows),
    so a step touches ``rows × distinct ids`` logits, not ``rows × V``.
    """

    def __init__(self, penalty: float) -> None:
        self.penalty = penalty
        # device -> (presence mask [V] bool, distinct context ids [U] long, tokens absorbed)
        self._context: dict[torch.device, tuple[torch.Tensor, torch.Tensor, int]] = {}

    def _context_ids(
        self, tokens: list[int], vocab: int, device: torch.device
    ) -> tuple[torch.Tensor, torch.Tensor]:
        state = self._context.get(device)
        if state is None or state[0].shape[0] != vocab or state[2] > len(tokens):
            empty = torch.zeros(0, dtype=torch.long, device=device)
            state = (torch.zeros(vocab, dtype=torch.bool, device=device), empty, 0)
        mask, ids, length = state
        if len(tokens) > length:
            new = torch.tensor(tokens[length:], dtype=torch.long, device=device)
            new = torch.unique(new[new < vocab])
            fresh = new[~mask[new]]
            mask[fresh] = True
            ids = torch.cat([ids, fresh])
        self._context[device] = (mask, ids, len(tokens))
        return mask, ids

    def _penalised(self, values: torch.Tensor) -> torch.Tensor:
        return torch.where(values < 0, values * self.penalty, values / self.penalty)

    def __call__(self, logits: torch.Tensor, tokens: list[int], drafts: list[int]) -> torch.Tensor:
        """``logits``: the last ``R`` positions of ``tokens + drafts``, i.e. row ``j`` follows
        ``tokens + drafts[: m - R + 1 + j]`` (verification: R = m + 1, row j after d1..dj; a
        drafter: R = 1 after all its drafts so far).  [R, V] → [R, V] float32"""
        if self.penalty == 1.0:
            return logits
        logits = logits.float()
        rows, vocab = logits.shape
        in_context, context_ids = self._context_ids(tokens, vocab, logits.device)
        out = logits.clone()
        out[:, context_ids] = self._penalised(logits[:, context_ids])  # [R, U]
        if drafts:
            ids = torch.tensor(drafts, dtype=torch.long, device=logits.device)  # [m]
            valid = ids < vocab
            new = valid & ~in_context[ids.clamp(max=vocab - 1)]  # not penalised as context already
            before = len(drafts) - rows + 1  # drafts that row 0 already follows
            sees = torch.arange(len(drafts), device=logits.device)[None, :] < (
                before + torch.arange(rows, device=logits.device)[:, None]
            )  # [R, m]
            row, draft = (sees & new[None, :]).nonzero(as_tuple=True)
            # a draft repeated within the block is set twice to the same value, never penalised twice
            out[row, ids[draft]] = self._penalised(logits[row, ids[draft]])
        return out
