"""The k chooser: its maths on hand-set costs, and through the engine that it stops drafting
for a useless drafter and drafts the most for a perfect one, answers unchanged."""

from __future__ import annotations

from dataclasses import replace

import pytest

from app.engine import Engine, GenerationConfig
from app.engine.decoding.acceptance import Rule
from app.engine.decoding.cost import (
    AcceptanceModel,
    CostModel,
    KChooser,
    best_k,
    expected_tokens,
    lookup_key,
)
from app.engine.decoding.drafters import Proposal

AUTO = GenerationConfig(max_new_tokens=96, k=4, auto_k=True)


def stock_cpu(n: int) -> float:
    """A pass over n tokens: 1 + 0.1 per extra token (a plain step costs 1)."""
    return 1.0 + 0.1 * (n - 1)


def test_expected_tokens_is_the_geometric_sum():
    assert expected_tokens(0.5, 2) == pytest.approx(1 + 0.5 + 0.25)
    assert expected_tokens(0.0, 5) == 1.0
    assert expected_tokens(1.0, 4) == 5.0


def test_a_useless_drafter_gets_a_plain_step():
    assert best_k(0.0, 0.0, stock_cpu, 8).k == 0
    assert best_k(0.05, 0.0, stock_cpu, 8).predicted_speedup == 1.0


def test_a_good_free_drafter_with_flat_verification_drafts_the_most():
    choice = best_k(0.9, 0.0, lambda n: 1.0, 8)
    assert choice.k == 8
    assert choice.predicted_speedup == pytest.approx(expected_tokens(0.9, 8))


def test_verification_as_dear_as_plain_steps_never_pays():
    assert best_k(0.95, 0.0, lambda n: float(n), 8).k == 0


def test_an_expensive_draft_step_shortens_the_block():
    cheap = best_k(0.8, 0.05, stock_cpu, 8).k
    dear = best_k(0.8, 0.5, stock_cpu, 8).k
    assert cheap > dear > 0
    assert best_k(0.8, 1.0, stock_cpu, 8).k == 0  # a draft step as dear as the target's


def test_the_predicted_speedup_is_tokens_per_second_over_a_plain_step():
    choice = best_k(0.6, 0.1, stock_cpu, 3)
    rate = expected_tokens(0.6, choice.k) / (choice.k * 0.1 + stock_cpu(choice.k + 1))
    assert choice.predicted_speedup == pytest.approx(rate * stock_cpu(1))


def test_the_cost_curve_interpolates_and_never_extrapolates_cheaper():
    costs = CostModel()
    costs.observe_verify(1, 1.0)
    costs.observe_verify(4, 1.6)
    assert costs.verify_cost(2) == pytest.approx(1.2)
    assert costs.verify_cost(8) > costs.verify_cost(4)
    for s in (5.0, 5.0, 9.0):  # a running median shrugs off one slow pass
        costs.observe_verify(3, s)
    assert costs.verify_cost(3) == 5.0


def test_acceptance_follows_evidence_and_drifts_back_to_the_prior():
    model = AcceptanceModel()
    prior = model.alpha("lookup3")
    for _ in range(20):
        model.tick()
        model.observe("lookup3", 3, 0)
    low = model.alpha("lookup3")
    assert low < 0.2 < prior
    for _ in range(600):
        model.tick()
    assert model.alpha("lookup3") == pytest.approx(prior, abs=0.05)
    assert model.alpha(lookup_key(1)) < model.alpha(lookup_key(3))


class FrozenCosts(CostModel):
    """Hand-set costs the engine cannot overwrite: the tests must not depend on timing."""

    def __init__(self, draft_step: float) -> None:
        super().__init__()
        for n in range(1, 10):
            super().observe_verify(n, stock_cpu(n))
        super().observe_draft(1, draft_step)

    def observe_verify(self, tokens: int, seconds: float) -> None:
        pass

    def observe_draft(self, passes: int, seconds: float) -> None:
        pass


class OracleDrafter:
    """Proposes the target's own answer (perfect), or each of its tokens plus one (useless)."""

    name = "oracle"
    cheap = True

    def __init__(self, prompt: list[int], answer: list[int], wrong: bool, vocab: int) -> None:
        self.sequence = prompt + answer
        self.wrong = wrong
        self.vocab = vocab

    def propose(self, tokens, k, rule, confidence_threshold, new_turn=True) -> Proposal:
        drafts = self.sequence[len(tokens) : len(tokens) + k]
        if self.wrong:
            drafts = [(t + 1) % self.vocab for t in drafts]
        return Proposal(drafts, None, [None] * len(drafts), passes=0, ngram=3)

    def reset(self) -> None:
        pass


def oracle_engine(load_tiny, wrong: bool) -> tuple[Engine, list[int]]:
    target = replace(load_tiny("llama"), eos_token_ids=())  # a long answer: no end of sequence
    engine = Engine(target, lookup=True)
    plain = engine.generate("The quick brown fox", replace(AUTO, speculative=False)).token_ids
    engine._drafter = OracleDrafter(engine.prompt_ids("The quick brown fox"), plain, wrong, target.vocab_size)
    engine.chooser = KChooser(costs=FrozenCosts(draft_step=0.0))
    return engine, plain


