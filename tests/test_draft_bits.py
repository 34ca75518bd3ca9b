"""tools/draft_bits.py measures what a draft's weights form keeps of its acceptance: the share of
answer positions where the draft's top token is the target's, and, simulated, a weight rounded to
a bit width per block with its scale and min rounded to a few bits."""

from __future__ import annotations

import torch

from tools import draft_bits


def test_agreement_is_the_share_of_answer_positions_whose_top_token_is_the_targets():
    """Position i of prompt + answer predicts token i + 1: the answer's tokens are compared with
    the logits of the positions before them, the prompt's own predictions left out."""
    prompt, answer = [5, 6, 7], [1, 2, 3, 4]

    def logits_of(seq: list[int], wrong: set[int]) -> torch.Tensor:
        out = torch.zeros(len(seq), 10)
        for i in range(len(seq) - 1):
            out[i, 9 if i in wrong else seq[i + 1]] = 1.0  # position i's guess of token i + 1
        return out

    assert draft_bits.agreement(lambda seq: logits_of(seq, set()), [(prompt, answer)]) == 1.0
    assert draft_bits.agreement(lambda seq: logits_of(seq, {0, 1}), [(prompt, answer)]) == 1.0  # the prompt's
    wrong_answer_positions = {len(prompt) - 1, len(prompt) + 1}  # the guesses of answer tokens 0 and 2
    assert draft_bits.agreement(lambda seq: logits_of(seq, wrong_answer_positions), [(prompt, answer)]) == 0.5


def test_a_simulated_width_rounds_each_block_to_its_levels_and_pads_nothing_in():
    gen = torch.Generator().manual_seed(1)
    w = torch.randn(6, 896, generator=gen) * 0.05  # K = 896: padded to 1,024 inside, cut back
    for bits, sub, search in ((2, 16, False), (3, 32, True), (4, 32, True)):
        rounded = draft_bits.rounded(w, bits, sub, 8, search)
        assert rounded.shape == w.shape
        blocks = rounded.reshape(6, -1, sub)
        assert max(len(torch.unique(block)) for block in blocks.reshape(-1, sub)) <= 2**bits
        error = float((rounded - w).abs().mean() / w.abs().mean())
        assert error < {2: 0.5, 3: 0.25, 4: 0.12}[bits], (bits, error)
    fine, coarse = (float((draft_bits.rounded(w, b, 32, 8, True) - w).square().mean()) for b in (4, 2))
    assert fine < coarse / 4
