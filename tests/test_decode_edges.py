"""The decoding loop's own edge cases (issue 19, part 6), each reproduced on tiny models: the
catch-up plan's context, a stop string across a Continue cut, drafts after a stop inside an
accepted block, and exactness where near ties are likely."""

from __future__ import annotations

from dataclasses import replace

import pytest
from tiny_models import build_model, save

from app.engine import Engine, GenerationConfig
from app.engine.backend import AnswerOptions
from app.engine.decoding.cost import FIRST_MODEL_KEY, MODEL_KEY, AcceptanceModel, KChooser
from app.engine.decoding.drafters import model_of
from app.engine.models.loading import load_model

PROMPT = "The quick brown fox jumps over the lazy dog. The quick brown"
# a fixed k, no confidence stop: the mechanics, not the chooser's choices
GREEDY = GenerationConfig(max_new_tokens=40, k=4, auto_k=False, confidence_threshold=0.0)


def _plain(engine: Engine, prompt: str = PROMPT, config: GenerationConfig = GREEDY):  # type: ignore[no-untyped-def]
    return engine.generate(prompt, replace(config, speculative=False))


def _through(tokens, n: int) -> str:  # type: ignore[no-untyped-def]
    return "".join(t.text for t in tokens[:n])


def _first_token_completing(tokens, stop: str) -> int:  # type: ignore[no-untyped-def]
    """Index of the token whose text completes the first occurrence of ``stop``."""
    return next(i for i in range(len(tokens)) if stop in _through(tokens, i + 1))


# --- the catch-up plan is made at this answer's context -----------------------------------------


def test_the_catch_up_plan_uses_this_answers_context_not_the_last_ones(load_tiny):
    """Passes at this prompt's context are cheap, passes at 3000 tokens dear. Main planned the
    answer at the previous answer's context (left on the cost model): after a long answer the
    same short prompt dropped its draft model."""
    engine = Engine(load_tiny("llama"), load_tiny("llama-draft"))
    chooser = engine.chooser = KChooser()
    here = len(engine.prompt_ids(PROMPT))
    for context, extra in ((here, 0.0), (3000, 1.0)):  # seconds per extra token, of a 1 s plain pass
        chooser.costs.context = context
        for n in range(1, 8):
            chooser.costs.observe_verify(n, 1.0 + extra * (n - 1))
    chooser.costs.observe_draft(1, 0.01)
    # these costs stand: the tiny model's real timings are not learned on top of them
    chooser.costs.observe_verify = lambda tokens, seconds: None  # type: ignore[method-assign]
    chooser.costs.observe_draft = lambda passes, seconds: None  # type: ignore[method-assign]
    config = GenerationConfig(max_new_tokens=8, k=3, auto_k=True)
    used = []
    for previous_context in (here, 3000):  # how long the last answer left the cost model
        engine.reset()
        chooser.costs.context = previous_context
        engine.generate(PROMPT, config)
        used.append(engine._answer_drafter is not None)
    assert used == [True, True]


# --- a stop string across a Continue cut -------------------------------------------------------


def test_a_stop_string_spanning_a_continue_cut_ends_the_continuation(load_tiny):
    engine = Engine(load_tiny("llama"), lookup=True)
    whole = _plain(engine)
    cut = engine.generate(PROMPT, replace(GREEDY, max_new_tokens=8, speculative=False))
    start = len(cut.text) - 2
    stop = whole.text[start : start + 4]  # two characters before the cut, two after
    assert whole.text.find(stop) == start and len(cut.text) >= 2  # its first occurrence spans the cut
    conversation = [{"role": "user", "content": PROMPT}, {"role": "assistant", "content": cut.text}]
    go_on = AnswerOptions(continue_answer=True, answer_ids=cut.token_ids)
    rest = engine.generate(conversation, replace(GREEDY, stop_strings=(stop,)), options=go_on)
    assert rest.stop_reason == "stop_string"
    end = _first_token_completing(whole.tokens, stop)
    assert rest.token_ids == whole.token_ids[8 : end + 1]


def test_a_stop_string_wholly_inside_the_cut_answer_does_not_end_the_continuation_at_once(load_tiny):
    engine = Engine(load_tiny("llama"), lookup=True)
    cut = engine.generate(PROMPT, replace(GREEDY, max_new_tokens=8, speculative=False))
    stop = cut.text[:3]
    assert stop and stop not in _plain(engine).text[len(cut.text) :]
    conversation = [{"role": "user", "content": PROMPT}, {"role": "assistant", "content": cut.text}]
    go_on = AnswerOptions(continue_answer=True, answer_ids=cut.token_ids)
    rest = engine.generate(conversation, replace(GREEDY, max_new_tokens=6, stop_strings=(stop,)), options=go_on)
    assert rest.stop_reason == "max_new_tokens" and rest.stats.new_tokens == 6


# --- drafts after a stop inside an accepted block ----------------------------------------------


