"""A session never settles on "never draft" (issue 12 §4): evidence a step did not measure
ages or is re-probed, a confidence stop counts as evidence, a catch-up is not a draft step, and
every auto-k step says why it chose its k. Timing is a virtual clock (no timed assertions):
a target pass over n tokens costs 1 + 0.02·(n − 1) virtual seconds."""

from __future__ import annotations

from dataclasses import replace

import pytest
import virtual_clock as virtual_clock_

import app.engine.decoding.decode as decode_module
from app.engine import Engine, GenerationConfig
from app.engine.backend import AnswerOptions
from app.engine.config import DRAFT_MODEL
from app.engine.decoding.cost import (
    EXPLORE_TRIALS,
    FIRST_MODEL_KEY,
    MODEL_KEY,
    PROBE_AFTER,
    AcceptanceModel,
    CostModel,
    KChooser,
    lookup_key,
)
from app.engine.decoding.decode import StepRecord, _learn, _Verified
from app.engine.decoding.drafters import Proposal
from app.engine.events import TokenInfo

AUTO = GenerationConfig(max_new_tokens=96, k=4, auto_k=True)
PROMPT = "The quick brown fox"


def flat_pass(n: int) -> float:
    return 1.0 + 0.02 * (n - 1)


@pytest.fixture
def virtual_clock(monkeypatch):
    """The decode loop's clock advances only by the modelled cost of each target pass."""
    return virtual_clock_.install(monkeypatch, flat_pass)


class PerfectDrafter:
    """Prompt lookup on an obvious repetition: proposes exactly the target's own answer."""

    name = "prompt lookup"
    cheap = True

    def __init__(self, sequence: list[int]) -> None:
        self.sequence = sequence

    def propose(self, tokens, k, rule, confidence_threshold, new_turn=True) -> Proposal:
        drafts = self.sequence[len(tokens) : len(tokens) + k]
        return Proposal(drafts, None, [None] * len(drafts), passes=0, ngram=3)

    def unseen(self, tokens) -> int:
        return 0

    def reset(self) -> None:
        pass


def perfect_engine(load_tiny) -> Engine:
    target = replace(load_tiny("llama"), eos_token_ids=())  # a long answer: no end of sequence
    engine = Engine(target, lookup=True)
    plain = engine.generate(PROMPT, replace(AUTO, speculative=False)).token_ids
    engine._drafter = PerfectDrafter(engine.prompt_ids(PROMPT) + plain)
    engine.reset()
    return engine


def poison(chooser: KChooser, slow: float = 10.0) -> None:
    """What a warm-up on a busy machine leaves: multi-token passes measured ``slow`` times a plain
    one, and a stretch where lookup's drafts were rejected."""
    for n in range(1, 9):
        chooser.costs.observe_verify(n, 1.0 if n == 1 else slow)
    for _ in range(10):
        chooser.observe_step(lookup_key(3), 3, 0)


