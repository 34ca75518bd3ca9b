"""One tie rule for every greedy decision: the highest logit, and among equal logits the
lowest id (``torch.argmax``'s documented rule, which Hugging Face ``generate`` follows).
bf16 logits tie often, so the target's token, the draft's and acceptance must all use it."""

from __future__ import annotations

import pytest
import torch

from app.engine.config import GenerationConfig
from app.engine.decoding.acceptance import Rule, accept_greedy
from app.engine.decoding.decode import _readout
from app.engine.decoding.sampling import greedy_token

VOCAB = 50_000  # large enough that torch.topk orders equal values otherwise than argmax
TIED = (7, 300, 40_000)


def tied_logits(rows: int) -> torch.Tensor:
    logits = torch.zeros(rows, VOCAB, dtype=torch.bfloat16)
    logits[:, list(TIED)] = 1.0
    return logits


def test_greedy_token_is_the_lowest_id_among_ties():
    assert greedy_token(tied_logits(3)).tolist() == [7, 7, 7]
    assert int(greedy_token(tied_logits(1)[0])) == 7


def test_the_target_the_draft_and_acceptance_break_ties_alike():
    config = GenerationConfig(temperature=0.0)
    rule = Rule(config)
    logits = rule.logits(tied_logits(3), [1, 2], [7, 7])
    p = rule.probs(logits)
    seen = _readout(logits, p, [7, 7])
    assert seen.top1 == [7, 7, 7]  # the target's token as decoding reads it (not topk's index)
    assert rule.choose_draft(logits[0], p[0], 2) == 7
    # the drafts are the greedy tokens, so both pass and the bonus is the greedy token too
    assert rule.verify(logits, p, [7, 7], None, 2, argmax=seen.top1).n_accepted == 2
    assert accept_greedy(logits, [7, 7]).next_token == 7
    assert seen.margin == [0.0, 0.0, 0.0]


def test_a_bf16_row_gets_the_lowest_id_among_its_ties_as_its_fp32_copy_does():
    """bf16 logits tie often; the token (computed on the upcast row, ATen's bf16 argmax being
    slow) is the lowest id holding the maximum, in every row of a block."""
    gen = torch.Generator().manual_seed(3)
    rows = (torch.randn(6, 49_152, generator=gen) * 4).to(torch.bfloat16)
    rows[2, 40_000] = rows[2, 9] = rows[2, 30_000] = rows[2].max() + 1  # a three-way tie
    lowest = [int(torch.nonzero(r == r.max())[0]) for r in rows]
    assert greedy_token(rows).tolist() == lowest
    assert greedy_token(rows).tolist() == greedy_token(rows.float()).tolist()
    assert lowest[2] == 9


def test_a_greedy_readout_without_p_reads_what_one_with_p_reads():
    """Greedy, the decoding loop makes no [m+1, V] softmax (``_verify_step`` passes p = None):
    ``_readout`` then reads the rows themselves (``calls.row_stats`` where SpecChat's kernels run,
    else torch). The tokens, margins and top logits are the very values the readout over p gives,
    ties included, and the probabilities the same to float32's rounding."""
    gen = torch.Generator().manual_seed(5)
    logits = (torch.randn(4, VOCAB + 3, generator=gen) * 4).to(torch.bfloat16)
    logits[1, list(TIED)] = logits[1].max() + 1
    drafts = [int(logits[0].float().argmax()), 300, 12]
    with_p = _readout(logits, logits.float().softmax(dim=-1), drafts)
    without = _readout(logits, None, drafts)
    assert without.top1 == with_p.top1 and without.top1[1] == 7
    assert without.margin == with_p.margin and without.margin[1] == 0.0
    assert without.top_logit == with_p.top_logit
    for got, want in ((without.p_at_draft[:3], with_p.p_at_draft[:3]), (without.p_at_top1, with_p.p_at_top1)):
        assert got == pytest.approx(want, rel=1e-5, abs=1e-12)