def _self_drafting(load_tiny) -> Engine:  # type: ignore[no-untyped-def]
    """The target as its own draft: every draft is accepted."""
    target = load_tiny("llama")
    return Engine(target, target)


def test_a_stop_string_inside_an_accepted_block_ends_the_answer_exactly_where_plain_decoding_does(load_tiny):
    engine = _self_drafting(load_tiny)
    plain = _plain(engine)
    stop = plain.text[10:13]
    end = _first_token_completing(plain.tokens, stop)
    cut = engine.generate(PROMPT, replace(GREEDY, stop_strings=(stop,)))
    assert cut.stop_reason == "stop_string"
    assert cut.token_ids == plain.token_ids[: end + 1] and cut.text == _through(plain.tokens, end + 1)
    # the stop landed inside a block whose drafts went on past it
    assert any(len(s.accepted) < s.k for s in cut.steps[-1:]) and cut.steps[-1].target is None


def test_drafts_after_a_stop_count_as_neither_proposed_nor_learned(load_tiny):
    """A never-rejected drafter shows 100 % accepted (main: 87.5 %, the drafts past the stop
    counted as proposed), and the chooser learns what the events show, not those drafts."""
    engine = _self_drafting(load_tiny)
    plain = _plain(engine)
    stop = plain.text[10:13]
    engine.chooser = KChooser()
    cut = engine.generate(PROMPT, replace(GREEDY, stop_strings=(stop,)))
    assert cut.stats.proposed == cut.stats.accepted > 0
    assert sum(len(s.accepted) + len(s.rejected) for s in cut.steps) == cut.stats.proposed
    replay = AcceptanceModel()  # what the events say, decayed step by step as the chooser does
    for s in cut.steps:  # the block folded into the prompt's pass is evidence of its own
        replay.tick()
        key = FIRST_MODEL_KEY if s.index == 0 else MODEL_KEY
        replay.observe(key, len(s.accepted) + len(s.rejected), len(s.accepted))
    for key in replay.evidence:
        hits, trials, _ = engine.chooser.acceptance.evidence[key]
        assert (hits, trials) == pytest.approx(replay.evidence[key][:2])
    assert MODEL_KEY in replay.evidence


def test_eos_inside_an_accepted_block_ends_the_answer_there_though_the_drafter_went_past_it(load_tiny):
    """The drafter here does not stop at the end of sequence, so the drafts after it reach the
    target and are accepted: the answer still ends at the EOS, and they count for nothing."""
    target = load_tiny("llama")
    plain = Engine(target).generate(PROMPT, replace(GREEDY, speculative=False))
    eos = plain.token_ids[6]  # pretend the 7th token ends the sequence
    first = plain.token_ids.index(eos)
    target_eos = replace(target, eos_token_ids=(eos,))
    engine = Engine(target_eos, target_eos)
    model = model_of(engine._drafter)
    assert model is not None
    model.eos_ids = frozenset()  # drafts past the EOS
    result = engine.generate(PROMPT, replace(GREEDY, k=8))
    assert result.token_ids == plain.token_ids[: first + 1] and result.stop_reason == "eos"
    last = result.steps[-1]
    assert last.target is None and last.accepted[-1].id == eos and not last.rejected
    assert result.stats.proposed == result.stats.accepted == first + 1
    assert result.stats.draft_passes >= 8  # it did draft a full block past the EOS


# --- exactness where near ties are likely -----------------------------------------------------


@pytest.fixture(scope="module")
def unscaled(tmp_path_factory, tokenizer):  # type: ignore[no-untyped-def]
    """A tiny model as initialised (no ×30 head): its logits are nearly flat, so argmax near
    ties are everywhere, where block-versus-one-token rounding would show."""
    model = build_model("llama", tokenizer, seed=11, scale=1.0)
    folder = save(model, tokenizer, tmp_path_factory.mktemp("unscaled") / "llama")
    return load_model(str(folder), device="cpu", dtype="float32")


@pytest.mark.parametrize("drafter", ["self", "lookup"])
def test_greedy_speculation_stays_exact_where_near_ties_are_everywhere(unscaled, drafter):
    assert unscaled.kernels is not None and unscaled.kernels.exact
    engine = Engine(unscaled, unscaled) if drafter == "self" else Engine(unscaled, lookup=True)
    config = replace(GREEDY, max_new_tokens=48, k=5)
    prompts = (PROMPT, "def add(a, b):\n    return a + b\ndef add(a, b):")
    closest = []
    for prompt in prompts:
        spec = engine.generate(prompt, config)
        plain = _plain(engine, prompt, config)
        assert spec.token_ids == plain.token_ids
        assert spec.stats.accepted > 0  # blocks were really verified
        closest.append(min(t.margin for t in plain.tokens if t.margin is not None))
    # near ties did occur: top-2 gaps of a few thousandths of a logit (the ×30 models' are
    # thirty times wider), where only bit-exact blocks keep the two answers equal
    assert min(closest) < 5e-3