def test_a_chooser_poisoned_by_slow_early_samples_recovers_to_drafting(load_tiny, virtual_clock):
    engine = perfect_engine(load_tiny)
    fresh = engine.generate(PROMPT, AUTO)  # a fresh chooser on honest (virtual) costs
    engine.reset()
    engine.chooser = KChooser()
    poison(engine.chooser)
    first = engine.generate(PROMPT, AUTO)
    assert first.token_ids == fresh.token_ids
    late = first.steps[len(first.steps) // 2 :]
    assert sum(s.k > 0 for s in late) > len(late) / 2  # back to drafting within the answer
    engine.reset()
    again = engine.generate(PROMPT, AUTO)  # the same conversation later in the session
    assert again.token_ids == fresh.token_ids
    assert again.stats.target_passes <= fresh.stats.target_passes + 1


def test_costs_not_measured_age_toward_the_prior():
    costs = CostModel()
    for n in (1, 2, 4):
        costs.observe_verify(n, 1.0 if n == 1 else 10.0)
    stale = costs.verify_cost(2)
    for _ in range(200):
        costs.tick()
        costs.observe_verify(1, 1.0)  # only plain steps measured since
    assert stale == 10.0
    assert costs.verify_cost(2) == pytest.approx(1.15, abs=0.05)
    assert costs.measured()[2] == 10.0  # the raw median is kept (for reports)


def test_pass_costs_never_decrease_with_the_pass_size():
    costs = CostModel()
    for n, s in ((1, 1.0), (2, 0.75), (3, 0.8), (5, 1.3), (6, 1.1)):
        costs.observe_verify(n, s)
    curve = costs.curve(10)
    assert curve is not None
    assert all(b >= a for a, b in zip(curve, curve[1:]))
    assert curve[1] == 1.0  # a pass over 2 tokens is never cheaper than a plain one


def test_a_stale_chooser_probes_one_draft_then_goes_back():
    chooser = KChooser()
    for n in range(1, 9):
        chooser.costs.observe_verify(n, 1.0 if n == 1 else 10.0)
    assert chooser.choose(lookup_key(3), 4, drafts_ready=True).reason == "gain_below_margin"
    for _ in range(PROBE_AFTER["free"]):
        chooser.observe_step(lookup_key(3), 0, 0)
    probe = chooser.choose(lookup_key(3), 4, drafts_ready=True)
    assert (probe.k, probe.reason) == (1, "probe")
    chooser.observe_step(lookup_key(3), 1, 0)  # the probe verified a draft
    assert chooser.choose(lookup_key(3), 4, drafts_ready=True).k == 0


def _record(proposal, step, draft_s, index, first_ask, shadow=None) -> StepRecord:  # type: ignore[no-untyped-def]
    """A step as the loop records it (verify_s = 1 s)."""
    return StepRecord(index, proposal, step, None, len(proposal.tokens), True, draft_s, 1.0, first_ask, shadow, None)


def test_a_lookup_draft_set_aside_is_judged_by_the_targets_next_token():
    chooser = KChooser()
    before = chooser.acceptance.alpha(lookup_key(2))
    step = _Verified([], None, [], n_accepted=0, next_token=7)
    nothing = Proposal([], None, [], 0)
    for _ in range(10):
        _learn(chooser, None, _record(nothing, step, 0.0, 1, False, (lookup_key(2), 7)), 0)
    assert chooser.acceptance.alpha(lookup_key(2)) > before
    for _ in range(30):
        _learn(chooser, None, _record(nothing, step, 0.0, 1, False, (lookup_key(2), 8)), 0)
    assert chooser.acceptance.alpha(lookup_key(2)) < before


class _Model:
    cheap = False


def test_a_draft_models_catch_up_is_not_timed_as_a_draft_step():
    chooser = KChooser()
    catch_up = Proposal([5, 6], None, [0.9, 0.9], passes=2)
    step = _Verified([], None, [], n_accepted=2, next_token=1)
    _learn(chooser, _Model(), _record(catch_up, step, 50.0, index=7, first_ask=True), 0)  # type: ignore[arg-type]
    assert chooser.costs.draft_cost() is None
    after_plain_steps = Proposal([5, 6], None, [0.9, 0.9], passes=2, fed=20)  # 20 tokens missed
    _learn(chooser, _Model(), _record(after_plain_steps, step, 9.0, index=8, first_ask=False), 0)  # type: ignore[arg-type]
    assert chooser.costs.draft_cost() is None
    ordinary = Proposal([5, 6], None, [0.9, 0.9], passes=2, fed=2)
    _learn(chooser, _Model(), _record(ordinary, step, 0.2, index=9, first_ask=False), 0)  # type: ignore[arg-type]
    assert chooser.costs.draft_cost() == pytest.approx(0.1)


def test_a_mixed_drafters_model_first_asked_after_lookup_is_a_catch_up_not_a_draft_step():
    """Lookup drafted the prompt's pass, so the mixed drafter was asked before its model: the
    model's first ask (step 1) is not the answer's ``first_ask``, but it fed the whole prompt. On
    the real pair it was timed as a 2-draft step of 363 ms (a step is ~50) and judged by the
    ledger as a drafting pass, which made the answer stop drafting (0.72x)."""
    chooser = KChooser()
    step = _Verified([], None, [], n_accepted=2, next_token=1)
    first_of_the_model = Proposal([5, 6], None, [0.9, 0.9], passes=2, fed=46)
    record = _record(first_of_the_model, step, 0.46, index=1, first_ask=False)
    assert record.caught_up
    _learn(chooser, _Model(), record, 0)  # type: ignore[arg-type]
    assert chooser.costs.draft_cost() is None
    assert chooser.costs.draft_catch_up_cost() == pytest.approx(0.01)  # per token it fed
    assert not _record(Proposal([5], None, [0.9], passes=1, fed=2), step, 0.1, index=2, first_ask=False).caught_up
    assert not _record(Proposal([5], None, [0.9], passes=0, fed=46), step, 0.1, index=2, first_ask=False).caught_up


def test_a_draft_models_block_before_the_prompts_pass_is_evidence_of_its_own():
    """The answer's first words miss far more often than the rest: the block drafted before the
    prompt's pass (index 0) is evidence for ``FIRST_MODEL_KEY``, and leaves the model's own
    estimate, which every later step is chosen by, where it was."""
    chooser = KChooser()
    model_before, first_before = chooser.acceptance.alpha(MODEL_KEY), chooser.acceptance.alpha(FIRST_MODEL_KEY)
    missed = Proposal([5, 6, 7], None, [0.9, 0.9, 0.9], passes=3)
    step = _Verified([], None, [TokenInfo(5, "a", "draft")], n_accepted=0, next_token=1)  # its first draft rejected
    for _ in range(3):
        _learn(chooser, _Model(), _record(missed, step, 0.2, index=0, first_ask=True), 0)  # type: ignore[arg-type]
    assert chooser.acceptance.alpha(MODEL_KEY) == pytest.approx(model_before, abs=0.03)  # only aged
    assert chooser.acceptance.alpha(FIRST_MODEL_KEY) < first_before
    _learn(chooser, _Model(), _record(missed, step, 0.2, index=5, first_ask=False), 0)  # type: ignore[arg-type]
    assert chooser.acceptance.alpha(MODEL_KEY) < model_before - 0.1


def test_a_confidence_stop_before_the_first_draft_is_evidence(load_tiny):
    """A threshold stop pays a draft pass and verifies nothing: the chooser must learn from it
    and stop asking, rather than drafting at a loss for the whole answer."""
    target = replace(load_tiny("llama"), eos_token_ids=())
    engine = Engine(target, target)
    costs = CostModel()
    for n in range(1, 10):
        costs.observe_verify(n, flat_pass(n))
    costs.observe_draft(1, 0.1)
    costs.observe_verify = lambda tokens, seconds: None  # type: ignore[method-assign]
    costs.observe_draft = lambda passes, seconds: None  # type: ignore[method-assign]
    engine.chooser = KChooser(costs=costs)
    config = replace(AUTO, confidence_threshold=0.999)  # a random model is never that sure
    result = engine.generate(PROMPT, config, options=AnswerOptions(drafter_choice=DRAFT_MODEL))  # no lookup drafts
    assert result.stats.proposed == 0
    assert result.stats.draft_passes < result.stats.target_passes / 3
    assert engine.chooser.acceptance.alpha(MODEL_KEY) < 0.3


def test_every_auto_k_step_says_why(load_tiny, virtual_clock):
    engine = perfect_engine(load_tiny)
    engine.chooser = KChooser()
    # passes so dear that their ageing takes longer than a probe's wait: the set-aside drafts'
    # evidence alone (all accepted) does not bring drafting back first
    poison(engine.chooser, slow=100.0)
    result = engine.generate(PROMPT, AUTO)
    reasons = {s.decision.reason for s in result.steps if s.decision is not None}
    assert {"gain_below_margin", "probe", "drafting"} <= reasons
    held = next(s.decision for s in result.steps if s.decision and s.decision.reason == "gain_below_margin")
    assert held.k == 0 and held.best_gain < 1.03 and held.pass_cost > 1.0 and 0.0 <= held.alpha <= 1.0
    restored = type(result).from_dict(result.to_dict())
    assert [s.decision for s in restored.steps] == [s.decision for s in result.steps]


def test_an_untried_drafter_is_tried_when_good_acceptance_could_pay():
    """A draft step at half a plain pass does not pay at the prior's acceptance, but would at
    a good one: the chooser tries it once to learn, then follows the evidence."""
    chooser = KChooser()
    for n in range(1, 9):
        chooser.costs.observe_verify(n, 1.0 + 0.2 * (n - 1))
    chooser.costs.observe_draft(1, 0.5)
    assert (chooser.choose(MODEL_KEY, 4, drafts_ready=False).reason) == "probe"
    for _ in range(5):
        chooser.observe_step(MODEL_KEY, 1, 1)  # it passes every time
    assert chooser.choose(MODEL_KEY, 4, drafts_ready=False).reason == "drafting"
    chooser.costs.observe_draft(1, 5.0)
    chooser.costs.observe_draft(1, 5.0)  # now dearer than a target pass: no acceptance pays
    fresh = KChooser(costs=chooser.costs)
    assert fresh.choose(MODEL_KEY, 4, drafts_ready=False).reason == "gain_below_margin"


def test_a_pass_that_rejected_drafts_is_timed_like_any_other(load_tiny, virtual_clock, monkeypatch):
    """Issue 12 §3: the rejected drafts' display text is decoded after the step's clock stops,
    so a verify pass is timed the same way whether it rejected drafts or was a plain step."""
    engine = Engine(load_tiny("llama"), load_tiny("llama-other"))  # a mismatched draft: rejections
    tokenizer = engine.target.tokenizer
    real_with_text = decode_module._with_text

    def slow_with_text(rejected, tok):
        virtual_clock[0] += 100.0  # display work, never a verify cost
        return real_with_text(rejected, tok)

    monkeypatch.setattr(decode_module, "_with_text", slow_with_text)
    result = engine.generate(PROMPT, GenerationConfig(max_new_tokens=16, k=3, auto_k=False))
    rejecting = [s for s in result.steps[1:] if s.rejected]
    assert rejecting
    for s in rejecting:
        assert s.verify_s == pytest.approx(flat_pass(len(s.accepted) + len(s.rejected) + 1))
        texts = [tokenizer.decode([t.id], skip_special_tokens=True) for t in s.rejected]
        assert [t.text for t in s.rejected] == texts


def test_an_untried_lookup_key_is_not_probed_its_set_aside_draft_is_judged_for_free():
    """A key only its prior speaks for: a draft model gets one probe (its drafts cost a pass to
    learn from); prompt lookup's drafts exist already, and one set aside is judged by the
    target's next token at no cost, so a prior that says no means a plain step."""
    chooser = KChooser()
    for n in range(1, 9):
        chooser.costs.observe_verify(n, 1.0 + 0.3 * (n - 1))  # v(2) = 1.3: a contested prior of 0.2 does not pay
    lookup = chooser.choose(lookup_key(1, contested=True), 2, drafts_ready=True)
    assert (lookup.k, lookup.reason) == (0, "gain_below_margin")
    chooser.acceptance = AcceptanceModel()
    chooser.costs.observe_draft(1, 0.5)  # a draft step half a plain pass: at a prior of 0.6, no gain
    model = chooser.choose(MODEL_KEY, 4, drafts_ready=False)
    assert (model.k, model.reason) == (1, "probe")


def _real_pair_costs(chooser: KChooser) -> None:
    """The real pair's costs on a Zen 1 core (2026-12-05): a draft step 0.3 of a plain pass, a
    pass over n tokens 1 + 0.37 (n − 1) plain passes: drafting pays from ~73 % acceptance."""
    for n in range(1, 9):
        chooser.costs.observe_verify(n, 0.125 * (1 + 0.37 * (n - 1)))
    chooser.costs.observe_draft(1, 0.3 * 0.125)


def test_a_draft_model_that_misses_its_first_block_is_tried_until_its_acceptance_is_known():
    """One rejection must not set a good draft model aside for the answer: it is tried one draft a
    step until ``EXPLORE_TRIALS`` of its drafts were judged, then the evidence decides both ways."""
    good = KChooser()
    _real_pair_costs(good)
    good.observe_step(MODEL_KEY, 3, 0)  # its first block (the answer's first words) missed
    assert good.acceptance.alpha(MODEL_KEY) < 0.5
    judged = 1
    while judged < EXPLORE_TRIALS:
        choice = good.choose(MODEL_KEY, 4, drafts_ready=False)
        assert choice.k >= 1 and choice.reason in ("probe", "drafting")  # drafting once the evidence pays
        good.observe_step(MODEL_KEY, 1, 1)  # every later draft passes
        judged += 1
    assert good.choose(MODEL_KEY, 4, drafts_ready=False).reason == "drafting"
    bad = KChooser()
    _real_pair_costs(bad)
    for _ in range(EXPLORE_TRIALS):
        bad.observe_step(MODEL_KEY, 1, 0)  # a draft the target never agrees with
    assert bad.choose(MODEL_KEY, 4, drafts_ready=False).k == 0  # known now: no more tries


def test_free_drafts_do_not_put_off_a_draft_models_probe():
    """The model's probe clock counts steps since *its* drafts were verified: lookup drafts
    verified on every step must not keep it from ever being re-measured (nor the reverse)."""
    chooser = KChooser()
    _real_pair_costs(chooser)
    for _ in range(EXPLORE_TRIALS):
        chooser.observe_step(MODEL_KEY, 1, 0)  # explored, found poor
    assert chooser.choose(MODEL_KEY, 4, drafts_ready=False).k == 0
    for _ in range(PROBE_AFTER["model"]):
        chooser.observe_step(lookup_key(3), 2, 2)  # free drafts, verified every step
    probe = chooser.choose(MODEL_KEY, 4, drafts_ready=False)
    assert (probe.k, probe.reason) == (1, "probe")
    chooser.observe_step(MODEL_KEY, 1, 0)
    assert chooser.choose(MODEL_KEY, 4, drafts_ready=False).k == 0
