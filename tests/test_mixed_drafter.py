"""The draft model and lookup together (``MixedDrafter``, the default drafter with a draft model):
each step the chooser takes lookup's block (drafts copied from the conversation, no pass) or the
model's, whichever it rates faster. The answer is the target's alone, greedy, with the model
drafting in turn or ahead; with a fixed k the model drafts alone."""

from __future__ import annotations

import pytest

from app.engine import Engine, GenerationConfig
from app.engine.backend import AnswerOptions
from app.engine.config import DRAFT_AND_LOOKUP, DRAFT_MODEL, LoadOptions
from app.engine.decoding.cost import FIRST_MODEL_KEY, MODEL_KEY
from app.engine.decoding.drafters import MixedDrafter, ModelDrafter
from app.engine.events import MIXED_SUFFIX, RunResult
from app.engine.session import DRAFT_AHEAD_ENV

# an answer that repeats its prompt: lookup has long matches, the model the rest
PROMPT = "def add(a, b):\n    return a + b\n\ndef add(a, b):\n    return a + b\n\ndef add(a, b):"
AUTO = GenerationConfig(max_new_tokens=48, k=4)
# nothing indexed: an answer given before would be in the suffix index, whose 32-token matches
# of the same prompt win every step
UNRECORDED = AnswerOptions(record=False)


def _engine(tiny_models, arch: str) -> Engine:
    return Engine.load(str(tiny_models[arch]), str(tiny_models[f"{arch}-draft"]), LoadOptions(device="cpu"))


def _kinds(result) -> tuple[int, int]:
    """(steps that verified lookup's drafts, steps that verified the model's)."""
    drafted = [s for s in result.steps if s.accepted or s.rejected]
    model = [s for s in drafted if s.draft_passes or s.drafted_ahead]
    return len(drafted) - len(model), len(model)


@pytest.mark.parametrize("arch", ["llama", "qwen2"])
@pytest.mark.parametrize("ahead", ["0", "1"], ids=["in turn", "ahead"])
def test_lookup_and_the_model_together_give_the_target_alones_answer(tiny_models, monkeypatch, arch, ahead):
    monkeypatch.setenv(DRAFT_AHEAD_ENV, ahead)
    engine = _engine(tiny_models, arch)
    assert engine.drafter_name.endswith(MIXED_SUFFIX) and DRAFT_AND_LOOKUP in engine.drafter_choices
    plain = engine.generate(PROMPT, GenerationConfig(**{**AUTO.to_dict(), "speculative": False}), options=UNRECORDED)
    mixed = engine.generate(PROMPT, AUTO, options=UNRECORDED)
    assert mixed.token_ids == plain.token_ids
    assert mixed.made_by is not None and mixed.made_by.drafter == engine.drafter_name
    story = "Once upon a time, once upon a time, there was"  # another answer, by what the chooser learnt
    first = _kinds(mixed)
    if not first[0]:  # the model outrated lookup on every step (ahead, its drafts free): judged poor now
        for key in (MODEL_KEY, FIRST_MODEL_KEY):
            engine.chooser.acceptance.evidence[key] = (0.0, 40.0, engine.chooser.acceptance.step)
    kinds = [first, _kinds(engine.generate(story, AUTO, options=UNRECORDED))]
    assert sum(free for free, _ in kinds) > 0 and sum(model for _, model in kinds) > 0, kinds  # both kinds verified
    again = engine.generate(PROMPT, AUTO)  # the model's cache holds another answer: trusted nothing of it
    assert again.token_ids == plain.token_ids


def test_with_a_fixed_k_the_model_drafts_alone(tiny_models, monkeypatch):
    monkeypatch.setenv(DRAFT_AHEAD_ENV, "0")
    engine = _engine(tiny_models, "llama")
    fixed = GenerationConfig(max_new_tokens=24, k=3, auto_k=False)
    mixed = engine.generate(PROMPT, fixed)
    alone = engine.generate(PROMPT, fixed, options=AnswerOptions(drafter_choice=DRAFT_MODEL))
    assert [(t.id, t.source) for t in mixed.tokens] == [(t.id, t.source) for t in alone.tokens]
    assert all(s.draft_passes > 0 for s in mixed.steps if s.accepted or s.rejected)


