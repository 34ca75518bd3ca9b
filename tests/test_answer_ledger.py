"""Never slower within an answer (issue 30 §5): when an answer's own drafting passes, on its own
clock, have given fewer tokens per second than plain steps over at least ``FALL_BACK_AFTER`` of
them, auto k takes ``REST_STEPS`` plain steps before it may draft (and be judged) again, says so
in each step's decision, in the Why sentence and under the answer, and the answer is still the
target's own. Timing is a virtual
clock (no timed assertions): a target pass over n tokens costs 1 + 0.5·(n − 1) virtual seconds,
so a pass over 3 tokens whose drafts all fail gives 1 token for 2 plain passes' time."""

from __future__ import annotations

from dataclasses import replace

import pytest
import virtual_clock as virtual_clock_

from app.engine import Engine, GenerationConfig
from app.engine.analysis.explanation import drafting_notes, explain
from app.engine.decoding.cost import FALL_BACK_AFTER, REST_STEPS, AnswerLedger, Choice, KChooser
from app.engine.decoding.drafters import Proposal
from app.engine.events import RunResult

ANSWER = 2 * FALL_BACK_AFTER + REST_STEPS + 10  # drafts, rests, drafts again, rests again
AUTO = GenerationConfig(max_new_tokens=ANSWER, k=2, auto_k=True)
PROMPT = "The quick brown fox"


def steep_pass(n: int) -> float:
    return 1.0 + 0.5 * (n - 1)


@pytest.fixture
def virtual_clock(monkeypatch):
    """The decode loop's clock advances only by the modelled cost of each target pass."""
    return virtual_clock_.install(monkeypatch, steep_pass)


class WrongDrafter:
    """Prompt lookup that always proposes two tokens the target will not pick (its own answer's
    next tokens, shifted by one id)."""

    name = "prompt lookup"
    cheap = True

    def __init__(self, answer: list[int], vocab: int) -> None:
        self.answer, self.vocab = answer, vocab

    def propose(self, tokens, k, rule, confidence_threshold, new_turn=True) -> Proposal:
        at = len(tokens)
        drafts = [(t + 1) % self.vocab for t in self.answer[at : at + k]]
        return Proposal(drafts, None, [None] * len(drafts), passes=0, ngram=3)

    def unseen(self, tokens) -> int:
        return 0

    def reset(self) -> None:
        pass


class OverconfidentChooser(KChooser):
    """A chooser whose model of this machine is wrong: it predicts a gain from two drafts every
    step, whatever it measures (what the ledger is the backstop for)."""

    def choose(self, key, k_max, drafts_ready, prefill=False, probe=True) -> Choice:  # type: ignore[no-untyped-def]
        return Choice(min(2, k_max), 1.5, 0.9, "drafting", 2, 1.5, 0.0, 1.5)


def test_the_ledger_judges_only_after_enough_drafting_passes():
    ledger = AnswerLedger()
    for _ in range(FALL_BACK_AFTER - 1):
        ledger.observe(2, 0, 1.5)  # a pass over 3 tokens (1.5 plain passes) that gave one token
        assert ledger.falls_back(1.0) is None
    ledger.observe(2, 1, 1.5)
    stop = ledger.falls_back(1.0)
    assert stop is not None and (stop.k, stop.reason) == (0, "slower_in_answer")
    assert stop.realized == pytest.approx((FALL_BACK_AFTER + 1) / (1.5 * FALL_BACK_AFTER))
    assert stop.alpha == pytest.approx(1 / (FALL_BACK_AFTER + 1))  # 1 success in 5 judged drafts
    for _ in range(REST_STEPS - 1):  # the step that decided was the first plain one
        assert ledger.falls_back(100.0) is stop
    assert ledger.falls_back(1.0) is None  # rested: drafting judged afresh
    assert (ledger.passes, ledger.tokens, ledger.judged) == (0, 0, (0, 0))
    for _ in range(FALL_BACK_AFTER):
        ledger.observe(2, 0, 1.5)
    assert ledger.falls_back(1.0) is not None


def test_a_ledger_of_paying_passes_or_without_a_plain_cost_keeps_drafting():
    paying = AnswerLedger()
    for _ in range(2 * FALL_BACK_AFTER):
        paying.observe(2, 2, 1.5)  # 3 tokens for 1.5 plain passes: 2x
    assert paying.realized(1.0) == pytest.approx(2.0)
    assert paying.falls_back(1.0) is None
    unmeasured = AnswerLedger()
    for _ in range(2 * FALL_BACK_AFTER):
        unmeasured.observe(2, 0, 1.5)
    assert unmeasured.falls_back(None) is None


@pytest.fixture
def losing_engine(load_tiny) -> tuple[Engine, list[int]]:
    target = replace(load_tiny("llama"), eos_token_ids=())  # a long answer: no end of sequence
    engine = Engine(target, lookup=True)
    plain = engine.generate(PROMPT, replace(AUTO, speculative=False)).token_ids
    engine._drafter = WrongDrafter(engine.prompt_ids(PROMPT) + plain, target.vocab_size)
    engine.chooser = OverconfidentChooser()
    for context in (8, 16, 32, 64):  # a plain pass at every context this answer reaches, as measured before
        engine.chooser.costs.context = context
        engine.chooser.costs.observe_verify(1, steep_pass(1))
    engine.reset()
    return engine, plain