def test_the_chooser_stops_verifying_a_useless_drafter(load_tiny):
    engine, plain = oracle_engine(load_tiny, wrong=True)
    result = engine.generate("The quick brown fox", AUTO)
    assert result.token_ids == plain
    late = [s.k for s in result.steps[len(result.steps) // 2 :]]
    assert sum(k > 0 for k in late) / len(late) < 0.3  # only rare retries once it has learned
    fixed = engine.generate("The quick brown fox", replace(AUTO, auto_k=False))
    assert result.stats.proposed < fixed.stats.proposed / 3


def test_the_chooser_drafts_the_most_for_a_perfect_drafter(load_tiny):
    engine, plain = oracle_engine(load_tiny, wrong=False)
    result = engine.generate("The quick brown fox", AUTO)
    assert result.token_ids == plain
    assert all(s.k == AUTO.k for s in result.steps[:-2])
    assert all(s.predicted_speedup and s.predicted_speedup > 1.0 for s in result.steps[:-2])
    assert result.stats.drafts_accepted_share == 1.0


def test_the_target_as_its_own_cheap_draft_is_verified_in_blocks(load_tiny):
    target = load_tiny("llama")
    engine = Engine(target, target)
    engine.chooser = KChooser(costs=FrozenCosts(draft_step=0.1))
    result = engine.generate("The quick brown fox", AUTO)
    assert (
        result.token_ids == engine.generate("The quick brown fox", replace(AUTO, speculative=False)).token_ids
    )
    assert sum(s.k > 0 for s in result.steps) > len(result.steps) / 2
    assert result.stats.drafts_accepted_share == 1.0 and result.stats.tokens_per_pass > 2.0


def test_a_draft_step_as_dear_as_the_target_is_not_worth_drafting(load_tiny):
    target = load_tiny("llama")
    engine = Engine(target, target)
    engine.chooser = KChooser(costs=FrozenCosts(draft_step=1.0))
    result = engine.generate("The quick brown fox", AUTO)
    assert result.stats.draft_passes == 0 and all(s.k == 0 for s in result.steps)


def test_auto_k_is_validated():
    from app.engine.errors import InvalidSettingError

    with pytest.raises(InvalidSettingError):
        GenerationConfig(auto_k="yes")  # type: ignore[arg-type]


def test_rule_verify_with_a_host_argmax_matches_the_tensor_path():
    import torch

    rule = Rule(GenerationConfig())
    logits = torch.randn(4, 50, generator=torch.Generator().manual_seed(0))
    drafts = logits.argmax(-1).tolist()[:2] + [0]
    p = rule.probs(logits)
    host = rule.verify(logits, p, drafts, None, 0, argmax=logits.argmax(-1).tolist())
    assert host == rule.verify(logits, p, drafts, None, 0)


def test_an_unmeasured_draft_model_is_tried_once_then_judged_by_its_cost():
    chooser = KChooser()
    for n in range(1, 7):
        chooser.costs.observe_verify(n, stock_cpu(n))
    assert chooser.choose("model", 4, drafts_ready=False).k > 0  # must run to be measured
    chooser.costs.observe_draft(1, 1.0)  # as dear as a target step
    assert chooser.choose("model", 4, drafts_ready=False).k == 0


def test_a_draft_model_skips_an_answer_whose_prompt_it_would_have_to_prefill_for_nothing():
    chooser = KChooser()
    for n in range(1, 7):
        chooser.costs.observe_verify(n, stock_cpu(n))
    chooser.costs.observe_draft(1, 0.05)
    plan = chooser.choose("model", 4, drafts_ready=False)
    assert plan.k > 0 and plan.predicted_speedup > 1.0
    assert chooser.worth_catching_up(3000, 64, plan)  # catch-up cost never measured: try it
    chooser.costs.observe_draft_catch_up(3000, 30.0)  # 0.01 per token
    assert not chooser.worth_catching_up(3000, 64, plan)  # 30 to save at most ~64 * 1 * (1 - 1/s)
    assert chooser.worth_catching_up(3000, 100_000, plan)  # a long answer repays it
    assert chooser.worth_catching_up(10, 64, plan)  # a few tokens behind: an ordinary step


def test_the_engine_does_not_prefill_a_draft_model_that_cannot_repay_it(load_tiny):
    target = load_tiny("llama")
    engine = Engine(target, target)
    costs = FrozenCosts(draft_step=0.1)
    costs.draft_catch_up.append(1.0)  # a prompt token costs the draft model a whole target step
    costs.observe_draft_catch_up = lambda tokens, seconds: None  # type: ignore[method-assign]
    engine.chooser = KChooser(costs=costs)
    prompt = "The quick brown fox jumps over the lazy dog. " * 4
    skipped = engine.generate(prompt, AUTO)
    assert skipped.stats.draft_passes == 0 and skipped.stats.proposed == 0
    costs.draft_catch_up[0] = 0.001
    engine.reset()
    assert engine.generate(prompt, AUTO).stats.proposed > 0


def test_pass_costs_are_kept_per_band_of_context_length():
    """A 4k-token context makes a multi-token pass dearer (row-wise attention): costs measured
    there must not make the chooser timid at 200 tokens, nor the reverse."""
    from app.engine.decoding.cost import CostModel

    costs = CostModel()
    costs.context = 200
    for n, s in ((1, 1.0), (2, 1.05), (4, 1.1)):
        costs.observe_verify(n, s)
    costs.context = 4000
    for n, s in ((1, 4.0), (2, 6.0), (4, 10.0)):
        costs.observe_verify(n, s)
    assert costs.verify_cost(4) == 10.0
    costs.context = 220  # the same band as 200
    assert costs.verify_cost(4) == 1.1
    costs.context = 700  # a band with no sample: the nearest band's figures
    assert costs.verify_cost(4) == 1.1
    costs.observe_verify(1, 2.0)  # now one plain pass here: other sizes scale by the nearest band's ratios
    assert costs.verify_cost(4) == pytest.approx(2.0 * 1.1 / 1.0)