def test_the_models_first_ask_of_an_answer_trusts_nothing_even_after_lookups(tiny_models, monkeypatch):
    """Lookup drafted first in this answer; the model's first ask still compares its whole cache
    (an earlier answer's) with the sequence: ``new_turn`` for it."""
    engine = _engine(tiny_models, "llama")
    mixed = engine._drafters[DRAFT_AND_LOOKUP]
    assert isinstance(mixed, MixedDrafter) and isinstance(mixed.model, ModelDrafter)
    asked = []
    propose = ModelDrafter.propose

    def spy(self, tokens, k, rule, threshold, new_turn=True):
        asked.append(new_turn)
        return propose(self, tokens, k, rule, threshold, new_turn)

    monkeypatch.setattr(ModelDrafter, "propose", spy)
    assert mixed.asks_first("free", True) and not mixed.asks_first("free", False)
    assert mixed.asks_first("model", False)  # the free part was asked first: the model's first all the same
    assert not mixed.asks_first("model", False)
    monkeypatch.setenv(DRAFT_AHEAD_ENV, "0")
    engine.generate(PROMPT, AUTO, options=UNRECORDED)
    engine.generate(PROMPT, AUTO, options=UNRECORDED)
    assert asked.count(True) == 2  # one fresh ask per answer


def test_a_draft_model_that_cannot_pay_sits_the_answer_out_and_the_answer_says_why(tiny_models, monkeypatch):
    """A draft step measured far dearer than any gain: auto k leaves the answer to lookup, the
    run's provenance names lookup, and the answer's first event carries the plan; the CLI, the
    bench and the window show the sentence it makes (saved and read back with the run)."""
    from app.engine.analysis.explanation import sat_out_note
    from app.engine.decoding.cost import KChooser

    monkeypatch.setenv(DRAFT_AHEAD_ENV, "0")
    monkeypatch.setattr(KChooser, "_draft_cost", lambda self: 10.0)
    engine = _engine(tiny_models, "llama")
    engine.warm_up()
    result = engine.generate(PROMPT, AUTO, options=UNRECORDED)
    plain = engine.generate(PROMPT, GenerationConfig(**{**AUTO.to_dict(), "speculative": False}), options=UNRECORDED)
    assert result.token_ids == plain.token_ids
    assert result.made_by is not None and result.made_by.draft_dtype is None  # lookup alone
    assert all(s.draft_passes == 0 for s in result.steps)
    plan = result.steps[0].model_sat_out
    assert plan is not None and plan.k == 0 and plan.draft_cost > 100
    note = sat_out_note(result)
    assert note.startswith(
        "The draft model sat this answer out: by this machine's recent steps a draft step would cost "
    )
    assert "no acceptance would repay it" in note
    assert sat_out_note(RunResult.from_dict(result.to_dict())) == note
    monkeypatch.undo()
    monkeypatch.setenv(DRAFT_AHEAD_ENV, "0")
    fresh = Engine(engine.target, engine.draft)  # nothing measured: the model is tried
    used = fresh.generate(PROMPT, AUTO, options=UNRECORDED)
    assert used.steps[0].model_sat_out is None and sat_out_note(used) == ""


def test_the_sat_out_sentence_names_the_break_even_acceptance_or_the_catch_up():
    from app.engine.analysis.explanation import format_percent, format_ratio, sat_out_note
    from app.engine.events import KDecision, RunResult, RunStats, StepEvent

    def run(plan: KDecision) -> RunResult:
        step = StepEvent(0, (), None, (), "prefill", 0, 0.0, 0.1, RunStats(), model_sat_out=plan)
        return RunResult.from_steps([step], speculative=True, drafter="suffix index", config={"speculative": True})

    dear = KDecision(0, "gain_below_margin", 0.25, best_k=1, best_gain=0.95, draft_cost=0.2, pass_cost=1.1)
    note = sat_out_note(run(dear))  # 1 + a = 0.2 + 1.1: a = 0.3 breaks even
    assert f"a draft step would cost {format_ratio(0.2)} of a plain target pass" in note
    assert f"a pass checking 2 tokens {format_ratio(1.1)} plain passes" in note  # one draft: never "1 drafts"
    assert f"would need {format_percent(0.3)} of its drafts accepted to break even, and {format_percent(0.25)}" in note
    catch_up = KDecision(0, "catch_up_not_repaid", 0.6, best_k=2, best_gain=1.2, draft_cost=0.1, pass_cost=1.1)
    assert "read the whole prompt" in sat_out_note(run(catch_up))


