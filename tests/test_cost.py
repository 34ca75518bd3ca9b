"""The k chooser: its maths on hand-set costs, and through the engine that it stops drafting
for a useless drafter and drafts the most for a perfect one, answers unchanged."""

from __future__ import annotations

from dataclasses import replace

import pytest

from app.engine import Engine, GenerationConfig
from app.engine.backend import AnswerOptions
from app.engine.config import DRAFT_MODEL
from app.engine.decoding.acceptance import Rule
from app.engine.decoding.cost import (
    ANSWER_WEIGHT,
    CATCH_UP_IN_TURN,
    EXPLORE_TRIALS,
    MODEL_KEY,
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


# --- the chooser against a brute-force search over every k (DESIGN.md's formula, written out) --


def design_rate(alpha: float, k: int, draft_s: float, pass_s) -> float:  # type: ignore[no-untyped-def]
    """Expected tokens per second verifying k drafts (DESIGN.md): 1 + a + ... + a^k tokens (the
    first draft accepted with probability a, the next given that one, ...) for k drafting steps
    and one target pass over k + 1 tokens."""
    tokens = sum(alpha**i for i in range(k + 1))
    return tokens / (k * draft_s + pass_s(k + 1))


VERIFY_CURVES = {
    "flat": lambda n: 0.01,
    "stock": lambda n: 0.01 * (1.0 + 0.1 * (n - 1)),
    "steep": lambda n: 0.01 * (1.0 + 0.45 * (n - 1)),
    "linear": lambda n: 0.01 * n,  # verifying n tokens costs n plain steps: never pays
    "step": lambda n: 0.01 if n <= 4 else 0.03,  # cheap up to 4 tokens, then a jump
}
CHOOSER_SETTINGS = [
    (curve, accepted, draft_s, k_max)
    for curve in VERIFY_CURVES
    for accepted in (0.0, 0.3, 0.6, 0.8, 0.95)
    for draft_s in (0.0, 0.0005, 0.002, 0.006)
    for k_max in (3, 8)
]


def _measured_chooser(curve: str, accepted: float, draft_s: float, k_max: int) -> KChooser:
    """A chooser that measured every pass size up to k_max + 1 on ``curve``, a draft step of
    ``draft_s`` and 400 drafts accepted at the rate ``accepted`` (through its public methods)."""
    chooser = KChooser()
    for i in range(400):  # accepted spread evenly (old evidence fades)
        chooser.observe_step("model", 1, int((i + 1) * accepted) - int(i * accepted))
    # the costs measured last, so none has aged toward the prior (sizes unmeasured for a while fade)
    for n in range(1, k_max + 2):
        for _ in range(3):
            chooser.costs.observe_verify(n, VERIFY_CURVES[curve](n))
    for _ in range(3):
        chooser.costs.observe_draft(2, 2 * draft_s)
    return chooser


@pytest.mark.parametrize(("curve", "accepted", "draft_s", "k_max"), CHOOSER_SETTINGS)
def test_the_chooser_picks_the_k_with_the_most_expected_tokens_per_second(curve, accepted, draft_s, k_max):
    chooser = _measured_chooser(curve, accepted, draft_s, k_max)
    choice = chooser.choose("model", k_max, drafts_ready=draft_s == 0.0)
    alpha = choice.alpha  # the acceptance it assumed, from the evidence it was given
    assert alpha == pytest.approx(accepted, abs=0.05)
    rates = {k: design_rate(alpha, k, draft_s, VERIFY_CURVES[curve]) for k in range(k_max + 1)}
    best = max(rates, key=lambda k: rates[k])
    gain = rates[best] / rates[0]
    assert 0 <= choice.k <= k_max
    if gain > 1.05:  # speculation clearly pays: the chooser takes the best k
        assert rates[choice.k] == pytest.approx(rates[best], rel=1e-9), (rates, choice)
        assert choice.predicted_speedup == pytest.approx(gain, rel=1e-6)
    elif gain < 1.0 + 1e-9:  # nothing beats a plain step: none is drafted
        assert choice.k == 0 and choice.predicted_speedup == 1.0
    else:  # within a few percent of plain: a plain step or the best k, nothing else
        assert choice.k in (0, best) or rates[choice.k] == pytest.approx(rates[best], rel=1e-9)


def test_the_brute_force_settings_cover_every_kind_of_answer():
    """The settings above are not all alike: the optimum is 0, 1, the largest k and in between."""
    optima = set()
    for curve, accepted, draft_s, k_max in CHOOSER_SETTINGS:
        choice = _measured_chooser(curve, accepted, draft_s, k_max).choose("model", k_max, draft_s == 0.0)
        optima.add(choice.k if choice.k in (0, 1, k_max) else "between")
    assert optima >= {0, 1, 3, 8, "between"}


def test_the_cost_curve_interpolates_and_never_extrapolates_cheaper():
    costs = CostModel()
    costs.observe_verify(1, 1.0)
    costs.observe_verify(4, 1.6)
    assert costs.verify_cost(2) == pytest.approx(1.2)
    assert costs.verify_cost(8) > costs.verify_cost(4)
    for s in (5.0, 5.0, 9.0):  # a running median shrugs off one slow pass
        costs.observe_verify(3, s)
    assert costs.verify_cost(3) == 5.0


def test_a_bigger_pass_is_weighed_by_its_ratio_to_a_plain_pass_measured_beside_it():
    """The machine's speed drifts; a 4-token pass is measured rarely. Measured at twice a plain
    pass while the machine was slow, it costs twice today's plain pass, not its old seconds."""
    costs = CostModel()
    costs.observe_verify(1, 2.0)  # a slow moment: plain 2.0 s, a 4-token pass 4.0 s
    costs.observe_verify(4, 4.0)
    for _ in range(7):
        costs.observe_verify(1, 1.0)  # the machine is fast again: plain passes only
    assert costs.verify_cost(4) == pytest.approx(2.0)  # seconds alone would say 4.0
    assert costs.measured()[4] == 4.0  # the raw seconds stay what reports show


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


def _real_pair_costs(chooser: KChooser) -> None:
    """The real 1.5B + 0.5B pair's 2-thread pass costs (``tools/answer_steps.py``: a plain step
    ~46 ms, a pass over 2 / 3 tokens ~56 / ~66 ms, a 6-token pass ~104)."""
    for n, ms in enumerate((46.0, 55.5, 66.0, 76.0, 90.0, 104.0), start=1):
        chooser.costs.observe_verify(n, ms / 1000)


def test_an_answer_whose_lookup_drafts_miss_stops_them_on_its_own_misses():
    """A free drafter's acceptance is the engine's estimate until this answer has evidence, then
    this answer's evidence against that estimate counted as ANSWER_WEIGHT trials: in an answer
    whose lookup drafts all miss (a summary paraphrasing its paragraph), drafting stops after three
    misses (1.2 / (m + 2) falls under ~0.24, where a pass over 2 tokens at 1.21 plain ones no
    longer clears the 3 % margin), though 100 earlier drafts of the same key (edits of code) were
    60 % accepted and that estimate alone would still verify them; set aside, its drafts are
    still judged by the target's next token, and once they match again in this answer drafting
    resumes. The next answer starts from the engine's estimate, which the misses moved little."""
    chooser = KChooser()
    _real_pair_costs(chooser)
    key = lookup_key(1)
    chooser.acceptance.adopt(key, 60.0, 100.0)
    chooser.acceptance.new_answer()
    first = chooser.choose(key, 3, drafts_ready=True)
    assert first.k >= 1 and first.alpha == pytest.approx(0.6, abs=0.01)
    misses, choice = 0, first
    while choice.k > 0 and misses < 10:
        chooser.observe_step(key, choice.k, 0)  # its first draft missed: one trial, no success
        misses += 1
        choice = chooser.choose(key, 3, drafts_ready=True)
    engine_wide = chooser.acceptance.alpha(key)
    assert misses == 3 and choice.k == 0 and choice.reason == "gain_below_margin"
    assert choice.alpha == pytest.approx(ANSWER_WEIGHT * engine_wide / (misses + ANSWER_WEIGHT))
    curve = chooser.costs.curve(4)
    assert curve is not None and engine_wide > 0.57  # three misses in 103 drafts (and the prior)
    assert best_k(engine_wide, 0.0, lambda n: curve[n - 1], 3).k >= 1  # the estimate alone drafts
    resumed = 0
    while chooser.choose(key, 3, drafts_ready=True).k == 0 and resumed < 10:
        chooser.observe_step(MODEL_KEY, 0, 0)  # a plain step ...
        chooser.acceptance.observe(key, 1, 1)  # ... whose token was the set-aside draft (``decode._learn``)
        resumed += 1
    assert 1 <= resumed <= 3
    chooser.acceptance.new_answer()  # the next answer
    assert chooser.choose(key, 3, drafts_ready=True).k >= 1


def test_a_draft_models_acceptance_is_not_weighed_within_an_answer():
    """A draft model's drafts are judged only when verified, and an answer's first words are its
    likeliest to miss: weighed within the answer, its first misses would stop it before its later,
    mostly accepted drafts were seen. Its estimate is the engine's throughout."""
    chooser = KChooser()
    _real_pair_costs(chooser)
    chooser.acceptance.adopt(MODEL_KEY, 90.0, 100.0)
    chooser.acceptance.new_answer()
    for _ in range(3):
        chooser.observe_step(MODEL_KEY, 3, 0)
    assert MODEL_KEY not in chooser.acceptance.answer
    assert chooser.acceptance.within_answer(MODEL_KEY) == chooser.acceptance.alpha(MODEL_KEY)
    assert chooser.choose(MODEL_KEY, 5, drafts_ready=False).alpha == chooser.acceptance.alpha(MODEL_KEY)


def test_an_answer_starts_from_the_engines_estimate_not_the_last_answers_misses(load_tiny):
    """``decode`` starts each answer's own evidence afresh: the previous answer's misses are in
    the engine-wide estimate only."""
    engine = Engine(load_tiny("llama"), lookup=True)
    acceptance = engine.chooser.acceptance
    acceptance.observe("lookup2", 4, 0)  # as if the last answer's lookup drafts had all missed
    assert acceptance.answer["lookup2"] == (0, 1)
    engine.generate("Hello", replace(AUTO, max_new_tokens=1))  # its one token: the prompt's pass
    assert "lookup2" not in acceptance.answer
    assert acceptance.within_answer("lookup2") == acceptance.alpha("lookup2")


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


MODEL_ALONE = AnswerOptions(drafter_choice=DRAFT_MODEL)  # no lookup drafts beside the model's


def test_the_target_as_its_own_cheap_draft_is_verified_in_blocks(load_tiny):
    target = load_tiny("llama")
    engine = Engine(target, target)
    engine.chooser = KChooser(costs=FrozenCosts(draft_step=0.1))
    result = engine.generate("The quick brown fox", AUTO, options=MODEL_ALONE)  # no lookup draft among its blocks
    assert (
        result.token_ids == engine.generate("The quick brown fox", replace(AUTO, speculative=False)).token_ids
    )
    assert sum(s.k > 0 for s in result.steps) > len(result.steps) / 2
    assert result.stats.drafts_accepted_share == 1.0 and result.stats.tokens_per_pass > 2.0


def test_a_draft_step_as_dear_as_the_target_is_not_worth_drafting(load_tiny):
    target = load_tiny("llama")
    engine = Engine(target, target)
    engine.chooser = KChooser(costs=FrozenCosts(draft_step=1.0))
    result = engine.generate("The quick brown fox", AUTO, options=MODEL_ALONE)
    assert result.stats.draft_passes == 0 and all(s.k == 0 for s in result.steps)


def test_auto_k_is_validated():
    from app.engine.errors import InvalidSettingError

    with pytest.raises(InvalidSettingError):
        GenerationConfig(auto_k="yes")  # type: ignore[arg-type]


# --- greedy ties: the lowest index wins, as Hugging Face's argmax ---------------------------------


def test_the_greedy_rule_gives_a_tie_to_the_lowest_index():
    import torch

    rule = Rule(GenerationConfig())
    logits = torch.zeros(3, 50)
    logits[:, [7, 31, 44]] = 5.0  # a three-way tie at the top of every row
    verdict = rule.verify(logits, rule.probs(logits), [7, 31], None, 0)
    # 7 accepted; 31 (tied, but not the lowest) rejected, and 7 in its place
    assert (verdict.n_accepted, verdict.next_token) == (1, 7)
    assert rule.verify(logits, rule.probs(logits), [44], None, 0).next_token == 7


@pytest.fixture(scope="module")
def twin_folder(tmp_path_factory, tokenizer):
    """A model whose LM head has every row twice (row i + V/2 = row i): every logit ties with
    its twin, so every greedy step is a tie, and the rule decides which one is the answer."""
    import torch
    from tiny_models import build_model, save

    model = build_model("llama", tokenizer, seed=3, scale=30.0)
    half = model.lm_head.weight.shape[0] // 2
    with torch.no_grad():
        model.lm_head.weight[half : 2 * half] = model.lm_head.weight[:half]
    return save(model, tokenizer, tmp_path_factory.mktemp("twins") / "twins"), half


def test_greedy_ties_go_to_the_lowest_index_as_in_hf_generate(twin_folder):
    import torch
    from tiny_models import hf_greedy, hf_reference_model

    from app.engine.models.loading import load_model

    folder, half = twin_folder
    target = load_model(str(folder), device="cpu", dtype="float32")  # with the CPU kernels
    engine = Engine(target, target)
    prompt = "The quick brown fox"
    config = GenerationConfig(max_new_tokens=24, k=3, auto_k=False)
    reference = hf_greedy(engine, prompt, config.max_new_tokens)
    # the reference really decided ties: its logits tie at the top at every position it chose
    ids = torch.tensor([engine.prompt_ids(prompt) + reference])
    with torch.inference_mode():
        logits = hf_reference_model(str(folder)).forward(ids).logits[0, -len(reference) - 1 : -1]
    top = torch.topk(logits, 2, dim=-1).values
    assert torch.equal(top[:, 0], top[:, 1])
    assert all(t < half for t in reference)  # the lower twin, every time
    for run in (replace(config, speculative=False), config, replace(config, auto_k=True)):
        result = engine.generate(prompt, run)
        assert result.token_ids == reference, run
        assert result.stats.proposed > 0 or run.auto_k or not run.speculative  # fixed k: ties verified in blocks


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
    assert chooser.worth_catching_up(3000, 64, plan, 4)  # catch-up cost never measured: try it
    chooser.costs.observe_draft_catch_up(3000, 30.0)  # 0.01 per token
    assert not chooser.worth_catching_up(3000, 64, plan, 4)  # 30 to save at most ~64 * 1 * (1 - 1/s)
    assert chooser.worth_catching_up(3000, 100_000, plan, 4)  # a long answer repays it
    assert chooser.worth_catching_up(10, 64, plan, 4)  # a few tokens behind: an ordinary step


def test_a_catch_up_is_timed_without_the_draft_steps_that_followed_it():
    """A draft model's first ask of an answer feeds the prompt in its first pass, then drafts: the
    passes after the first are draft steps (0.015 s each here), not its catch-up."""
    costs = CostModel()
    costs.observe_draft_catch_up(52, 0.13)  # no draft step measured yet: all of it
    assert costs.draft_catch_up_cost() == pytest.approx(0.13 / 52)
    costs = CostModel()
    for _ in range(3):
        costs.observe_draft(1, 0.015)
    costs.observe_draft_catch_up(52, 0.13 + 4 * 0.015, passes=5)
    assert costs.draft_catch_up_cost() == pytest.approx(0.13 / 52)
    costs.observe_draft_catch_up(52, 4 * 0.015, passes=5)  # nothing left for the catch-up: not a measurement
    assert len(costs.draft_catch_up) == 1


def test_a_draft_model_behind_pays_for_feeding_what_it_missed_on_the_steps_clock():
    """A mixed drafter's model behind lookup's kept drafts feeds them before its first draft:
    ``behind`` tokens x the measured catch-up's seconds a token, on the step's clock beside a
    free block at hand (which costs nothing of the kind). Within ``CATCH_UP_IN_TURN`` tokens a
    draft step's own feed, already in its measured cost."""
    chooser = KChooser()
    for n in range(1, 7):
        chooser.costs.observe_verify(n, stock_cpu(n))
    chooser.costs.observe_draft(1, 0.1)
    for _ in range(4 * EXPLORE_TRIALS):
        chooser.acceptance.observe(MODEL_KEY, 4, 4)
    in_step = chooser.choose(MODEL_KEY, 4, drafts_ready=False)
    assert chooser.choose(MODEL_KEY, 4, drafts_ready=False, behind=20) == in_step  # no catch-up measured yet
    chooser.costs.observe_draft_catch_up(40, 40 * 0.05)  # 0.05 a token
    assert chooser.catch_up_cost(CATCH_UP_IN_TURN) == 0.0 and chooser.catch_up_cost(10) == pytest.approx(0.5)
    assert chooser.choose(MODEL_KEY, 4, drafts_ready=False, behind=CATCH_UP_IN_TURN) == in_step
    behind = chooser.choose(MODEL_KEY, 4, drafts_ready=False, behind=10)
    alpha = chooser.acceptance.alpha(MODEL_KEY)
    rate = expected_tokens(alpha, behind.k) / (0.5 + behind.k * 0.1 + stock_cpu(behind.k + 1))
    assert behind.predicted_speedup == pytest.approx(rate * stock_cpu(1))
    assert behind.predicted_speedup < in_step.predicted_speedup
    assert chooser.choose(MODEL_KEY, 4, drafts_ready=False, behind=100).k == 0  # 5 s of feeding: a plain step
    lookup = chooser.choose(lookup_key(3), 4, drafts_ready=True, behind=40)  # drafts at hand feed nothing
    assert lookup == chooser.choose(lookup_key(3), 4, drafts_ready=True)


def test_a_probe_does_not_pay_a_catch_up_that_costs_more_than_a_small_share_of_the_answer():
    chooser = KChooser()
    for n in range(1, 7):
        chooser.costs.observe_verify(n, 0.018 * (1 + 0.1 * (n - 1)))
    chooser.costs.observe_draft(1, 0.018)  # a draft as large as the target: drafting never pays
    chooser.costs.observe_draft_catch_up(45, 0.2)  # its prefill of a 45-token prompt
    chooser.since_draft["model"] = 500  # long since it last drafted: a probe is due
    plan = chooser.choose("model", 5, drafts_ready=False)
    assert plan.k == 1 and plan.reason == "probe"
    assert not chooser.worth_catching_up(45, 96, plan, 5)  # 0.2 s against ~1.7 s of answer: 11 %
    assert chooser.worth_catching_up(45, 1000, plan, 5)  # 1 % of a long answer: worth a look
    assert chooser.worth_catching_up(12, 96, plan, 5)  # a few tokens behind: an ordinary step


def test_a_draft_model_judged_on_too_few_drafts_catches_up_where_it_could_repay_it():
    """The real pair, 1 thread (bench --peer): an 8-token first answer judged 3 drafts and put the
    model's acceptance at 0.68 against the 0.9 it measures; at 0.68 a 64-token answer could not
    repay the catch-up, so no answer drafted and the estimate never moved. While fewer than
    ``EXPLORE_TRIALS`` drafts were judged, the catch-up is weighed against what drafting could save
    (every draft accepted); once enough were, against what it is expected to save."""
    chooser = KChooser()
    for n in range(1, 7):
        chooser.costs.observe_verify(n, 0.076 * (1 + 0.16 * (n - 1)))  # its measured passes
    chooser.costs.observe_draft(1, 0.025)
    chooser.costs.observe_draft_catch_up(46, 0.37)  # 8 ms a token
    chooser.acceptance.observe(MODEL_KEY, 3, 1)  # a poor start: 3 judged
    plan = chooser.choose(MODEL_KEY, 5, drafts_ready=False)
    assert chooser.acceptance.judged[MODEL_KEY] < EXPLORE_TRIALS
    assert chooser.worth_catching_up(46, 64, plan, 5)
    for _ in range(EXPLORE_TRIALS):  # enough evidence, as poor: its expected saving decides
        chooser.acceptance.observe(MODEL_KEY, 3, 0)
    plan = chooser.choose(MODEL_KEY, 5, drafts_ready=False)
    assert not chooser.worth_catching_up(46, 64, plan, 5)
    for _ in range(4 * EXPLORE_TRIALS):  # as good as the pair measures: expected to repay it
        chooser.acceptance.observe(MODEL_KEY, 5, 5)
    plan = chooser.choose(MODEL_KEY, 5, drafts_ready=False)
    assert chooser.worth_catching_up(46, 64, plan, 5) and not chooser.worth_catching_up(46, 4, plan, 5)


def test_the_engine_does_not_prefill_a_draft_model_that_cannot_repay_it(load_tiny):
    target = load_tiny("llama")
    engine = Engine(target, target)
    costs = FrozenCosts(draft_step=0.1)
    costs.draft_catch_up.append(1.0)  # a prompt token costs the draft model a whole target step
    costs.observe_draft_catch_up = lambda tokens, seconds, passes=1: None  # type: ignore[method-assign]
    engine.chooser = KChooser(costs=costs)
    prompt = "The quick brown fox jumps over the lazy dog. " * 4
    skipped = engine.generate(prompt, AUTO, options=MODEL_ALONE)
    assert skipped.stats.draft_passes == 0 and skipped.stats.proposed == 0
    costs.draft_catch_up[0] = 0.001
    engine.reset()
    assert engine.generate(prompt, AUTO, options=MODEL_ALONE).stats.proposed > 0


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


# --- quantized forms: a pass over m tokens costs more than over one (issue 18, part 5) ---------

# int4 weight-only kernels, one [1536 -> 8960] matrix at 1 thread (MEASUREMENTS.md): 0.36 / 0.44 /
# 0.61 / 1.24 ms at M = 1 / 2 / 4 / 8 rows, i.e. v(4) ~ 1.7 and v(8) ~ 3.4 (prepacked fp32: ~1.1)
INT4_MS = {1: 0.36, 2: 0.44, 4: 0.61, 8: 1.24}


def _int4_pass_s(tokens: int) -> float:
    sizes = sorted(INT4_MS)
    lo = max(n for n in sizes if n <= tokens)
    hi = min((n for n in sizes if n >= tokens), default=lo)
    share = 0.0 if hi == lo else (tokens - lo) / (hi - lo)
    return (INT4_MS[lo] + share * (INT4_MS[hi] - INT4_MS[lo])) / 1000


@pytest.mark.parametrize("alpha", [0.0, 0.2, 0.4, 0.6, 0.8])
@pytest.mark.parametrize("drafts_ready", [True, False])
def test_auto_k_never_drafts_at_a_loss_when_bigger_passes_cost_as_int4s_do(alpha, drafts_ready):
    """Simulated answers on int4-like pass costs, with acceptance ``alpha`` and (a draft model)
    a draft step of a fifth of a plain pass: the tokens per second auto k reaches are never
    noticeably below plain decoding's, and where drafting pays it is used."""
    import random

    rng = random.Random(int(alpha * 10) + drafts_ready)
    chooser = KChooser()
    for size in (1, 2, 3, 4, 6, 8):  # the warm-up's measured points
        chooser.costs.observe_verify(size, _int4_pass_s(size))
    draft_s = 0.0 if drafts_ready else _int4_pass_s(1) / 5
    if not drafts_ready:
        chooser.costs.observe_draft(1, draft_s)
    key = lookup_key(3) if drafts_ready else MODEL_KEY
    tokens, seconds = 0, 0.0
    while tokens < 4000:
        k = chooser.choose(key, 8, drafts_ready=drafts_ready).k
        accepted = 0
        while accepted < k and rng.random() < alpha:
            accepted += 1
        verify = _int4_pass_s(k + 1)
        chooser.costs.observe_verify(k + 1, verify)
        if k and not drafts_ready:
            chooser.costs.observe_draft(k, k * draft_s)
        chooser.observe_step(key, k, accepted)
        tokens += accepted + 1
        seconds += verify + k * draft_s
    speedup = (tokens / seconds) / (1 / _int4_pass_s(1))
    assert speedup >= 0.97  # never slower than plain decoding, to the probes' cost
    best = max(
        expected_tokens(alpha, k) / (k * draft_s / _int4_pass_s(1) + _int4_pass_s(k + 1) / _int4_pass_s(1))
        for k in range(0, 9)
    )
    assert speedup >= 0.9 * best  # and most of what the best fixed k would reach


def test_the_why_panels_v_shows_the_measured_int4_costs():
    """The panel's v(m) is the measured pass cost ÷ a plain pass, however steep: v(3) = 1.69
    for int4 (a pass over 4 tokens), not a curve flattened to what fp32 would cost."""
    from app.engine.analysis.explanation import explain
    from app.engine.events import RunResult, RunStats, StepEvent, TokenInfo

    def step(index: int, drafts: int) -> StepEvent:
        accepted = tuple(TokenInfo(1, "x", "draft") for _ in range(drafts))
        target = TokenInfo(2, "y", "target")
        return StepEvent(index, accepted, target, (), "bonus", drafts, 0.0, _int4_pass_s(drafts + 1), RunStats())

    steps = [step(0, 0)] + [step(i, m) for i, m in enumerate([0, 0, 0, 1, 3, 3, 7, 0], 1)]
    e = explain(RunResult.from_steps(steps, True, "prompt lookup", {}))
    v = {row.drafts: row.fitted for row in e.verify_cost_by_tokens}
    assert v[1] == pytest.approx(0.44 / 0.36) and v[3] == pytest.approx(0.61 / 0.36)
    assert v[7] == pytest.approx(1.24 / 0.36)


def test_a_band_that_measured_only_bigger_passes_takes_its_plain_pass_from_another_bands_ratios():
    """An answer whose every step verified drafts reaches context bands where no plain pass was
    made: the plain pass there is the bigger pass divided by its ratio in the nearest band that
    measured both, not the bigger pass itself (which made every block look free: auto k verified 5
    drafts a step on a CPU where a 6-token pass costs 4 plain ones)."""
    from app.engine.decoding.cost import CostModel, KChooser

    costs = CostModel()
    costs.context = 16
    for _ in range(3):
        costs.observe_verify(1, 0.2)
        costs.observe_verify(6, 0.8)
    costs.context = 60  # the next band: 6-token passes only
    costs.observe_verify(6, 1.0)
    assert costs.verify_cost(1) == pytest.approx(0.25)
    assert costs.verify_cost(6) == pytest.approx(1.0)
    chooser = KChooser(costs=costs)
    for _ in range(30):
        chooser.acceptance.observe("lookup3", 4, 4)
    choice = chooser.choose("lookup3", 5, drafts_ready=True)
    assert choice.pass_cost == pytest.approx(4.0)  # 1.0 s over 0.25
    costs.observe_verify(1, 0.3)  # a plain pass of its own wins
    assert costs.verify_cost(1) == pytest.approx(0.3)


def test_with_no_plain_pass_measured_anywhere_bigger_passes_are_scaled_by_the_priors_ratio():
    from app.engine.decoding.cost import UNMEASURED_EXTRA_PER_TOKEN, CostModel

    costs = CostModel()
    costs.context = 60
    costs.observe_verify(6, 1.0)
    assert costs.verify_cost(1) == pytest.approx(1.0 / (1 + 5 * UNMEASURED_EXTRA_PER_TOKEN))


def test_sizes_not_measured_lately_age_toward_the_warm_ups_shape_not_a_constant():
    """On a CPU where a pass grows with its rows (the real 1.5B on an AVX2-only EPYC: 2, 4 and 6
    tokens cost 1.6, 3.7 and 3.9 plain passes), a band reached after the warm-up's figures aged
    out weighs a bigger pass by the warm-up's ratios, not by 1 + 0.15 a token."""
    from app.engine.decoding.cost import CROSS_BAND_FRESH, CostModel

    costs = CostModel()
    costs.context = 16
    for n, ratio in ((2, 1.6), (3, 2.5), (4, 3.7), (6, 3.9)):
        costs.observe_verify(1, 0.1)
        costs.observe_verify(n, 0.1 * ratio)
    costs.keep_shape()
    assert costs.prior_ratio(4) == pytest.approx(3.7) and costs.prior_ratio(5) == pytest.approx(3.8)
    assert costs.prior_ratio(8) == pytest.approx(3.9 + 2 * 2.9 / 5)  # the last measured cost per token goes on
    for _ in range(CROSS_BAND_FRESH + 20):  # a long plain answer in the next bands: the warm-up's sizes age out
        costs.context = 80
        costs.observe_verify(1, 0.12)
        costs.tick()
    curve = costs.curve(6)
    assert [round(c / curve[0], 2) for c in curve] == [1.0, 1.6, 2.5, 3.7, 3.8, 3.9]
    assert CostModel().prior_ratio(4) == pytest.approx(1.45)  # nothing kept: the constant


@pytest.mark.parametrize(("accepted", "folds"), [(0.2, False), (0.9, True)])
def test_drafts_fold_into_the_prompts_pass_only_where_their_rows_pay(accepted, folds):
    """Rows added to the prompt's pass cost what a step's extra rows cost (a CPU's prefill is
    compute-bound): drafts rarely accepted ride along with it no more than they would in a step;
    drafts usually accepted do."""
    chooser = _measured_chooser("steep", accepted, 0.0, 3)  # a row: 0.45 of a pass
    choice = chooser.choose("model", 3, drafts_ready=True, prefill=True)
    assert (choice.k > 0) is folds
    assert choice.k == chooser.choose("model", 3, drafts_ready=True, probe=False).k  # as a step would