def test_an_answer_whose_drafting_measures_slower_ends_on_plain_steps(losing_engine, virtual_clock):
    engine, plain = losing_engine
    result = engine.generate(PROMPT, AUTO)
    assert result.token_ids == plain  # the target's own answer, drafts or not
    decode = [s for s in result.steps if s.index > 0]  # one token each: every draft fails
    # a mis-modelled chooser alone drafts on every step: 4 drafting, 8 resting, 4 drafting, …
    # (the last step has no room left for a draft)
    kinds = ["d" if s.k > 0 else "r" if s.decision and s.decision.reason == "slower_in_answer" else "p" for s in decode]
    period = ["d"] * FALL_BACK_AFTER + ["r"] * REST_STEPS
    assert kinds[:-1] == (period * len(decode))[: len(decode) - 1]
    plain = [s for s in decode if s.k == 0 and s.decision is not None]
    first = plain[0].decision
    assert first is not None and first.realized == pytest.approx(1 / steep_pass(3)) and first.alpha == 0.0
    restored = RunResult.from_dict(result.to_dict())
    assert [s.decision for s in restored.steps] == [s.decision for s in result.steps]


def test_the_fall_back_is_said_under_the_answer_and_in_the_why_sentence(losing_engine, virtual_clock):
    engine, _ = losing_engine
    result = engine.generate(PROMPT, AUTO)
    notes = drafting_notes(result)
    decode = len([s for s in result.steps if s.index > 0])
    plain = sum(1 for s in result.steps if s.decision and s.decision.reason == "slower_in_answer")
    assert plain >= REST_STEPS
    said = (
        f"Drafting measured slower than plain steps in this answer: its first {FALL_BACK_AFTER} passes with "
        f"drafts ran at 0.50× their speed (acceptance 0%), so {plain} of its {decode} passes were plain steps."
    )
    assert notes == [said]
    explanation = explain(result)
    assert explanation.fell_back is not None and explanation.fell_back.drafted == FALL_BACK_AFTER
    assert said in explanation.summary
    assert explanation.to_dict()["fell_back"]["passes"] == plain


def test_a_fixed_k_is_never_overridden(losing_engine, virtual_clock):
    engine, plain = losing_engine
    result = engine.generate(PROMPT, replace(AUTO, auto_k=False))
    assert result.token_ids == plain
    decode = [s for s in result.steps if s.index > 0]
    assert sum(s.k > 0 for s in decode) > len(decode) - 3  # drafted to the end (k shrinks at the limit)
    assert all(s.decision is None for s in decode)
    assert drafting_notes(result) == []


class DraftsAfterThePromptChooser(OverconfidentChooser):
    """Two drafts a step, none folded into the prompt's pass: the draft model's first ask (its
    catch-up on the prompt) comes at the first decoding step, as when lookup took the prompt's pass."""

    def choose(self, key, k_max, drafts_ready, prefill=False, probe=True) -> Choice:  # type: ignore[no-untyped-def]
        if prefill:
            return Choice(0, 1.0, 0.9, "gain_below_margin", 2, 1.0, 0.0, 1.5)
        return super().choose(key, k_max, drafts_ready, prefill, probe)


def test_a_draft_models_catch_up_is_not_judged_as_a_drafting_pass(load_tiny, virtual_clock):
    """The catch-up is paid once, decided before the answer; judged as the first drafting pass's
    cost it made drafting that pays measure slower, and the answer stopped drafting."""
    from app.engine.backend import AnswerOptions
    from app.engine.config import DRAFT_MODEL
    from app.engine.decoding.drafters import model_of

    target = replace(load_tiny("llama"), eos_token_ids=())
    engine = Engine(target, target)  # the target as its own draft: every draft passes
    engine.chooser = DraftsAfterThePromptChooser()
    for context in (8, 16, 32, 64):
        engine.chooser.costs.context = context
        engine.chooser.costs.observe_verify(1, steep_pass(1))
    model = model_of(engine._drafter)
    assert model is not None
    real_propose = model.propose

    def propose(tokens, k, rule, threshold, new_turn=True):  # type: ignore[no-untyped-def]
        if new_turn:
            virtual_clock[0] += 40.0  # its prefill of the prompt: dearer than the whole answer's passes
        return real_propose(tokens, k, rule, threshold, new_turn)

    model.propose = propose  # type: ignore[method-assign]
    result = engine.generate(PROMPT, AUTO, options=AnswerOptions(drafter_choice=DRAFT_MODEL))
    drafting = [s for s in result.steps if s.index > 0 and s.k > 0]
    assert len(drafting) > FALL_BACK_AFTER and all(len(s.rejected) == 0 for s in drafting)
    assert not any(s.decision and s.decision.reason == "slower_in_answer" for s in result.steps)