def test_the_models_first_ask_reports_the_whole_catch_up_it_fed(tiny_models, monkeypatch):
    """``Proposal.fed`` on a new turn is what the model did not hold of the conversation (here all
    of it), so a step whose model was first asked after lookup is known as a catch-up
    (``StepRecord.caught_up``): neither a draft step's cost nor, for the ledger, a drafting pass's."""
    engine = _engine(tiny_models, "llama")
    fed: list[tuple[bool, int, int]] = []
    propose = ModelDrafter.propose

    def spy(self, tokens, k, rule, threshold, new_turn=True):
        proposal = propose(self, tokens, k, rule, threshold, new_turn)
        fed.append((new_turn, len(tokens), proposal.fed))
        return proposal

    monkeypatch.setattr(ModelDrafter, "propose", spy)
    monkeypatch.setenv(DRAFT_AHEAD_ENV, "0")
    result = engine.generate(PROMPT, GenerationConfig(max_new_tokens=16, k=3, auto_k=False), options=UNRECORDED)
    (first, length, first_fed), *later = fed
    assert first and first_fed == length  # a fresh engine: the whole prompt
    assert later and all(not new and 1 <= n <= 2 for new, _, n in later)  # a block's leftovers
    # the step events say which of them caught up (a draft model's pass is timed without it: Why, bench)
    modelled = [s for s in result.steps if s.draft_passes]
    assert [s.draft_caught_up for s in modelled] == [True] + [False] * (len(modelled) - 1)
    restored = RunResult.from_dict(result.to_dict())
    assert [s.draft_caught_up for s in restored.steps] == [s.draft_caught_up for s in result.steps]


@pytest.mark.parametrize("arch", ["llama", "qwen2"])
def test_a_warmed_up_draft_model_keeps_the_templates_head_and_catches_up_on_what_follows(
    tiny_models, monkeypatch, arch
):
    """The warm-up reads the chat template's head (what every conversation's prompt begins with)
    into the draft model's cache and the target's, and ``reset`` keeps it: a new conversation's
    catch-up feeds only what follows the head, and the answer is the target's."""
    monkeypatch.setenv(DRAFT_AHEAD_ENV, "0")
    engine = _engine(tiny_models, arch)
    fixed = GenerationConfig(max_new_tokens=16, k=3, auto_k=False)
    engine.warm_up()
    head = engine.template_head()
    ids = engine._encode([{"role": "user", "content": PROMPT}], continue_answer=False)
    assert 0 < len(head) < len(ids) and ids[: len(head)] == head
    model = engine._drafters[DRAFT_MODEL]
    assert isinstance(model, ModelDrafter) and model.runner.tokens == head
    fed: list[tuple[bool, int]] = []
    propose = ModelDrafter.propose

    def spy(self, tokens, k, rule, threshold, new_turn=True):
        proposal = propose(self, tokens, k, rule, threshold, new_turn)
        fed.append((new_turn, proposal.fed))
        return proposal

    monkeypatch.setattr(ModelDrafter, "propose", spy)
    plain = engine.generate(PROMPT, GenerationConfig(**{**fixed.to_dict(), "speculative": False}), options=UNRECORDED)
    for _ in range(2):  # after the warm-up, then after a reset
        engine.reset()
        assert model.runner.tokens == head and engine._target_kv.tokens == head
        fed.clear()
        warm = engine.generate(PROMPT, fixed, options=UNRECORDED)
        assert fed[0] == (True, len(ids) - len(head))
        assert warm.token_ids == plain.token_ids
        assert any(s.accepted for s in warm.steps)  # the model drafted on the head it kept


def test_the_model_is_weighed_with_the_feed_of_what_lookup_drafted_before_it(tiny_models, monkeypatch):
    """After lookup's accepted block the model must first feed those tokens: each step weighs its
    block with them (``KChooser.choose``'s ``behind``: what it has not seen of the conversation);
    before its first ask of the answer, nothing (its catch-up on the prompt was weighed once, for
    the answer, by ``decode._drafter_for_answer``)."""
    from app.engine.decoding.cost import CATCH_UP_IN_TURN, KChooser

    monkeypatch.setenv(DRAFT_AHEAD_ENV, "0")
    engine = _engine(tiny_models, "llama")
    mixed = engine._drafters[DRAFT_AND_LOOKUP]
    assert isinstance(mixed, MixedDrafter)
    seen: list[tuple[int, bool]] = []  # (behind, the model asked before in this answer)
    choose = KChooser.choose

    def spy(self, key, k_max, drafts_ready, prefill=False, probe=True, behind=0):  # type: ignore[no-untyped-def]
        if not drafts_ready:
            seen.append((behind, mixed.asked("model")))
        return choose(self, key, k_max, drafts_ready, prefill, probe, behind)

    monkeypatch.setattr(KChooser, "choose", spy)
    plain = engine.generate(PROMPT, GenerationConfig(**{**AUTO.to_dict(), "speculative": False}), options=UNRECORDED)
    result = engine.generate(PROMPT, AUTO, options=UNRECORDED)
    assert result.token_ids == plain.token_ids
    assert all(behind == 0 for behind, asked in seen if not asked)
    free, model = _kinds(result)
    assert free and model, (free, model)  # lookup's blocks and the model's both verified
    assert max(behind for behind, asked in seen if asked) > CATCH_UP_IN_TURN, seen  # weighed with a feed to pay
